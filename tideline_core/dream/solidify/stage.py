"""The solidify stage over the store: the scanner's chunks become narratives, each touched session a digest.

Chunks are taken in the order of their turns' ids. With an LLM, each chunk is asked for 0–3
memories (`prompts/solidify.md`) and each touched session for a digest (`prompts/digest.md`);
without one, the extractive solidifier picks them from the text (salience, and the turns'
embeddings when there are any). Every memory links to its chunk's turns; a digest to its session's.

The watermark moves past the turns handled, and only those: when the token budget runs out
midway, the chunks done so far are applied with the watermark just past them, and the rest waits
for the next run. An answer that breaks its schema or names turns outside its chunk fails the
stage, and nothing of it is applied.

A session solidified again later (it went on another day) gets a new digest of all its turns; the
earlier digest is superseded by it, and stays readable.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tideline_core.domain.inputs import MAX_GESTURE, MAX_LIST, NarrativeIn
from tideline_core.dream.answers import DigestAnswer, SolidifyAnswer
from tideline_core.dream.contract import StageContext, StageOutput
from tideline_core.dream.plan import AddNarrative, Intent, MoveWatermark, Plan
from tideline_core.dream.scan.scanner import Chunk, TurnRow
from tideline_core.dream.scan.store import scan_agent
from tideline_core.dream.solidify.extractive import (
    digest_text,
    extract_digest,
    extract_memories,
    named_people,
    turn_centrality,
)
from tideline_core.dream.solidify.store import earlier_digests, session_turns, undigested_sessions
from tideline_core.errors import BudgetExhausted, InvalidInput
from tideline_core.store.embeddings import vectors_of
from tideline_core.text.dates import as_utc

log = logging.getLogger(__name__)

MAX_DIGEST_TURNS = 200  # the newest turns of a long session a digest is written from
TURN_CHARS = 2_000  # one turn's text as shown to the LLM


@dataclass(frozen=True)
class _Digested:
    session_id: str
    intents: tuple[Intent, ...]


def solidify(ctx: StageContext, agent_id: str) -> StageOutput:
    report = scan_agent(ctx.db, agent_id)
    chunks = sorted(report.chunks + report.short_chunks, key=lambda c: max(c.turn_ids))
    fresh_ids = sorted(i for c in chunks for i in c.turn_ids)
    method = "extractive" if ctx.ask is None else "llm"
    centrality = _centrality(ctx, chunks) if ctx.ask is None else {}
    intents: list[Intent] = []
    handled: list[Chunk] = []
    stopped = ""
    memories = 0
    short = {id(c) for c in report.short_chunks}
    try:
        for chunk in chunks:
            if id(chunk) in short:
                handled.append(chunk)  # too short to judge alone: it goes into its session's digest
                continue
            written = _chunk_memories(ctx, agent_id, chunk, centrality)
            intents += written
            memories += len(written)
            handled.append(chunk)
        with ctx.db.read() as conn:
            waiting = undigested_sessions(conn, agent_id, report.watermark_before)
        sessions = sorted({c.session_id for c in handled} | set(waiting))
        digests = [_digest(ctx, agent_id, session) for session in sessions]
    except BudgetExhausted as exc:
        stopped = str(exc)
        # The chunks done so far stand; digests wait until their sessions are solidified whole.
        digests = []
    for digested in digests:
        intents += digested.intents
    mark = _watermark(fresh_ids, {i for c in handled for i in c.turn_ids}, report.watermark_before)
    if mark > report.watermark_before:
        intents.append(MoveWatermark(mark))
    figures: dict[str, Any] = {
        "method": method,
        "chunks": len(report.chunks),
        "short_chunks": len(report.short_chunks),
        "chunks_handled": len(handled),
        "memories": memories,
        "digests": len(digests),
        "watermark": report.watermark_before,
        "watermark_after": mark,
    }
    if ctx.ask is not None:
        figures.update(model=ctx.ask.model, prompts=dict(ctx.ask.versions), questions=ctx.ask.questions)
    if stopped:
        figures["stopped"] = stopped
    return StageOutput(figures, plan=Plan(tuple(intents)))


def _watermark(fresh_ids: Sequence[int], handled: set[int], before: int) -> int:
    """The highest id below which every fresh turn was handled: the next run starts right after it."""
    mark = before
    for turn_id in fresh_ids:
        if turn_id not in handled:
            break
        mark = turn_id
    return mark


def _centrality(ctx: StageContext, chunks: Sequence[Chunk]) -> dict[int, float]:
    if ctx.embedder is None:
        return {}
    with ctx.db.read() as conn:
        vectors = vectors_of(conn, "context", [i for c in chunks for i in c.turn_ids], ctx.embedder.model)
    central: dict[int, float] = {}
    for chunk in chunks:
        mine = {i: vectors[i] for i in chunk.turn_ids if i in vectors}
        if len(mine) >= 2:
            central.update(turn_centrality(mine))
    return central


def _chunk_memories(ctx: StageContext, agent_id: str, chunk: Chunk, centrality: dict[int, float]) -> list[Intent]:
    if ctx.ask is None:
        return [
            AddNarrative(
                NarrativeIn(
                    gesture=m.gesture,
                    context=m.context,
                    tags=list(m.tags),
                    related_entities=list(m.related_entities),
                    entities_role=m.entities_role,
                    source_links=list(m.source_turns)[:MAX_LIST],
                    narrative_type=m.narrative_type,  # type: ignore[arg-type]
                    occurred_at=m.occurred_at,
                ),
                origin="extractive",
            )
            for m in extract_memories(chunk, centrality=centrality, known_persons=ctx.known_persons)
        ]
    answer = ctx.ask("solidify", SolidifyAnswer, {"session": chunk.session_id, "turns": _turns_data(chunk.turns)})
    allowed = set(chunk.turn_ids)
    intents: list[Intent] = []
    for number, memory in enumerate(answer.memories):
        outside = sorted(set(memory.source_turns) - allowed)
        if outside:
            raise InvalidInput(
                f"memories[{number}].source_turns", f"turn ids {outside} are not in the chunk shown ({chunk.turn_ids})"
            )
        first = min(memory.source_turns)
        when = next(t.created_at for t in chunk.turns if t.id == first)
        intents.append(
            AddNarrative(
                NarrativeIn(
                    **memory.model_dump(exclude={"source_turns"}),
                    source_links=sorted(set(memory.source_turns)),
                    occurred_at=as_utc(when),
                ),
                origin="llm",
            )
        )
    return intents


def _turns_data(turns: Sequence[TurnRow]) -> list[dict[str, Any]]:
    return [
        {
            "id": t.id,
            "time": as_utc(t.created_at).strftime("%Y-%m-%d %H:%M UTC"),
            "speaker": t.speaker or t.role,
            "text": t.content[:TURN_CHARS],
        }
        for t in turns
    ]


def _digest(ctx: StageContext, agent_id: str, session_id: str) -> _Digested:
    with ctx.db.read() as conn:
        turns = session_turns(conn, agent_id, session_id, MAX_DIGEST_TURNS)
        earlier = earlier_digests(conn, agent_id, [t.id for t in turns])
        vectors = vectors_of(conn, "context", [t.id for t in turns], ctx.embedder.model) if ctx.embedder else {}
    if not turns:
        return _Digested(session_id, ())
    if ctx.ask is None:
        extracted = extract_digest(
            session_id,
            turns,
            centrality=turn_centrality(vectors) if len(vectors) >= 2 else None,
            known_persons=ctx.known_persons,
        )
        gesture, context, moment, direction = digest_text(extracted)
        tags = list(extracted.tags)
        related = named_people(extracted.who)
        origin = "extractive"
    else:
        answer = ctx.ask("digest", DigestAnswer, {"session": session_id, "turns": _turns_data(turns)})
        gesture, context, moment, direction = _digest_fields(answer, turns)
        tags = list(answer.tags)
        related = named_people(answer.who)
        origin = "llm"
    data = NarrativeIn(
        gesture=gesture[:MAX_GESTURE],
        context=context,
        moment=moment,
        cognition_direction=direction,
        tags=tags[:8],
        related_entities=[r[:128] for r in related][:16],
        narrative_type="digest",
        occurred_at=as_utc(turns[-1].created_at),
    )
    digest = AddNarrative(data, origin=origin, links=tuple(t.id for t in turns), supersedes=tuple(earlier))
    return _Digested(session_id, (digest,))


def _digest_fields(answer: DigestAnswer, turns: Sequence[TurnRow]) -> tuple[str, str, str, str]:
    start, end = as_utc(turns[0].created_at), as_utc(turns[-1].created_at)
    span = f"{start:%Y-%m-%d %H:%M}–{end:%Y-%m-%d %H:%M} UTC"
    who = ", ".join(answer.who)
    context = f"{who} · {span}" if who else span
    decisions = "; ".join(answer.decisions)
    questions = "; ".join(answer.open_questions)
    return answer.what, context, decisions, questions
