"""The compose stack's own commands, run as local processes on PostgreSQL and the test Redis, end to end.

The migration runs first, to its end; then every other Tideline service of docker-compose.yml is started
with the command the file gives it (two ingest workers, as `--scale ingest-worker=2` runs them), each
probed healthy by its own healthcheck. Then an
agent writes over MCP (streamable HTTP, bearer token) → the ingest workers embed → a search finds the
memory by meaning → the whole dream runs on the dream worker, stage by stage → `tideline status` shows it
all, and Flower saw it (events by task name, basic auth off loopback, /metrics for Prometheus).
Skips when no PostgreSQL server is reachable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.ports import free_port
from tideline_cli import health
from tideline_cli.main import build_parser
from tideline_cli.stack import Child, Supervisor
from tideline_core.dream import nightly_stages
from tideline_core.dream.runner.runs import last_chain
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.status import counts

yaml = pytest.importorskip("yaml", reason="pyyaml reads docker-compose.yml (pip install -e '.[test]')")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parent.parent
SERVICES = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))["services"]
TOKEN = "deploy-test-token-5b1e"
FLOWER_AUTH = ("operator", "s3cret-flower")
# Containers differ by host name; processes on one host need node names of their own (`QUEUE@%h` otherwise).
REPLICAS = {"ingest-worker": ["--hostname", "ingest1@%h"], "ingest-worker-2": ["--hostname", "ingest2@%h"]}
MEMORIES = {
    "cat": "The cat curled up on the warm windowsill and watched the sparrows all afternoon",
    "tax": "Filed the quarterly tax return and paid the accountant's invoice",
    "hike": "Climbed to the summit before dawn; the ridge was covered in fog",
}
QUERY = "a kitten resting by the glass, looking at little birds"  # the cat memory, in other words


def cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tideline_cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def poll(predicate: Callable[[], Any], timeout: float, what: str, logs: Path) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        if value := predicate():
            return value
        if time.monotonic() > deadline:
            tails = "\n".join(
                f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}" for p in sorted(logs.glob("*.log"))
            )
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}\n{tails}")
        time.sleep(0.3)


@pytest.fixture
def stack(
    pgvector_url: str, redis_url: str, redis_client: Any, tmp_path: Path
) -> Iterator[tuple[dict[str, str], Path]]:
    """Every Tideline service of the compose file as a local process; stopped (warm, then cold) afterwards."""
    redis_client.flushdb()
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    env.update(
        {
            "TIDELINE_HOME": str(tmp_path / "home"),
            "TIDELINE_REDIS_URL": redis_url,
            "TIDELINE_DATABASE_URL": pgvector_url,
            "TIDELINE_MODEL_CACHE": os.environ["TIDELINE_MODEL_CACHE"],
            "TIDELINE_HTTP_PORT": str(free_port()),
            "TIDELINE_FLOWER_PORT": str(free_port()),
            "TIDELINE_HTTP_TOKENS": f"{TOKEN}:alice",
            "TIDELINE_FLOWER_BASIC_AUTH": ":".join(FLOWER_AUTH),
            "TIDELINE_AGENT": "alice",
            "PYTHONUNBUFFERED": "1",
        }
    )
    tideline = {name: s for name, s in SERVICES.items() if s.get("image", "").startswith("tideline:")}
    # The one-shots first (the migration), as compose orders them: every other service waits for their success.
    for name, service in tideline.items():
        if str(service.get("restart", "no")) == "no":
            done = cli(env, *service["command"], timeout=120)
            assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"
    commands = {name: list(s["command"]) for name, s in tideline.items() if str(s.get("restart", "no")) != "no"}
    commands["ingest-worker-2"] = commands["ingest-worker"]
    cli_argv = [sys.executable, "-m", "tideline_cli"]
    children = [
        Child(name, [*cli_argv, *argv, *REPLICAS.get(name, [])], logs / f"{name}.log")
        for name, argv in commands.items()
    ]
    supervisor = Supervisor(children, lambda line: None)
    supervisor.start_all(env)
    try:
        yield env, logs
    finally:
        supervisor.stop_all()
    assert not any(child.group_alive() for child in children), "a part outlived the stop"


async def as_alice(url: str, calls: Callable[[Client], Any]) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), raise_exceptions=True) as client,
    ):
        return await calls(client)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def healthy(env: dict[str, str], probe: list[str]) -> bool:
    """The healthcheck's own probe (parsed as the CLI parses it), asked in this process: no interpreter to start."""
    args = build_parser().parse_args(probe)
    return health.probe(settings_of(env), args.part, queue=args.queue, port=args.port, timeout=2).healthy


def settings_of(env: dict[str, str]) -> Settings:
    return Settings(
        home=Path(env["TIDELINE_HOME"]),
        redis_url=env["TIDELINE_REDIS_URL"],
        database_url=env["TIDELINE_DATABASE_URL"],
        http_port=int(env["TIDELINE_HTTP_PORT"]),
        flower_port=int(env["TIDELINE_FLOWER_PORT"]),
    )


def test_a_write_is_embedded_found_by_meaning_and_dreamt_over_by_the_compose_stacks_own_commands(
    stack: tuple[dict[str, str], Path],
) -> None:
    env, logs = stack
    probes = {
        name: s["healthcheck"]["test"][2:]
        for name, s in SERVICES.items()
        if name not in {"redis", "postgres"} and "healthcheck" in s
    }
    for name, probe in probes.items():
        poll(partial(healthy, env, probe), 90, f"{name} healthy ({probe})", logs)
    # And each healthcheck, as Docker runs it: the command itself, all at once.
    checks = {
        name: subprocess.Popen(
            [sys.executable, "-m", "tideline_cli", *probe], env=env, stdout=subprocess.PIPE, text=True
        )
        for name, probe in probes.items()
    }
    answers = {name: check.communicate(timeout=60)[0].strip() for name, check in checks.items()}
    assert all(check.returncode == 0 for check in checks.values()), answers

    url = f"http://127.0.0.1:{env['TIDELINE_HTTP_PORT']}"

    async def write(client: Client) -> dict[str, int]:
        return {key: (await call(client, "memory_write", gesture=text))["id"] for key, text in MEMORIES.items()}

    ids = anyio.run(as_alice, url, write)
    database = Database.open(env["TIDELINE_DATABASE_URL"], run_migrations=False)
    try:

        def embedded() -> bool:
            with database.read() as conn:
                return counts(conn, "alice").pending_narratives == 0

        poll(embedded, 60, "the ingest workers to embed every write", logs)

        async def search_and_dream(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
            found = await call(client, "memory_search", query=QUERY, mode="dense", limit=3)
            return found, await call(client, "memory_trigger", job="dream")

        found, triggered = anyio.run(as_alice, url, search_and_dream)
        assert found["hits"] and found["hits"][0]["id"] == ids["cat"], found
        assert triggered["task_id"]

        nightly = [stage.name for stage in nightly_stages()]

        def dreamt() -> bool:
            with database.read() as conn:
                return [r.stage for r in last_chain(conn, "alice") if r.status in ("done", "skipped")] == nightly

        poll(dreamt, 60, "every stage of the dream to finish", logs)
    finally:
        database.close()

    shown = cli(env, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["counts"]["narratives"] >= len(MEMORIES) and report["ingest_lag_seconds"] is None
    assert report["queues"] == {"ingest": 0, "dream": 0}
    assert sorted(report["workers"].values()) == [["dream"], ["ingest"], ["ingest"]]  # two ingest workers
    assert report["beat"]["holder"] and [b["role"] for b in report["beat"]["beats"]] == ["active"]
    last = report["last_dream"]
    assert last["trigger"] == "manual" and last["run_key"].startswith("dream:")
    assert [s["stage"] for s in last["stages"]] == nightly

    flower = f"http://127.0.0.1:{env['TIDELINE_FLOWER_PORT']}"
    assert httpx.get(f"{flower}/", timeout=10).status_code == 401  # bound beyond loopback: a password is asked
    assert httpx.get(f"{flower}/workers", auth=FLOWER_AUTH, timeout=10).status_code == 200

    def metrics() -> str | None:
        text = httpx.get(f"{flower}/metrics", timeout=10).text
        return text if "tideline.dream.symbolic" in text else None

    scraped = poll(metrics, 30, "Flower to have seen the dream's tasks", logs)
    succeeded = set()
    for labels in re.findall(r"^flower_events_total\{([^}]*)\}", scraped, re.M):
        task = re.search(r'task="([^"]+)"', labels)
        if task and 'type="task-succeeded"' in labels:
            succeeded.add(task[1])
    stage_tasks = {f"tideline.dream.{stage}" for stage in nightly}  # Flower tells the stages apart
    assert {"tideline.ingest.embed_pending", "tideline.dream.nightly", *stage_tasks} <= succeeded
    assert re.search(r'^flower_task_runtime_seconds_count\{[^}]*task="tideline\.ingest\.embed_pending"', scraped, re.M)
    assert re.search(r'^flower_worker_online\{worker="dream@[^"]+"\} 1\.0$', scraped, re.M)
