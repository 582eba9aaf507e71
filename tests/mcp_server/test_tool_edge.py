"""A tool is its core input model and one service call: its arguments, rules and words come from the model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp_helpers import RecordingJobQueue
from pydantic import BaseModel, Field

from mcp_server.app import TidelineServer, create_server
from mcp_server.auth import fixed_agent
from mcp_server.context import AppContext
from mcp_server.tools._edge import READ, operation
from tideline_core.domain.inputs import NarrativeIn, _Input
from tideline_core.domain.schemas import arguments
from tideline_core.settings import Settings
from tideline_provider.hermes_tools import REMEMBER, schemas

pytestmark = pytest.mark.anyio


async def test_every_field_of_the_write_model_is_an_argument_described_as_the_model_describes_it(
    local_settings: Settings, dispatcher: RecordingJobQueue
) -> None:
    async with Client(create_server(local_settings, jobs=dispatcher), raise_exceptions=True) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    published = tools["memory_write"].input_schema["properties"]
    assert set(published) == {*NarrativeIn.model_fields, "idempotency_key"}
    for name, field in NarrativeIn.model_fields.items():
        assert published[name] == arguments(NarrativeIn)["properties"][name] and field.description, name
    hermes = next(schema for schema in schemas() if schema["name"] == REMEMBER)["parameters"]["properties"]
    assert all(hermes[name] == published[name] for name in hermes), "the Hermes function says what the tool says"


class Mood(_Input):
    mood: str = Field(min_length=1, max_length=20, description="How it felt, in a word.")
    strength: int = Field(default=2, ge=1, le=3, description="How strongly.")


class Felt(BaseModel):
    said: str


@operation(Mood)
async def note_mood(app: AppContext, agent: str, data: Mood) -> Felt:
    """Note how something felt. Returns what was noted."""
    return Felt(said=f"{agent}: {data.mood} x{data.strength}")


@asynccontextmanager
async def no_store(_: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
    # The body above needs no service: a context without one keeps the test to the edge itself.
    yield AppContext(settings=Settings(), service=None, resolve_agent=fixed_agent("alice"))  # type: ignore[arg-type]


async def test_a_new_tool_is_a_model_and_a_body_and_its_rules_are_checked_once_by_the_model() -> None:
    server = TidelineServer("throwaway", resolve_agent=fixed_agent("alice"), lifespan=no_store)
    server.add_tool(note_mood, annotations=READ)
    async with Client(server, raise_exceptions=True) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.description == "Note how something felt. Returns what was noted."
        assert tool.input_schema["required"] == ["mood"]
        assert tool.input_schema["properties"]["strength"] == {
            "type": "integer",
            "minimum": 1,
            "maximum": 3,
            "default": 2,
            "description": "How strongly.",
        }
        done = await client.call_tool("note_mood", {"mood": "calm"})
        assert done.structured_content == {"said": "alice: calm x2"}
        wrong = await client.call_tool("note_mood", {"mood": " ", "strength": 9})
    assert wrong.is_error
    assert wrong.content[0].text == (  # type: ignore[union-attr]
        "invalid input: mood: must not be empty or only whitespace; strength: Input should be less than or equal to 3"
    )
