"""`tideline hook install`: Tideline's hooks merged into Claude Code's and Codex's files, and taken out again."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.ports import free_port
from tideline_cli.main import main
from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn
from tideline_core.embedding import NoEmbedder
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.status import counts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SESSIONS = FIXTURES / "sessions"
CLAUDE_SESSION = "7f3c2a9e-4b1d-4e8a-9c2f-1a2b3c4d5e6f"

CLAUDE_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}],
    },
}
CODEX_EVENTS = ["PreCompact", "SessionStart", "Stop", "UserPromptSubmit"]
CODEX_HOOKS: dict[str, Any] = {
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "python3 ~/.codex/hello.py"}]}]
    }
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's home, with Tideline's data elsewhere (TIDELINE_HOME) and nothing else of Tideline's set."""
    user = tmp_path / "user"
    user.mkdir()
    for name in [n for n in os.environ if n.startswith("TIDELINE_") or n in ("AGENT_NAME", "MEMORY_MCP_DB")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("TIDELINE_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    return user


def hook_event(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / "hooks" / f"{name}.json").read_text(encoding="utf-8")))


def write(path: Path, data: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=4)
    path.write_text(text, encoding="utf-8")
    return text


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def ours(config: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per event, the handlers that run `tideline hook`."""
    return {
        event: [h for g in groups for h in g["hooks"] if " hook --runtime" in h["command"]]
        for event, groups in config.get("hooks", {}).items()
        if any(" hook --runtime" in h["command"] for g in groups for h in g["hooks"])
    }


def launched(command: str) -> tuple[dict[str, str], list[str]]:
    """What an installed command sets in the environment, and the command it then runs."""
    words = shlex.split(command)
    assert Path(words[0]).name == "env"
    assignments = [w for w in words[1:] if "=" in w and not w.startswith("/")]
    env = dict(w.split("=", 1) for w in assignments)
    return env, words[1 + len(assignments) :]


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*"))


def test_claude_code_gets_every_event_beside_what_was_there_with_a_backup(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = home / ".claude" / "settings.json"
    original = write(settings, CLAUDE_SETTINGS)
    assert main(["hook", "install", "claude-code"]) == 0
    config = read(settings)
    installed = ours(config)
    assert sorted(installed) == ["PreCompact", "SessionEnd", "SessionStart", "Stop", "UserPromptSubmit"]
    env, argv = launched(installed["Stop"][0]["command"])
    assert Path(argv[0]).is_absolute() and Path(argv[0]).exists()
    assert argv[1:] == ["hook", "--runtime", "claude-code"]
    assert env["TIDELINE_HOME"] == str(Path(os.environ["TIDELINE_HOME"]).resolve())
    assert installed["SessionEnd"][0]["timeout"] < installed["Stop"][0]["timeout"]
    # What was there is kept as it was: other keys, another tool's hooks, even on the same event.
    assert config["model"] == "opus" and config["permissions"] == CLAUDE_SETTINGS["permissions"]
    assert config["hooks"]["PreToolUse"] == CLAUDE_SETTINGS["hooks"]["PreToolUse"]
    assert config["hooks"]["Stop"][0] == CLAUDE_SETTINGS["hooks"]["Stop"][0]
    [backup] = backups(settings)
    assert backup.read_text(encoding="utf-8") == original
    assert f"backup: {backup}" in capsys.readouterr().out


def test_installing_twice_changes_nothing_and_uninstalling_gives_back_the_original(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    write(settings, CLAUDE_SETTINGS)
    main(["hook", "install", "claude-code"])
    once = settings.read_text(encoding="utf-8")
    assert main(["hook", "install", "claude-code"]) == 0
    assert settings.read_text(encoding="utf-8") == once and len(backups(settings)) == 1
    assert main(["hook", "install", "claude-code", "--uninstall"]) == 0
    assert read(settings) == CLAUDE_SETTINGS and len(backups(settings)) == 2
    assert main(["hook", "install", "claude-code", "--uninstall"]) == 0  # nothing left to remove
    assert len(backups(settings)) == 2


def test_codex_gets_its_events_in_hooks_json_beside_its_own(home: Path) -> None:
    hooks = home / ".codex" / "hooks.json"
    write(hooks, CODEX_HOOKS)
    assert main(["hook", "install", "codex", "--agent", "coder"]) == 0
    config = read(hooks)
    installed = ours(config)
    assert sorted(installed) == CODEX_EVENTS  # Codex has no SessionEnd
    env, argv = launched(installed["SessionStart"][0]["command"])
    assert argv[1:] == ["hook", "--runtime", "codex"] and env["TIDELINE_AGENT"] == "coder"
    assert config["hooks"]["SessionStart"][0] == CODEX_HOOKS["hooks"]["SessionStart"][0]
    main(["hook", "install", "codex", "--uninstall"])
    assert read(hooks) == CODEX_HOOKS


def test_with_project_the_repositorys_own_file_is_written(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(repo / "src" / "deep")
    assert main(["hook", "install", "codex", "--project"]) == 0
    assert main(["hook", "install", "claude-code", "--project"]) == 0
    assert sorted(ours(read(repo / ".codex" / "hooks.json"))) == [
        "PreCompact",
        "SessionStart",
        "Stop",
        "UserPromptSubmit",
    ]
    assert "SessionEnd" in ours(read(repo / ".claude" / "settings.json"))
    assert not (home / ".codex").exists() and not (home / ".claude").exists()
    assert backups(repo / ".codex" / "hooks.json") == []  # a new file: nothing to back up


def test_a_file_that_is_not_json_is_left_alone(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus",', encoding="utf-8")
    assert main(["hook", "install", "claude-code"]) == 2
    assert settings.read_text(encoding="utf-8") == '{"model": "opus",' and backups(settings) == []
    assert "not valid JSON" in capsys.readouterr().err


def test_hooks_of_an_unknown_shape_are_refused(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    write(settings, {"hooks": ["not", "an", "object"]})
    assert main(["hook", "install", "claude-code"]) == 2
    assert read(settings) == {"hooks": ["not", "an", "object"]}
    assert "`hooks` must be a JSON object" in capsys.readouterr().err


def clean_run(command: str, stdin: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The command as Claude Code runs it: by a shell, in an environment with none of the user's TIDELINE_*."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    return subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True, text=True, env=env, timeout=90)


def test_the_installed_command_run_with_a_clean_environment_reads_and_writes_the_users_memory(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDELINE_HTTP_PORT", str(free_port()))  # nothing listens there: the hook opens the store
    data = tmp_path / "data"
    settings = Settings(embedder="none")
    settings.ensure_home()
    service = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder())
    try:
        service.write_narrative(settings.agent, NarrativeIn(gesture="The ferry timetable changes every Monday"))
    finally:
        service.close()
    assert main(["hook", "install", "claude-code"]) == 0
    installed = ours(read(home / ".claude" / "settings.json"))

    asked = clean_run(
        installed["UserPromptSubmit"][0]["command"], json.dumps(hook_event("claude_user_prompt_submit")), home
    )
    assert asked.returncode == 0 and asked.stderr == ""
    assert "changes every Monday" in json.loads(asked.stdout)["hookSpecificOutput"]["additionalContext"]
    transcript = Path(shutil.copy(SESSIONS / f"{CLAUDE_SESSION}.jsonl", tmp_path / f"{CLAUDE_SESSION}.jsonl"))
    stop = {**hook_event("claude_stop"), "transcript_path": str(transcript)}
    stored = clean_run(installed["Stop"][0]["command"], json.dumps(stop), home)
    assert (stored.returncode, stored.stdout, stored.stderr) == (0, "", "")
    database = Database.open(settings.resolved_database_url)
    try:
        with database.read() as conn:
            assert counts(conn, settings.agent).context_turns > 0
    finally:
        database.close()
    assert not (home / ".tideline").exists() and not (data / "logs" / "hook.log").exists()


def test_the_installed_command_carries_the_servers_address_and_the_agents_token(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDELINE_HTTP_PORT", "9911")
    monkeypatch.setenv("TIDELINE_HTTP_TOKENS", "tok-a:alice,tok-b:bob")
    assert main(["hook", "install", "claude-code", "--agent", "alice"]) == 0
    env, _ = launched(ours(read(home / ".claude" / "settings.json"))["Stop"][0]["command"])
    assert env["TIDELINE_HTTP_PORT"] == "9911" and env["TIDELINE_HTTP_TOKENS"] == "tok-a:alice"
    assert env["TIDELINE_AGENT"] == "alice" and "TIDELINE_HTTP_HOST" not in env  # the default needs no saying


def test_the_installed_command_runs(home: Path, tmp_path: Path) -> None:
    settings = home / ".claude" / "settings.json"
    main(["hook", "install", "claude-code"])
    command = ours(read(settings))["UserPromptSubmit"][0]["command"]
    data = tmp_path / "data"
    env = {"HOME": str(home), "TIDELINE_HOME": str(data), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(shlex.split(command), input="{", capture_output=True, text=True, env=env, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert "JSONDecodeError" in (data / "logs" / "hook.log").read_text(encoding="utf-8")
