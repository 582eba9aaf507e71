"""jieba's dictionary as a shared trie: the same words as jieba's own table, built once, rebuilt when torn."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jieba
import pytest

from tideline_core.text.jieba_dictionary import Frequencies, install

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import synthetic

TEXTS = [
    "中华人民共和国的首都是北京，我们在公园里散步",
    "小明硕士毕业于中国科学院计算所，后在日本京都大学深造",
    "他来到了网易杭研大厦 and then wrote some Python",
    "結婚的和尚未結婚的",
    *(row["gesture"] + row["context"] for row in synthetic.narratives(200, seed=9)),
]


def tokenizer_in(folder: Path) -> jieba.Tokenizer:
    tokenizer = jieba.Tokenizer()
    tokenizer.tmp_dir = str(folder)
    return tokenizer


def test_segmentation_is_word_for_word_what_jiebas_own_table_gives(tmp_path: Path) -> None:
    own = tokenizer_in(tmp_path / "own")
    own.initialize()
    compact = tokenizer_in(tmp_path / "compact")
    install(compact)
    assert isinstance(compact.FREQ, Frequencies) and compact.total == own.total
    for text in TEXTS:
        assert list(compact.cut(text)) == list(own.cut(text)), text
        assert list(compact.cut_for_search(text)) == list(own.cut_for_search(text)), text
        assert list(compact.cut(text, HMM=False)) == list(own.cut(text, HMM=False)), text


def test_the_cache_is_built_once_and_later_processes_map_it(tmp_path: Path) -> None:
    install(tokenizer_in(tmp_path))
    files = sorted(tmp_path.glob("tideline-jieba-*"))
    assert [f.suffix for f in files] == [".counts", ".trie"]
    stamps = [f.stat().st_mtime_ns for f in files]
    # Another process: loads the files (jieba's own table is never built there).
    probe = (
        "import jieba, sys; from tideline_core.text.jieba_dictionary import install\n"
        f"t = jieba.Tokenizer(); t.tmp_dir = {str(tmp_path)!r}; install(t)\n"
        "print(type(t.FREQ).__name__, '/'.join(t.cut('我们在公园里散步')))"
    )
    for own in tmp_path.glob("jieba*.cache"):
        own.unlink()  # written by the build above; a process that maps the trie never writes it again
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Frequencies", "我们/在/公园/里/散步"]
    assert [f.stat().st_mtime_ns for f in files] == stamps
    assert not list(tmp_path.glob("jieba*.cache")), "jieba's own table was not loaded"


def test_a_torn_cache_is_built_again(tmp_path: Path) -> None:
    install(tokenizer_in(tmp_path))
    (counts,) = tmp_path.glob("tideline-jieba-*.counts")
    counts.write_bytes(counts.read_bytes()[:1000])
    fresh = tokenizer_in(tmp_path)
    install(fresh)
    assert isinstance(fresh.FREQ, Frequencies) and list(fresh.cut("公园散步")) == ["公园", "散步"]


def test_a_cache_folder_that_cannot_be_written_leaves_jiebas_own_table(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    tokenizer = tokenizer_in(blocked / "cache")
    install(tokenizer)
    assert isinstance(tokenizer.FREQ, dict) and list(tokenizer.cut("公园散步")) == ["公园", "散步"]


def test_the_compact_table_refuses_new_words(tmp_path: Path) -> None:
    tokenizer = tokenizer_in(tmp_path)
    install(tokenizer)
    with pytest.raises(TypeError, match="read-only"):
        tokenizer.add_word("潮汐线")


def printed_by_a_new_process(*lines: str) -> list[str]:
    """The lines a fresh interpreter prints running `lines`: what a module imports shows only in a new process."""
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.splitlines()


def test_segmenting_loads_jieba_and_its_tables_without_importing_pkg_resources() -> None:
    # Every process that segments imports jieba; pkg_resources would cost each of them more than jieba does.
    words, imported = printed_by_a_new_process(
        "import sys",
        "from tideline_core.text.tokens import segment",
        "words = segment('周四晚上去游泳', for_index=True)",
        "import jieba.posseg",
        "print(words, [w.flag for w in jieba.posseg.cut('周四晚上')])",
        "print('pkg_resources' in sys.modules)",
    )
    assert words == "['周四', '晚上', '去', '游泳'] ['t', 't']"
    assert imported == "False"


def test_a_process_that_segments_only_english_never_imports_jieba() -> None:
    # The hook without a server answers one prompt: an English store and prompt should not pay for jieba.
    words, imported = printed_by_a_new_process(
        "import sys",
        "from tideline_core.search.query import question_parts",
        "from tideline_core.text.terms import analyze",
        "print(analyze('What did we decide about the deploy on Friday?'))",
        "print('jieba' in sys.modules)",
    )
    assert "deploy" in words
    assert imported == "False"
