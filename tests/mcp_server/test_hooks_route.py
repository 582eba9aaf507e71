"""POST /hooks/v1/event on the HTTP server: the same bearer tokens as MCP, no browser, bad events named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_helpers import RecordingJobQueue, serving

from tests.ports import free_port
from tideline_core.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ALICE_TOKEN = "alice-token-hooks-1"
BOB_TOKEN = "bob-token-hooks-2"
JSON = {"Content-Type": "application/json"}
EVENT = "/hooks/v1/event"


def body(event: str = "claude_session_start", agent: str | None = None, **changes: Any) -> dict[str, Any]:
    data = json.loads((FIXTURES / "hooks" / f"{event}.json").read_text(encoding="utf-8"))
    return {"runtime": "claude-code", "agent": agent, "event": {**data, **changes}}


@pytest.fixture
def soul(local_settings: Settings) -> None:
    for agent in ("alice", "bob"):
        path = local_settings.home / "agents" / agent / "SOUL.md"
        path.parent.mkdir(parents=True)
        path.write_text(f"I am {agent}, and this is my own memory.", encoding="utf-8")


def test_with_tokens_each_hook_answers_as_its_tokens_agent_and_no_other(
    local_settings: Settings, dispatcher: RecordingJobQueue, soul: None
) -> None:
    settings = local_settings.model_copy(
        update={"http_port": free_port(), "http_tokens": f"{ALICE_TOKEN}:alice,{BOB_TOKEN}:bob"}
    )
    with serving(settings, dispatcher, EVENT) as url:
        alice = httpx.post(url, json=body(), headers={"Authorization": f"Bearer {ALICE_TOKEN}"})
        bob = httpx.post(url, json=body(agent="bob"), headers={"Authorization": f"Bearer {BOB_TOKEN}"})
        anonymous = httpx.post(url, json=body(agent="alice"))
        posing = httpx.post(url, json=body(agent="alice"), headers={"Authorization": f"Bearer {BOB_TOKEN}"})
    context = alice.json()["output"]["hookSpecificOutput"]["additionalContext"]
    assert alice.status_code == 200 and alice.headers["X-Tideline-Hook"] == "server" and "I am alice" in context
    assert "I am bob" in bob.json()["output"]["hookSpecificOutput"]["additionalContext"]
    assert anonymous.status_code == 401
    assert posing.status_code == 403 and posing.json()["field"] == "agent" and "bound to agent 'bob'" in posing.text


def test_without_tokens_the_body_names_the_agent_and_a_browser_is_refused(
    local_settings: Settings, dispatcher: RecordingJobQueue, soul: None
) -> None:
    settings = local_settings.model_copy(update={"http_port": free_port()})
    with serving(settings, dispatcher, EVENT) as url:
        bob = httpx.post(url, json=body(agent="bob"))
        default = httpx.post(url, json=body())
        page = httpx.post(url, json=body(), headers={"Origin": "http://example.com"})
        form = httpx.post(url, content=json.dumps(body()), headers={"Content-Type": "text/plain"})
    assert "I am bob" in bob.json()["output"]["hookSpecificOutput"]["additionalContext"]
    assert "I am alice" in default.json()["output"]["hookSpecificOutput"]["additionalContext"]
    assert (page.status_code, form.status_code) == (403, 415)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ("not json", "body"),
        ([1], "body"),
        ({**body(), "runtime": "cursor"}, "runtime"),
        (body(hook_event_name="Notification"), "hook_event_name"),
        (body("claude_stop", transcript_path=None), "transcript_path"),
        (body("claude_stop", transcript_path="/nowhere/at/all.jsonl"), "transcript_path"),
        (body(agent=""), "agent"),
    ],
)
def test_a_bad_event_is_refused_naming_the_field_and_stores_nothing(
    local_settings: Settings, dispatcher: RecordingJobQueue, payload: Any, field: str
) -> None:
    settings = local_settings.model_copy(update={"http_port": free_port()})
    content = payload if isinstance(payload, str) else json.dumps(payload)
    with serving(settings, dispatcher, EVENT) as url:
        refused = httpx.post(url, content=content, headers=JSON)
    assert refused.status_code == 400 and refused.json()["field"] == field, refused.text
    assert dispatcher.embeds == []
