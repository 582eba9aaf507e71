"""`tideline console` alone over a TIDELINE_HOME, and the login rule that `console` and `up` both keep."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cli_helpers import tideline

from tests.ports import free_port
from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings


def console_env(home: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    env.update({"TIDELINE_HOME": str(home), "TIDELINE_EMBEDDER": "none", **values})
    return env


@pytest.mark.parametrize("command", [["console", "--host", "0.0.0.0"], ["up"]])
def test_beyond_loopback_without_a_login_nothing_starts_and_the_error_says_what_to_set(
    tmp_path: Path, command: list[str]
) -> None:
    env = console_env(tmp_path, TIDELINE_CONSOLE_HOST="0.0.0.0", TIDELINE_CONSOLE_PORT=str(free_port()))
    done = tideline(env, *command, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "TIDELINE_CONSOLE_PASSWORD" in done.stderr and "Traceback" not in done.stderr
    assert "Tideline is up" not in done.stdout


def test_the_console_alone_serves_the_memory_of_a_home(tmp_path: Path) -> None:
    service = compose(Settings(home=tmp_path, embedder="none"), jobs=NullJobQueue(), llm=None)
    try:
        memory = service.write_narrative("default", NarrativeIn(gesture="周四晚上去游泳，教练叫小林")).id
    finally:
        service.close()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tideline_cli", "console", "--port", str(port)],
        env=console_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/memories/{memory}", timeout=5)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    server.kill()
                    pytest.fail("the console did not come up:\n" + (server.stdout.read() if server.stdout else ""))
                time.sleep(0.2)
        assert page.status_code == 200 and "周四晚上去游泳，教练叫小林" in page.text
        assert "tideline-console" in httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).text
    finally:
        server.terminate()
        server.wait(timeout=20)
