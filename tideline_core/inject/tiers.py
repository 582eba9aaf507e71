"""Each tier's selection rule, pure: records in, candidates out, most valuable first, each with why it was chosen.

T0  identity anchor   the SOUL file, self-concept facts, the latest snapshot, open threads by
                      priority, then self-concept terrain and reflections (in that order of value)
T2  prefetch pool     narratives of weight > 0.6 that happened in the last 7 days: the 10 heaviest,
                      skipping one that shares a tag with one already kept, keeping 3
T2b context bridge    the most recent day with conversation; of its sessions, the one whose linked
                      narratives weigh most (ties: the one spoken in last); its latest 6 turns,
                      each cut to 400 characters
T3  memory map        the largest topic clusters (up to 25), pinned profiles in full, the others
                      one line per entity
T1  per-turn recall   hybrid search over narratives and turns, in its ranking, leaving out what
                      this session was already shown and every hit without evidence (a keyword,
                      a dense similarity above the reference floor, a named time or speaker, or a
                      neighbour or join from one that has it): none is there by rank alone
T4  keyword fallback  when T1 holds fewer than 2, keyword search on the query's terms, the same way
Every number is in `InjectRules`; all but `thread_limit`, `t2_pool` and `t4_below` come from settings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from tideline_core.domain.memory_text import amendment_mark, with_amendment
from tideline_core.domain.records import (
    AmendmentNote,
    ContextTurnRecord,
    NarrativeRecord,
    ProfileRecord,
    SelfConceptRecord,
    SnapshotRecord,
    ThreadRecord,
)
from tideline_core.dream.graph.others import is_entity
from tideline_core.inject.budget import Candidate
from tideline_core.text.cost import MARK

if TYPE_CHECKING:  # types only: a block's rules load neither the searcher nor the clustering
    from tideline_core.dream.recluster.store import TopicSummary
    from tideline_core.search.hits import SearchHit

OPEN_STATUSES = ("open", "exploring")
SELF_CONCEPT_VALUE = {"fact": 0, "terrain": 2, "reflection": 3}


@dataclass(frozen=True)
class InjectRules:
    session_budget: int = 2000
    turn_budget: int = 800
    t0_budget: int = 700
    t2_budget: int = 450
    t2b_budget: int = 450
    t3_budget: int = 400
    t1_budget: int = 800
    t4_budget: int = 300
    t1_limit: int = 20  # most hits a turn's recall shows
    t2_min_weight: float = 0.6
    t2_days: int = 7
    t2_pool: int = 10
    t2_keep: int = 3
    t2b_turns: int = 6
    t2b_chars: int = 400
    t3_topics: int = 25
    thread_limit: int = 3
    t4_below: int = 2  # T4 runs when T1 holds fewer than this


def day(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d")


def identity(
    soul: str | None,
    self_concept: Sequence[SelfConceptRecord],
    snapshot: SnapshotRecord | None,
    threads: Sequence[ThreadRecord],
    rules: InjectRules,
) -> list[Candidate]:
    """T0, most valuable first: SOUL, facts, the latest snapshot, open threads, terrain, reflections."""
    ranked: list[tuple[int, Candidate]] = []
    if soul and soul.strip():
        ranked.append((0, Candidate("T0", "soul", None, soul.strip(), 1.0, "SOUL file")))
    for entry in sorted(self_concept, key=lambda e: (SELF_CONCEPT_VALUE.get(e.kind, 4), e.key, e.id)):
        value = SELF_CONCEPT_VALUE.get(entry.kind, 4)
        label = entry.kind if entry.key == "main" else f"{entry.kind}/{entry.key}"
        ranked.append(
            (
                value,
                Candidate("T0", "self_concept", entry.id, f"{label}: {entry.content}", 1.0, f"self-concept {label}"),
            )
        )
    if snapshot is not None:
        mood = f", {snapshot.mood}" if snapshot.mood else ""
        text = f"last state ({day(snapshot.created_at)}{mood}): {snapshot.content}"
        ranked.append((1, Candidate("T0", "snapshot", snapshot.id, text, 1.0, "latest snapshot")))
    open_threads = sorted(
        (t for t in threads if t.status in OPEN_STATUSES), key=lambda t: (-t.priority, -t.updated_at.timestamp(), t.id)
    )
    for thread in open_threads[: rules.thread_limit]:
        text = f"open thread (priority {thread.priority}): {thread.title}" + (
            f" — {thread.content}" if thread.content else ""
        )
        ranked.append((1, Candidate("T0", "thread", thread.id, text, thread.priority / 5, f"{thread.status} thread")))
    # sorted() is stable: within a value, the order above (snapshot before threads, threads by priority).
    return [candidate for _value, candidate in sorted(ranked, key=lambda pair: pair[0])]


def narrative_line(record: NarrativeRecord) -> str:
    """A narrative as one line: when, what happened, what made it stick or where it led, and its latest amendment."""
    detail = record.moment or record.cognition_direction or record.context
    text = f"{day(record.occurred_at)} {record.gesture}"
    return with_amendment(f"{text} — {detail}" if detail else text, record.amended)


def prefetch_pool(narratives: Sequence[NarrativeRecord], since: datetime, rules: InjectRules) -> list[Candidate]:
    """T2: heavy, recent memories, not two on the same tag."""
    recent = [n for n in narratives if n.weight > rules.t2_min_weight and n.occurred_at >= since]
    pool = sorted(recent, key=lambda n: (-n.weight, -n.occurred_at.timestamp(), -n.id))[: rules.t2_pool]
    kept: list[Candidate] = []
    seen_tags: set[str] = set()
    for record in pool:
        if len(kept) >= rules.t2_keep:
            break
        if seen_tags.intersection(record.tags):
            continue
        seen_tags.update(record.tags)
        reason = f"weight {record.weight:.2f}, happened {day(record.occurred_at)}"
        line, mark = narrative_line(record), amendment_mark(record.amended)
        kept.append(Candidate("T2", "narrative", record.id, line, record.weight, reason, tail=mark))
    return kept


def bridge_session(turns: Sequence[ContextTurnRecord], linked_weight: Mapping[str, float]) -> str | None:
    """T2b's session among `turns` (those of the most recent day with conversation): heaviest linked narratives,
    then the one spoken in last."""
    if not turns:
        return None
    last_spoken: dict[str, tuple[datetime, int]] = {}
    for turn in turns:
        last_spoken[turn.session_id] = max(
            last_spoken.get(turn.session_id, (turn.created_at, turn.id)), (turn.created_at, turn.id)
        )
    return max(last_spoken, key=lambda s: (linked_weight.get(s, 0.0), last_spoken[s]))


def bridge(
    turns: Sequence[ContextTurnRecord],
    linked_weight: Mapping[str, float],
    rules: InjectRules,
    corrections: Mapping[int, AmendmentNote] | None = None,
) -> tuple[str | None, list[Candidate]]:
    """T2b: the chosen session and its latest turns, in spoken order, each cut to the character limit and followed
    by the latest amendment of a memory written from it (`corrections`, by turn id)."""
    session = bridge_session(turns, linked_weight)
    if session is None:
        return None, []
    chosen = sorted((t for t in turns if t.session_id == session), key=lambda t: (t.created_at, t.id))
    latest = chosen[max(0, len(chosen) - rules.t2b_turns) :]
    if not latest:
        return session, []
    weight = linked_weight.get(session, 0.0)
    why = f"session {session or '(none)'} of {day(latest[-1].created_at)}" + (
        f", linked memories weigh {weight:.2f}" if weight else ", spoken in last"
    )
    out = []
    for turn in latest:
        content = " ".join(turn.content.split())
        if len(content) > rules.t2b_chars:
            content = content[: rules.t2b_chars].rstrip() + MARK
        corrected = (corrections or {}).get(turn.id)
        line = with_amendment(f"{turn.speaker or turn.role}: {content}", corrected)
        out.append(Candidate("T2b", "turn", turn.id, line, 1.0, why, tail=amendment_mark(corrected)))
    return session, out


def memory_map(
    topics: Sequence[TopicSummary],
    profiles: Sequence[ProfileRecord],
    agent_id: str,
    rules: InjectRules,
    own: Collection[str] = (),
) -> list[Candidate]:
    """T3: pinned profiles (and the agent's own) in full, the topics by size, then other entities one line each.

    Other entities are others (`others.is_entity`): no speaker role, pronoun or contraction, none of `own`
    (the agent's and its user's names).
    """
    out: list[Candidate] = []
    full = [p for p in profiles if p.pinned or p.entity == agent_id]
    for profile in sorted(full, key=lambda p: (p.entity, p.kind)):
        text = f"{profile.entity} ({profile.kind}): {profile.content}"
        out.append(
            Candidate("T3", "profile", profile.id, text, 1.0, "pinned profile" if profile.pinned else "own profile")
        )
    for topic in sorted(topics, key=lambda t: -t.size)[: rules.t3_topics]:
        text = f"topic {topic.label} ({topic.size} memories)"
        out.append(Candidate("T3", "topic", None, text, float(topic.size), "recurring topic"))
    by_entity: dict[str, list[ProfileRecord]] = defaultdict(list)
    for profile in profiles:
        if profile not in full and is_entity(profile.entity, own, agent_id):
            by_entity[profile.entity].append(profile)
    for entity in sorted(by_entity):
        kinds = ", ".join(sorted(p.kind for p in by_entity[entity]))
        first = min(by_entity[entity], key=lambda p: p.kind)
        summary = first.content.split("\n", 1)[0]
        text = f"{entity} — known: {kinds}; {summary}"
        out.append(Candidate("T3", "profile", first.id, text, 0.5, "profile summary"))
    return out


def hit_line(hit: SearchHit) -> str:
    """A search hit as one line: a turn with its session, date and speaker; a memory with its date (its text ends in
    its latest amendment, marked)."""
    when = day(hit.occurred_at) if hit.occurred_at else ""
    text = " ".join(hit.text.split())
    if hit.kind == "context":
        who = f" {hit.speaker}" if hit.speaker else ""
        session = f"{hit.session_id} " if hit.session_id else ""
        return f"[{session}{when}{who}] {text}"
    return f"[memory {when}] {text}"


def why_hit(hit: SearchHit) -> str:
    """The signals that ranked a hit, strongest first (e.g. 'dense 0.41 + kw 0.22'); else the evidence it matched."""
    strongest = sorted(hit.signals.items(), key=lambda pair: -pair[1])[:3]
    return " + ".join(f"{name} {value:.2f}" for name, value in strongest if value > 0) or " + ".join(hit.evidence)


def recall(
    hits: Sequence[SearchHit], shown: Collection[tuple[str, int]], tier: str, rules: InjectRules
) -> list[Candidate]:
    """T1 (or T4): the hits with evidence in their ranking, leaving out what this session was already shown."""
    kind_of = {"narrative": "narrative", "context": "turn"}
    out = []
    for hit in hits:
        kind = kind_of[hit.kind]
        if (kind, hit.id) in shown or not hit.evidence:
            continue
        out.append(
            Candidate(tier, kind, hit.id, hit_line(hit), hit.score, why_hit(hit), tail=amendment_mark(hit.amended))
        )
        if len(out) == rules.t1_limit:
            break
    return out
