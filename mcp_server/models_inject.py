"""Structured results of the injection tools: the rendered block and each item in it, with why it was chosen."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_server.models import Result


class InjectedItem(Result):
    tier: Literal["T0", "T1", "T2", "T2b", "T3", "T4"]
    kind: str = Field(description="soul, self_concept, snapshot, thread, narrative, turn, topic or profile")
    id: int | None = Field(
        description="the row's id (a narrative, a context turn, a profile...); null for the SOUL file and topics"
    )
    score: float = Field(description="the tier's ranking value (search score, weight, priority...)")
    reason: str = Field(description="why it was chosen: the rule, or the search signals that ranked it")
    tokens: int = Field(description="estimated tokens of its line")
    clipped: bool = Field(description="true when its text was cut to fit (it then ends with …)")
    text: str


class Injection(Result):
    text: str = Field(
        description="the block to put in the model's context, as is (empty when there is nothing to show)"
    )
    version: str = Field(description="changes exactly when the block's content does (empty for an empty block)")
    tokens: int = Field(description="estimated tokens of the whole block")
    budget: int = Field(description="the token budget it was built within")
    items: list[InjectedItem]
    notes: list[str] = Field(default_factory=list, description="what the block could not include and why")
