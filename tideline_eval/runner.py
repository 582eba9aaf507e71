"""Load a benchmark through the service's write path, embed it, and ask every question through its search."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from tideline_core.domain.inputs import (
    MAX_CONVERSATION,
    MAX_LINE,
    MAX_QUERY,
    ContextTurnIn,
    ConversationLine,
    NarrativeIn,
    PrefetchIn,
    SearchIn,
)
from tideline_core.service import Service
from tideline_eval import locomo, madial, memdaily
from tideline_eval.metrics import dedupe, mean, percentile, recall_at

Progress = Callable[[str, int, int], None]
Hit = tuple[str, int]  # (kind, id) of one search hit
# What a narrative hit stands for in LoCoMo: the sessions of the turns it links to, by (agent, narrative id).
NarrativeSessions = Callable[[str, int], Sequence[str]]
# Where a narrative came from in MADial: the dialogue it was solidified from, "" for the benchmark's memories.
NarrativeOrigin = Callable[[str, int], str]
OTHER = ""  # a ranked hit that is no gold id of any question (a narrative in turn recall, a dream memory in MADial)
OWN_MARGIN = 10  # hits asked beyond the depth, standing in for a dialogue's own narratives dropped from its ranking


def _quiet(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class QuestionScore:
    """One question's recall at each cut-off (no session recall in MADial) and how many of its hits the dream wrote."""

    recall: dict[int, float]
    session_recall: dict[int, float]
    dream_hits: int  # of the top max(k) hits, the memories the dream wrote


@dataclass(frozen=True)
class ModeResult:
    mode: str
    questions: int
    recall: dict[int, float]
    session_recall: dict[int, float] = field(default_factory=dict)
    per_category: dict[int, dict[int, float]] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)
    scores: tuple[QuestionScore, ...] = ()  # per question, in the order asked (not in the JSON figures)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "turn_recall": {str(k): round(v, 4) for k, v in self.recall.items()},
            "latency_ms": {k: round(v, 2) for k, v in self.latency_ms.items()},
            "questions": self.questions,
        }
        if self.session_recall:
            out["session_recall"] = {str(k): round(v, 4) for k, v in self.session_recall.items()}
        if self.per_category:
            out["per_category"] = {
                str(c): {str(k): round(v, 4) for k, v in row.items()} for c, row in sorted(self.per_category.items())
            }
        return out


def embed_all(service: Service, agents: Sequence[str], progress: Progress, batch_size: int = 64) -> None:
    """Embed every pending row (of every agent, oldest first), reporting progress as batches complete.

    One pass over all agents rather than one per agent: the local engine's int8 activation scale is
    set per model pass, so a vector depends a little on the texts that share its batch, and the
    figures are comparable only when the batches are.
    """
    if not service.embeds:
        return  # a keyword-only deployment (TIDELINE_EMBEDDER=none) keeps no vectors
    total = sum(service.status(agent).embeddings_pending for agent in agents)
    done = 0
    progress("embedding", 0, total)
    while (report := service.embed_pending(None, batch_size=batch_size, max_batches=1)).embedded:
        done += report.embedded
        progress("embedding", done, total)


@dataclass
class _Clock:
    """Each query's whole time, and the part of it spent in the model pass over the query."""

    total: list[float] = field(default_factory=list)
    model: list[float] = field(default_factory=list)

    def timed_search(self, service: Service, agent: str, params: SearchIn) -> list[Hit]:
        started = time.perf_counter()
        outcome = service.search(agent, params)
        self.total.append((time.perf_counter() - started) * 1000)
        self.model.append(outcome.embed_ms)
        return [(h.kind, h.id) for h in outcome.hits]

    def latency_ms(self) -> dict[str, float]:
        """p50/p95 of the whole query; also of the query embedding and of the rest (the engine's own work)."""
        rest = [t - m for t, m in zip(self.total, self.model, strict=True)]
        return {
            "p50": percentile(self.total, 50),
            "p95": percentile(self.total, 95),
            "embed_p50": percentile(self.model, 50),
            "embed_p95": percentile(self.model, 95),
            "rest_p50": percentile(rest, 50),
            "rest_p95": percentile(rest, 95),
        }


def _query(text: str) -> str:
    # Keep the end of an over-long query: in a dialogue the latest lines matter most.
    return text[-MAX_QUERY:]


@dataclass(frozen=True)
class InjectResult:
    """How much of each question's evidence the per-turn block holds, and what the block costs."""

    questions: int
    budget: int
    evidence_recall: float
    tokens_mean: float
    tokens_p95: float
    items_mean: float
    latency_ms: dict[str, float]

    def as_json(self) -> dict[str, object]:
        return {
            "questions": self.questions,
            "budget": self.budget,
            "evidence_recall": round(self.evidence_recall, 4),
            "tokens_mean": round(self.tokens_mean, 1),
            "tokens_p95": self.tokens_p95,
            "items_mean": round(self.items_mean, 2),
            "latency_ms": {k: round(v, 2) for k, v in self.latency_ms.items()},
        }


def _inject_result(blocks: Sequence[tuple[float, int, int, float]], budget: int) -> InjectResult:
    """From (evidence recall, tokens, items, ms) per question."""
    ms = [b[3] for b in blocks]
    return InjectResult(
        questions=len(blocks),
        budget=budget,
        evidence_recall=mean([b[0] for b in blocks]),
        tokens_mean=mean([float(b[1]) for b in blocks]),
        tokens_p95=percentile([float(b[1]) for b in blocks], 95),
        items_mean=mean([float(b[2]) for b in blocks]),
        latency_ms={"p50": percentile(ms, 50), "p95": percentile(ms, 95)},
    )


def run_locomo(
    service: Service,
    conversations: Sequence[locomo.Conversation],
    modes: Sequence[str],
    ks: Sequence[int],
    progress: Progress = _quiet,
) -> dict[str, ModeResult]:
    """Turn- and session-level recall@k of each search mode over categories 1–4."""
    return ask_locomo(service, conversations, load_locomo(service, conversations, progress), modes, ks, progress)


def load_locomo(
    service: Service, conversations: Sequence[locomo.Conversation], progress: Progress = _quiet
) -> dict[tuple[str, int], str]:
    """Every turn through the service's write path, embedded; (conversation, turn id) → LoCoMo's dia_id."""
    dia_of: dict[tuple[str, int], str] = {}
    total_turns = sum(len(c.turns) for c in conversations)
    loaded = 0
    for conv in conversations:
        turns = [
            ContextTurnIn(
                role="user",
                speaker=t.speaker,
                content=t.text,
                session_id=f"{conv.sample_id}:{locomo.session_of(t.dia_id)}",
                metadata={"dia_id": t.dia_id},
                created_at=t.at,
            )
            for t in conv.turns
        ]
        recorded = service.record_turns(conv.sample_id, turns)
        dia_of.update({(conv.sample_id, i): t.dia_id for i, t in zip(recorded.ids, conv.turns, strict=True)})
        loaded += len(turns)
        progress("loading", loaded, total_turns)
    embed_all(service, [conv.sample_id for conv in conversations], progress)
    return dia_of


def _no_narratives(agent: str, narrative_id: int) -> Sequence[str]:
    raise AssertionError(f"narrative {narrative_id} of {agent} found, but only turns were searched")


def ask_locomo(
    service: Service,
    conversations: Sequence[locomo.Conversation],
    dia_of: dict[tuple[str, int], str],
    modes: Sequence[str],
    ks: Sequence[int],
    progress: Progress = _quiet,
    *,
    kinds: str = "context",
    sessions_of: NarrativeSessions = _no_narratives,
) -> dict[str, ModeResult]:
    """Turn and session recall@k of each mode; with `kinds` "all" narratives compete for the places too.

    A narrative hit takes a place in the ranking but hits no evidence turn (turn recall counts the
    turns shown, and a digest links every turn of its session); it stands for the sessions of the
    turns it links to in session recall (`sessions_of`).
    """
    depth = max(ks)
    results: dict[str, ModeResult] = {}
    for mode in modes:
        # No mode pays with the query vectors another mode computed.
        service.searcher.forget_queries()
        recalls: dict[int, list[float]] = defaultdict(list)
        sessions: dict[int, list[float]] = defaultdict(list)
        by_category: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        scores: list[QuestionScore] = []
        clock = _Clock()
        questions = [(conv, q) for conv in conversations for q in conv.questions]
        for number, (conv, question) in enumerate(questions, 1):
            hits = clock.timed_search(
                service,
                conv.sample_id,
                SearchIn(query=_query(question.question), limit=depth, kinds=kinds, mode=mode),  # type: ignore[arg-type]
            )
            ranked = [dia_of[(conv.sample_id, i)] if kind == "context" else OTHER for kind, i in hits]
            ranked_sessions = dedupe(
                [
                    session
                    for (kind, i), dia in zip(hits, ranked, strict=True)
                    for session in ([locomo.session_of(dia)] if kind == "context" else sessions_of(conv.sample_id, i))
                ]
            )
            gold_sessions = [locomo.session_of(d) for d in question.evidence]
            turn_row = {k: recall_at(ranked, question.evidence, k) for k in ks}
            session_row = {k: recall_at(ranked_sessions, gold_sessions, k) for k in ks}
            for k in ks:
                recalls[k].append(turn_row[k])
                by_category[question.category][k].append(turn_row[k])
                sessions[k].append(session_row[k])
            scores.append(QuestionScore(turn_row, session_row, sum(kind != "context" for kind, _ in hits)))
            if number % 25 == 0 or number == len(questions):
                progress(f"asking ({mode})", number, len(questions))
        results[mode] = ModeResult(
            mode=mode,
            questions=len(clock.total),
            recall={k: mean(v) for k, v in recalls.items()},
            session_recall={k: mean(v) for k, v in sessions.items()},
            per_category={c: {k: mean(v) for k, v in row.items()} for c, row in by_category.items()},
            latency_ms=clock.latency_ms(),
            scores=tuple(scores),
        )
    return results


def inject_locomo(
    service: Service,
    conversations: Sequence[locomo.Conversation],
    dia_of: dict[tuple[str, int], str],
    budget: int | None,
    progress: Progress = _quiet,
) -> InjectResult:
    """For every question (the query), the per-turn block: the share of its evidence turns inside, and its size."""
    service.searcher.forget_queries()
    questions = [(conv, q) for conv in conversations for q in conv.questions]
    blocks: list[tuple[float, int, int, float]] = []
    for number, (conv, question) in enumerate(questions, 1):
        started = time.perf_counter()
        block = service.prefetch(conv.sample_id, PrefetchIn(query=_query(question.question), budget=budget))
        took = (time.perf_counter() - started) * 1000
        shown = [dia_of[(conv.sample_id, i.id)] for i in block.items if i.kind == "turn" and i.id is not None]
        blocks.append((recall_at(shown, question.evidence, len(shown) or 1), block.tokens, len(block.items), took))
        if number % 25 == 0 or number == len(questions):
            progress("per-turn blocks", number, len(questions))
    return _inject_result(blocks, budget or service.inject.rules.turn_budget)


def load_memdaily(
    service: Service, pools: Sequence[memdaily.Pool], progress: Progress = _quiet
) -> dict[tuple[str, int], str]:
    """Each file one agent, each trajectory one session of user turns, embedded; (agent, turn id) → turn key."""
    key_of: dict[tuple[str, int], str] = {}
    total = sum(len(p.turns) for p in pools)
    for pool in pools:
        by_trajectory: dict[int, list[memdaily.Turn]] = defaultdict(list)
        for turn in pool.turns:
            by_trajectory[turn.trajectory].append(turn)
        for trajectory, turns in by_trajectory.items():
            items = [
                ContextTurnIn(
                    role="user",
                    content=t.text,
                    session_id=f"{pool.name}:{trajectory}",
                    metadata={"memdaily": t.key, "place": t.place},
                    created_at=t.at,
                )
                for t in turns
            ]
            recorded = service.record_turns(pool.agent, items)
            key_of.update({(pool.agent, i): t.key for i, t in zip(recorded.ids, turns, strict=True)})
            progress("loading", len(key_of), total)
    embed_all(service, [p.agent for p in pools], progress)
    return key_of


def ask_memdaily(
    service: Service,
    pools: Sequence[memdaily.Pool],
    key_of: dict[tuple[str, int], str],
    modes: Sequence[str],
    ks: Sequence[int],
    progress: Progress = _quiet,
) -> dict[str, ModeResult]:
    """Turn and session (trajectory) recall@k of every question, as LoCoMo's are scored; `restrict` picks a subset."""
    asked = [
        locomo.Conversation(pool.agent, (), tuple(locomo.Question(q.text, q.evidence, 0) for q in pool.questions))
        for pool in pools
    ]
    return ask_locomo(service, asked, key_of, modes, ks, progress)


def restrict(result: ModeResult, chosen: Sequence[bool]) -> ModeResult:
    """The recall over the chosen questions only (one flag per question, in the order asked); no latency, which
    was measured over every question asked."""
    scores = [s for s, keep in zip(result.scores, chosen, strict=True) if keep]
    return ModeResult(
        mode=result.mode,
        questions=len(scores),
        recall={k: mean([s.recall[k] for s in scores]) for k in result.recall},
        session_recall={k: mean([s.session_recall[k] for s in scores]) for k in result.session_recall},
        scores=tuple(scores),
    )


def _memory_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return None


def conversation_of(dialogue: madial.Dialogue) -> list[ConversationLine]:
    """The dialogue before the test turn as conversation lines (the newest the search accepts)."""
    lines = []
    for raw in dialogue.query_lines[-MAX_CONVERSATION:]:
        speaker, text = madial.parse_line(raw)
        if text:
            lines.append(
                ConversationLine(speaker=speaker[:128], text=text[:MAX_LINE], is_self=speaker == madial.SELF_SPEAKER)
            )
    return lines


def agent_of_user(user: str) -> str:
    return f"madial-user-{user}"


def run_madial(
    service: Service,
    memories: Sequence[madial.Memory],
    dialogues: Sequence[madial.Dialogue],
    modes: Sequence[str],
    ks: Sequence[int],
    progress: Progress = _quiet,
) -> dict[str, ModeResult]:
    """Recall@k of each search mode: each user's event memories as narratives, each dialogue a query."""
    return ask_madial(service, dialogues, load_madial(service, memories, progress), modes, ks, progress)


def load_madial(
    service: Service, memories: Sequence[madial.Memory], progress: Progress = _quiet
) -> dict[tuple[str, int], str]:
    """Each user's event memories as narratives, embedded; (agent, narrative id) → MADial's memory id."""
    memory_of: dict[tuple[str, int], str] = {}
    for number, memory in enumerate(memories, 1):
        agent = agent_of_user(memory.user)
        when = _memory_time(memory.time)
        # A date is when the event happened (occurred_at), not a description of the moment; only a
        # time that is not a date is kept as text.
        data = NarrativeIn(
            gesture=memory.event,
            context=memory.scene,
            moment="" if when else memory.time,
            tags=[t for t in (memory.emotion,) if t],
            occurred_at=when,
        )
        written = service.write_narrative(agent, data)
        memory_of[(agent, written.id)] = memory.id
        progress("loading", number, len(memories))
    embed_all(service, sorted({agent for agent, _ in memory_of}), progress)
    return memory_of


def ask_madial(
    service: Service,
    dialogues: Sequence[madial.Dialogue],
    memory_of: dict[tuple[str, int], str],
    modes: Sequence[str],
    ks: Sequence[int],
    progress: Progress = _quiet,
    *,
    origin_of: NarrativeOrigin | None = None,
) -> dict[str, ModeResult]:
    """Recall@k of the benchmark's memories for each dialogue; any other narrative only takes a place.

    With `origin_of` (the dialogues were also recorded and solidified), a dialogue's search leaves
    out the narratives solidified from that same dialogue: they would repeat the query back.
    """
    depth = max(ks)
    results: dict[str, ModeResult] = {}
    for mode in modes:
        service.searcher.forget_queries()
        recalls: dict[int, list[float]] = defaultdict(list)
        scores: list[QuestionScore] = []
        clock = _Clock()
        for number, dialogue in enumerate(dialogues, 1):
            agent = agent_of_user(dialogue.user)
            # The dialogue goes in as a conversation, as an agent would pass its recent turns.
            limit = depth + (OWN_MARGIN if origin_of else 0)
            params = SearchIn(conversation=conversation_of(dialogue), limit=limit, kinds="narratives", mode=mode)  # type: ignore[arg-type]
            hits = clock.timed_search(service, agent, params)
            if origin_of is not None:
                # The benchmark's memories always stay; a dream memory of this very dialogue would repeat it back.
                hits = [h for h in hits if (agent, h[1]) in memory_of or origin_of(agent, h[1]) != dialogue.id][:depth]
            ranked = [memory_of.get((agent, i), OTHER) for _, i in hits]
            row = {k: recall_at(ranked, dialogue.relevant, k) for k in ks}
            for k in ks:
                recalls[k].append(row[k])
            scores.append(QuestionScore(row, {}, sum((agent, i) not in memory_of for _, i in hits)))
            if number % 20 == 0 or number == len(dialogues):
                progress(f"asking ({mode})", number, len(dialogues))
        results[mode] = ModeResult(
            mode=mode,
            questions=len(clock.total),
            recall={k: mean(v) for k, v in recalls.items()},
            latency_ms=clock.latency_ms(),
            scores=tuple(scores),
        )
    return results


def inject_madial(
    service: Service,
    dialogues: Sequence[madial.Dialogue],
    memory_of: dict[tuple[str, int], str],
    budget: int | None,
    progress: Progress = _quiet,
) -> InjectResult:
    """For every dialogue (as recent_turns), the per-turn block: the share of its relevant memories inside, its size."""
    service.searcher.forget_queries()
    blocks: list[tuple[float, int, int, float]] = []
    for number, dialogue in enumerate(dialogues, 1):
        agent = agent_of_user(dialogue.user)
        started = time.perf_counter()
        block = service.prefetch(agent, PrefetchIn(conversation=conversation_of(dialogue), budget=budget))
        took = (time.perf_counter() - started) * 1000
        shown = [memory_of[(agent, i.id)] for i in block.items if i.kind == "narrative" and i.id is not None]
        blocks.append((recall_at(shown, dialogue.relevant, len(shown) or 1), block.tokens, len(block.items), took))
        if number % 20 == 0 or number == len(dialogues):
            progress("per-turn blocks", number, len(dialogues))
    return _inject_result(blocks, budget or service.inject.rules.turn_budget)


def published_recall(
    published: dict[str, dict[str, tuple[list[str], list[str]]]],
    dialogues: Sequence[madial.Dialogue],
    ks: Sequence[int],
) -> dict[str, dict[int, float]]:
    """The benchmark authors' own top-20 runs scored the same way, over the same dialogues."""
    wanted = {d.id for d in dialogues}
    table: dict[str, dict[int, float]] = {}
    for system, runs in published.items():
        rows = [(top, gold) for dialogue_id, (top, gold) in runs.items() if dialogue_id in wanted and gold]
        table[system] = {k: mean([recall_at(top, gold, k) for top, gold in rows]) for k in ks if k <= 20}
    return table
