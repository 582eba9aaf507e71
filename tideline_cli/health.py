"""`tideline health PART`: is this host's MCP server, worker, beat or Flower alive (container healthchecks).

Each probe asks what the part itself keeps up: the server's and Flower's HTTP health routes, the
heartbeat every worker keeps in Redis (`workers.liveness`) and the announcement every beat renews
(`workers.beat`). Exit 0 when healthy, 1 when not; one line on stdout says which and why.
"""

from __future__ import annotations

import argparse
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis

    from tideline_core.settings import Settings
    from workers.beat import BeatState

PARTS = ("mcp", "worker", "beat", "flower")
ANY_ADDRESS = frozenset({"0.0.0.0", "::", ""})
EXIT_UNHEALTHY = 1

DESCRIPTION = """\
Probe one long-running part on this host, as a container healthcheck does (exit 0 healthy, 1 not):

  mcp      GET /healthz of the MCP server on TIDELINE_HTTP_PORT (or --port)
  worker   a live heartbeat in Redis from a worker on this host (taking --queue, if given)
  beat     a beat on this host announced itself in Redis within TIDELINE_BEAT_LOCK_SECONDS
           (holding the schedule or standing by)
  flower   GET /healthcheck of Flower on TIDELINE_FLOWER_PORT (or --port)"""


def add_parser(sub: Any) -> None:
    health = sub.add_parser(
        "health",
        help="probe this host's MCP server, worker, beat or Flower (exit 0 healthy, 1 not)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    health.add_argument("part", choices=PARTS, help="which part to probe")
    health.add_argument("--queue", choices=["ingest", "dream"], help="worker: the queue it must take (default: any)")
    health.add_argument("--port", type=int, help="mcp, flower: the port (default: TIDELINE_HTTP_PORT, _FLOWER_PORT)")
    health.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for an answer (default 3)")


@dataclass(frozen=True)
class Probe:
    healthy: bool
    detail: str


def run(settings: Settings, args: argparse.Namespace) -> int:
    found = probe(settings, args.part, queue=args.queue, port=args.port, timeout=args.timeout)
    print(f"{args.part}: {'healthy' if found.healthy else 'unhealthy'}: {found.detail}")
    return 0 if found.healthy else EXIT_UNHEALTHY


def probe(settings: Settings, part: str, *, queue: str | None = None, port: int | None = None, timeout: float) -> Probe:
    if part == "mcp":
        host = "127.0.0.1" if settings.http_host in ANY_ADDRESS else settings.http_host
        return _http(f"http://{_bracketed(host)}:{port or settings.http_port}/healthz", timeout)
    if part == "flower":
        return _http(f"http://127.0.0.1:{port or settings.flower_port}/healthcheck", timeout)
    import redis

    client = redis_client(settings, timeout)
    try:
        return _worker(client, queue) if part == "worker" else _beat(client)
    except redis.RedisError as exc:
        return Probe(False, f"Redis unreachable ({type(exc).__name__}: {exc})")
    finally:
        client.close()


def redis_client(settings: Settings, timeout: float) -> redis.Redis:
    import redis

    from workers.locks import redis_client_url

    url = redis_client_url(settings.resolved_redis_url)
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


def _http(url: str, timeout: float) -> Probe:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return Probe(answer.status == 200, f"{url} answered {answer.status}")
    except (urllib.error.URLError, OSError) as exc:
        return Probe(False, f"{url} did not answer ({exc})")


def _worker(client: redis.Redis, queue: str | None) -> Probe:
    from workers.liveness import live_workers

    host = socket.gethostname()
    # Celery names a node QUEUE@HOST (`tideline worker` passes `QUEUE@%h`); the host part is this machine's.
    mine = {name: queues for name, queues in live_workers(client).items() if name.rpartition("@")[2] == host}
    taking = [name for name, queues in mine.items() if queue is None or queue in queues]
    if taking:
        return Probe(True, f"{', '.join(taking)} beating")
    wanted = f"taking {queue}" if queue else "at all"
    return Probe(False, f"no worker on {host} {wanted} has a live heartbeat (found: {', '.join(mine) or 'none'})")


def _beat(client: redis.Redis) -> Probe:
    from workers.beat import running_beats, schedule_holder

    host = socket.gethostname()
    mine = [b for b in running_beats(client) if b.hostname == host]
    if mine:
        return Probe(True, ", ".join(f"{b.node} {b.role}" for b in mine))
    return Probe(False, f"no beat on {host} announced itself (holder of the schedule: {schedule_holder(client)})")


@dataclass(frozen=True)
class BeatReport:
    holder: str | None
    beats: tuple[BeatState, ...]


def beat_report(settings: Settings, timeout: float = 0.5) -> BeatReport | None:
    """Which beat holds the schedule and which stand by; None when Redis cannot be reached."""
    import redis

    from workers.beat import running_beats, schedule_holder

    client = redis_client(settings, timeout)
    try:
        return BeatReport(schedule_holder(client), tuple(running_beats(client)))
    except redis.RedisError:
        return None
    finally:
        client.close()


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
