"""`tideline hook install`: Tideline's hooks merged into Claude Code's and Codex's files, and taken out again."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tideline_cli.main import main

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
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.chdir(tmp_path)
    return user


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
    command = installed["Stop"][0]["command"]
    executable = shlex.split(command)[0]
    assert Path(executable).is_absolute() and Path(executable).exists()
    assert shlex.split(command)[1:] == ["hook", "--runtime", "claude-code"]
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
    assert shlex.split(installed["SessionStart"][0]["command"])[1:] == [
        "hook",
        "--runtime",
        "codex",
        "--agent",
        "coder",
    ]
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


def test_the_installed_command_runs(home: Path, tmp_path: Path) -> None:
    settings = home / ".claude" / "settings.json"
    main(["hook", "install", "claude-code"])
    command = ours(read(settings))["UserPromptSubmit"][0]["command"]
    data = tmp_path / "data"
    env = {"HOME": str(home), "TIDELINE_HOME": str(data), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(shlex.split(command), input="{", capture_output=True, text=True, env=env, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert "JSONDecodeError" in (data / "logs" / "hook.log").read_text(encoding="utf-8")
