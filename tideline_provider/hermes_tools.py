"""The Hermes provider's tools: their OpenAI function schemas and their calls (parse → one service method → JSON).

The schemas publish the core input models' own field schemas (limits, enums, defaults), so what a
model is told and what is checked cannot drift apart; the core model checks every call once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel

from tideline_core.domain.inputs import NarrativeIn, SearchIn, parse
from tideline_core.domain.memory_text import amendment_mark, cut
from tideline_core.errors import InvalidInput
from tideline_provider.provider import TidelineProvider

SEARCH = "tideline_search"
REMEMBER = "tideline_remember"
HIT_CHARS = 2_000  # of a hit's text in a tool answer: a turn may hold 100,000 characters
DATE: dict[str, Any] = {"type": "string", "description": "ISO-8601 date or date-time, e.g. 2026-05-08 (UTC)"}


@cache
def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return dict(model.model_json_schema()["properties"])


def _arg(model: type[BaseModel], field: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    published = {k: v for k, v in (schema or _fields(model)[field]).items() if k not in ("title", "description")}
    return {**published, "description": description}


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
            "parameters": {
                "type": "object",
                "properties": {
                    "query": _arg(SearchIn, "query", "What to look for, as plain text.") | {"minLength": 1},
                    "kinds": _arg(
                        SearchIn, "kinds", "'all' (default), 'narratives' (memories only) or 'context' (turns only)."
                    ),
                    "since": _arg(SearchIn, "since", "Only results at or after this instant.", DATE),
                    "until": _arg(SearchIn, "until", "Only results at or before this instant.", DATE),
                    "limit": _arg(SearchIn, "limit", "How many hits, 1-100 (default 10)."),
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
        {
            "name": REMEMBER,
            "description": (
                "Keep something that happened in your long-term memory (Tideline): an exchange, decision, "
                "realisation or feeling worth keeping beyond this session, one memory per moment, in your own "
                "words. Conversation is kept verbatim on its own; write what it meant. Returns the memory's id and "
                "weight; on bad input nothing is stored and the error names the field and the rule."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "gesture": _arg(NarrativeIn, "gesture", "What happened, in one sentence that keeps its tone."),
                    "context": _arg(NarrativeIn, "context", "Background: what led to it, what was going on."),
                    "moment": _arg(NarrativeIn, "moment", "The concrete moment or detail that made it stick."),
                    "importance": _arg(NarrativeIn, "importance", "How much it matters, 1-5 (3 when unsure)."),
                    "emotional": _arg(NarrativeIn, "emotional", "Emotional intensity, 1-5."),
                    "unresolved": _arg(NarrativeIn, "unresolved", "How open it still is, 1-5."),
                    "tags": _arg(NarrativeIn, "tags", "Topic tags; tags that recur raise a memory's weight."),
                    "narrative_type": _arg(NarrativeIn, "narrative_type", "What kind of memory it is (default event)."),
                    "occurred_at": _arg(NarrativeIn, "occurred_at", "When it happened (default: now).", DATE),
                },
                "required": ["gesture"],
                "additionalProperties": False,
            },
        },
    ]


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
