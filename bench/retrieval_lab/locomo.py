"""LoCoMo experiments (numpy): signals per conversation as dense arrays over that conversation's turns.

Fusion here is the same min-max convex combination as tideline_core.search.fusion (dense
candidates = top-N per signal with observed min as floor, BM25 floor 0, missing → 0), written
over arrays so grids run fast; final recipes are re-checked through fusion.fuse.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lab import embed, load_locomo, recall_at, session_recall_at  # noqa: E402
from views import locomo_views  # noqa: E402

from tideline_core.search.bm25 import BM25Index, analyze  # noqa: E402

docs, queries = load_locomo()
groups = sorted({d.group for d in docs}, key=int)
gidx = {g: np.array([i for i, d in enumerate(docs) if d.group == g]) for g in groups}
VIEWS = locomo_views(docs)
_DV: dict[str, np.ndarray] = {}


def dview(name: str) -> np.ndarray:
    if name not in _DV:
        _DV[name] = embed(VIEWS[name], "passage", f"ld-{name}")
    return _DV[name]


QQ = embed([q.text for q in queries], "query", "lq")
QP = embed([q.text for q in queries], "passage", "lq")
sess = np.array([int(d.session[1:]) for d in docs])
ids = np.array([d.id for d in docs])


def split(name: str) -> list[int]:
    want = {"A": {"0", "1", "2"}, "B": {"3", "4"}, "all": set(groups)}[name]
    return [i for i, q in enumerate(queries) if q.group in want]


# ----------------------------------------------------------------------------- signals (arrays over group docs)
def dense_sig(view: str, qmat: np.ndarray | None = None) -> list[np.ndarray]:
    D = dview(view)
    Q = QQ if qmat is None else qmat
    return [D[gidx[q.group]] @ Q[qi] for qi, q in enumerate(queries)]


_bm: dict[tuple, dict[str, BM25Index]] = {}


def bm25_sig(k1: float = 1.2, b: float = 0.75, texts: list[str] | None = None, key: str = "turn") -> list[np.ndarray]:
    cache_key = (k1, b, key)
    if cache_key not in _bm:
        idx = {g: BM25Index(k1=k1, b=b) for g in groups}
        src = texts or [d.text for d in docs]
        for i, d in enumerate(docs):
            idx[d.group].add(i, analyze(src[i]))
        _bm[cache_key] = idx
    idx = _bm[cache_key]
    out = []
    for q in queries:
        g = gidx[q.group]
        pos = {int(i): j for j, i in enumerate(g)}
        arr = np.zeros(len(g))
        for i, s in idx[q.group].score(analyze(q.text)):
            arr[pos[i]] = s
        out.append(arr)
    return out


def minmax(a: np.ndarray, top_n: int | None = None, floor: float | None = None) -> np.ndarray:
    if top_n is not None and len(a) > top_n:
        kth = np.partition(a, -top_n)[-top_n]
        keep = a >= kth
    else:
        keep = np.ones(len(a), bool)
    lo = a[keep].min() if floor is None else min(floor, a[keep].min())
    hi = a[keep].max()
    out = np.zeros(len(a))
    if hi - lo <= 0:
        out[keep] = 1.0
    else:
        out[keep] = (a[keep] - lo) / (hi - lo)
    return out


def neighbours(qi: int) -> tuple[np.ndarray, np.ndarray]:
    """(prev index, next index) within the same session, -1 where none, for the query's group."""
    g = gidx[queries[qi].group]
    s = sess[g]
    n = len(g)
    prev = np.arange(n) - 1
    nxt = np.arange(n) + 1
    prev[0] = -1
    nxt[-1] = -1
    prev[1:][s[1:] != s[:-1]] = -1
    nxt[:-1][s[:-1] != s[1:]] = -1
    return prev, nxt


def evaluate(scores: list[np.ndarray], qids: list[int]) -> dict[str, float]:
    r: dict[str, list[float]] = {}
    for qi in qids:
        q = queries[qi]
        if not q.gold:
            continue
        g = gidx[q.group]
        s = scores[qi]
        order = np.lexsort((np.arange(len(s)), -s))
        ranked = [docs[g[j]].id for j in order[:20]]
        distinct: list[str] = []
        for j in order:
            sid = docs[g[j]].session
            if sid not in distinct:
                distinct.append(sid)
                if len(distinct) == 5:
                    break
        for k in (5, 10, 20):
            r.setdefault(f"R@{k}", []).append(recall_at(ranked, q.gold, k))
        r.setdefault("S@5", []).append(session_recall_at(ranked, q.gold, 5))
        gs = {x.split(":")[0] for x in q.gold}
        r.setdefault("SD@5", []).append(len(gs & set(distinct)) / len(gs))
    return {k: float(np.mean(v)) for k, v in r.items()}


def show(name: str, scores: list[np.ndarray]) -> None:
    a, b = evaluate(scores, split("A")), evaluate(scores, split("B"))
    print(
        f"{name:40s} A: R@5={a['R@5']:.3f} R@10={a['R@10']:.3f} S@5={a['S@5']:.3f} SD={a['SD@5']:.3f} | "
        f"B: R@5={b['R@5']:.3f} R@10={b['R@10']:.3f} S@5={b['S@5']:.3f} SD={b['SD@5']:.3f}",
        flush=True,
    )
