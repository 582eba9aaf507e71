"""A dream stage's plan: the intents it asks to apply (plain frozen values; `changes` carries them out)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tideline_core.domain.inputs import NarrativeIn, ProfileIn, SelfConceptIn, ThreadIn
    from tideline_core.dream.graph.entities import EntityGraph
    from tideline_core.dream.recluster.soft import SoftClusters
    from tideline_core.dream.recluster.topics import TopicCluster


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
class Restore:
    """A superseded narrative made current again (search and injection show it once more)."""

    narrative_id: int


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
class AddSourceLink:
    """An inferred link from a narrative to the turn it came from, with the evidence it was inferred on."""

    narrative_id: int
    context_id: int
    score: float
    cosine: float
    shared_words: tuple[str, ...]
    speaker: str = ""  # the turn's speaker when the narrative names it
    runner_up: float | None = None  # the best other turn's score (None: no other turn in the window)
    minutes_apart: float = 0.0  # from the narrative's time to the turn's (positive: the turn came after)

    def describe(self) -> str:
        parts = [f"cosine {self.cosine:.3f}", "shared words " + ", ".join(self.shared_words)]
        if self.speaker:
            parts.append(f"speaker {self.speaker} named")
        parts.append("no other turn in the window" if self.runner_up is None else f"next best {self.runner_up:.3f}")
        parts.append(f"{abs(self.minutes_apart):.0f} min {'after' if self.minutes_apart >= 0 else 'before'}")
        return "; ".join(parts)


@dataclass(frozen=True)
class MoveWatermark:
    to: int  # the last context turn id solidified; never moves back


# Derived tables are replaced whole from the memories as they are: recorded by their counts before and
# after, never row by row, so a run that rebuilds cannot be undone (running the stage again rebuilds them).


@dataclass(frozen=True)
class ReplaceTopics:
    clusters: tuple[TopicCluster, ...]


@dataclass(frozen=True, eq=False)
class ReplaceSoftClusters:
    model: str
    clusters: SoftClusters | None  # None: no narrative vectors of `model`, so no soft clusters


@dataclass(frozen=True)
class ReplaceEntityGraph:
    graph: EntityGraph


Rebuild = ReplaceTopics | ReplaceSoftClusters | ReplaceEntityGraph
Intent = (
    AddNarrative
    | Rescore
    | Reweight
    | Supersede
    | Restore
    | PutProfile
    | PutSelfConcept
    | PutThread
    | AddSourceLink
    | MoveWatermark
    | Rebuild
)


@dataclass(frozen=True)
class Plan:
    intents: tuple[Intent, ...] = ()

    def __len__(self) -> int:
        return len(self.intents)

    def __add__(self, other: Plan) -> Plan:
        return Plan(self.intents + other.intents)
