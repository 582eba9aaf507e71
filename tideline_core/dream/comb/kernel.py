"""The comb's pure part: candidate pairs by a plain rule, and its answer as a plan (refused whole when it names
anything it was not shown)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tideline_core.domain.inputs import NarrativeIn, ProfileIn, SelfConceptIn, ThreadIn
from tideline_core.domain.records import NarrativeRecord
from tideline_core.dream.answers import CombAnswer
from tideline_core.dream.plan import (
    AddNarrative,
    Intent,
    Plan,
    PutProfile,
    PutSelfConcept,
    PutThread,
    Rescore,
    Supersede,
)
from tideline_core.errors import InvalidInput
from tideline_core.numeric import np

DUPLICATE_SIMILARITY = 0.93
CONFLICT_SIMILARITY = 0.85
OVERLAP_DUPLICATE = 0.8  # without vectors: share of tags and entities in common
OVERLAP_CONFLICT = 0.5
MAX_PAIRS = 20


@dataclass(frozen=True)
class Pair:
    a: int
    b: int
    kind: str  # "duplicate" | "conflict"
    similarity: float
    why: str


def _marks(n: NarrativeRecord) -> set[str]:
    return {f"tag:{t.lower()}" for t in n.tags} | {f"entity:{e.lower()}" for e in n.related_entities}


def candidate_pairs(
    day: Sequence[NarrativeRecord],
    partners: Sequence[NarrativeRecord],
    vectors: Mapping[int, np.ndarray],
    *,
    limit: int = MAX_PAIRS,
) -> list[Pair]:
    """Pairs (a day's memory, another memory) sharing a tag or entity, similar enough to judge; most similar first."""
    found: dict[tuple[int, int], Pair] = {}
    pool = {n.id: n for n in [*day, *partners]}
    for n in day:
        mine = _marks(n)
        if not mine:
            continue
        for other in pool.values():
            if other.id == n.id:
                continue
            theirs = _marks(other)
            shared = mine & theirs
            if not shared:
                continue
            key = (min(n.id, other.id), max(n.id, other.id))
            if key in found:
                continue
            if n.id in vectors and other.id in vectors:
                similarity = float(np.dot(vectors[n.id], vectors[other.id]))
                duplicate, conflict = DUPLICATE_SIMILARITY, CONFLICT_SIMILARITY
            else:
                similarity = len(shared) / len(mine | theirs)
                duplicate, conflict = OVERLAP_DUPLICATE, OVERLAP_CONFLICT
            if similarity < conflict:
                continue
            kind = "duplicate" if similarity >= duplicate else "conflict"
            why = "shares " + ", ".join(sorted(m.split(":", 1)[1] for m in shared)[:5])
            found[key] = Pair(key[0], key[1], kind, round(similarity, 3), why)
    return sorted(found.values(), key=lambda p: (-p.similarity, p.a, p.b))[:limit]


def plan_comb(
    answer: CombAnswer,
    shown_ids: set[int],
    pairs: Sequence[Pair],
    thread_ids: set[int],
    records: Mapping[int, NarrativeRecord],
) -> Plan:
    """The comb's answer as a plan, refused whole (InvalidInput) when it names anything it was not shown."""
    intents: list[Intent] = []
    for i, item in enumerate(answer.reweigh):
        _shown(item.narrative_id, shown_ids, f"reweigh[{i}].narrative_id")
        intents.append(Rescore(item.narrative_id, item.importance, item.emotional, item.unresolved, item.reason))
    intents += [PutProfile(ProfileIn(entity=p.entity, kind=p.kind, content=p.content)) for p in answer.profiles]
    intents += [PutSelfConcept(SelfConceptIn(kind=c.kind, key=c.key, content=c.content)) for c in answer.self_concept]
    for i, judgement in enumerate(answer.conflicts):
        if judgement.pair >= len(pairs):
            raise InvalidInput(f"conflicts[{i}].pair", f"must be one of the {len(pairs)} candidate pairs shown")
        if not judgement.contradicts:
            continue
        pair = pairs[judgement.pair]
        note = judgement.note or f"#{pair.a} and #{pair.b} contradict each other"
        if judgement.record_as == "thread":
            intents.append(PutThread(ThreadIn(title=note[:200], content=f"Conflict between #{pair.a} and #{pair.b}")))
        else:
            intents.append(
                AddNarrative(
                    NarrativeIn(
                        gesture=note,
                        context=f"A conflict between memories #{pair.a} and #{pair.b}, found while combing.",
                        narrative_type="reflection",
                        unresolved=4,
                        tags=["conflict"],
                    ),
                    origin="llm",
                )
            )
    superseded: set[int] = set()
    for i, merge in enumerate(answer.merges):
        group = [merge.keep_id, *merge.superseded_ids]
        for j, narrative_id in enumerate(group):
            _shown(narrative_id, shown_ids, f"merges[{i}]" + (".keep_id" if j == 0 else f".superseded_ids[{j - 1}]"))
        # The newest of the group is kept, whatever the answer put first: merging never hides a later memory.
        keep = max(group, key=lambda n: (records[n].created_at, n) if n in records else (None, n))
        for narrative_id in sorted(set(group) - {keep}):
            if narrative_id not in superseded:
                superseded.add(narrative_id)
                intents.append(Supersede(narrative_id, keep))
    intents += [PutThread(ThreadIn(title=t.title, content=t.content, priority=t.priority)) for t in answer.open_threads]
    for i, close in enumerate(answer.close_threads):
        if close.thread_id not in thread_ids:
            raise InvalidInput(
                f"close_threads[{i}].thread_id", f"thread {close.thread_id} was not among the open threads shown"
            )
        intents.append(PutThread(ThreadIn(thread_id=close.thread_id, status=close.status)))
    return Plan(tuple(intents))


def _shown(narrative_id: int, shown_ids: set[int], field: str) -> None:
    if narrative_id not in shown_ids:
        raise InvalidInput(field, f"memory {narrative_id} was not among the memories shown")
