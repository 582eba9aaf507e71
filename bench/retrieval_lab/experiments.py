"""Experiments on the product runner that need more than a constant override (third-session table in README).

    python bench/retrieval_lab/experiments.py bm25 K1 B [locomo|madial]
    python bench/retrieval_lab/experiments.py dense-prf BETA K VIEW [locomo|madial]
    python bench/retrieval_lab/experiments.py session-spread LAMBDA best|top3 [locomo|madial]
    python bench/retrieval_lab/experiments.py dialogue whole|lines|lines_all|prefix|prefix_last|previous_last|tags:N
    python bench/retrieval_lab/experiments.py names keep|named|both [locomo|madial]

Each patches one piece of the real search for the run, then calls `product.main` (cached e5 vectors).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import jieba.analyse
import numpy as np

import product  # puts the repository on sys.path
from tideline_core.search import bm25  # noqa: E402
from tideline_core.search import service as svc  # noqa: E402
from tideline_core.search.query import _line, conversation_texts, named_speakers, without_names  # noqa: E402

Vector = tuple[np.ndarray | None, str | None, float]


def _normalized(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n else v


def _with_query_vector(make: Callable[[Any, str, Any, Callable[[Sequence[str]], Vector]], Vector]) -> None:
    """Replace the query vector of every search by `make(service, agent, params, the real function)`."""
    real_search, real_vector = svc.SearchService.search, svc.SearchService._query_vector

    def search(self: Any, agent_id: str, params: Any, conversation: Any = None) -> Any:
        self._query_vector = lambda texts: make(self, agent_id, params, lambda t: real_vector(self, t))
        try:
            return real_search(self, agent_id, params, conversation)
        finally:
            del self._query_vector

    svc.SearchService.search = search  # type: ignore[method-assign]


def bm25_params(k1: float, b: float) -> None:
    real = bm25.BM25Index.__init__

    def init(self: Any, **_: Any) -> None:
        real(self, k1=k1, b=b)

    bm25.BM25Index.__init__ = init  # type: ignore[method-assign]


def dense_prf(beta: float, k: int, view: str) -> None:
    """Rocchio in e5 space: the query plus beta x the mean of its top-k vectors."""

    def make(service: Any, agent: str, params: Any, real: Callable[[Sequence[str]], Vector]) -> Vector:
        texts = conversation_texts(list(params.conversation)) if params.conversation else [params.query]
        vec, degraded, ms = real(texts)
        if vec is None:
            return vec, degraded, ms
        kind = "context" if params.kinds == "context" else "narrative"
        shard = service.index.refresh(agent, kind, view)
        rows = [shard.matrix[shard.position[i]] for i, _ in service.index.search(agent, kind, vec, k, view=view)]
        return (_normalized(vec + beta * np.mean(rows, axis=0)) if rows else vec), degraded, ms

    _with_query_vector(make)


def session_spread(lam: float, how: str) -> None:
    """Each context turn lifted by lam x the best (or the mean of the top 3) other turn of its session."""
    real = svc.SearchService._spread

    def spread(self: Any, agent_id: str, scores: dict[Any, float], parts: Any, limit: int) -> dict[Any, float]:
        scores = real(self, agent_id, scores, parts, limit)
        session_of = self.keywords._shard(agent_id, "context").session_of
        by_session: dict[Any, list[float]] = {}
        for key, s in scores.items():
            if key[0] == "context":
                by_session.setdefault(session_of.get(key[1]), []).append(s)
        out = {}
        for key, s in scores.items():
            if key[0] != "context":
                out[key] = s
                continue
            others = sorted(by_session[session_of.get(key[1])], reverse=True)
            others.remove(s)
            lift = (others[0] if others else 0.0) if how == "best" else sum(others[:3]) / 3
            out[key] = s + lam * lift
        return out

    svc.SearchService._spread = spread  # type: ignore[method-assign]


def dialogue(variant: str) -> None:
    """Dialogue query vectors that a live conversation could mostly remember from its earlier turns."""

    def make(service: Any, agent: str, params: Any, real: Callable[[Sequence[str]], Vector]) -> Vector:
        lines = list(params.conversation)
        whole = conversation_texts(lines)
        others = [x for x in lines if not x.is_self]

        def one(texts: Sequence[str]) -> np.ndarray:
            return np.asarray(service.embedder.queries(list(texts)), dtype=np.float32)

        earlier = ["\n".join(x.text for x in others[:-1])] if len(others) > 1 else []
        if variant == "whole":
            return real(whole)
        if variant == "lines":
            vec = _normalized(one([x.text for x in others]).mean(0)) + one([whole[-1]])[0]
        elif variant == "lines_all":
            vec = _normalized(one([x.text for x in others]).mean(0)) + _normalized(
                one([_line(x) for x in lines[-2:]]).mean(0))
        elif variant == "prefix":
            vec = one(earlier + [whole[-1]]).sum(0)
        elif variant == "prefix_last":
            vec = one(earlier + [_line(lines[-1])]).sum(0)
        elif variant.startswith("tags:"):  # the other party's top jieba keywords, ~20 model tokens
            text = "\n".join(x.text for x in others)
            return real([" ".join(jieba.analyse.extract_tags(text, topK=int(variant[5:])))])
        elif variant == "previous_last":
            vec = one(earlier + ["\n".join(_line(x) for x in lines[-3:-1]), _line(lines[-1])]).sum(0)
        else:
            raise SystemExit(f"unknown dialogue variant {variant!r}")
        return _normalized(vec), None, 0.0

    _with_query_vector(make)


def names(variant: str) -> None:
    """A question's dense view over turns: names kept, only the named ones left out, or both texts summed."""

    def make(service: Any, agent: str, params: Any, real: Callable[[Sequence[str]], Vector]) -> Vector:
        if params.conversation or params.kinds != "context":
            return real(conversation_texts(list(params.conversation)) if params.conversation else [params.query])
        everyone = service.keywords.speaker_names(agent)
        if variant == "keep":
            return real([params.query])
        if variant == "named":
            return real([without_names(params.query, named_speakers([params.query], everyone))])
        return real(list(dict.fromkeys([params.query, without_names(params.query, everyone)])))

    _with_query_vector(make)


def main(argv: list[str]) -> None:
    name, rest = argv[0], argv[1:]
    if name == "bm25":
        bm25_params(float(rest[0]), float(rest[1]))
        rest = rest[2:]
    elif name == "dense-prf":
        dense_prf(float(rest[0]), int(rest[1]), rest[2])
        rest = rest[3:]
    elif name == "session-spread":
        session_spread(float(rest[0]), rest[1])
        rest = rest[2:]
    elif name == "names":
        names(rest[0])
        rest = rest[1:]
    elif name == "dialogue":
        dialogue(rest[0])
        rest = ["madial"]
    else:
        raise SystemExit(__doc__)
    product.main(rest)


if __name__ == "__main__":
    main(sys.argv[1:])
