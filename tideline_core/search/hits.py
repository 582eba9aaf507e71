"""What a search answers: its hits, each a row as shown with the signals that ranked it, and the outcome around them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from tideline_core.domain.inputs import SearchIn
from tideline_core.domain.memory_text import with_amendment
from tideline_core.domain.records import AmendmentNote, NarrativeRecord
from tideline_core.embedding import Embedder
from tideline_core.search.fusion import interleave
from tideline_core.search.query import question_parts
from tideline_core.search.signals import Key
from tideline_core.search.sources import Rows
from tideline_core.store.schema import is_extract as extract_row


@dataclass(frozen=True)
class SearchHit:
    """A row found: `text` is what is shown of it, a memory's gesture or a turn's content, with the latest
    amendment of the memory (of a memory written from the turn) marked after it (`memory_text.with_amendment`)."""

    kind: str
    id: int
    score: float
    text: str
    occurred_at: datetime
    session_id: str = ""
    speaker: str = ""
    weight: float | None = None
    tags: tuple[str, ...] = ()
    signals: dict[str, float] = field(default_factory=dict)  # each signal's contribution to `score`
    similarity: float | None = None  # the row's own cosine to the query, when the dense view saw it
    amended: AmendmentNote | None = None  # the latest amendment marked at the end of `text`
    # The signals that found the row on its own merit (`signals.evidence_of`); none: it is here by rank alone.
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchOutcome:
    query: str
    hits: list[SearchHit]
    mode: str
    degraded: str | None = None
    terms: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()  # the time windows the query named, e.g. 'June 2023'
    embed_ms: float = 0.0  # of the search's time, the model pass over the query (0 when remembered)
    embedded: tuple[str, ...] = ()  # the texts whose vectors made the semantic query (none in keyword mode)
    unembedded: int = 0  # rows of the searched kinds still without a vector (0 in keyword mode: not needed)


class Searcher(Protocol):
    """What the service searches with: the ranking over a candidate source (`HybridSearch`), or `cold.ColdSearch`."""

    embedder: Embedder

    def search(self, agent_id: str, params: SearchIn, *, exclude: Collection[Key] = ()) -> SearchOutcome:
        """Rank the agent's rows for `params`; `exclude`: (kind, id) of rows to leave out of the top."""
        ...

    def forget_queries(self) -> None:
        """Drop the remembered query vectors (a measurement that must pay for every model pass)."""
        ...


def in_parts(params: SearchIn, ask: Callable[[SearchIn], SearchOutcome]) -> SearchOutcome:
    """`ask(params)`, and for a compound question also each of its parts, their rankings interleaved.

    A hit of the interleaved list is the one its first ranking showed, with that ranking's score and
    signals; the outcome's terms, dates and embedded texts are those of every ranking.
    """
    parts = [] if params.conversation else question_parts(params.query)
    whole = ask(params)
    if not parts:
        return whole
    outcomes = [whole, *(ask(params.model_copy(update={"query": part})) for part in parts)]
    shown: dict[Hashable, SearchHit] = {}
    for outcome in outcomes:
        for hit in outcome.hits:
            shown.setdefault((hit.kind, hit.id), hit)
    order = interleave([[(h.kind, h.id) for h in o.hits] for o in outcomes], params.limit)
    return SearchOutcome(
        query=params.query,
        hits=[shown[key] for key in order],
        mode=whole.mode,
        degraded=next((o.degraded for o in outcomes if o.degraded), None),
        terms=tuple(dict.fromkeys(t for o in outcomes for t in o.terms)),
        dates=tuple(dict.fromkeys(d for o in outcomes for d in o.dates)),
        embed_ms=sum(o.embed_ms for o in outcomes),
        embedded=tuple(dict.fromkeys(t for o in outcomes for t in o.embedded)),
        unembedded=whole.unembedded,
    )


def hits_of(
    rows: Rows,
    ranked: list[tuple[Key, float]],
    parts: Mapping[Hashable, dict[str, float]],
    similarity: Mapping[Hashable, float],
    evidence: Mapping[Hashable, Collection[str]],
    *,
    extracts: bool,
) -> list[SearchHit]:
    """The ranked rows as hits, best first, without superseded memories (or the dream's extracts, unless asked)."""
    narratives, turns, corrected = rows.narratives, rows.turns, rows.corrected
    hits: list[SearchHit] = []
    for (kind, row_id), score in ranked:
        contributions = {name: round(value, 4) for name, value in parts.get((kind, row_id), {}).items()}
        cosine = similarity.get((kind, row_id))
        matched = tuple(sorted(evidence.get((kind, row_id), ())))
        if kind == "narrative" and row_id in narratives:
            n = narratives[row_id]
            if n.superseded_by is not None or (not extracts and is_extract(n)):
                continue
            hits.append(
                SearchHit(
                    "narrative",
                    n.id,
                    score,
                    with_amendment(n.gesture, n.amended),
                    n.occurred_at,
                    weight=n.weight,
                    tags=n.tags,
                    signals=contributions,
                    similarity=cosine,
                    amended=n.amended,
                    evidence=matched,
                )
            )
        elif kind == "context" and row_id in turns:
            t = turns[row_id]
            hits.append(
                SearchHit(
                    "context",
                    t.id,
                    score,
                    with_amendment(t.content, corrected.get(t.id)),
                    t.created_at,
                    session_id=t.session_id,
                    speaker=t.speaker,
                    signals=contributions,
                    similarity=cosine,
                    amended=corrected.get(t.id),
                    evidence=matched,
                )
            )
    return hits


def is_extract(n: NarrativeRecord) -> bool:
    """One of the dream's extracts (`store.schema.EXTRACT_SQL`): a digest it wrote, a memory it copied from a turn."""
    return extract_row(n.narrative_type, n.origin)
