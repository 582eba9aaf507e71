"""`tideline <stage>`, one command per dream stage of the registry: queue it; with --wait, follow it to its result."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tideline_core.dream import STAGES
from tideline_core.errors import BrokerUnavailable

if TYPE_CHECKING:
    from tideline_core.settings import Settings

POLL_SECONDS = 0.2
EXIT_FAILED = 1
EXIT_STILL_RUNNING = 3

COMMON = """

The stage is queued on the dream queue and run by a `tideline worker dream` (started by `tideline up`).
Without --wait this prints the task id and returns. With --wait it shows the task's states
(PENDING, STARTED, SUCCESS) on stderr and prints the result. While the agent's nightly dream runs,
the stage is refused: try again later."""


def add_parsers(sub: Any) -> None:
    """One subcommand per dream stage (called from tideline_cli.main.build_parser)."""
    for stage in STAGES:
        parser = sub.add_parser(
            stage.name,
            help=f"{stage.summary} now (dream queue)",
            description=(stage.details or stage.summary) + COMMON,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        parser.add_argument("--agent", help="agent id (default: TIDELINE_AGENT / AGENT_NAME, else 'default')")
        parser.add_argument("--wait", action="store_true", help="follow the task to its end and print its result")
        parser.add_argument(
            "--timeout",
            type=float,
            default=600.0,
            help="with --wait: stop waiting after this many seconds (exit 3; the stage goes on)",
        )
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.set_defaults(stage=stage.name)


def is_stage(command: str) -> bool:
    return any(stage.name == command for stage in STAGES)


def cmd_stage(settings: Settings, args: argparse.Namespace) -> int:
    from tideline_cli.compose import open_service

    agent = str(args.agent or settings.agent)
    with open_service(settings, keyword_only=True) as service:
        try:
            task_id = service.trigger(agent, args.stage)  # Conflict while the nightly dream runs
        except BrokerUnavailable:
            raise BrokerUnavailable(
                f"cannot reach the broker at {settings.resolved_redis_url}: is `tideline up` running "
                "(or TIDELINE_REDIS_URL set)? Nothing was queued."
            ) from None
        workers = service.jobs.workers() if args.wait else None
    if not args.wait:
        print(
            json.dumps({"job": args.stage, "agent": agent, "task_id": task_id})
            if args.json
            else f"queued {args.stage} for agent {agent}: task {task_id}"
        )
        return 0
    if workers is not None and not any("dream" in queues for queues in workers.values()):
        print("note: no worker consumes the dream queue yet; start one with `tideline worker dream`", file=sys.stderr)
    return _follow(settings, args, task_id)


def _follow(settings: Settings, args: argparse.Namespace, task_id: str) -> int:
    code, value = follow(settings, task_id, args.stage, args.timeout)
    if code == 0:
        _print_result(args, value)
    return code


def follow(
    settings: Settings, task_id: str, label: str, timeout: float, progress: Callable[[], None] | None = None
) -> tuple[int, Any]:
    """Wait for a task, showing its states on stderr: (0, its result), (EXIT_FAILED, the error) or
    (EXIT_STILL_RUNNING, None) when `timeout` seconds pass first (the task goes on). `progress` is
    called at every poll, to show more of what goes on."""
    from celery import states
    from celery.result import AsyncResult

    from workers.app import create_app

    app = create_app(settings)  # only for its result backend: nothing is published from here
    result = AsyncResult(task_id, app=app)
    deadline = time.monotonic() + timeout
    seen = None
    try:
        while True:
            state = result.state
            if progress is not None:
                progress()
            if state != seen:
                print(f"{label} {task_id}: {state}", file=sys.stderr, flush=True)
                seen = state
            if state in states.READY_STATES:
                break
            if time.monotonic() >= deadline:
                print(f"still {state} after {timeout:.0f}s; it goes on (task {task_id})", file=sys.stderr)
                return EXIT_STILL_RUNNING, None
            time.sleep(POLL_SECONDS)
        value = result.result
    finally:
        app.close()
    if state != states.SUCCESS:
        print(f"tideline: {label} failed: {value}", file=sys.stderr)
        return EXIT_FAILED, value
    return 0, value


def _print_result(args: argparse.Namespace, value: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(value, ensure_ascii=False))
        return
    if "markdown" in value:
        print(value["markdown"])
        return
    for line in result_lines(value):
        print(line)


# What a stage's result line says already, or what `dream show RUN` lists change by change.
SAID = ("stage", "run_id", "dry_run", "changes", "changes_total", "skipped", "prompts", "markdown")


def result_lines(result: dict[str, Any]) -> list[str]:
    """A stage's result as a person reads it: what it did (or why it was skipped), then its figures."""
    head = f"{result.get('stage', '?')}: " + ("dry run, nothing written; " if result.get("dry_run") else "")
    if result.get("skipped"):
        return [head + f"skipped ({result['skipped']})"]
    total = result.get("changes_total", 0)
    lines = [
        head
        + f"{total} change{'' if total == 1 else 's'}"
        + (f" (run {result['run_id']})" if result.get("run_id") else "")
    ]
    for key, item in result.items():
        if key not in SAID:
            lines.append(f"  {key}: {_shown(item)}")
    return lines


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
