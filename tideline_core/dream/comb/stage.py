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

from collections.abc import Sequence
from typing import Any

from tideline_core.dream.answers import CombAnswer
from tideline_core.dream.comb.kernel import Pair, candidate_pairs, plan_comb
from tideline_core.dream.comb.store import deserts as find_deserts
from tideline_core.dream.comb.store import partners as find_partners
from tideline_core.dream.contract import StageContext, StageOutput
from tideline_core.dream.memories import day_memories, shown, since_last
from tideline_core.store.embeddings import vectors_of
from tideline_core.store.profiles import read_profiles, read_self_concept, read_threads

NO_LLM = "no LLM configured: set TIDELINE_LLM_URL and TIDELINE_LLM_MODEL to comb the day's memories"


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
        partners = find_partners(conn, agent_id, day)
        vectors = (
            vectors_of(conn, "narrative", [n.id for n in [*day, *partners]], ctx.embedder.model) if ctx.embedder else {}
        )
        pairs = candidate_pairs(day, partners, vectors)
        profiles = read_profiles(conn, agent_id)
        self_concept = read_self_concept(conn, agent_id)
        threads = read_threads(conn, agent_id, status="open", limit=20) + read_threads(
            conn, agent_id, status="exploring", limit=10
        )
        deserts = find_deserts(conn, agent_id, exclude={n.id for n in day})
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


def _in_pairs(narrative_id: int, pairs: Sequence[Pair]) -> bool:
    return any(narrative_id in (p.a, p.b) for p in pairs)
