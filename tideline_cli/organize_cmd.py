"""`tideline recluster | refresh | graph | scan`: enqueue a dream-queue job; with --wait, follow it to its result."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from tideline_core.errors import BrokerUnavailable
from tideline_core.settings import Settings

POLL_SECONDS = 0.2
EXIT_FAILED = 1
EXIT_STILL_RUNNING = 3

JOBS: dict[str, tuple[str, str]] = {
    "recluster": (
        "rebuild topic clusters and soft clusters now (dream queue)",
        "Rebuild the agent's topic clusters (jieba keywords, document-frequency filter) and soft clusters "
        "(k-means over the narrative embeddings) now, instead of at the nightly dream.",
    ),
    "refresh": (
        "recompute recurrence and weights now (dream queue)",
        "Refresh every narrative's recurrence from its tags and recompute weights (with anti-inflation).",
    ),
    "graph": (
        "rebuild the entity graph now (dream queue)",
        "Rebuild the agent's entity graph from every narrative's entities_role and KNOWN_PERSONS aliases.",
    ),
    "scan": (
        "report conversation not yet turned into memories (dream queue)",
        "Infer source links for narratives that have none, then scan tracks A-D: unlinked narratives, new "
        "conversation chunks after the watermark, rows waiting for embeddings. --wait prints the Markdown report. "
        "The watermark is not moved (solidify does that).",
    ),
}
COMMON = """

The job is queued on the dream queue and run by a `tideline worker dream` (started by `tideline up`).
Without --wait this prints the task id and returns. With --wait it shows the task's states
(PENDING, STARTED, SUCCESS) on stderr and prints the result. While the agent's nightly dream runs,
the job is refused: try again later."""


def add_parsers(sub: Any) -> None:
    """One subcommand per job (called from tideline_cli.main.build_parser)."""
    for job, (summary, description) in JOBS.items():
        parser = sub.add_parser(
            job, help=summary, description=description + COMMON, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.add_argument("--agent", help="agent id (default: TIDELINE_AGENT / AGENT_NAME, else 'default')")
        parser.add_argument("--wait", action="store_true", help="follow the task to its end and print its result")
        parser.add_argument(
            "--timeout",
            type=float,
            default=600.0,
            help="with --wait: stop waiting after this many seconds (exit 3; the job goes on)",
        )
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.set_defaults(job=job)


def cmd_job(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_server.dispatch import CeleryDispatcher

    agent = str(args.agent or settings.agent)
    dispatcher = CeleryDispatcher(settings)
    try:
        task_id = dispatcher.enqueue_trigger(agent, args.job)  # raises Conflict while the nightly dream runs
        if task_id is None:
            raise BrokerUnavailable(
                f"cannot reach the broker at {settings.resolved_redis_url}: is `tideline up` running "
                "(or TIDELINE_REDIS_URL set)? Nothing was queued."
            )
        workers = dispatcher.workers() if args.wait else None
    finally:
        dispatcher.close()
    if not args.wait:
        print(
            json.dumps({"job": args.job, "agent": agent, "task_id": task_id})
            if args.json
            else f"queued {args.job} for agent {agent}: task {task_id}"
        )
        return 0
    if workers is not None and not any("dream" in queues for queues in workers.values()):
        print("note: no worker consumes the dream queue yet; start one with `tideline worker dream`", file=sys.stderr)
    return _follow(settings, args, task_id)


def _follow(settings: Settings, args: argparse.Namespace, task_id: str) -> int:
    from celery import states
    from celery.result import AsyncResult

    from workers.app import create_app

    app = create_app(settings)  # only for its result backend: nothing is published from here
    result = AsyncResult(task_id, app=app)
    deadline = time.monotonic() + args.timeout
    seen = None
    try:
        while True:
            state = result.state
            if state != seen:
                print(f"{args.job} {task_id}: {state}", file=sys.stderr, flush=True)
                seen = state
            if state in states.READY_STATES:
                break
            if time.monotonic() >= deadline:
                print(f"still {state} after {args.timeout:.0f}s; the job goes on (task {task_id})", file=sys.stderr)
                return EXIT_STILL_RUNNING
            time.sleep(POLL_SECONDS)
        value = result.result
    finally:
        app.close()
    if state != states.SUCCESS:
        print(f"tideline: {args.job} failed: {value}", file=sys.stderr)
        return EXIT_FAILED
    _print_result(args, value)
    return 0


def _print_result(args: argparse.Namespace, value: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(value, ensure_ascii=False))
        return
    if "markdown" in value:
        print(value["markdown"])
        return
    for key, item in value.items():
        shown = json.dumps(item, ensure_ascii=False) if isinstance(item, list | dict) else item
        print(f"{key}: {shown}")
