"""The signals every searcher lifts the same way from what it read: keyword views, time and speaker."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from datetime import datetime
from typing import cast

from tideline_core.domain.inputs import ConversationLine, SearchIn
from tideline_core.search.when import TimeWindow, closeness
from tideline_core.text.tokens import query_terms

MIN_CLOSENESS = 0.01  # below this a row is not "around" the time the query names
Key = tuple[str, int]
Signals = dict[str, dict[Hashable, float]]


def add_keyword_view(
    signals: dict[str, dict[Hashable, float]], kind: str, view: str, found: Sequence[tuple[int, float]]
) -> None:
    """A keyword view's candidates of `kind`, as (id, score), into `signals`."""
    signals.setdefault(view, {}).update({(kind, i): s for i, s in found})
    if kind != "context":
        # A memory has no surrounding turns: it stands as its own context, so memories and turns
        # compete on the same signals when both kinds are searched (as in the measured recipe).
        signals.setdefault("kw_ctx", {}).update({(kind, i): s for i, s in found})


def fallback_terms(params: SearchIn, lines: Sequence[ConversationLine]) -> list[str]:
    """The terms of the FTS lookup that answers when BM25 found nothing of a kind.

    BM25 only knows whole analyzed words; a single CJK character, a run of an identifier's parts
    (HybridSearchIndex holds "searchindex") or a stopword-only query still deserve an answer, which
    FTS5 (and its LIKE fallback, kept to words) gives.
    """
    return query_terms(params.query or " ".join(x.text for x in lines[-2:]))


def candidates(signals: Mapping[str, Mapping[Hashable, float]], kind: str) -> list[int]:
    """Ids of the rows of `kind` that any signal found so far, ascending."""
    keys = cast(set[Key], {key for values in signals.values() for key in values})
    return sorted(key[1] for key in keys if key[0] == kind)


def time_signal(
    windows: Sequence[TimeWindow], times: Mapping[Key, datetime], signals: dict[str, dict[Hashable, float]]
) -> None:
    """Lift the candidates (`times`: when each happened) from around a time the query names."""
    lifted: dict[Hashable, float] = {}
    for key, when in times.items():
        near = closeness(windows, when)
        if near >= MIN_CLOSENESS:
            lifted[key] = near
    if lifted:
        signals["time"] = lifted


def speaker_signal(
    named: Collection[str], spoken: Mapping[int, str], signals: dict[str, dict[Hashable, float]]
) -> None:
    """Lift the candidate turns (`spoken`: who spoke each) by a speaker the query names."""
    lifted: dict[Hashable, float] = {("context", i): 1.0 for i, sp in spoken.items() if sp in named}
    if lifted:
        signals["speaker"] = lifted


# What counts as evidence that a row bears on the query, by signal: any keyword match, a dense margin over
# unrelated texts (`reference`), a speaker the query names, a time inside a window it names.
EVIDENCE_ABOVE = {"kw": 0.0, "kw_ctx": 0.0, "dense": 0.0, "ctx": 0.0, "speaker": 0.0}
INSIDE_WINDOW = 1.0


def evidence_of(signals: Mapping[str, Mapping[Hashable, float]], *, dense: float | None) -> dict[Hashable, set[str]]:
    """The signals each candidate matched on its own; `dense`: when the dense views hold margins over the
    reference floor, the margin a row must exceed (`reference.Floors.bar`); None: a cosine is no evidence."""
    found: dict[Hashable, set[str]] = {}
    for name, values in signals.items():
        if name in ("dense", "ctx") and dense is None:
            continue
        above = EVIDENCE_ABOVE.get(name)
        if name in ("dense", "ctx") and above is not None and dense is not None:
            above = max(above, dense)
        for key, value in values.items():
            if (above is not None and value > above) or (name == "time" and value >= INSIDE_WINDOW):
                found.setdefault(key, set()).add(name)
    return found


def lifted_evidence(
    evidence: dict[Hashable, set[str]],
    parts: Mapping[Hashable, Mapping[str, float]],
    neighbours: Mapping[Hashable, Sequence[Hashable]],
) -> None:
    """Add what lifted a row beside its own signals: a join, or a neighbour that has evidence of its own."""
    own = {key for key, names in evidence.items() if names}
    for key, contributions in parts.items():
        if contributions.get("join", 0.0) > 0:
            evidence.setdefault(key, set()).add("join")
        if contributions.get("neighbour", 0.0) > 0 and own.intersection(neighbours.get(key, ())):
            evidence.setdefault(key, set()).add("neighbour")
