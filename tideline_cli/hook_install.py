"""`tideline hook install claude-code|codex`: Tideline's hook entries merged into the runtime's hooks file.

Claude Code reads `hooks` from ~/.claude/settings.json (or a project's .claude/settings.json), Codex
from ~/.codex/hooks.json (or a repository's .codex/hooks.json), in one shape: `{"hooks": {EVENT:
[{"matcher": ..., "hooks": [{"type": "command", "command": ..., "timeout": SECONDS}]}]}}`. Tideline's
entries are the handlers whose command runs `tideline hook`; everything else in the file is kept as
it is.

A runtime starts a hook with its own environment, not the shell's that ran `tideline up`: the
command carries what reaches this user's store and server (`env TIDELINE_HOME=... tideline hook ...`),
so that run with nothing else set it reads and writes the same memory as the agent's MCP tools.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tideline_core.errors import TidelineError

if TYPE_CHECKING:
    from tideline_core.settings import Settings

# Seconds each event's hook may run. Claude Code gives SessionEnd 1.5 s whatever the file says, and
# `tideline hook` returns from it at once (the storing goes on in a detached process).
TIMEOUTS = {
    "claude-code": {"SessionStart": 30, "UserPromptSubmit": 15, "Stop": 60, "PreCompact": 60, "SessionEnd": 5},
    # Codex has no SessionEnd: its Stop, after every turn, stores as it goes.
    "codex": {"SessionStart": 30, "UserPromptSubmit": 15, "Stop": 60, "PreCompact": 60},
}
OURS = re.compile(r"(^|[\s/\\'\"])tideline(\.exe)?['\"]?\s+hook(\s|$)")
EXIT_USAGE = 2


class InstallError(TidelineError):
    """A hooks file that cannot be merged into (not JSON, `hooks` not an object ...); nothing was written."""


def run_install(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from tideline_core.settings import Settings

    try:
        settings = Settings()
        agent = args.agent or settings.agent
        path = hooks_file(args.target, project=args.project)
        command = hook_command(args.target, reach_environment(settings, agent, hooks=True))
        changed, backup = update_file(path, args.target, command, uninstall=args.uninstall)
    except (TidelineError, ValidationError, OSError) as exc:
        print(f"tideline: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not changed:
        print(f"{path}: nothing to change ({'none installed' if args.uninstall else 'already installed'})")
        return 0
    what = "removed Tideline's hooks from" if args.uninstall else "installed Tideline's hooks in"
    print(f"{what} {path}" + (f" (backup: {backup})" if backup else ""))
    if not args.uninstall:
        print(f"# the hooks act as agent {agent!r} on {settings.home.resolve()}", file=sys.stderr)
    if args.target == "codex" and not args.uninstall:
        print(
            "Codex: where hooks are behind a feature flag, set `[features] hooks = true` (older releases: "
            "`codex_hooks = true`) in config.toml; Codex may ask you to trust new hooks.",
            file=sys.stderr,
        )
    return 0


def hooks_file(target: str, *, project: bool, cwd: Path | None = None, home: Path | None = None) -> Path:
    """The file the runtime reads hooks from: the user's, or (`project`) the repository's around `cwd`."""
    if project:
        base = repository_root(cwd or Path.cwd())
    else:
        base = home or Path.home()
    return base / (".claude/settings.json" if target == "claude-code" else ".codex/hooks.json")


def repository_root(start: Path) -> Path:
    """The nearest directory from `start` up holding .git; `start` itself when there is none."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start


def tideline_executable() -> str:
    """The absolute path of the `tideline` command this process belongs to (a runtime starts hooks without our PATH)."""
    invoked = Path(sys.argv[0])
    if invoked.name == "tideline" and invoked.exists():
        return str(invoked.absolute())
    beside = Path(sys.executable).parent / "tideline"
    if beside.exists():
        return str(beside.absolute())
    found = shutil.which("tideline")
    if found is None:
        raise InstallError("cannot find the `tideline` command: install the package, or run this as `tideline ...`")
    return str(Path(found).absolute())


def reach_environment(settings: Settings, agent: str, *, hooks: bool) -> dict[str, str]:
    """The variables a process a client starts needs to act as `agent` on this user's store (and, for
    `hooks`, to find the server `tideline up` runs: its address when not the default, the agent's token)."""
    env = {"TIDELINE_HOME": str(settings.home.resolve()), "TIDELINE_AGENT": agent}
    if settings.database_url or settings.memory_mcp_db:
        env["TIDELINE_DATABASE_URL"] = settings.resolved_database_url
    if settings.redis_url:
        env["TIDELINE_REDIS_URL"] = settings.redis_url
    if not hooks:
        return env
    defaults = type(settings).model_fields
    if settings.http_host != defaults["http_host"].default:
        env["TIDELINE_HTTP_HOST"] = settings.http_host
    if settings.http_port != defaults["http_port"].default:
        env["TIDELINE_HTTP_PORT"] = str(settings.http_port)
    token = next((token for token, owner in settings.http_token_map().items() if owner == agent), None)
    if token is not None:  # only the agent's own: the hook needs no other agent's token
        env["TIDELINE_HTTP_TOKENS"] = f"{token}:{agent}"
    return env


def hook_command(target: str, env: dict[str, str]) -> str:
    """`env NAME=VALUE ... /abs/tideline hook --runtime TARGET`: run by a shell or split and executed, the same."""
    launcher = shutil.which("env") or "/usr/bin/env"
    parts = [launcher, *(f"{name}={value}" for name, value in env.items()), tideline_executable()]
    return shlex.join([*parts, "hook", "--runtime", target])


def is_ours(handler: Any) -> bool:
    return (
        isinstance(handler, dict) and isinstance(handler.get("command"), str) and bool(OURS.search(handler["command"]))
    )


def merged(config: dict[str, Any], target: str, command: str, *, uninstall: bool) -> dict[str, Any]:
    """`config` with Tideline's handlers removed, then (unless `uninstall`) one added per event; the rest untouched.

    Installing over an earlier install replaces its entries, so running it again changes nothing.
    """
    hooks = config.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"`hooks` must be a JSON object, found a {type(hooks).__name__}")
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups  # not a shape we know: not ours to touch
            continue
        remaining = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(is_ours(h) for h in handlers):
                remaining.append(group)
                continue
            others = [h for h in handlers if not is_ours(h)]
            if others:
                remaining.append({**group, "hooks": others})
        if remaining or not groups:
            kept[event] = remaining
    if not uninstall:
        for event, seconds in TIMEOUTS[target].items():
            entry = {"hooks": [{"type": "command", "command": command, "timeout": seconds}]}
            existing = kept.get(event, [])
            kept[event] = [*(existing if isinstance(existing, list) else [existing]), entry]
    result = dict(config)
    if kept:
        result["hooks"] = kept
    else:
        result.pop("hooks", None)
    return result


def update_file(path: Path, target: str, command: str, *, uninstall: bool) -> tuple[bool, Path | None]:
    """Merge into `path`, backing it up first: whether it changed, and the backup (None for a new file)."""
    config: dict[str, Any] = {}
    if path.exists():
        try:
            config = json.loads(path.read_text(encoding="utf-8") or "{}")
        except ValueError as exc:
            raise InstallError(f"{path} is not valid JSON ({exc}); fix it first, nothing was written") from None
        if not isinstance(config, dict):
            raise InstallError(f"{path} must hold a JSON object; nothing was written")
    updated = merged(config, target, command, uninstall=uninstall)
    if updated == config:
        return False, None
    backup = None
    if path.exists():
        backup = _free_name(path.with_name(f"{path.name}.bak-{time.strftime('%Y%m%dT%H%M%S')}"))
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    scratch.write_text(json.dumps(updated, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if backup is not None:
        os.chmod(scratch, stat.S_IMODE(backup.stat().st_mode))  # a settings file may hold secrets: keep its mode
    os.replace(scratch, path)
    return True, backup


def _free_name(path: Path) -> Path:
    """`path`, or `path-1`, `path-2` ... when a backup of the same second is there already."""
    candidate, n = path, 0
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate
