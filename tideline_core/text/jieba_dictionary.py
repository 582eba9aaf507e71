"""jieba's dictionary, compact: its words and word prefixes in a memory-mapped trie, built once into a cache file.

As jieba loads it, the dictionary is a dict of about 60 MiB in every process that segments Chinese
(the server, each worker process). Here it is a trie file of about 1 MiB and a file of the counts
(4 MiB) that every process maps and shares; jieba reads it through the three operations it
uses on its dict (`in`, `[]`, `get`). Segmentation is the same word for word (tested), and about
1.4× slower on a text not segmented before (runs of text are cached, see `tokens`).
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import os
import sys
import tempfile
from array import array
from pathlib import Path

import marisa_trie

# jieba opens its files through pkg_resources when that imports, and pkg_resources (deprecated) is
# slower to import than all of jieba; without it jieba opens them beside its own module, where they
# are. Every process that segments pays this import, the one-prompt hook included, so jieba is
# imported here, once, and the other modules take it from here.
_WITHOUT_PKG_RESOURCES = "pkg_resources" not in sys.modules
if _WITHOUT_PKG_RESOURCES:
    sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # None makes an import raise ImportError
try:
    import jieba as jieba
finally:
    if _WITHOUT_PKG_RESOURCES:
        del sys.modules["pkg_resources"]

log = logging.getLogger(__name__)

VERSION = 1


class Frequencies:
    """Word (or word prefix) → count, read-only; a prefix that is no word counts 0, as in jieba's own table."""

    __slots__ = ("_counts", "_trie")

    def __init__(self, trie: marisa_trie.Trie, counts: memoryview) -> None:
        self._trie = trie
        self._counts = counts

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and word in self._trie

    def __getitem__(self, word: str) -> int:
        return self._counts[self._trie[word]]

    def get(self, word: str, default: int | None = None) -> int | None:
        key = self._trie.get(word)
        return default if key is None else self._counts[key]

    def __len__(self) -> int:
        return len(self._trie)

    def __setitem__(self, word: str, count: int) -> None:
        raise TypeError("the compact jieba dictionary is read-only: Tideline adds no words to jieba")


def _files(tokenizer: jieba.Tokenizer) -> tuple[Path, Path]:
    """The cache files for this tokenizer's dictionary file (named by its path, size and time), beside jieba's cache."""
    source = Path(tokenizer.dictionary or Path(jieba.__file__).parent / jieba.DEFAULT_DICT_NAME)
    stat = source.stat()
    digest = hashlib.sha256(f"{VERSION}|{source}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    folder = Path(tokenizer.tmp_dir or tempfile.gettempdir())
    return folder / f"tideline-jieba-{digest}.trie", folder / f"tideline-jieba-{digest}.counts"


def _load(trie_path: Path, counts_path: Path) -> tuple[Frequencies, int] | None:
    try:
        trie = marisa_trie.Trie()
        trie.mmap(str(trie_path))
        with counts_path.open("rb") as f:  # mapped too: a process reads only the counts of the words it meets
            counts = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)).cast("q")
    except (OSError, ValueError, TypeError, RuntimeError):  # missing or torn: build again
        return None
    if len(counts) != len(trie) + 1:
        return None
    return Frequencies(trie, counts[:-1]), counts[-1]  # the table's total count is stored last


def _build(tokenizer: jieba.Tokenizer, trie_path: Path, counts_path: Path) -> None:
    """Load jieba's own table once (its dict), and write the trie and the counts beside it."""
    tokenizer.initialize()
    table: dict[str, int] = tokenizer.FREQ
    trie = marisa_trie.Trie(table.keys())
    counts = array("q", [0]) * len(trie)
    for word, key in trie.iteritems():
        counts[key] = table[word]
    counts.append(tokenizer.total)
    trie_path.parent.mkdir(parents=True, exist_ok=True)
    # Several processes may build at once: each renames complete files into place, the trie last.
    scratch = Path(tempfile.mkdtemp(dir=trie_path.parent, prefix=".tideline-jieba-"))
    try:
        with (scratch / "counts").open("wb") as f:
            counts.tofile(f)
        trie.save(str(scratch / "trie"))
        os.replace(scratch / "counts", counts_path)
        os.replace(scratch / "trie", trie_path)
    finally:
        for leftover in scratch.iterdir():
            leftover.unlink()
        scratch.rmdir()


def install(tokenizer: jieba.Tokenizer | None = None) -> None:
    """Give `tokenizer` (jieba's default one) the compact dictionary, building its cache files if needed.

    Idempotent; call it before the tokenizer's first use (jieba would otherwise load its own table).
    A cache folder that cannot be written leaves jieba's own table in place.
    """
    tokenizer = tokenizer or jieba.dt
    with tokenizer.lock:
        if tokenizer.initialized and isinstance(tokenizer.FREQ, Frequencies):
            return
        trie_path, counts_path = _files(tokenizer)
        loaded = _load(trie_path, counts_path)
        if loaded is None:
            try:
                _build(tokenizer, trie_path, counts_path)
            except OSError as exc:
                log.warning("jieba's dictionary stays uncompacted: cannot write %s (%s)", trie_path.parent, exc)
                tokenizer.initialize()
                return
            loaded = _load(trie_path, counts_path)
            if loaded is None:
                tokenizer.initialize()
                return
        tokenizer.FREQ, tokenizer.total = loaded
        tokenizer.initialized = True
