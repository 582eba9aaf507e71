"""`tideline mcp-config CLIENT`: the block that connects a client to Tideline's MCP server, in the client's format.

Claude Code and Claude Desktop read JSON `mcpServers`, Codex TOML `[mcp_servers.NAME]`, Hermes YAML
`mcp_servers:`. On stdio the block starts `tideline serve` by its absolute path with TIDELINE_HOME and
TIDELINE_AGENT (Hermes and Claude Desktop give a server only the environment its block names); with
--http it points at the streamable HTTP server with the bearer token bound to the agent.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from tideline_cli.hook_install import reach_environment, tideline_executable
from tideline_core.domain.choices import DEFAULT_AGENT

if TYPE_CHECKING:
    from tideline_core.settings import Settings

CLIENTS = ("claude", "claude-desktop", "codex", "hermes")
WHERE = {
    "claude": "Claude Code: .mcp.json at the project root, or `claude mcp add-json tideline '<the inner object>'`",
    "claude-desktop": "Claude Desktop: claude_desktop_config.json (Settings → Developer → Edit Config)",
    "codex": "Codex: ~/.codex/config.toml (or .codex/config.toml of a trusted project)",
    "hermes": "Hermes Agent: ~/.hermes/config.yaml",
}
SERVER = "tideline"
TOKEN_ENV = "TIDELINE_MCP_TOKEN"  # Codex reads a bearer token from an environment variable, never from the file
HERMES_TIMEOUTS = {"timeout": 60, "connect_timeout": 30}

DESCRIPTION = """\
Print the block that connects CLIENT to Tideline's MCP server, in CLIENT's own format:
  claude, claude-desktop  JSON mcpServers
  codex                   TOML [mcp_servers.tideline] for config.toml
  hermes                  YAML mcp_servers: for ~/.hermes/config.yaml
stdio (default): `tideline serve` by its absolute path, with TIDELINE_HOME and TIDELINE_AGENT.
--http: the streamable HTTP server at TIDELINE_HTTP_HOST:PORT with the bearer token that
TIDELINE_HTTP_TOKENS binds to the agent (a placeholder and a note on stderr when there is none).
Where to put it goes to stderr."""


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "mcp-config",
        help="print the MCP server block for Claude Code, Claude Desktop, Codex or Hermes",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("client", choices=CLIENTS, help="which client's format")
    parser.add_argument("--http", action="store_true", help="the streamable HTTP server instead of stdio")
    parser.add_argument("--agent", help=f"agent id (default: TIDELINE_AGENT, else {DEFAULT_AGENT!r})")


def run(settings: Settings, args: argparse.Namespace) -> int:
    client: str = args.client
    agent = args.agent or settings.agent
    server = _http_server(settings, agent) if args.http else _stdio_server(settings, agent)
    print(render(client, server))
    print(f"# {WHERE[client]}", file=sys.stderr)
    print(f"# agent: {agent} (as `tideline hook install` and `tideline import` would act)", file=sys.stderr)
    if client == "codex" and "token" in server:
        print(f"# Codex reads the token from the environment: export {TOKEN_ENV}={server['token']}", file=sys.stderr)
    return 0


def _stdio_server(settings: Settings, agent: str) -> dict[str, Any]:
    # A server started by the client sees only this environment (Hermes, Claude Desktop).
    env = reach_environment(settings, agent, hooks=False)
    return {"command": tideline_executable(), "args": ["serve"], "env": env}


def _http_server(settings: Settings, agent: str) -> dict[str, Any]:
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(settings.http_host, settings.http_host)
    if host != settings.http_host:
        print(f"# the server binds {settings.http_host}: from another machine, use its address", file=sys.stderr)
    url = f"http://{f'[{host}]' if ':' in host else host}:{settings.http_port}/mcp"
    tokens = settings.http_token_map()
    if not tokens:
        print(
            f"# TIDELINE_HTTP_TOKENS is empty: the server takes no token (loopback only), and every caller acts "
            f"as the server's own TIDELINE_AGENT: {settings.agent!r} when it runs with these settings. To bind "
            f"this client to {agent!r}, start the server with TIDELINE_HTTP_TOKENS=TOKEN:{agent} and run this again.",
            file=sys.stderr,
        )
        return {"url": url}
    token = next((token for token, owner in tokens.items() if owner == agent), None)
    if token is None:
        token = f"<a token bound to {agent} in TIDELINE_HTTP_TOKENS>"
        print(f"# no token in TIDELINE_HTTP_TOKENS is bound to agent {agent!r}: add TOKEN:{agent}", file=sys.stderr)
    return {"url": url, "token": token}


def render(client: str, server: dict[str, Any]) -> str:
    """The block in `client`'s format for a server described as {command, args, env} or {url, token?}."""
    if client == "codex":
        return _codex(server)
    if client == "hermes":
        return _hermes(server)
    entry: dict[str, Any]
    if "url" in server:
        entry = {"type": "http", "url": server["url"]}
        if "token" in server:
            entry["headers"] = {"Authorization": f"Bearer {server['token']}"}
    else:
        entry = dict(server)
    return json.dumps({"mcpServers": {SERVER: entry}}, indent=2, ensure_ascii=False)


def _codex(server: dict[str, Any]) -> str:
    lines = [f"[mcp_servers.{SERVER}]"]
    if "url" in server:
        lines.append(f"url = {quoted(server['url'])}")
        if "token" in server:
            lines.append(f"bearer_token_env_var = {quoted(TOKEN_ENV)}")
        return "\n".join(lines)
    lines += [f"command = {quoted(server['command'])}", f"args = [{', '.join(quoted(a) for a in server['args'])}]"]
    lines += ["", f"[mcp_servers.{SERVER}.env]"]
    lines += [f"{name} = {quoted(value)}" for name, value in server["env"].items()]
    return "\n".join(lines)


def _hermes(server: dict[str, Any]) -> str:
    lines = ["mcp_servers:", f"  {SERVER}:"]
    if "url" in server:
        lines.append(f"    url: {quoted(server['url'])}")
        if "token" in server:
            lines += ["    headers:", f"      Authorization: {quoted('Bearer ' + server['token'])}"]
    else:
        lines.append(f"    command: {quoted(server['command'])}")
        lines.append(f"    args: [{', '.join(quoted(a) for a in server['args'])}]")
        lines.append("    env:")
        lines += [f"      {name}: {quoted(value)}" for name, value in server["env"].items()]
    lines += [f"    {name}: {value}" for name, value in HERMES_TIMEOUTS.items()]
    return "\n".join(lines)


def quoted(text: str) -> str:
    """A double-quoted string that TOML and YAML read back as `text` (JSON's escapes are valid in both; DEL is not)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
