"""The `tideline` commands that run a process: up, serve, worker, beat, flower (each starts one entry point)."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Any

from tideline_core.errors import ConfigurationError, MissingExtra
from tideline_core.settings import Settings, is_loopback
from tideline_core.store.database import Database


def cmd_up(settings: Settings, args: argparse.Namespace) -> int:
    from tideline_cli.stack import run_stack

    return run_stack(settings)


def _prepare_worker_side(settings: Settings) -> Any:
    from workers.app import create_app

    settings.ensure_home()
    Database.open(settings.resolved_database_url).close()  # migrate (a no-op when already at head)
    return create_app(settings)


def yield_cpu(nice: int) -> None:
    """Run this worker (and the pool processes it forks) at a lower CPU priority than the server.

    With autogroup scheduling (most Linux desktops) the processes of one session share one CPU
    weight and a nice value counts only inside it; `tideline up` starts each part in a session of
    its own, so a worker that leads its session lowers the session's weight as well. A worker
    started from a shell shares the shell's session, whose weight it leaves alone.
    """
    os.nice(nice)
    if os.getsid(0) == os.getpid():
        with contextlib.suppress(OSError):  # no autogroup scheduling here: the nice value is all there is
            Path("/proc/self/autogroup").write_text(str(nice))


def model_threads(settings: Settings, pool_processes: int) -> int:
    """CPU threads per pool process for the local model: the setting, else an equal share of the cores.

    Each process running the model on every core would only make N processes fight over them.
    """
    if settings.embed_threads:
        return settings.embed_threads
    return max(1, (os.cpu_count() or 1) // max(1, pool_processes))


def cmd_worker(settings: Settings, args: argparse.Namespace) -> int:
    if settings.worker_nice:
        yield_cpu(settings.worker_nice)
    concurrency = args.concurrency or (1 if args.queue == "dream" else None)
    pool_processes = 1 if args.pool == "solo" else (concurrency or os.cpu_count() or 1)
    app = _prepare_worker_side(settings.model_copy(update={"embed_threads": model_threads(settings, pool_processes)}))
    argv = [
        "worker",
        "-Q",
        args.queue,
        "--pool",
        args.pool,
        "--loglevel",
        args.loglevel or settings.log_level,
        "--hostname",
        args.hostname or f"{args.queue}@%h",
    ]
    if concurrency:
        argv += ["--concurrency", str(concurrency)]
    app.worker_main(argv)
    return 0


def cmd_beat(settings: Settings, args: argparse.Namespace) -> int:
    """Celery beat under `workers.beat.SingleBeatScheduler`: a second beat on the same Redis stands by."""
    app = _prepare_worker_side(settings)
    return int(app.start(["beat", "--loglevel", args.loglevel or settings.log_level]) or 0)


def flower_argv(settings: Settings, port: int | None = None, address: str = "127.0.0.1") -> list[str]:
    argv = ["flower", f"--port={port or settings.flower_port}", f"--address={address}", "--persistent=False"]
    if settings.flower_basic_auth:
        argv.append(f"--basic_auth={settings.flower_basic_auth}")
    return argv


def cmd_flower(settings: Settings, args: argparse.Namespace) -> int:
    from tideline_cli.stack import flower_installed
    from workers.app import create_app

    if not flower_installed():
        raise MissingExtra("flower", "stack", "tideline flower")
    if not is_loopback(args.address) and not settings.flower_basic_auth:
        # Flower shows task names, arguments and agent ids: never to the network without a password.
        raise ConfigurationError(
            f"refusing to serve Flower on {args.address} without basic auth: set TIDELINE_FLOWER_BASIC_AUTH="
            "user:password, or keep the default --address 127.0.0.1"
        )
    return int(create_app(settings).start(flower_argv(settings, args.port, args.address)) or 0)
