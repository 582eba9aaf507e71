"""Session joins: the turn that answers a question about someone the question identifies only through another turn.

"那个电话是19880466415的人，生日是哪天？": the phone number pins down one turn ("我同事的电话是19880466415"),
the birthday sits in another turn of the same conversation that names the person only by the word
the first one used for them ("我同事的生日是6月11号"). Neither the keyword nor the dense ranking links
the two. A join does: a strong hit that holds one of the query's identifiers (a word at most
`ANCHOR_ROWS` rows hold) is an anchor; its rarest words that the question does not use are pivots;
every other turn of the anchor's session holding a pivot moves toward the anchor's score.

Pure: token tuples, scores and document frequencies in, lifts out. Measured in docs/retrieval.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass


@dataclass(frozen=True)
class JoinRules:
    anchors: int = 3  # the top turns that may anchor a join
    anchor_rows: int = 3  # a query word held by at most this many rows identifies something
    pivots: int = 5  # an anchor's rarest words outside the query that may link it to its session mates
    toward: float = 0.9  # how far a mate sharing the anchor's rarest pivot moves toward the anchor's score


@dataclass(frozen=True)
class JoinCorpus:
    """What a join reads of the indexed turns, as lookups: words of a turn, its session's turns, a word's rows."""

    tokens_of: Callable[[int], Sequence[str]]
    session_of: Callable[[int], Sequence[int]]
    rows_with: Callable[[str], int]
    rows: int
    speakers: AbstractSet[str] = frozenset()  # words of the speakers' names: they say who spoke, not about whom


def idf(rows_with: int, rows: int) -> float:
    """Inverse document frequency, the BM25 form (positive for any word held by fewer than all rows)."""
    return math.log(1.0 + (rows - rows_with + 0.5) / (rows_with + 0.5))


def session_joins(
    ranked: Sequence[tuple[int, float]],
    query: Mapping[str, float],
    scores: Mapping[int, float],
    corpus: JoinCorpus,
    rules: JoinRules = JoinRules(),
) -> dict[int, float]:
    """Turn id → the lift a join gives it (the best over its anchors), from the fused ranking `ranked` (best first).

    A mate's lift is `toward` × (its best shared pivot's idf / the anchor's rarest pivot's idf) × how far it
    sits below the anchor: it never passes its anchor, and of two mates the one the query already favoured
    stays ahead.
    """
    lifts: dict[int, float] = {}
    rarity = {}

    def idf_of(word: str) -> float:
        if word not in rarity:
            rarity[word] = idf(corpus.rows_with(word), corpus.rows)
        return rarity[word]

    for anchor, anchor_score in ranked[: rules.anchors]:
        words = set(corpus.tokens_of(anchor))
        if not any(corpus.rows_with(w) <= rules.anchor_rows for w in words if w in query):
            continue
        pivots = sorted(
            (w for w in words if w not in query and w not in corpus.speakers), key=lambda w: (-idf_of(w), w)
        )[: rules.pivots]
        if not pivots:
            continue
        rarest = idf_of(pivots[0])
        for mate in corpus.session_of(anchor):
            if mate == anchor:
                continue
            held = set(corpus.tokens_of(mate))
            shared = [w for w in pivots if w in held]
            own = scores.get(mate, 0.0)
            if not shared or own >= anchor_score:
                continue
            lift = rules.toward * (idf_of(shared[0]) / rarest) * (anchor_score - own)
            if lift > lifts.get(mate, 0.0):
                lifts[mate] = lift
    return lifts
