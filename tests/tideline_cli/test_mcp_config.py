"""`tideline mcp-config`: each client's block parses in its own format and names absolute paths."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tideline_cli.main import main
from tideline_cli.mcp_config import quoted
from tideline_core.settings import DEFAULT_AGENT


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("TIDELINE_AGENT", "AGENT_NAME", "TIDELINE_HTTP_TOKENS", "TIDELINE_DATABASE_URL", "TIDELINE_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    data = tmp_path / "tideline data"  # a space: the paths must stay one string in every format
    monkeypatch.setenv("TIDELINE_HOME", str(data))
    monkeypatch.setenv("TIDELINE_HTTP_HOST", "127.0.0.1")
    monkeypatch.setenv("TIDELINE_HTTP_PORT", "8799")
    return data


def printed(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, str]:
    assert main(["mcp-config", *args]) == 0
    out = capsys.readouterr()
    return out.out, out.err


def yaml_subset(text: str) -> dict[str, Any]:
    """Hermes' YAML as printed (nested `key: value` by indentation, JSON-quoted scalars, flow lists), read strictly."""
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in text.splitlines():
        match = re.fullmatch(r"( *)([A-Za-z_][A-Za-z0-9_]*): ?(.*)", raw)
        assert match, f"not a line of the expected YAML: {raw!r}"
        indent, key, value = len(match[1]), match[2], match[3]
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value == "":
            parent[key] = {}
            stack.append((indent, parent[key]))
        else:
            parent[key] = json.loads(value)  # quoted strings, numbers and flow lists are JSON here
    return root


def test_claude_code_gets_a_stdio_block_with_absolute_paths(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = printed(capsys, "claude")
    server = json.loads(out)["mcpServers"]["tideline"]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).exists()
    assert server["args"] == ["serve"]
    assert server["env"] == {"TIDELINE_HOME": str(home), "TIDELINE_AGENT": DEFAULT_AGENT}
    assert ".mcp.json" in err


def test_claude_desktop_takes_the_agent_from_the_environment_or_the_flag(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDELINE_AGENT", "me")
    from_env = json.loads(printed(capsys, "claude-desktop")[0])["mcpServers"]["tideline"]["env"]["TIDELINE_AGENT"]
    from_flag = json.loads(printed(capsys, "claude-desktop", "--agent", "desk")[0])["mcpServers"]["tideline"]
    assert (from_env, from_flag["env"]["TIDELINE_AGENT"]) == ("me", "desk")


def test_claude_over_http_carries_the_token_bound_to_the_agent(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDELINE_HTTP_TOKENS", "tok-h:hermes,tok-c:default")
    server = json.loads(printed(capsys, "claude", "--http")[0])["mcpServers"]["tideline"]
    assert server == {"type": "http", "url": "http://127.0.0.1:8799/mcp", "headers": {"Authorization": "Bearer tok-c"}}


def test_an_agent_without_a_token_gets_a_placeholder_and_a_note(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDELINE_HTTP_TOKENS", "tok-h:hermes")
    out, err = printed(capsys, "claude", "--http", "--agent", "nobody")
    header = json.loads(out)["mcpServers"]["tideline"]["headers"]["Authorization"]
    assert header.startswith("Bearer <") and "nobody" in header
    assert "no token in TIDELINE_HTTP_TOKENS is bound to agent 'nobody'" in err


def test_a_server_without_tokens_gets_no_header_and_a_note_naming_its_agent_and_how_to_bind_one(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out, err = printed(capsys, "claude", "--http")
    assert json.loads(out)["mcpServers"]["tideline"] == {"type": "http", "url": "http://127.0.0.1:8799/mcp"}
    assert "takes no token" in err and f"TIDELINE_AGENT: {DEFAULT_AGENT!r}" in err
    monkeypatch.setenv("TIDELINE_AGENT", "ada")
    _, err = printed(capsys, "claude", "--http", "--agent", "bob")
    assert "TIDELINE_AGENT: 'ada'" in err and "TIDELINE_HTTP_TOKENS=TOKEN:bob" in err


@pytest.mark.parametrize("agent", [None, "ada"])
def test_mcp_config_and_hook_install_act_as_the_same_agent(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, agent: str | None
) -> None:
    if agent:
        monkeypatch.setenv("TIDELINE_AGENT", agent)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    _, config_err = printed(capsys, "claude")
    assert main(["hook", "install", "claude-code"]) == 0
    install_err = capsys.readouterr().err
    expected = agent or DEFAULT_AGENT
    assert f"# agent: {expected} " in config_err and f"act as agent {expected!r}" in install_err
    settings = json.loads((tmp_path / "user" / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert f"TIDELINE_AGENT={expected} " in settings["hooks"]["Stop"][0]["hooks"][0]["command"]


def test_codex_gets_toml_with_its_env_table(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = printed(capsys, "codex")
    server = tomllib.loads(out)["mcp_servers"]["tideline"]
    assert Path(server["command"]).is_absolute() and server["args"] == ["serve"]
    assert server["env"] == {"TIDELINE_HOME": str(home), "TIDELINE_AGENT": DEFAULT_AGENT}
    assert "config.toml" in err


def test_codex_over_http_reads_its_token_from_an_environment_variable(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDELINE_HTTP_TOKENS", "tok-x:default")
    out, err = printed(capsys, "codex", "--http")
    server = tomllib.loads(out)["mcp_servers"]["tideline"]
    assert server == {"url": "http://127.0.0.1:8799/mcp", "bearer_token_env_var": "TIDELINE_MCP_TOKEN"}
    assert "tok-x" not in out and "export TIDELINE_MCP_TOKEN=tok-x" in err


def test_hermes_gets_yaml_with_timeouts(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = printed(capsys, "hermes")
    server = yaml_subset(out)["mcp_servers"]["tideline"]
    assert Path(server["command"]).is_absolute() and server["args"] == ["serve"]
    assert server["env"] == {"TIDELINE_HOME": str(home), "TIDELINE_AGENT": DEFAULT_AGENT}
    assert (server["timeout"], server["connect_timeout"]) == (60, 30)


def test_hermes_over_http_carries_the_header(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDELINE_HTTP_TOKENS", "tok-h:default")
    server = yaml_subset(printed(capsys, "hermes", "--http")[0])["mcp_servers"]["tideline"]
    assert server["url"] == "http://127.0.0.1:8799/mcp"
    assert server["headers"] == {"Authorization": "Bearer tok-h"}


def test_a_non_default_store_and_broker_travel_with_a_stdio_block(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDELINE_REDIS_URL", "redis://127.0.0.1:6380/2")
    env = json.loads(printed(capsys, "claude")[0])["mcpServers"]["tideline"]["env"]
    assert env["TIDELINE_REDIS_URL"] == "redis://127.0.0.1:6380/2"


@pytest.mark.parametrize("text", ['C:\\a "b"\tc', "näive/路径", "del\x7fchar", "new\nline"])
def test_a_quoted_string_reads_back_the_same_in_toml_and_json(text: str) -> None:
    assert tomllib.loads(f"v = {quoted(text)}")["v"] == text
    assert json.loads(quoted(text)) == text
    assert "\x7f" not in quoted(text)
