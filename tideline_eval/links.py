"""Source-link inference measured on LoCoMo: each `observation` fact written without links, the scan infers them.

A LoCoMo sample's `observation` holds, per session and speaker, facts with the dia_id(s) of the
turns each comes from. The conversation is recorded as the other LoCoMo evaluations record it
(speaker, session, time); each fact becomes a memory without source links, occurred at its
session's time; everything is embedded and the dream's scan runs through the service, on the
record, as a user's would. An inferred link is right when it points at one of the fact's own
turns or a turn next to one in the same session (a fact often rests on a question and its
answer). Precision is over links, coverage over facts (a fact with at least one link).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from tideline_core.domain.inputs import MAX_GESTURE, NarrativeIn
from tideline_core.errors import InvalidInput
from tideline_core.service import Service
from tideline_core.store.schema import NarrativeSource
from tideline_eval import locomo
from tideline_eval.runner import Progress, embed_all, load_locomo


def _quiet(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class Fact:
    text: str
    speaker: str
    session: str  # "D3"
    evidence: tuple[str, ...]  # dia_ids


@dataclass(frozen=True)
class LinkScore:
    """One conversation's (or all of them together) inferred links against the facts' own turns."""

    facts: int
    linked: int  # facts with at least one inferred link
    links: int
    right: int  # links to a fact's own turn or its neighbour in the session
    exact: int = 0  # links to one of the fact's own turns

    @property
    def exact_precision(self) -> float:
        return self.exact / self.links if self.links else 0.0

    @property
    def precision(self) -> float:
        return self.right / self.links if self.links else 0.0

    @property
    def coverage(self) -> float:
        return self.linked / self.facts if self.facts else 0.0

    def __add__(self, other: LinkScore) -> LinkScore:
        return LinkScore(
            self.facts + other.facts,
            self.linked + other.linked,
            self.links + other.links,
            self.right + other.right,
            self.exact + other.exact,
        )

    def as_json(self) -> dict[str, object]:
        return {
            "facts": self.facts,
            "facts_linked": self.linked,
            "links": self.links,
            "links_right": self.right,
            "links_exact": self.exact,
            "precision": round(self.precision, 4),
            "exact_precision": round(self.exact_precision, 4),
            "coverage": round(self.coverage, 4),
        }


@dataclass(frozen=True)
class LinksResult:
    per_conversation: dict[str, LinkScore]

    @property
    def overall(self) -> LinkScore:
        total = LinkScore(0, 0, 0, 0)
        for score in self.per_conversation.values():
            total = total + score
        return total

    def as_json(self) -> dict[str, object]:
        return {
            "overall": self.overall.as_json(),
            "per_conversation": {name: s.as_json() for name, s in self.per_conversation.items()},
        }


def facts_of(sample: dict[str, Any], turns: Sequence[locomo.Turn]) -> list[Fact]:
    """The sample's `observation` facts whose evidence names turns of the conversation."""
    known = {t.dia_id for t in turns}
    facts: list[Fact] = []
    observation = sample.get("observation") or {}
    if not isinstance(observation, dict):
        raise InvalidInput("observation", f"must map sessions to speakers' facts, got {type(observation).__name__}")
    for key, by_speaker in observation.items():
        session = "D" + key.removeprefix("session_").removesuffix("_observation")
        for speaker, items in (by_speaker or {}).items():
            for item in items:
                if not isinstance(item, list | tuple) or len(item) < 2 or not str(item[0]).strip():
                    continue
                raw = item[1] if isinstance(item[1], list) else [item[1]]
                evidence = tuple(dict.fromkeys(p.strip() for e in raw for p in str(e).split(";") if p.strip() in known))
                if evidence:
                    facts.append(Fact(str(item[0]).strip(), str(speaker), session, evidence))
    return facts


def load_facts(path: Path, conversations: Sequence[locomo.Conversation]) -> dict[str, list[Fact]]:
    """Each chosen conversation's facts, by sample id (the file read again for the field the loader skips)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    by_id = {str(sample.get("sample_id", f"conv-{i}")): sample for i, sample in enumerate(data)}
    return {conv.sample_id: facts_of(by_id[conv.sample_id], conv.turns) for conv in conversations}


def _neighbours(conv: locomo.Conversation) -> dict[str, set[str]]:
    """dia_id → itself and the turns just before and after it in its session."""
    out: dict[str, set[str]] = {}
    ids = [t.dia_id for t in conv.turns]
    for i, dia in enumerate(ids):
        near = {dia}
        for j in (i - 1, i + 1):
            if 0 <= j < len(ids) and locomo.session_of(ids[j]) == locomo.session_of(dia):
                near.add(ids[j])
        out[dia] = near
    return out


def measure_links(
    service: Service, path: Path, conversations: Sequence[locomo.Conversation], progress: Progress = _quiet
) -> LinksResult:
    """Record the conversations, write their facts without links, embed, run the scan; score its links."""
    facts = load_facts(path, conversations)
    dia_of = load_locomo(service, conversations, progress)
    fact_of: dict[tuple[str, int], Fact] = {}
    for conv in conversations:
        start = {locomo.session_of(t.dia_id): t.at for t in reversed(conv.turns)}  # each session's first turn
        for number, fact in enumerate(facts[conv.sample_id], 1):
            data = NarrativeIn(gesture=fact.text[:MAX_GESTURE], occurred_at=start[fact.session])
            fact_of[(conv.sample_id, service.write_narrative(conv.sample_id, data).id)] = fact
            progress("facts", number, len(facts[conv.sample_id]))
    agents = [conv.sample_id for conv in conversations]
    embed_all(service, agents, progress)
    for agent in agents:
        service.run_stage("scan", agent, trigger="manual", task_id=f"eval-links-{agent}")
    links: dict[tuple[str, int], list[int]] = defaultdict(list)
    with service.db.read() as conn:
        for agent in agents:
            for nid, cid in conn.execute(
                select(NarrativeSource.narrative_id, NarrativeSource.context_id).where(
                    NarrativeSource.agent_id == agent, NarrativeSource.inferred.is_(True)
                )
            ):
                links[(agent, nid)].append(cid)
    scores: dict[str, LinkScore] = {}
    for conv in conversations:
        near = _neighbours(conv)
        total = LinkScore(len(facts[conv.sample_id]), 0, 0, 0)
        for (agent, nid), fact in fact_of.items():
            if agent != conv.sample_id or not links[(agent, nid)]:
                continue
            right_turns = set().union(*(near[e] for e in fact.evidence))
            got = [dia_of[(agent, cid)] for cid in links[(agent, nid)]]
            exact = sum(g in fact.evidence for g in got)
            total = total + LinkScore(0, 1, len(got), sum(g in right_turns for g in got), exact)
        scores[conv.sample_id] = total
    return LinksResult(scores)
