"""The Hermes provider's tools: their OpenAI function schemas and their calls (parse → one service method → JSON).

The schemas are the core input models' own fields (limits, enums, defaults, descriptions), as the MCP
tools publish them, so what a model is told and what is checked cannot drift apart; the core model
checks every call once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from tideline_core.domain.inputs import NarrativeIn, SearchIn, parse
from tideline_core.domain.memory_text import amendment_mark, cut
from tideline_core.domain.schemas import arguments
from tideline_core.errors import InvalidInput
from tideline_provider.provider import TidelineProvider

SEARCH = "tideline_search"
REMEMBER = "tideline_remember"
HIT_CHARS = 2_000  # of a hit's text in a tool answer: a turn may hold 100,000 characters


def schemas() -> list[dict[str, Any]]:
    """The tools in OpenAI function format (`name`, `description`, `parameters`), as Hermes registers them."""
    return [
        {
            "name": SEARCH,
            "description": (
                "Search your long-term memory (Tideline): memories you wrote and past conversations, by words and "
                "meaning, in any language. Use it before answering about the past ('what did we decide about X', "
                "'when did I last talk to Y'). Returns hits best first, each with its kind (narrative = a memory, "
                "context = a conversation turn), id, text and time. Memories bearing on each message are already "
                "recalled for you in <memory-context>; search when you need more."
            ),
            # A function call has no recent lines to stand in for the query: the query is required.
            "parameters": _parameters(
                SearchIn,
                fields=("query", "kinds", "since", "until", "limit"),
                required=("query",),
                overrides={"query": {"minLength": 1}},
            ),
        },
        {
            "name": REMEMBER,
            "description": (
                "Keep something that happened in your long-term memory (Tideline): an exchange, decision, "
                "realisation or feeling worth keeping beyond this session, one memory per moment, in your own "
                "words. Conversation is kept verbatim on its own; write what it meant. Returns the memory's id and "
                "weight; on bad input nothing is stored and the error names the field and the rule."
            ),
            "parameters": _parameters(NarrativeIn, fields=REMEMBERED),
        },
    ]


# What a Hermes model is asked for when it keeps a memory: the narrative's story and scores, not its links.
REMEMBERED = (
    "gesture",
    "context",
    "moment",
    "importance",
    "emotional",
    "unresolved",
    "tags",
    "narrative_type",
    "occurred_at",
)


def _parameters(model: type[BaseModel], **choice: Any) -> dict[str, Any]:
    return {**arguments(model, **choice), "additionalProperties": False}


def call(memory: TidelineProvider, tool_name: str, args: Any) -> str:
    """The tool's answer as a JSON string; bad arguments raise InvalidInput naming the field and the rule."""
    run = _TOOLS.get(tool_name)
    if run is None:
        raise InvalidInput("tool_name", f"must be one of {', '.join(_TOOLS)}, got {tool_name!r}")
    if not isinstance(args, Mapping):
        raise InvalidInput("args", f"must be a JSON object of the tool's arguments, got {type(args).__name__}")
    # A model often sends null for an argument it means to leave out: the default applies.
    given = {str(name): value for name, value in args.items() if value is not None}
    return json.dumps(run(memory, given), ensure_ascii=False, default=str)


def _search(memory: TidelineProvider, args: dict[str, Any]) -> dict[str, Any]:
    outcome = memory.service.search(memory.agent, parse(SearchIn, args))
    hits = [
        {
            "kind": hit.kind,
            "id": hit.id,
            "text": cut(hit.text, amendment_mark(hit.amended), HIT_CHARS),
            **({"truncated": True} if len(hit.text) > HIT_CHARS else {}),
            "occurred_at": hit.occurred_at.isoformat(),
            "session_id": hit.session_id,
            "speaker": hit.speaker,
            "weight": hit.weight,
            "tags": list(hit.tags),
        }
        for hit in outcome.hits
    ]
    return {
        "query": outcome.query,
        "mode": outcome.mode,
        "degraded": outcome.degraded,
        "count": len(hits),
        "hits": hits,
    }


def _remember(memory: TidelineProvider, args: dict[str, Any]) -> dict[str, Any]:
    written = memory.service.write_narrative(memory.agent, parse(NarrativeIn, args))
    return {
        "id": written.id,
        "weight": written.weight,
        "recurrence": written.recurrence,
        "embedding": "pending",  # keyword-searchable now, by meaning once the worker has embedded it
        "queued": written.queued,
    }


_TOOLS: dict[str, Callable[[TidelineProvider, dict[str, Any]], dict[str, Any]]] = {SEARCH: _search, REMEMBER: _remember}
