"""`tideline hook` as the runtime runs it: a subprocess with one event on stdin, alone or beside a running server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

import tideline_hooks as core
from tests.ports import free_port
from tideline_cli import hook as thin
from tideline_core.compose import compose
from tideline_core.domain.inputs import AmendmentIn, NarrativeIn, RecallQuery
from tideline_core.embedding import NoEmbedder
from tideline_core.service import NullJobQueue
from tideline_core.settings import DEFAULT_AGENT, Settings
from tideline_core.store.database import Database
from tideline_core.store.schema import AttentionHit
from tideline_core.store.status import counts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE_SESSION = "7f3c2a9e-4b1d-4e8a-9c2f-1a2b3c4d5e6f"
# What only the full path needs: none of it may load when a server answers.
HEAVY = ("sqlalchemy", "numpy", "onnxruntime", "tideline_core", "pydantic", "celery", "jieba")
# What the store opened here never needs: the model, HTTP clients, the server's frameworks, PostgreSQL's drivers.
MODEL_AND_CLIENTS = ("onnxruntime", "tokenizers", "httpx", "httpcore")
NOT_WITHOUT_A_SERVER = (*MODEL_AND_CLIENTS, "mcp", "starlette", "uvicorn", "asyncpg", "psycopg")
# What a per-turn block never needs, on any store, and every prompt would pay to import: the dream (its runner,
# plans, clustering, entity graph, LLM client), the attention heatmap, the transcripts' readers.
NOT_FOR_A_PROMPT = (
    "tideline_core.dream.runner.running",
    "tideline_core.dream.runner.changes",
    "tideline_core.dream.plan",
    "tideline_core.dream.recluster.store",
    "tideline_core.dream.graph.store",
    "tideline_core.llm.client",
    "tideline_core.attention.heatmap",
    "tideline_core.importing",
    "sqlalchemy.orm",  # the schema is SQLAlchemy Core tables: nothing maps a row to an object
)
# Nor on SQLite: PostgreSQL's dialect and its vector indexes, the schemas of the dream's LLM answers, the
# searches a server keeps (the in-memory indexes, the hybrid ranking: the cold search asks FTS5), numpy (no
# vector is computed: `tideline_core.numeric` imports it on first use).
NOT_FOR_A_PROMPT_ON_SQLITE = (
    "numpy",
    "sqlalchemy.dialects.postgresql",
    "tideline_core.store.pg_vectors",
    "tideline_core.search.hybrid",
    "tideline_core.dream.asking",
    "tideline_core.dream.answers",
    "tideline_core.search.memory_source",
)


def event(name: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "hooks" / f"{name}.json").read_text(encoding="utf-8"))
    return {**data, **changes}


def hook(env: dict[str, str], stdin: dict[str, Any] | str, *args: str, flags: tuple[str, ...] = ()) -> Any:
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    return subprocess.run(
        [sys.executable, *flags, "-m", "tideline_cli", "hook", *args],
        input=text, env=env, capture_output=True, text=True, timeout=90,
    )  # fmt: skip


def context_of(done: Any) -> str:
    assert done.returncode == 0 and done.stderr == "", done.stderr
    answer = json.loads(done.stdout)
    return str(answer["hookSpecificOutput"]["additionalContext"])


def stored(database: Database) -> int:
    with database.read() as conn:
        return counts(conn, "alice").context_turns


def imported(importtime: str) -> set[str]:
    """The top-level packages a `python -X importtime` run's stderr says it imported."""
    return {name.partition(".")[0] for name in modules(importtime)}


def modules(importtime: str) -> set[str]:
    """Every module a `python -X importtime` run's stderr says it imported."""
    lines = (line.rpartition("|")[2].strip() for line in importtime.splitlines() if line.startswith("import time:"))
    return set(lines)


def log_lines(settings: Settings) -> list[str]:
    path = settings.home / "logs" / "hook.log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.fixture
def hook_env(env: dict[str, str]) -> dict[str, str]:
    """The CLI's environment with no server to find: its HTTP port is one nothing listens on."""
    return {**env, "TIDELINE_HTTP_PORT": str(free_port())}


@pytest.fixture
def remembered(settings: Settings, database: Database) -> None:
    """A SOUL file and one memory of alice's, for the blocks to show."""
    soul = settings.home / "agents" / "alice" / "SOUL.md"
    soul.parent.mkdir(parents=True, exist_ok=True)
    soul.write_text("I keep track of ferries and timetables.", encoding="utf-8")
    service = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder(), database=database)
    service.write_narrative("alice", NarrativeIn(gesture="The ferry timetable changes every Monday in winter"))


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    return Path(shutil.copy(FIXTURES / "sessions" / f"{CLAUDE_SESSION}.jsonl", tmp_path / f"{CLAUDE_SESSION}.jsonl"))


def append_turns(path: Path, *texts: str) -> None:
    with open(path, "a", encoding="utf-8") as out:
        for i, text in enumerate(texts):
            role = "user" if i % 2 == 0 else "assistant"
            line = {
                "type": role,
                "sessionId": CLAUDE_SESSION,
                "uuid": f"late-{i}",
                "timestamp": f"2026-01-20T12:30:{i:02d}Z",
                "message": {"role": role, "content": text},
            }
            out.write(json.dumps(line) + "\n")


def test_the_thin_client_names_what_the_core_answers() -> None:
    assert thin.RUNTIMES == core.RUNTIMES and thin.INJECT_EVENTS == core.INJECT_EVENTS
    assert thin.DEFAULT_AGENT == DEFAULT_AGENT


def test_a_session_start_for_an_agent_without_memories_logs_which_agents_have_some(
    hook_env: dict[str, str], server_env: dict[str, str], settings: Settings, remembered: None
) -> None:
    for env in (hook_env, server_env):  # the store opened here, then the server answering
        assert hook({**env, "TIDELINE_AGENT": "nobody"}, event("claude_session_start")).returncode == 0
    lines = log_lines(settings)
    assert len(lines) == 2, lines
    assert all("agent 'nobody' has no memories; agents with memories here: alice (1 rows)" in line for line in lines)
    assert hook(hook_env, event("claude_session_start")).returncode == 0 and len(log_lines(settings)) == 2


# --- no server: the hook opens the store itself -----------------------------------------------


def test_without_a_server_a_session_start_and_a_prompt_get_their_blocks(
    hook_env: dict[str, str], settings: Settings, remembered: None
) -> None:
    start = context_of(hook(hook_env, event("claude_session_start")))
    turn = hook(hook_env, event("claude_user_prompt_submit"))
    assert start.startswith("# Tideline memory") and "I keep track of ferries" in start
    assert json.loads(turn.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "changes every Monday in winter" in context_of(turn)
    assert log_lines(settings) == []


def test_without_a_server_a_prompt_loads_no_broker_client_and_logs_what_it_showed_itself(
    hook_env: dict[str, str], database: Database, remembered: None
) -> None:
    done = hook(hook_env, event("claude_user_prompt_submit"), flags=("-X", "importtime"))
    shown = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "changes every Monday in winter" in shown
    # Celery is imported when a job must be published (a Stop's embedding), pkg_resources never (jieba).
    assert not [name for name in ("celery", "kombu", "pkg_resources.") if f" {name}" in done.stderr]
    with database.read() as conn:
        logged = conn.execute(select(AttentionHit.source).where(AttentionHit.agent_id == "alice")).scalars().all()
    assert logged == ["t1"]


def test_without_a_server_blocks_and_recording_load_no_model_http_client_web_framework_or_postgres_driver(
    hook_env: dict[str, str], database: Database, transcript: Path, remembered: None
) -> None:
    importtime = ("-X", "importtime")
    start = hook(hook_env, event("claude_session_start"), flags=importtime)
    turn = hook(hook_env, event("claude_user_prompt_submit"), flags=importtime)
    stop = hook(hook_env, event("claude_stop", transcript_path=str(transcript)), flags=importtime)
    assert "changes every Monday in winter" in json.loads(turn.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "I keep track of ferries" in json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert stored(database) == 5
    # A store on PostgreSQL is reached through its driver (psycopg); a SQLite store needs none.
    never = set(NOT_WITHOUT_A_SERVER) - ({"psycopg"} if database.dialect == "postgresql" else set())
    for done in (start, turn, stop):
        assert "tideline_core" in imported(done.stderr)  # the store was opened here, not by a server
        assert not imported(done.stderr) & never, imported(done.stderr) & never
    assert not modules(turn.stderr) & set(NOT_FOR_A_PROMPT), modules(turn.stderr) & set(NOT_FOR_A_PROMPT)
    if database.dialect == "sqlite":
        assert not modules(turn.stderr) & set(NOT_FOR_A_PROMPT_ON_SQLITE), modules(turn.stderr)


def test_stop_stores_the_transcript_once_and_then_only_what_it_gained(
    hook_env: dict[str, str], database: Database, transcript: Path, settings: Settings
) -> None:
    stop = event("claude_stop", transcript_path=str(transcript))
    first, again = hook(hook_env, stop), hook(hook_env, stop)
    after_two = stored(database)
    append_turns(transcript, "And the ferry timetable?", "It changes on Mondays.")
    compacting = hook(hook_env, event("claude_pre_compact", transcript_path=str(transcript)))
    assert [p.returncode for p in (first, again, compacting)] == [0, 0, 0]
    assert [p.stdout for p in (first, again, compacting)] == ["", "", ""]
    assert (after_two, stored(database)) == (5, 7)
    assert log_lines(settings) == []


@pytest.mark.parametrize(
    ("stdin", "logged"),
    [
        ("this is not JSON", "JSONDecodeError"),
        (json.dumps({"hook_event_name": "Notification", "session_id": "s"}), "InvalidInput: hook_event_name"),
        (json.dumps({"hook_event_name": "SessionStart"}), "InvalidInput: session_id"),
    ],
)
def test_bad_input_exits_0_prints_nothing_and_logs_one_line(
    hook_env: dict[str, str], settings: Settings, stdin: str, logged: str
) -> None:
    done = hook(hook_env, stdin)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    lines = log_lines(settings)
    assert len(lines) == 1 and logged in lines[0], lines


def test_a_block_not_ready_in_time_is_given_up_without_holding_the_prompt(
    hook_env: dict[str, str], settings: Settings, remembered: None
) -> None:
    # The budget cut to 1 ms: opening the store alone takes longer, so the hook gives up and says why.
    script = (
        "import sys; from tideline_cli import hook; hook.LOCAL_BLOCK_SECONDS = 0.001; sys.exit(hook.main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(event("claude_user_prompt_submit")),
        env=hook_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    [line] = log_lines(settings)
    assert "UserPromptSubmit" in line and "not ready in 0 s" in line and "tideline up" in line


def test_session_end_returns_at_once_and_a_detached_process_stores_the_rest(
    hook_env: dict[str, str], database: Database, transcript: Path, wait_until: Any
) -> None:
    started = time.monotonic()
    done = hook(hook_env, event("claude_session_end", transcript_path=str(transcript)))
    took = time.monotonic() - started
    assert (done.returncode, done.stdout) == (0, "")
    assert took < 1.5, f"SessionEnd took {took:.2f} s"
    wait_until(lambda: stored(database) == 5, timeout=60, message="the detached process to store the transcript")


# --- a running server: the hook is a thin client ----------------------------------------------


@pytest.fixture
def server_env(env: dict[str, str], settings: Settings) -> Iterator[dict[str, str]]:
    """`tideline serve --http` on a free port over the test's store (keyword-only, as the local path)."""
    served = {**env, "TIDELINE_HTTP_PORT": str(free_port()), "TIDELINE_EMBEDDER": "none"}
    settings.ensure_home()
    log = open(settings.home / "server.log", "ab")  # noqa: SIM115 - closed below, after the server stops
    server = subprocess.Popen(
        [sys.executable, "-m", "tideline_cli", "serve", "--http"], env=served, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{served['TIDELINE_HTTP_PORT']}/healthz", timeout=1).is_success:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the server did not start: " + (settings.home / "server.log").read_text())
            time.sleep(0.1)
        yield served
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


def test_with_a_server_the_hook_imports_nothing_heavy_and_answers_as_the_local_path(
    server_env: dict[str, str], remembered: None, database: Database, transcript: Path, settings: Settings
) -> None:
    thin_start = hook(server_env, event("claude_session_start", session_id="served"), flags=("-X", "importtime"))
    thin_turn = hook(server_env, event("claude_user_prompt_submit", session_id="served"), flags=("-X", "importtime"))
    imported = thin_start.stderr + thin_turn.stderr
    assert not [name for name in HEAVY if f" {name}" in imported], "the thin path imported the store"
    local_env = {**server_env, "TIDELINE_HTTP_PORT": str(free_port())}
    local_start = hook(local_env, event("claude_session_start", session_id="local"))
    local_turn = hook(local_env, event("claude_user_prompt_submit", session_id="local"))
    assert json.loads(thin_start.stdout) == json.loads(local_start.stdout)
    assert json.loads(thin_turn.stdout) == json.loads(local_turn.stdout)
    assert "changes every Monday in winter" in json.loads(thin_turn.stdout)["hookSpecificOutput"]["additionalContext"]

    stop = event("claude_stop", transcript_path=str(transcript))
    assert hook(server_env, stop).stdout == "" and stored(database) == 5
    # The server keeps the offsets in the same data dir: the local path then finds nothing new.
    assert hook(local_env, stop).returncode == 0 and stored(database) == 5
    assert log_lines(settings) == []


def test_a_hook_whose_agent_has_no_token_answers_over_the_store_itself(
    server_env: dict[str, str], remembered: None
) -> None:
    # A token for bob only: the server could not act as alice for this hook, so it does not ask it.
    done = hook({**server_env, "TIDELINE_HTTP_TOKENS": "tok-bob:bob"}, event("claude_session_start"),
                flags=("-X", "importtime"))  # fmt: skip
    assert "I keep track of ferries" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert " sqlalchemy" in done.stderr


# --- a real worker embeds what the hook stored ------------------------------------------------


def test_turns_a_stop_stored_are_embedded_by_the_ingest_worker(
    hook_env: dict[str, str], database: Database, transcript: Path, celery_worker: Any, wait_until: Any
) -> None:
    assert hook(hook_env, event("claude_stop", transcript_path=str(transcript))).returncode == 0

    def embedded() -> bool:
        with database.read() as conn:
            mine = counts(conn, "alice")
        return mine.context_turns == 5 and mine.pending_context == 0

    wait_until(embedded, timeout=180, message="the worker to embed the turns the hook stored")


def test_a_memorys_latest_amendment_reaches_the_prompt_block_with_or_without_a_server(
    hook_env: dict[str, str], server_env: dict[str, str], settings: Settings, database: Database, remembered: None
) -> None:
    service = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder(), database=database)
    ferry = service.recall("alice", RecallQuery())[0].id
    service.amend("alice", AmendmentIn(narrative_id=ferry, note="From March the Monday ferry leaves at 7"))
    # The store opened here, then the server answering; each a session of its own (a session is shown a memory once).
    for session, env in (("s-local", hook_env), ("s-server", server_env)):
        block = context_of(hook(env, event("claude_user_prompt_submit", session_id=session)))
        line = next(line for line in block.splitlines() if "changes every Monday in winter" in line)
        assert "amended" in line and "From March the Monday ferry leaves at 7" in line, block
