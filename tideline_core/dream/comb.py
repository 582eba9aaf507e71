"""The comb stage: the LLM re-weighs the day's memories, updates profiles, self-concept and threads, judges
conflicts and merges duplicates by supersession; candidate pairs are found by a plain rule first.

Candidate pairs (`candidate_pairs`, pure): a memory of the day and another current memory that
share a tag or a named entity, ranked by the cosine of their embeddings (or, without vectors, by
the overlap of their tags and entities). Above `DUPLICATE_SIMILARITY` a pair is shown as a
possible duplicate, above `CONFLICT_SIMILARITY` as a possible conflict: the LLM only judges, it
does not search. Everything it answers is checked against what it was shown (ids, pair indexes,
thread ids); one id it was not shown refuses the whole answer, so nothing is applied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection, select

from tideline_core.attention.store import hits_since
from tideline_core.dream.answers import CombAnswer
from tideline_core.dream.memories import day_memories, shown, since_last
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
from tideline_core.dream.registry import StageContext, StageOutput
from tideline_core.errors import InvalidInput
from tideline_core.inputs import NarrativeIn, ProfileIn, SelfConceptIn, ThreadIn
from tideline_core.records import NarrativeRecord
from tideline_core.store.embeddings import vectors_of
from tideline_core.store.narratives import load_narratives
from tideline_core.store.profiles import read_profiles, read_self_concept, read_threads
from tideline_core.store.schema import Narrative, NarrativeTag

DUPLICATE_SIMILARITY = 0.93
CONFLICT_SIMILARITY = 0.85
OVERLAP_DUPLICATE = 0.8  # without vectors: share of tags and entities in common
OVERLAP_CONFLICT = 0.5
MAX_PAIRS = 20
DESERT_DAYS = 30  # a heavy memory no search or recall hit for this long is an attention desert
MAX_PARTNERS = 400  # older memories sharing a tag or entity considered per night
NO_LLM = "no LLM configured: set TIDELINE_LLM_URL and TIDELINE_LLM_MODEL to comb the day's memories"


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


def comb(ctx: StageContext, agent_id: str) -> StageOutput:
    if ctx.ask is None:
        return StageOutput({"method": "skipped"}, skipped=NO_LLM)
    with ctx.db.read() as conn:
        since = since_last(conn, agent_id, "comb")
        day = day_memories(conn, agent_id, since)
        if not day:
            return StageOutput(
                {"memories": 0, "since": since.isoformat()}, skipped="no new memories since the last comb"
            )
        partners = _partners(conn, agent_id, day)
        vectors = (
            vectors_of(conn, "narrative", [n.id for n in [*day, *partners]], ctx.embedder.model) if ctx.embedder else {}
        )
        pairs = candidate_pairs(day, partners, vectors)
        profiles = read_profiles(conn, agent_id)
        self_concept = read_self_concept(conn, agent_id)
        threads = read_threads(conn, agent_id, status="open", limit=20) + read_threads(
            conn, agent_id, status="exploring", limit=10
        )
        deserts = _deserts(conn, agent_id, exclude={n.id for n in day})
    shown_ids = {n.id for n in day} | {n.id for n in partners if _in_pairs(n.id, pairs)} | {d["id"] for d in deserts}
    data: dict[str, Any] = {
        "memories": [shown(n) for n in day],
        "profiles": [{"entity": p.entity, "kind": p.kind, "content": p.content[:1_000]} for p in profiles][:30],
        "self_concept": [{"kind": s.kind, "key": s.key, "content": s.content[:1_000]} for s in self_concept][:10],
        "open_threads": [{"id": t.id, "title": t.title, "status": t.status, "priority": t.priority} for t in threads],
        "candidate_pairs": [
            {"pair": i, "kind": p.kind, "a": p.a, "b": p.b, "why": p.why, "similarity": p.similarity}
            for i, p in enumerate(pairs)
        ],
        "attention_deserts": deserts,
    }
    partner_shown = [shown(n) for n in partners if _in_pairs(n.id, pairs)]
    if partner_shown:
        data["earlier_memories"] = partner_shown
    answer = ctx.ask("comb", CombAnswer, data, day=ctx.day)
    records = {n.id: n for n in [*day, *partners]}
    plan = plan_comb(answer, shown_ids, pairs, {t.id for t in threads}, records)
    figures = {
        "memories": len(day),
        "candidate_pairs": len(pairs),
        "deserts": len(deserts),
        "reweighed": len(answer.reweigh),
        "profiles": len(answer.profiles),
        "self_concept": len(answer.self_concept),
        "conflicts": sum(1 for c in answer.conflicts if c.contradicts),
        "merges": sum(len(m.superseded_ids) for m in answer.merges),
        "threads_opened": len(answer.open_threads),
        "threads_closed": len(answer.close_threads),
        "model": ctx.ask.model,
        "prompts": dict(ctx.ask.versions),
    }
    return StageOutput(figures, plan=plan)


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


def _in_pairs(narrative_id: int, pairs: Sequence[Pair]) -> bool:
    return any(narrative_id in (p.a, p.b) for p in pairs)


def _partners(conn: Connection, agent_id: str, day: Sequence[NarrativeRecord]) -> list[NarrativeRecord]:
    """Earlier current memories that share a tag with the day's (the entity check is done on the records)."""
    tags = sorted({t for n in day for t in n.tags})
    day_ids = {n.id for n in day}
    if not tags:
        return []
    ids = [
        i
        for i in conn.execute(
            select(NarrativeTag.narrative_id)
            .join(Narrative, Narrative.id == NarrativeTag.narrative_id)
            .where(
                NarrativeTag.agent_id == agent_id,
                NarrativeTag.tag.in_(tags[:200]),
                Narrative.superseded_by.is_(None),
                Narrative.narrative_type.not_in(["dream", "digest"]),
            )
            .distinct()
            .order_by(NarrativeTag.narrative_id.desc())
            .limit(MAX_PARTNERS)
        ).scalars()
        if i not in day_ids
    ]
    return list(load_narratives(conn, agent_id, ids).values())


def _deserts(conn: Connection, agent_id: str, exclude: set[int], limit: int = 5) -> list[dict[str, Any]]:
    """Heavy memories nobody recalled for a month: candidates for review (a higher or lower weight, a thread)."""
    recalled = {h.narrative_id for h in hits_since(conn, agent_id, DESERT_DAYS)}
    ids = [
        i
        for i in conn.execute(
            select(Narrative.id)
            .where(
                Narrative.agent_id == agent_id,
                Narrative.superseded_by.is_(None),
                Narrative.narrative_type.not_in(["dream", "digest"]),
                Narrative.weight >= 0.6,
            )
            .order_by(Narrative.weight.desc(), Narrative.id.desc())
            .limit(200)
        ).scalars()
        if i not in recalled and i not in exclude
    ][:limit]
    found = load_narratives(conn, agent_id, ids)
    return [shown(found[i]) for i in ids if i in found]
