"""Memory and latency of tideline_core.search.bm25 at 100k short documents (synthetic, Zipfian words)."""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tideline_core.search.bm25 import BM25Index  # noqa: E402


def main(n_docs: int = 100_000, vocab: int = 50_000, doc_len: int = 15) -> None:
    rng = np.random.default_rng(0)
    ranks = np.arange(1, vocab + 1)
    p = 1.0 / ranks**1.05
    p /= p.sum()
    words = [f"w{i}" for i in range(vocab)]
    docs = rng.choice(vocab, size=(n_docs, doc_len), p=p)
    tracemalloc.start()
    index = BM25Index(k1=0.9, b=0.4)
    t0 = time.perf_counter()
    for i, row in enumerate(docs):
        index.add(i, [words[j] for j in row])
    add_s = time.perf_counter() - t0
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    lat = []
    for _ in range(300):
        q = {words[j]: 1.0 for j in rng.choice(vocab, size=10, p=p)}
        t = time.perf_counter()
        index.score(q, top_k=100)
        lat.append(time.perf_counter() - t)
    lat_ms = np.array(lat) * 1e3
    print(
        f"{n_docs} docs x {doc_len} tokens: add {add_s:.1f}s ({add_s / n_docs * 1e6:.0f} us/doc), "
        f"memory {current / 2**20:.1f} MiB, 10-term query p50 {np.percentile(lat_ms, 50):.2f} ms "
        f"p95 {np.percentile(lat_ms, 95):.2f} ms"
    )


if __name__ == "__main__":
    main()
