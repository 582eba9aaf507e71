"""The `tideline` command as a script would use it: write, search, status, help — as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SUBCOMMANDS = ("up", "serve", "worker", "beat", "flower", "console", "status", "search", "write")


@pytest.fixture
def cli_env(tmp_path: Path, redis_url: str, redis_client: Any, test_database_url: str | None) -> dict[str, str]:
    redis_client.flushdb()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    env.update(
        {
            "TIDELINE_HOME": str(tmp_path / "home"),
            "TIDELINE_REDIS_URL": redis_url,
            "TIDELINE_EMBEDDER": "none",
            "TIDELINE_AGENT": "alice",
        }
    )
    if test_database_url:
        env["TIDELINE_DATABASE_URL"] = test_database_url
    return env


def store_of(env: dict[str, str]) -> str:
    from tideline_core.settings import Settings

    return Settings(
        home=Path(env["TIDELINE_HOME"]), database_url=env.get("TIDELINE_DATABASE_URL")
    ).resolved_database_url


def tideline(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tideline_cli", *args], env=env, input=stdin, capture_output=True, text=True, timeout=60
    )


def narratives_stored(env: dict[str, str]) -> int:
    from tideline_core.store.database import Database
    from tideline_core.store.status import counts

    db = Database.open(store_of(env))
    with db.read() as conn:
        stored = counts(conn, env["TIDELINE_AGENT"]).narratives
    db.close()
    return stored


def test_a_memory_written_from_a_script_is_found_by_search(cli_env: dict[str, str]) -> None:
    written = tideline(
        cli_env, "write", "--gesture", "傍晚在公园散步，聊起了服务设计", "--importance", "4", "--tags", "散步,设计"
    )
    assert written.returncode == 0, written.stderr
    result = json.loads(written.stdout)
    assert set(result) >= {"id", "weight", "recurrence"} and result["agent"] == "alice"
    # As memory_write says it: the embedding is pending, and whether its job reached the queue.
    assert result["embedding"] == "pending" and isinstance(result["queued"], bool)
    turn = tideline(cli_env, "write", "--turn", "--role", "user", "--content", "明天去公园吗？", "--session", "s1")
    assert turn.returncode == 0, turn.stderr

    found = tideline(cli_env, "search", "公园", "--json")
    assert found.returncode == 0, found.stderr
    hits = {(h["kind"], h["id"]) for h in json.loads(found.stdout)["hits"]}
    assert ("narrative", result["id"]) in hits and ("context", json.loads(turn.stdout)["id"]) in hits
    # Another agent sees none of it.
    assert json.loads(tideline(cli_env, "search", "公园", "--json", "--agent", "bob").stdout)["hits"] == []


def test_a_script_that_runs_twice_with_its_idempotency_key_stores_once(cli_env: dict[str, str]) -> None:
    batch = '{"gesture": "first"}\n{"gesture": "second"}\n'
    first = tideline(cli_env, "write", "--json", "-", "--idempotency-key", "import-2026-12-01", stdin=batch)
    again = tideline(cli_env, "write", "--json", "-", "--idempotency-key", "import-2026-12-01", stdin=batch)
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert first.stdout == again.stdout
    assert narratives_stored(cli_env) == 2
    changed = tideline(cli_env, "write", "--gesture", "third", "--idempotency-key", "import-2026-12-01")
    assert changed.returncode == 2 and "idempotency_key: was first used with other arguments" in changed.stderr


def test_a_score_out_of_range_exits_2_names_the_field_and_stores_nothing(cli_env: dict[str, str]) -> None:
    bad = tideline(cli_env, "write", "--gesture", "too important", "--importance", "9")
    assert bad.returncode == 2
    assert "importance" in bad.stderr and bad.stdout == ""
    assert narratives_stored(cli_env) == 0


def test_one_bad_record_in_json_lines_rejects_the_whole_batch(cli_env: dict[str, str]) -> None:
    lines = '{"gesture": "fine"}\n{"gesture": "", "tags": "not-a-list"}\n'
    bad = tideline(cli_env, "write", "--json", "-", stdin=lines)
    assert bad.returncode == 2
    assert "record 2" in bad.stderr and "gesture" in bad.stderr
    assert narratives_stored(cli_env) == 0

    good = tideline(cli_env, "write", "--json", "-", stdin='{"gesture": "one"}\n{"gesture": "two", "tags": ["t"]}\n')
    assert good.returncode == 0, good.stderr
    assert len(good.stdout.splitlines()) == 2 and narratives_stored(cli_env) == 2


def test_status_shows_the_waiting_embedding_job_and_no_workers(cli_env: dict[str, str]) -> None:
    cli_env["TIDELINE_EMBEDDER"] = "local"  # the write enqueues an embedding job; nothing consumes it here
    assert tideline(cli_env, "write", "--gesture", "queued for embedding").returncode == 0
    report = json.loads(tideline(cli_env, "status", "--json").stdout)
    assert report["counts"]["pending_narratives"] == 1
    assert report["queues"] == {"ingest": 1, "dream": 0}
    assert report["workers"] == {}


def test_an_empty_search_is_refused_naming_what_the_cli_can_take(cli_env: dict[str, str]) -> None:
    for query in ("", "   "):
        empty = tideline(cli_env, "search", query)
        assert empty.returncode == 2 and "query: must name what to look for" in empty.stderr
        assert "recent lines" not in empty.stderr


def test_hook_help_shows_an_event_needs_no_action_word(capsys: pytest.CaptureFixture[str]) -> None:
    from tideline_cli.main import main

    with pytest.raises(SystemExit):
        main(["hook", "--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert "ACTION" not in usage and "< EVENT.json" in usage and "install {claude-code,codex}" in usage


def test_status_says_when_the_broker_is_unreachable(cli_env: dict[str, str], tmp_path: Path) -> None:
    cli_env["TIDELINE_REDIS_URL"] = f"redis+socket://{tmp_path}/absent.sock"
    status = tideline(cli_env, "status")
    assert status.returncode == 0, status.stderr
    assert "queues: broker unreachable" in status.stdout


def test_status_lists_the_agents_recent_dream_runs(cli_env: dict[str, str]) -> None:
    from tideline_core.dream.contract import Stage, StageContext, StageOutput
    from tideline_core.dream.runner.running import run_stage
    from tideline_core.dream.runner.runs import fail_run, start_run
    from tideline_core.store.database import Database

    db = Database.open(store_of(cli_env))
    refresh = Stage("refresh", "refresh", lambda ctx, agent: StageOutput({"changed": 3}))
    graph = Stage("graph", "graph", lambda ctx, agent: StageOutput({"nodes": 2}))
    run_stage(StageContext(db=db, embedder=None), graph, "alice", "2026-11-28", {})  # the night before
    run_stage(StageContext(db=db, embedder=None), refresh, "alice", "2026-11-29", {})
    with db.write() as conn:
        start_run(conn, "alice", "2026-11-29", "recluster", {})
        fail_run(conn, "alice", "2026-11-29", "recluster", "vectors contain NaN")
        start_run(conn, "bob", "2026-11-29", "scan", {})
    db.close()

    status = tideline(cli_env, "status")
    assert status.returncode == 0, status.stderr
    assert "  last dream: 2026-11-29 (nightly)\n" in status.stdout
    assert status.stdout.count("refresh: done\n") == 1  # listed once, not again among the recent runs
    assert status.stdout.count("recluster: failed (vectors contain NaN)\n") == 1
    assert "  other recent runs:\n    2026-11-28 graph: done\n" in status.stdout
    assert "scan" not in status.stdout  # bob's run is bob's
    runs = json.loads(tideline(cli_env, "status", "--json").stdout)["dream_runs"]
    expected = {("graph", "done"), ("refresh", "done"), ("recluster", "failed")}
    assert {(r["stage"], r["status"]) for r in runs} == expected


def test_help_explains_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    from tideline_cli.main import main

    with pytest.raises(SystemExit) as top:
        main(["--help"])
    listing = capsys.readouterr().out
    assert top.value.code == 0
    for command in SUBCOMMANDS:
        assert f"    {command} " in listing, f"{command} missing from tideline --help"
        with pytest.raises(SystemExit) as sub:
            main([command, "--help"])
        assert sub.value.code == 0 and "usage: tideline " + command in capsys.readouterr().out


def test_an_ingest_worker_gives_each_pool_process_an_equal_share_of_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    from tideline_cli.processes import model_threads
    from tideline_core.settings import Settings

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert model_threads(Settings(embed_threads=0), 4) == 2
    assert model_threads(Settings(embed_threads=0), 16) == 1, "never fewer than one thread"
    assert model_threads(Settings(embed_threads=3), 4) == 3, "TIDELINE_EMBED_THREADS wins"


def test_a_script_gets_the_session_start_block_and_a_turns_block_and_can_see_why(cli_env: dict[str, str]) -> None:
    for n in range(3):
        written = tideline(
            cli_env, "write", "--gesture", f"We planned the harbour picnic, try {n}.", "--importance", "5"
        )
        assert written.returncode == 0, written.stderr
    start = tideline(cli_env, "inject")
    again = tideline(cli_env, "inject", "--json")
    turn = tideline(cli_env, "inject", "--query", "harbour picnic", "--session", "s1", "--budget", "120", "--explain")
    repeat = tideline(cli_env, "inject", "--query", "harbour picnic", "--session", "s1", "--json")
    other = tideline(cli_env, "inject", "--agent", "bob", "--query", "harbour picnic", "--json")
    too_small = tideline(cli_env, "inject", "--budget", "10")
    assert start.returncode == 0 and start.stdout.startswith("# Tideline memory · v"), start.stderr
    assert "no SOUL file at" in start.stderr
    status = json.loads(tideline(cli_env, "status", "--json").stdout)
    assert status["soul_found"] is False and status["soul_path"].endswith("agents/alice/SOUL.md")
    block = json.loads(again.stdout)
    assert block["text"] == start.stdout and {item["tier"] for item in block["items"]} >= {"T2"}
    assert turn.returncode == 0 and turn.stdout.startswith("# Tideline recall"), turn.stderr
    assert "T1  narrative#" in turn.stderr and "of 120 tokens" in turn.stderr
    shown_first = {int(line.split("#")[1].split()[0]) for line in turn.stderr.splitlines() if "narrative#" in line}
    assert shown_first and not shown_first & {item["id"] for item in json.loads(repeat.stdout)["items"]}
    assert json.loads(other.stdout)["items"] == []
    assert too_small.returncode != 0 and "budget" in too_small.stderr


def test_output_into_a_reader_that_went_away_ends_quietly(cli_env: dict[str, str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `tideline mcp-config claude | head -1` once head has exited
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tideline_cli", "mcp-config", "claude"],
            env=cli_env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr
    assert done.returncode == 0


def test_help_loads_no_store_no_model_and_no_validation_library() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tideline_cli", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "usage: tideline" in done.stdout
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    heavy = {"pydantic", "pydantic_settings", "sqlalchemy", "numpy", "celery", "redis", "jieba", "mcp"}
    assert not heavy & loaded, sorted(heavy & loaded)


def test_every_field_of_a_memory_is_an_option_of_write_described_as_the_model_describes_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tideline_cli.main import main
    from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn

    with pytest.raises(SystemExit):
        main(["write", "--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps the help text
    for model, renamed in ((NarrativeIn, {"narrative_type": "--type"}), (ContextTurnIn, {"session_id": "--session"})):
        for name, field in model.model_fields.items():
            assert renamed.get(name, "--" + name.replace("_", "-")) in shown, name
            assert str(field.description).rstrip(".") in shown, name


def test_list_and_object_options_are_read_as_the_model_takes_them(cli_env: dict[str, str]) -> None:
    turn = tideline(cli_env, "write", "--turn", "--role", "user", "--content", "hi", "--metadata", '{"lang": "en"}')
    assert turn.returncode == 0, turn.stderr
    turn_id = json.loads(turn.stdout)["id"]
    linked = tideline(cli_env, "write", "--gesture", "said hi", "--source-links", str(turn_id), "--tags", "a, b,a")
    assert linked.returncode == 0, linked.stderr
    bad = tideline(cli_env, "write", "--gesture", "said hi", "--source-links", "1,two")
    assert bad.returncode == 2 and "source_links: must be comma-separated integers" in bad.stderr
    bad_json = tideline(cli_env, "write", "--turn", "--role", "user", "--content", "x", "--metadata", "{lang")
    assert bad_json.returncode == 2 and "metadata: is not valid JSON" in bad_json.stderr
    assert narratives_stored(cli_env) == 1
