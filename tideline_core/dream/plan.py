"""A dream stage's plan: the intents it asks to apply (plain frozen values; `changes` carries them out)."""

from __future__ import annotations

from dataclasses import dataclass

from tideline_core.inputs import NarrativeIn, ProfileIn, SelfConceptIn, ThreadIn


@dataclass(frozen=True)
class AddNarrative:
    data: NarrativeIn
    origin: str  # "llm" | "extractive"
    links: tuple[int, ...] = ()  # more source turns than NarrativeIn takes (a digest links its whole session)
    supersedes: tuple[int, ...] = ()  # narratives the new one replaces (an earlier digest of the same session)


@dataclass(frozen=True)
class Rescore:
    narrative_id: int
    importance: int | None = None
    emotional: int | None = None
    unresolved: int | None = None
    reason: str = ""


@dataclass(frozen=True)
class Reweight:
    """Recurrence and weight from the refresh's one definition (no other score changes)."""

    narrative_id: int
    recurrence: int
    weight: float


@dataclass(frozen=True)
class Supersede:
    old_id: int
    new_id: int


@dataclass(frozen=True)
class PutProfile:
    data: ProfileIn


@dataclass(frozen=True)
class PutSelfConcept:
    data: SelfConceptIn


@dataclass(frozen=True)
class PutThread:
    data: ThreadIn  # no thread_id: open one; with thread_id: change it


@dataclass(frozen=True)
class MoveWatermark:
    to: int  # the last context turn id solidified; never moves back


Intent = AddNarrative | Rescore | Reweight | Supersede | PutProfile | PutSelfConcept | PutThread | MoveWatermark


@dataclass(frozen=True)
class Plan:
    intents: tuple[Intent, ...] = ()

    def __len__(self) -> int:
        return len(self.intents)

    def __add__(self, other: Plan) -> Plan:
        return Plan(self.intents + other.intents)
