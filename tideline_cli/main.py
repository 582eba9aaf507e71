"""The `tideline` command: the CLI composition root (the only place here that reads settings)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Container, Sequence

from tideline_cli import console, hook, serve  # the standard library only: each must start fast

EXIT_USAGE = 2

DESCRIPTION = """\
Tideline: long-term memory for AI agents.

Settings come from TIDELINE_* environment variables (and the original MEMORY_MCP_DB,
AGENT_NAME, EMBEDDING_API_URL ... names); see deploy/env.example for every one."""


UP_DESCRIPTION = """\
Run migrations, start an embedded Redis (unless TIDELINE_REDIS_URL is set), then the MCP server
on streamable HTTP, the console, an ingest worker, a dream worker, Celery beat and Flower as child processes.
Prints where each one is. Ctrl-C or SIGTERM stops them all; if one dies, all stop.

Where things go (environment variables):
  TIDELINE_HOME         data dir: database, Redis socket and AOF, logs (default ~/.tideline)
  TIDELINE_HTTP_HOST    the MCP server's address (default 127.0.0.1)
  TIDELINE_HTTP_PORT    the MCP server's port (default 8765)
  TIDELINE_CONSOLE_PORT the console's port (default 8766, on TIDELINE_CONSOLE_HOST, 127.0.0.1)
  TIDELINE_FLOWER_PORT  Flower's port on 127.0.0.1 (default 5555)
  TIDELINE_HTTP_TOKENS  TOKEN:AGENT pairs; bearer auth, required to bind beyond loopback"""


def _add_agent(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", help="agent id (default: TIDELINE_AGENT / AGENT_NAME, else 'default')")


def build_parser(fields_for: Container[str] | None = None) -> argparse.ArgumentParser:
    """The whole CLI; the options of `fields_for`'s commands (all by default) are the core input models' fields.

    Those options need the models (and pydantic) to describe them, so `main` derives them only for
    the command it runs: `tideline --help` loads no store, model or pydantic.
    """
    from tideline_cli import db, dream, evaluate, health, importing, mcp_config, stages

    def derived(command: str) -> bool:
        return fields_for is None or command in fields_for

    parser = argparse.ArgumentParser(
        prog="tideline", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    sub.add_parser(
        "up",
        help="start the whole stack (Redis, MCP server, console, workers, beat, Flower); Ctrl-C stops it",
        description=UP_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )

    serve.add_parser(sub)
    console.add_parser(sub)

    worker = sub.add_parser(
        "worker",
        help="run a Celery worker for the ingest or dream queue",
        description="Run a Celery worker. 'ingest' takes short tasks (embedding, attention, imports, "
        "reconcile); 'dream' takes long ones (clustering, nightly DREAM), one at a time by default.",
    )
    worker.add_argument("queue", choices=["ingest", "dream"], help="which queue to consume")
    worker.add_argument("--concurrency", type=int, help="worker processes (default: CPUs for ingest, 1 for dream)")
    worker.add_argument("--pool", choices=["prefork", "solo", "threads"], default="prefork", help="execution pool")
    worker.add_argument("--loglevel", help="log level (default: TIDELINE_LOG_LEVEL, INFO)")
    worker.add_argument("--hostname", help="node name (default: QUEUE@HOST)")

    beat = sub.add_parser(
        "beat",
        help="run Celery beat (the periodic schedule: reconcile pending embeddings, the nightly dream)",
        description="Run Celery beat. One beat schedules at a time: it holds a lock in Redis "
        "(TIDELINE_BEAT_LOCK_SECONDS, renewed while it runs); another beat on the same Redis sends nothing "
        "and stands by, and takes over once the first stops or its lock lapses.",
    )
    beat.add_argument("--loglevel", help="log level (default: TIDELINE_LOG_LEVEL, INFO)")

    flower = sub.add_parser(
        "flower",
        help="run Flower, the pipeline dashboard (127.0.0.1, basic auth if configured)",
        description="Run Flower bound to 127.0.0.1; TIDELINE_FLOWER_BASIC_AUTH=user:password turns on basic auth.",
    )
    flower.add_argument("--port", type=int, help="port (default: TIDELINE_FLOWER_PORT, 5555)")
    flower.add_argument(
        "--address",
        default="127.0.0.1",
        help="bind address (default 127.0.0.1; 0.0.0.0 only inside a container, with basic auth)",
    )

    status = sub.add_parser(
        "status",
        help="counts, pending embeddings and ingest lag, queues, workers, beat, the last dream and its stages",
        description="Show what the agent's memory holds and whether the pipeline is healthy: rows, embeddings "
        "pending and how long the oldest has waited, queue depths, live workers, which beat holds the schedule, "
        "the last whole dream with each stage's outcome, and the last task errors.",
    )
    _add_agent(status)
    status.add_argument("--json", action="store_true", help="print JSON instead of text")

    search = sub.add_parser(
        "search",
        help="search memories and raw context (hybrid, keyword or dense)",
        description=(
            "Search the agent's narratives and context turns directly in the database. Unless --mode keyword, "
            "it waits for the local embedding model to load (at most two minutes) rather than answer by keyword."
        ),
    )
    search.add_argument("query", help="what to look for (any text; search syntax is treated as text)")
    _add_agent(search)
    if derived("search"):
        from tideline_cli.commands import add_search_fields

        add_search_fields(search)
    search.add_argument("--json", action="store_true", help="print JSON instead of text")
    search.add_argument("--explain", action="store_true", help="show which signals ranked each hit, and how much")

    write = sub.add_parser(
        "write",
        help="write a narrative memory or a raw context turn (for scripts)",
        description="Write a narrative (--gesture ...) or a context turn (--turn --role ... --content ...), "
        "or many from --json FILE|- (a JSON object, a JSON array, or JSON lines). Everything is validated "
        "first; on any error nothing is stored and the exit code is 2. Prints JSON: id, weight, recurrence.",
    )
    _add_agent(write)
    write.add_argument("--json", dest="json_file", metavar="FILE", help="read records from FILE ('-' for stdin)")
    write.add_argument("--turn", action="store_true", help="write context turns instead of narratives")
    write.add_argument(
        "--idempotency-key",
        metavar="KEY",
        help="a key of your own for this batch (e.g. a UUID): run again with the same key, it prints the first "
        "result and stores nothing",
    )
    if derived("write"):
        from tideline_cli.commands import add_write_fields

        add_write_fields(write)

    inject = sub.add_parser(
        "inject",
        help="print the session-start block, or with --query the per-turn block",
        description="Print what an agent would get injected: the session-start block (who it is, what matters "
        "now, where the last conversation left off, its memory map) or, with --query, the block for one turn. "
        "Each item's tier and reason go to stderr with --explain; --json prints the structured result.",
    )
    _add_agent(inject)
    inject.add_argument("--query", help="build the per-turn block for this text instead")
    inject.add_argument("--session", dest="session_id", default="", help="the session it is for (remembered)")
    inject.add_argument("--budget", type=int, help="token budget (default: TIDELINE_INJECT_SESSION_/TURN_BUDGET)")
    inject.add_argument("--json", action="store_true", help="print JSON: text, version, tokens, items with reasons")
    inject.add_argument("--explain", action="store_true", help="list each item's tier, tokens and reason on stderr")

    evaluate.add_parser(sub)
    db.add_parser(sub)
    dream.add_parser(sub)
    importing.add_parser(sub)
    hook.add_parser(sub)
    mcp_config.add_parser(sub)
    health.add_parser(sub)
    stages.add_parsers(sub)  # one command per dream stage
    return parser


def fail(message: str) -> int:
    print(f"tideline: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hook"]:  # runs on every prompt: answered before the store and the model are imported
        return hook.main(argv[1:])
    if argv[:1] == ["serve"]:  # execs the server, which imports (and checks the settings) itself
        return serve.main(argv[1:])
    if argv[:1] == ["console"]:  # execs the console, as `serve` execs the server
        return console.main(argv[1:])
    args = build_parser(fields_for=argv[:1]).parse_args(
        argv
    )  # `--help` and usage errors end here, before the heavy imports
    import logging

    from pydantic import ValidationError

    from tideline_cli import dream, evaluate, health, importing, mcp_config, stages
    from tideline_core.errors import TidelineError
    from tideline_core.settings import Settings

    try:
        settings = Settings()
    except ValidationError as exc:
        return fail(f"invalid settings: {exc}")
    from tideline_cli import commands, processes

    if args.command in ("status", "search", "write", "inject", "dream", "import", "health") or stages.is_stage(
        args.command
    ):
        # One-shot commands report broker trouble in their own output; keep library warnings quiet.
        logging.basicConfig(level=logging.ERROR, format="tideline: %(message)s")

    handler: Callable[[Settings, argparse.Namespace], int]
    if stages.is_stage(args.command):
        handler = stages.cmd_stage
    elif args.command == "eval":
        handler = evaluate.run
    elif args.command == "db":
        from tideline_cli import db

        handler = db.run
    elif args.command == "dream":
        handler = dream.run
    elif args.command == "import":
        handler = importing.run
    elif args.command == "mcp-config":
        handler = mcp_config.run
    elif args.command == "health":
        handler = health.run
    elif args.command in ("up", "worker", "beat", "flower"):
        handler = getattr(processes, f"cmd_{args.command}")
    else:
        handler = getattr(commands, f"cmd_{args.command}")
    try:
        return int(handler(settings, args) or 0)
    except TidelineError as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`tideline mcp-config claude | head`): what it read is what it wanted. Python
        # would print another BrokenPipeError flushing stdout at exit, so stdout goes to devnull first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
