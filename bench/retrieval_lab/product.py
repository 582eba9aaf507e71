"""The product's own eval runner on LoCoMo (split A = convs 0-2, B = 3-4) and MADial, with cached embeddings.

Runs `tideline_core.evaluation.runner` unchanged: the real write path, embed_pending and SearchService.
Only the embedder is wrapped, so repeated runs skip the e5 passes (cache in $RETRIEVAL_CACHE/product-<model>.sqlite).
Overrides of module constants for experiments: `python product.py service.GAMMA=0.3 ...`.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tideline_core.embedders import LOCAL_MODEL, LocalE5Embedder  # noqa: E402
from tideline_core.evaluation import locomo, madial, runner  # noqa: E402
from tideline_core.search import fusion, query, service  # noqa: E402
from tideline_core.store.database import Database  # noqa: E402

EVAL = ROOT.parent / "shared" / "eval"
# One file per vector space: vectors of another model (or engine) must never be mixed in.
CACHE = Path(os.environ.get("RETRIEVAL_CACHE", "/tmp/retrieval_cache")) / f"product-{LOCAL_MODEL.replace('/', '_')}.sqlite"


class CachedEmbedder:
    """LocalE5 behind a text-keyed sqlite cache; counts the misses so a run says what it computed."""

    def __init__(self) -> None:
        self.inner = LocalE5Embedder()
        self.model = self.inner.model
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(CACHE, check_same_thread=False)
        self.conn.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, b BLOB)")
        self.misses = 0

    def _key(self, kind: str, text: str) -> str:
        return hashlib.sha1(f"{kind}\0{text}".encode()).hexdigest()

    def _get(self, kind: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = []
        for t in texts:
            row = self.conn.execute("SELECT b FROM v WHERE k=?", (self._key(kind, t),)).fetchone()
            out.append(np.frombuffer(row[0], dtype=np.float32) if row else None)
        return out

    def _cached(self, kind: str, texts: Sequence[str], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        got = self._get(kind, texts)
        missing = [i for i, v in enumerate(got) if v is None]
        if missing:
            fresh = compute([texts[i] for i in missing])
            self.misses += len(missing)
            for i, vec in zip(missing, fresh):
                got[i] = vec
                self.conn.execute("INSERT OR REPLACE INTO v VALUES (?,?)", (self._key(kind, texts[i]), vec.tobytes()))
            self.conn.commit()
        return np.stack(got) if got else np.zeros((0, 384), dtype=np.float32)  # type: ignore[arg-type]

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached("p", texts, self.inner.passages)

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        return self._cached("q", texts, self.inner.queries)


def _apply(overrides: list[str]) -> None:
    modules = {"service": service, "fusion": fusion, "query": query}
    for item in overrides:
        target, value = item.split("=", 1)
        mod, name = target.split(".", 1)
        setattr(modules[mod], name, eval(value))  # noqa: S307 - a lab harness


def _fresh_db() -> Database:
    return Database.open(f"sqlite:///{tempfile.mkdtemp(prefix='lab-')}/eval.db")


def main(argv: list[str]) -> None:
    which = [a for a in argv if a in ("locomo", "madial")] or ["locomo", "madial"]
    _apply([a for a in argv if "=" in a])
    embedder = CachedEmbedder()
    if "locomo" in which:
        convs = locomo.load(EVAL / "locomo" / "locomo_dev.json")
        for split, chosen in (("A", convs[:3]), ("B", convs[3:])):
            res = runner.run_locomo(_fresh_db(), embedder, chosen, ["hybrid"], [5, 10, 20])["hybrid"]  # type: ignore[arg-type]
            cats = " ".join(f"c{c}={row[10]:.3f}" for c, row in sorted(res.per_category.items()))
            print(f"locomo {split}: R@5 {res.recall[5]:.3f} R@10 {res.recall[10]:.3f} R@20 {res.recall[20]:.3f} "
                  f"S@5 {res.session_recall[5]:.3f} S@10 {res.session_recall[10]:.3f} "
                  f"p95 {res.latency_ms['p95']:.1f}ms [{cats}]", flush=True)
    if "madial" in which:
        d = EVAL / "madial-zh"
        res = runner.run_madial(_fresh_db(), embedder, madial.load_memories(d), madial.load_dialogues(d), ["hybrid"],
                                [5, 10, 20])["hybrid"]  # type: ignore[arg-type]
        print(f"madial: R@5 {res.recall[5]:.3f} R@10 {res.recall[10]:.3f} R@20 {res.recall[20]:.3f} "
              f"p95 {res.latency_ms['p95']:.1f}ms", flush=True)
    print(f"(embedder cache misses: {embedder.misses})", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
