"""What the no-LLM dream keeps of a LoCoMo conversation, judged by the benchmark's own `observation` facts.

Each sample's `observation` holds, per session and speaker, [fact, evidence dia_id(s)]: the turns a
person reading the conversation took a fact from. After scan + solidify, each extracted memory
(not a digest) is traced to the one turn its sentence was drawn from (the linked turn whose text
holds the memory's words). Precision: the share of memories whose turn is the evidence of a fact.
Recall: the share of the facts' evidence turns some memory was drawn from. Overall figures pool
the counts of every conversation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from tideline_core.errors import InvalidInput
from tideline_core.service import Service
from tideline_core.store.narratives import load_narratives
from tideline_core.store.schema import ContextTurn, Narrative
from tideline_eval.runner import Progress

_SPACE = re.compile(r"\s+")
_SPEAKER = re.compile(r"^[^:：]{1,128}[:：]\s*")
EXAMPLES = 5


@dataclass(frozen=True)
class Kept:
    """One extracted memory and the turn it was drawn from."""

    gesture: str
    dia_id: str  # "" when no linked turn holds its words
    evidence: bool


@dataclass(frozen=True)
class ConversationScore:
    sample_id: str
    turns: int
    evidence_turns: int
    memories: tuple[Kept, ...]
    digests: tuple[str, ...]  # the digests' gestures and moments, as a person reads them

    @property
    def precise(self) -> int:
        return sum(m.evidence for m in self.memories)

    @property
    def recalled(self) -> int:
        return len({m.dia_id for m in self.memories if m.evidence})

    def as_json(self) -> dict[str, object]:
        return {
            "turns": self.turns,
            "evidence_turns": self.evidence_turns,
            "memories": len(self.memories),
            "digests": len(self.digests),
            "precision": round(_share(self.precise, len(self.memories)), 4),
            "recall": round(_share(self.recalled, self.evidence_turns), 4),
            "example_memories": [m.gesture for m in self.memories[:EXAMPLES]],
            "example_digests": list(self.digests[:3]),
        }


@dataclass(frozen=True)
class SolidifyScore:
    conversations: tuple[ConversationScore, ...]

    @property
    def precision(self) -> float:
        return _share(sum(c.precise for c in self.conversations), sum(len(c.memories) for c in self.conversations))

    @property
    def recall(self) -> float:
        return _share(sum(c.recalled for c in self.conversations), sum(c.evidence_turns for c in self.conversations))

    def as_json(self) -> dict[str, object]:
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "memories": sum(len(c.memories) for c in self.conversations),
            "digests": sum(len(c.digests) for c in self.conversations),
            "evidence_turns": sum(c.evidence_turns for c in self.conversations),
            "conversations": {c.sample_id: c.as_json() for c in self.conversations},
        }


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def observation_evidence(path: Path) -> dict[str, frozenset[str]]:
    """sample_id → the dia_ids that the sample's `observation` facts name as their evidence."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput("path", f"cannot read {path} as LoCoMo JSON: {exc}") from None
    out: dict[str, frozenset[str]] = {}
    for index, sample in enumerate(data if isinstance(data, list) else []):
        sample_id = str(sample.get("sample_id", f"conv-{index}"))
        observation = sample.get("observation")
        if not isinstance(observation, Mapping):
            raise InvalidInput(f"sample {index} observation", "is missing: --solidify needs LoCoMo's observation facts")
        ids: set[str] = set()
        for by_speaker in observation.values():
            for facts in (by_speaker or {}).values():
                for fact in facts:
                    if isinstance(fact, list) and len(fact) >= 2:
                        ids.update(_dia_ids(fact[1]))
        out[sample_id] = frozenset(ids)
    return out


def _dia_ids(raw: Any) -> list[str]:
    items = raw if isinstance(raw, list) else [raw]
    return [part.strip() for item in items for part in re.split(r"[;,]", str(item)) if part.strip()]


def score_solidify(
    service: Service,
    agents: Sequence[str],
    dia_of: Mapping[tuple[str, int], str],
    evidence: Mapping[str, frozenset[str]],
    progress: Progress | None = None,
) -> SolidifyScore:
    """Trace every extracted memory of each agent (a LoCoMo conversation) to its turn and score it."""
    scores = []
    for number, agent in enumerate(agents, 1):
        known = {dia for (a, _), dia in dia_of.items() if a == agent}
        gold = evidence.get(agent, frozenset()) & known
        with service.db.read() as conn:
            ids = list(
                conn.execute(
                    select(Narrative.id).where(Narrative.agent_id == agent, Narrative.origin != "agent")
                ).scalars()
            )
            records = load_narratives(conn, agent, ids)
            texts = dict(
                conn.execute(select(ContextTurn.id, ContextTurn.content).where(ContextTurn.agent_id == agent)).all()
            )
        memories: list[Kept] = []
        digests: list[str] = []
        for record in sorted(records.values(), key=lambda r: (r.occurred_at, r.id)):
            if record.narrative_type == "digest":
                digests.append("\n".join(part for part in (record.gesture, record.moment) if part))
                continue
            turn = source_turn(record.gesture, record.source_links, texts)
            dia = dia_of.get((agent, turn), "") if turn is not None else ""
            memories.append(Kept(record.gesture, dia, dia in gold))
        scores.append(ConversationScore(agent, len(known), len(gold), tuple(memories), tuple(digests)))
        if progress is not None:
            progress("scoring", number, len(agents))
    return SolidifyScore(tuple(scores))


def source_turn(gesture: str, links: Sequence[int], texts: Mapping[int, str]) -> int | None:
    """The linked turn whose text holds the gesture's words (after its "Speaker: "), else None."""
    said = _flat(_SPEAKER.sub("", gesture, count=1)).rstrip("…")
    pieces = [p for p in re.split(r" … |…", said) if p.strip()]
    probe = max(pieces, key=len)[:80] if pieces else ""
    for turn in links:
        if probe and probe in _flat(texts.get(turn, "")):
            return turn
    return None


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def print_score(score: SolidifyScore) -> None:
    print("\nsolidify (scan + extractive, no LLM), judged by the observation facts' evidence turns")
    head = ("turns", 7), ("evidence", 10), ("memories", 10), ("digests", 9), ("precision", 11), ("recall", 8)
    print(f"  {'conversation':<16}" + "".join(f"{name:>{width}}" for name, width in head))
    for c in score.conversations:
        figures = c.as_json()
        print(
            f"  {c.sample_id:<16}{c.turns:>7}{c.evidence_turns:>10}{len(c.memories):>10}{len(c.digests):>9}"
            f"{figures['precision']:>11.3f}{figures['recall']:>8.3f}"
        )
    total = score.as_json()
    print(
        f"  {'overall':<16}{'':>7}{total['evidence_turns']:>10}{total['memories']:>10}{total['digests']:>9}"
        f"{score.precision:>11.3f}{score.recall:>8.3f}"
    )
    print("  precision: memories drawn from a fact's evidence turn; recall: evidence turns some memory was drawn from")
