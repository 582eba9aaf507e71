"""Real worker processes for crash tests: `tideline worker QUEUE` in a session of its own, stopped or killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tideline_core.settings import Settings


def start_worker(
    settings: Settings, queue: str, log: Path, *, concurrency: int = 1, hostname: str | None = None, **env: str
) -> subprocess.Popen[bytes]:
    """`tideline worker QUEUE --concurrency N` (1 unless told) on the test's home, Redis and database; `env` adds
    settings. Workers started side by side on one queue need a `hostname` each (Celery's node name)."""
    base = {
        "TIDELINE_HOME": str(settings.home),
        "TIDELINE_REDIS_URL": settings.resolved_redis_url,
        "TIDELINE_DATABASE_URL": settings.resolved_database_url,
        "TIDELINE_LOG_LEVEL": "INFO",
    }
    with open(log, "ab") as out:
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "tideline_cli", "worker", queue, "--concurrency", str(concurrency)),
                *(("--hostname", hostname) if hostname else ()),
            ],
            env={**os.environ, **base, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the worker's whole session, SIGKILL it if it has not gone within 15 s."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


def kill(process: subprocess.Popen[bytes]) -> None:
    """kill -9 the worker and its pool."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=5)
