"""`tideline hook`: one Claude Code / Codex hook event on stdin, the runtime's answer on stdout.

It runs on every prompt, so it starts thin: this module imports the standard library only. When a
Tideline server answers at TIDELINE_HTTP_HOST:TIDELINE_HTTP_PORT (`tideline up`, `tideline serve
--http`), the event is posted to it (POST /hooks/v1/event) and its answer printed; only when none
does (the port refuses, no token is bound to the agent, or it is no Tideline server) is the store
opened here (`tideline_cli.hook_local`, imported then). SessionEnd hands the recording to a detached
`tideline hook --foreground` and returns at once. Whatever happens the exit code is 0 and stdout
holds the answer or nothing: a failure is one line in TIDELINE_HOME/logs/hook.log.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

# The same names as tideline_hooks and .settings (not imported: they pull in the store and
# pydantic); a test keeps them equal.
RUNTIMES = ("claude-code", "codex")
DEFAULT_AGENT = "default"
INJECT_EVENTS = ("SessionStart", "UserPromptSubmit")
HOOK_PATH = "/hooks/v1/event"
ANSWERED_BY = "X-Tideline-Hook"
CONNECT_SECONDS = 0.3  # a local server accepts at once; a port that does not is no server of ours
# The server bounds a block's search by its query-embedding timeout (2 s); recording a long transcript takes longer.
ANSWER_SECONDS = {"SessionStart": 10.0, "UserPromptSubmit": 10.0}
RECORD_SECONDS = 50.0
MAX_STDIN = 8 * 1024 * 1024
LOCAL_BLOCK_SECONDS = 5.0  # well inside the 15 s `hook install` gives UserPromptSubmit
# Codes on which the local store answers instead: no such route (an older server, or not ours), or a token refused.
FALL_BACK_ON = (401, 403, 404, 405)

DESCRIPTION = """\
Answer one Claude Code or Codex hook event, read as JSON on stdin (the runtime runs this for you
once `tideline hook install` configured it):

  SessionStart      print the session-start block as additionalContext
  UserPromptSubmit  print the per-turn block for the prompt as additionalContext
  Stop, PreCompact  store the transcript's new turns (from where the last hook left off)
  SessionEnd        the same, in a detached process, so the runtime is not kept waiting

With a Tideline server running (tideline up) the event is answered by it; otherwise here. Bad input
or any failure prints nothing, exits 0 and adds a line to TIDELINE_HOME/logs/hook.log."""

INSTALL_DESCRIPTION = """\
Configure a runtime to run `tideline hook` on its events, merged into what is there:
  claude-code  ~/.claude/settings.json (with --project: .claude/settings.json of this repository)
  codex        ~/.codex/hooks.json (with --project: .codex/hooks.json of this repository)
Other hooks and keys are kept; the file changed is backed up first (FILE.bak-TIMESTAMP); installing
twice changes nothing; --uninstall removes only Tideline's entries."""


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "hook",
        help="answer one Claude Code / Codex hook event from stdin (or: hook install)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    configure(parser)


def configure(parser: argparse.ArgumentParser) -> None:
    # An event needs no action word: argparse's own usage would show `ACTION ...` as if it did.
    parser.usage = (
        "%(prog)s [-h] [--runtime {claude-code,codex}] [--agent AGENT] [--foreground]  < EVENT.json\n"
        "       %(prog)s install {claude-code,codex} [--project] [--uninstall] [--agent AGENT]"
    )
    parser.add_argument("--runtime", choices=RUNTIMES, default="claude-code", help="whose event (default claude-code)")
    parser.add_argument("--agent", help=f"agent id (default: TIDELINE_AGENT, else {DEFAULT_AGENT!r})")
    parser.add_argument(
        "--foreground", action="store_true", help="SessionEnd: store before returning, not in a detached process"
    )
    actions = parser.add_subparsers(dest="hook_action", metavar="ACTION")
    install = actions.add_parser(
        "install",
        help="write the runtime's hooks configuration (claude-code or codex)",
        description=INSTALL_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    install.add_argument("target", choices=RUNTIMES, metavar="RUNTIME", help="claude-code or codex")
    install.add_argument("--project", action="store_true", help="this repository's file instead of the user's")
    install.add_argument("--uninstall", action="store_true", help="remove Tideline's entries instead")
    install.add_argument(
        "--agent", help=f"agent id the installed hooks act as (default: TIDELINE_AGENT, else {DEFAULT_AGENT!r})"
    )


def main(argv: Sequence[str]) -> int:
    """`tideline hook ...`, dispatched before the rest of the CLI is imported."""
    parser = argparse.ArgumentParser(
        prog="tideline hook", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    configure(parser)
    args = parser.parse_args(argv)
    if args.hook_action == "install":
        from tideline_cli.hook_install import run_install

        return run_install(args)
    code = run_event(args, sys.stdin.buffer, sys.stdout)
    if "tideline_cli.hook_local" in sys.modules:
        _leave(code)
    return code


def _leave(code: int) -> None:
    """Exit without the interpreter's teardown once the store was opened here.

    By now the answer is written, the store's transaction committed and its connections closed;
    what is left is unloading the store's libraries object by object, which the runtime would wait
    for on every prompt.
    """
    import logging

    with contextlib.suppress(OSError):  # the runtime stopped reading: nothing more to tell it
        sys.stdout.flush()
    logging.shutdown()
    os._exit(code)


class Environment(NamedTuple):
    """What the thin path needs of the settings, read from the environment by the documented names."""

    home: Path
    host: str
    port: str
    tokens: str
    agent: str

    @classmethod
    def read(cls, env: Mapping[str, str]) -> Environment:
        return cls(
            home=Path(env.get("TIDELINE_HOME") or "~/.tideline").expanduser(),
            host=env.get("TIDELINE_HTTP_HOST") or "127.0.0.1",
            port=env.get("TIDELINE_HTTP_PORT") or "8765",
            tokens=env.get("TIDELINE_HTTP_TOKENS", ""),
            agent=env.get("TIDELINE_AGENT") or env.get("AGENT_NAME") or "",
        )

    def token_for(self, agent: str) -> str | None:
        """The bearer token bound to `agent` ("" when the server takes none; None when it takes others only)."""
        pairs = [entry.strip().partition(":") for entry in self.tokens.split(",") if entry.strip()]
        if not pairs:
            return ""
        return next((token.strip() for token, _, owner in pairs if owner.strip() == agent and token.strip()), None)


class HookLog:
    """TIDELINE_HOME/logs/hook.log: one line per failure, the file created with the first one."""

    def __init__(self, home: Path) -> None:
        self.path = home / "logs" / "hook.log"

    def error(self, message: str) -> None:
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {os.getpid()} {message}\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(line)
        except OSError:
            pass  # an unwritable data dir: the hook still exits 0 with nothing on stderr, as promised


def run_event(args: argparse.Namespace, stdin: Any, stdout: Any) -> int:
    env = Environment.read(os.environ)
    log = HookLog(env.home)
    name = "?"
    try:
        raw = stdin.read(MAX_STDIN + 1)
        if len(raw) > MAX_STDIN:
            raise ValueError(f"the event is over {MAX_STDIN} bytes")
        event = json.loads(raw)
        if isinstance(event, dict) and isinstance(event.get("hook_event_name"), str):
            name = event["hook_event_name"][:64]
        agent = args.agent or env.agent or DEFAULT_AGENT
        if name == "SessionEnd" and not args.foreground:
            _detach(args, raw)
            return 0
        output = _ask_server(env, args.runtime, agent, event, name, log)
        if output is _NO_SERVER:
            output = _answer_here(args.runtime, agent, event, name, log)
        if output:
            stdout.write(json.dumps(output, ensure_ascii=False))
            stdout.flush()
    except Exception as exc:  # the hook's top: a runtime shows a traceback to its user, so none may leave here
        log.error(f"{name} ({args.runtime}, agent {args.agent or env.agent or '-'}): {_kind(exc)}: {exc}")
    return 0


class _NoServer:
    """No Tideline server answered: the store is opened here."""


_NO_SERVER = _NoServer()


class _Reply(NamedTuple):
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes


def _ask_server(
    env: Environment, runtime: str, agent: str, event: Any, name: str, log: HookLog
) -> dict[str, Any] | _NoServer | None:
    """The server's answer (the output to print, or None), or _NO_SERVER when none is there to answer."""
    token = env.token_for(agent)
    if token is None:
        return _NO_SERVER  # the server holds no token for this agent: it could not act as it
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(env.host, env.host)
    try:
        port = int(env.port)
        connection = socket.create_connection((host, port), timeout=CONNECT_SECONDS)
    except (OSError, ValueError):
        return _NO_SERVER  # nothing listens (or a bad port setting, which the local path reports)
    where = f"{name} ({runtime}, agent {agent}): {host}:{port}"
    body = json.dumps({"runtime": runtime, "agent": agent, "event": event}, ensure_ascii=False).encode()
    try:
        with connection:
            connection.settimeout(ANSWER_SECONDS.get(name, RECORD_SECONDS))
            reply = _post(connection, host, body, token)
    except (OSError, ValueError) as exc:  # a timeout too: the server may still be working, don't do it twice
        log.error(f"{where} did not answer: {_kind(exc)}: {exc}")
        return None
    ours = reply.headers.get(ANSWERED_BY.lower()) == "server"
    if reply.status == 200 and ours:
        answer = json.loads(reply.body)
        if not isinstance(answer, dict):
            return None
        if isinstance(answer.get("notice"), str):
            log.error(f"{name} ({runtime}): {answer['notice']}")
        output = answer.get("output")
        return output if isinstance(output, dict) else None
    if reply.status in FALL_BACK_ON or not ours:
        log.error(f"{where} answered {reply.status} ({_error_of(reply.body)}); answered here instead")
        return _NO_SERVER
    log.error(f"{where} refused it: {reply.status} {_error_of(reply.body)}")
    return None


def _post(connection: socket.socket, host: str, body: bytes, token: str) -> _Reply:
    """One HTTP/1.1 POST on `connection`, read to its close (http.client would cost every prompt 10 ms to import)."""
    lines = [
        f"POST {HOOK_PATH} HTTP/1.1",
        f"Host: {f'[{host}]' if ':' in host else host}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    received = bytearray()
    while chunk := connection.recv(65536):
        received += chunk
    head, separator, rest = bytes(received).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if not separator or len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
    headers = {key.strip().lower(): value.strip() for key, _, value in (h.partition(":") for h in header_lines)}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        rest = _unchunked(rest)
    return _Reply(int(parts[1]), headers, rest)


def _unchunked(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return bytes(out)


def _answer_here(runtime: str, agent: str, event: Any, name: str, log: HookLog) -> dict[str, Any] | None:
    """The answer over the store opened here; a block that is not ready within LOCAL_BLOCK_SECONDS is given up.

    Without a server a block takes well under a second, most of it imports (measured in docs/benchmarks.md);
    a store whose write lock another process holds long could keep it longer, and the prompt is not
    kept waiting for that. Recording is never given up.
    """
    with _imports_for_one_answer():
        from tideline_cli.hook_local import answer_locally, log_libraries_to

    log_libraries_to(log.path)
    if name not in INJECT_EVENTS:
        return answer_locally(runtime, agent, event)
    outcome: dict[str, Any] = {}

    def answer() -> None:
        try:
            outcome["output"] = answer_locally(runtime, agent, event)
        except Exception as exc:  # handed to the hook's top, which logs it
            outcome["error"] = exc

    worker = threading.Thread(target=answer, name="tideline-hook-local", daemon=True)
    worker.start()
    worker.join(LOCAL_BLOCK_SECONDS)
    if worker.is_alive():
        log.error(
            f"{name} ({runtime}, agent {agent}): no server, and the block was not ready in "
            f"{LOCAL_BLOCK_SECONDS:.0f} s: answered nothing (run `tideline up` for fast blocks)"
        )
        os._exit(0)  # the search thread may hold the store: leave without waiting for it (SQLite rolls back)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("output")


@contextmanager
def _imports_for_one_answer() -> Iterator[None]:
    """Load the store's modules as fast as a process that lives for one answer can.

    The collector waits while they load: their hundreds of thousands of new objects would set it
    scanning again and again, for nothing, as none is garbage. What they left is then frozen out of
    later collections. (jieba, the slowest of them, loads without pkg_resources: `tideline_core.text.jieba_dictionary`.)
    """
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _error_of(payload: bytes) -> str:
    try:
        data = json.loads(payload)
    except ValueError:
        return payload[:200].decode("utf-8", "replace")
    return str(data.get("error", data))[:500] if isinstance(data, dict) else str(data)[:500]


def _detach(args: argparse.Namespace, raw: bytes) -> None:
    """Store the rest of the transcript from a process of its own: the runtime gives SessionEnd 1.5 s."""
    import subprocess

    argv = [sys.executable, "-m", "tideline_cli", "hook", "--runtime", args.runtime, "--foreground"]
    if args.agent:
        argv += ["--agent", args.agent]
    child = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # out of the runtime's process group: its exit does not take the child along
    )
    assert child.stdin is not None
    child.stdin.write(raw)
    child.stdin.close()


def _kind(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout | TimeoutError):
        return "TimeoutError"
    return type(exc).__name__
