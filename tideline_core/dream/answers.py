"""What the LLM must answer at each DREAM stage (pydantic: its replies are a boundary), and the schema shown to it.

Every model forbids unknown fields and bounds every string and list, so a runaway answer is refused
whole rather than half stored. Scores are strict integers 1–5: a `true` or `"3"` is a broken answer,
not a score. Ids the answer names are only checked for shape here; whether they were shown to the
model is for the stage applying the answer to check.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    field_validator,
    model_validator,
)

from tideline_core.domain.inputs import RowId, Score

__all__ = [
    "CombAnswer",
    "ConflictJudgement",
    "DigestAnswer",
    "DreamAnswer",
    "DriftAnswer",
    "Merge",
    "ProfileUpdate",
    "Reweigh",
    "SelfConceptUpdate",
    "SolidifiedMemory",
    "SolidifyAnswer",
    "ThreadClose",
    "ThreadOpen",
    "answer_schema",
]

MAX_PAIRS = 1_000  # candidate pairs one comb prompt can show; a larger index names none


def _len(low: int, high: int) -> StringConstraints:
    """A text of `low` to `high` characters once the surrounding whitespace is stripped."""
    return StringConstraints(strip_whitespace=True, min_length=low or None, max_length=high)


Tag = Annotated[str, _len(1, 64)]
Name = Annotated[str, _len(1, 128)]
Line = Annotated[str, _len(1, 1_000)]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _text_without_nul(cls, value: Any) -> Any:
        # What is answered gets stored, and PostgreSQL cannot store NUL in text.
        texts = value if isinstance(value, list) else [value]
        if any(isinstance(text, str) and "\x00" in text for text in texts):
            raise ValueError("must not contain the NUL character (\\x00)")
        return value


# --- solidify ---------------------------------------------------------------------------------------


class SolidifiedMemory(_Answer):
    gesture: Annotated[str, _len(1, 2_000)]
    context: Annotated[str, _len(0, 4_000)] = ""
    moment: Annotated[str, _len(0, 4_000)] = ""
    cognition_direction: Annotated[str, _len(0, 4_000)] = ""
    importance: Score = 3
    emotional: Score = 3
    unresolved: Score = 3
    tags: list[Tag] = Field(default_factory=list, max_length=8)
    entities_role: Annotated[str, _len(0, 2_000)] = ""
    related_entities: list[Name] = Field(default_factory=list, max_length=16)
    narrative_type: Literal["event", "reflection", "insight", "decision", "other"] = "event"
    source_turns: list[RowId] = Field(min_length=1, max_length=64)


class SolidifyAnswer(_Answer):
    memories: list[SolidifiedMemory] = Field(max_length=3)


# --- digest -----------------------------------------------------------------------------------------


class DigestAnswer(_Answer):
    who: list[Name] = Field(default_factory=list, max_length=16)
    what: Annotated[str, _len(1, 2_000)]
    decisions: list[Line] = Field(default_factory=list, max_length=10)
    open_questions: list[Line] = Field(default_factory=list, max_length=10)
    tags: list[Tag] = Field(default_factory=list, max_length=8)


# --- comb -------------------------------------------------------------------------------------------


class Reweigh(_Answer):
    narrative_id: RowId
    importance: Score | None = None
    emotional: Score | None = None
    unresolved: Score | None = None
    reason: Annotated[str, _len(0, 500)]

    @model_validator(mode="after")
    def _changes_a_score(self) -> Reweigh:
        if self.importance is None and self.emotional is None and self.unresolved is None:
            raise ValueError("gives none of importance, emotional, unresolved: at least one score must change")
        return self


class ProfileUpdate(_Answer):
    entity: Name
    kind: Literal["impression", "relationship"]
    content: Annotated[str, _len(1, 4_000)]


class SelfConceptUpdate(_Answer):
    kind: Literal["terrain", "reflection"]
    key: Name
    content: Annotated[str, _len(1, 4_000)]


class ConflictJudgement(_Answer):
    pair: Annotated[StrictInt, Field(ge=0, lt=MAX_PAIRS)]  # the index of a candidate pair shown
    contradicts: StrictBool
    note: Annotated[str, _len(0, 1_000)]
    record_as: Literal["reflection", "thread"] = "reflection"


class Merge(_Answer):
    keep_id: RowId
    superseded_ids: list[RowId] = Field(min_length=1, max_length=10)

    @model_validator(mode="after")
    def _keeps_another(self) -> Merge:
        if self.keep_id in self.superseded_ids:
            raise ValueError(f"keep_id {self.keep_id} is also in superseded_ids: a memory cannot supersede itself")
        return self


class ThreadOpen(_Answer):
    title: Annotated[str, _len(1, 200)]
    content: Annotated[str, _len(0, 2_000)] = ""
    priority: Score = 3


class ThreadClose(_Answer):
    thread_id: RowId
    status: Literal["resolved", "dropped"]
    note: Annotated[str, _len(0, 1_000)] = ""


class CombAnswer(_Answer):
    reweigh: list[Reweigh] = Field(default_factory=list, max_length=50)
    profiles: list[ProfileUpdate] = Field(default_factory=list, max_length=10)
    self_concept: list[SelfConceptUpdate] = Field(default_factory=list, max_length=5)
    conflicts: list[ConflictJudgement] = Field(default_factory=list, max_length=20)
    merges: list[Merge] = Field(default_factory=list, max_length=20)
    open_threads: list[ThreadOpen] = Field(default_factory=list, max_length=5)
    close_threads: list[ThreadClose] = Field(default_factory=list, max_length=10)


# --- drift ------------------------------------------------------------------------------------------


class DriftAnswer(_Answer):
    connection: StrictBool
    explanation: Annotated[str, _len(0, 2_000)] = ""
    write: Literal["none", "insight", "thread"] = "none"
    insight: Annotated[str, _len(0, 2_000)] = ""
    thread_title: Annotated[str, _len(0, 200)] = ""
    linked_ids: list[RowId] = Field(default_factory=list, max_length=10)

    @model_validator(mode="after")
    def _writes_what_it_found(self) -> DriftAnswer:
        if not self.connection and self.write != "none":
            raise ValueError(f"write is {self.write!r} with no connection: without a connection write must be 'none'")
        if self.write == "insight" and not self.insight:
            raise ValueError("write is 'insight' but the insight text is empty")
        if self.write == "thread" and not self.thread_title:
            raise ValueError("write is 'thread' but thread_title is empty")
        return self


# --- dream ------------------------------------------------------------------------------------------


class DreamAnswer(_Answer):
    symbols: list[Tag] = Field(min_length=3, max_length=5)
    dream: Annotated[str, _len(1, 2_000)]
    reflection: Annotated[str, _len(1, 2_000)]


def answer_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of `model` to show the LLM, without pydantic's generated titles (tokens that say nothing)."""
    return _without_titles(model.model_json_schema())


def _without_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_without_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    stripped: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            # Keys here are field or model names (a field may well be called "title"), not keywords.
            stripped[key] = {name: _without_titles(sub) for name, sub in value.items()}
        else:
            stripped[key] = _without_titles(value)
    return stripped
