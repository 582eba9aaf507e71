"""MADial-zh experiments: signals per query, fusion, recall."""

from __future__ import annotations

import sys

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))

from lab import embed, load_madial, summarize  # noqa: E402
from views import madial_doc_views, madial_query_views, strip_speaker  # noqa: E402

from tideline_core.search.bm25 import BM25Index, analyze  # noqa: E402

docs, queries = load_madial()
groups = sorted({d.group for d in docs})
gidx = {g: np.array([i for i, d in enumerate(docs) if d.group == g]) for g in groups}
DV = {k: embed(v, "passage", f"md-{k}") for k, v in madial_doc_views(docs).items()}
QTEXT = madial_query_views(queries)
QV = {(k, kind): embed(v, kind, f"mq-{k}") for k, v in QTEXT.items() for kind in ("query", "passage")}


def rank(scores_per_query: list[dict[str, float]]) -> list[list[str]]:
    return [sorted(s, key=lambda d: (-s[d], d)) for s in scores_per_query]


def dense(qview: str, dview: str = "event", kind: str = "query") -> list[dict[str, float]]:
    Q, D = QV[(qview, kind)], DV[dview]
    out = []
    for qi, q in enumerate(queries):
        idx = gidx[q.group]
        s = D[idx] @ Q[qi]
        out.append({docs[i].id: float(v) for i, v in zip(idx, s)})
    return out


def report(name: str, scores: list[dict[str, float]]) -> dict[str, float]:
    r = summarize(rank(scores), queries, locomo=False)
    print(f"{name:40s} R@5={r['R@5']:.3f} R@10={r['R@10']:.3f} R@20={r['R@20']:.3f}")
    return r


if __name__ == "__main__":
    for qv in QTEXT:
        for kind in ("query", "passage"):
            for dv in DV:
                report(f"dense q={qv}/{kind} d={dv}", dense(qv, dv, kind))
