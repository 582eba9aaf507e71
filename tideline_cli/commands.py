"""What each `tideline` subcommand does: thin wrappers over one library call each."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tideline_core.errors import InvalidInput
from tideline_core.inputs import ContextTurnIn, NarrativeIn, SearchIn, parse
from tideline_core.settings import Settings
from tideline_core.store.database import Database

NARRATIVE_FLAGS = (
    "gesture",
    "context",
    "moment",
    "cognition_direction",
    "importance",
    "emotional",
    "unresolved",
    "entities_role",
    "narrative_type",
    "occurred_at",
)
LIST_FLAGS = ("tags", "related_entities")
TURN_FLAGS = ("role", "content", "session_id", "speaker", "created_at")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _agent(settings: Settings, args: argparse.Namespace) -> str:
    return str(args.agent or settings.agent)


def _csv(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


# ----- processes ---------------------------------------------------------------------------------


def cmd_up(settings: Settings, args: argparse.Namespace) -> int:
    from tideline_cli.stack import run_stack

    return run_stack(settings)


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_server.app import run

    update: dict[str, Any] = {}
    if args.host:
        update["http_host"] = args.host
    if args.port:
        update["http_port"] = args.port
    run(settings.model_copy(update=update), transport="http" if args.http else "stdio")
    return 0


def _prepare_worker_side(settings: Settings) -> Any:
    from workers.app import create_app

    settings.ensure_home()
    Database.open(settings.resolved_database_url).close()  # migrate (a no-op when already at head)
    return create_app(settings)


def cmd_worker(settings: Settings, args: argparse.Namespace) -> int:
    app = _prepare_worker_side(settings)
    concurrency = args.concurrency or (1 if args.queue == "dream" else None)
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
    app = _prepare_worker_side(settings)
    schedule = settings.home / "celerybeat-schedule"
    return int(app.start(["beat", "--schedule", str(schedule), "--loglevel", args.loglevel or settings.log_level]) or 0)


def flower_argv(settings: Settings, port: int | None = None, address: str = "127.0.0.1") -> list[str]:
    argv = ["flower", f"--port={port or settings.flower_port}", f"--address={address}", "--persistent=False"]
    if settings.flower_basic_auth:
        argv.append(f"--basic_auth={settings.flower_basic_auth}")
    return argv


def cmd_flower(settings: Settings, args: argparse.Namespace) -> int:
    from workers.app import create_app

    return int(create_app(settings).start(flower_argv(settings, args.port, args.address)) or 0)


# ----- reads ---------------------------------------------------------------------------------------


def cmd_status(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_server.dispatch import CeleryDispatcher
    from tideline_core.store.dream_runs import recent_runs
    from tideline_core.store.status import counts, last_task_events

    agent = _agent(settings, args)
    db = Database.open(settings.resolved_database_url)
    try:
        with db.read() as conn:
            agent_counts = counts(conn, agent)
            events = last_task_events(conn, 5, agent_id=agent)
            runs = recent_runs(conn, agent, limit=8)
    finally:
        db.close()
    dispatcher = CeleryDispatcher(settings)
    try:
        depths, workers = dispatcher.queue_depths(), dispatcher.workers()
    finally:
        dispatcher.close()
    report = {
        "agent": agent,
        "database": settings.resolved_database_url,
        "counts": asdict(agent_counts),
        "queues": depths,
        "workers": workers,
        "last_task_events": [asdict(e) for e in events],
        "dream_runs": [asdict(r) for r in runs],
    }
    if args.json:
        print(_dump(report))
        return 0
    c = agent_counts
    print(f"agent {agent}  ({settings.resolved_database_url})")
    print(
        f"  narratives {c.narratives}  context turns {c.context_turns}  profiles {c.profiles}  "
        f"self-concept {c.self_concept}  threads {c.threads}  snapshots {c.snapshots}"
    )
    print(f"  embeddings pending: narratives {c.pending_narratives}, context {c.pending_context}")
    print("  queues: " + ("broker unreachable" if depths is None else ", ".join(f"{q} {n}" for q, n in depths.items())))
    if workers is None:
        print("  workers: broker unreachable")
    else:
        print("  workers: " + (", ".join(f"{w} [{', '.join(q)}]" for w, q in workers.items()) or "none running"))
    for e in events:
        print(f"  {e.state}: {e.task_name} at {e.created_at:%Y-%m-%d %H:%M} UTC: {e.detail}")
    for r in runs:
        print(f"  dream {r.day} {r.stage}: {r.status}" + (f" ({r.error})" if r.error else ""))
    return 0


def cmd_search(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_server.dispatch import CeleryDispatcher
    from tideline_core.embedders import build_embedder
    from tideline_core.search.service import SearchService
    from tideline_core.search.vectors import VectorIndex

    params = parse(
        SearchIn,
        {
            "query": args.query,
            "limit": args.limit,
            "kinds": args.kinds,
            "mode": args.mode,
            "since": args.since,
            "until": args.until,
        },
    )
    agent = _agent(settings, args)
    db = Database.open(settings.resolved_database_url)
    try:
        embedder = (
            build_embedder(settings)
            if args.mode != "keyword"
            else build_embedder(settings.model_copy(update={"embedder": "none"}))
        )
        service = SearchService(
            db, embedder, VectorIndex(db, embedder.model), query_timeout=settings.query_embedding_timeout
        )
        outcome = service.search(agent, params)
    finally:
        db.close()
    hits = [
        (h.id, h.similarity if h.similarity is not None else min(1.0, h.score))
        for h in outcome.hits
        if h.kind == "narrative"
    ]
    if hits:
        dispatcher = CeleryDispatcher(settings)
        dispatcher.enqueue_attention(agent, hits, "cli")
        dispatcher.close()
    if args.json:
        print(_dump({"mode": outcome.mode, "degraded": outcome.degraded, "hits": [asdict(h) for h in outcome.hits]}))
        return 0
    if outcome.degraded:
        print(f"note: {outcome.degraded}", file=sys.stderr)
    if getattr(args, "explain", False):
        dates = f"   dates: {', '.join(outcome.dates)}" if outcome.dates else ""
        print(f"terms: {' '.join(outcome.terms) or '-'}   mode: {outcome.mode}{dates}")
        for text in outcome.embedded:
            print(f"embedded: {text!r}")
    for h in outcome.hits:
        print(f"{h.kind}#{h.id}  {h.score:.3f}  {h.occurred_at:%Y-%m-%d %H:%M}  {h.text}")
        if getattr(args, "explain", False):
            parts = sorted(h.signals.items(), key=lambda kv: -kv[1])
            print("    " + ("  ".join(f"{name} +{value:.3f}" for name, value in parts) or "no signal"))
    return 0


# ----- writes ------------------------------------------------------------------------------------


def _read_json_records(source: str) -> list[dict[str, Any]]:
    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        records = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        records = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InvalidInput(f"line {number}", f"is not valid JSON ({exc.msg})") from None
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise InvalidInput(f"record {i + 1}", "must be a JSON object")
    if not records:
        raise InvalidInput("json", "no records found")
    return records


def _records_from_flags(args: argparse.Namespace) -> list[dict[str, Any]]:
    names = TURN_FLAGS if args.turn else NARRATIVE_FLAGS
    record = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    if args.turn:
        if args.metadata is not None:
            try:
                record["metadata"] = json.loads(args.metadata)
            except json.JSONDecodeError as exc:
                raise InvalidInput("metadata", f"is not valid JSON ({exc.msg})") from None
    else:
        for name in LIST_FLAGS:
            if (values := _csv(getattr(args, name))) is not None:
                record[name] = values
        if args.source_links is not None:
            try:
                record["source_links"] = [int(v) for v in _csv(args.source_links) or []]
            except ValueError:
                raise InvalidInput("source_links", "must be comma-separated context turn ids (integers)") from None
    return [record]


def _validated(records: list[dict[str, Any]], turn: bool) -> list[Any]:
    model = ContextTurnIn if turn else NarrativeIn
    out = []
    for i, record in enumerate(records):
        try:
            out.append(parse(model, record))
        except InvalidInput as exc:
            field = exc.field if len(records) == 1 else f"record {i + 1}: {exc.field}"
            raise InvalidInput(field, exc.rule) from None
    return out


def cmd_write(settings: Settings, args: argparse.Namespace) -> int:
    from mcp_server.dispatch import CeleryDispatcher
    from tideline_core.store.context import insert_turns
    from tideline_core.store.narratives import insert_narrative

    records = _read_json_records(args.json_file) if args.json_file else _records_from_flags(args)
    items = _validated(records, args.turn)  # every record is checked before anything is stored
    agent = _agent(settings, args)
    settings.ensure_home()
    db = Database.open(settings.resolved_database_url)
    try:
        with db.write() as conn:  # one transaction: all records or none
            if args.turn:
                results: list[dict[str, Any]] = [{"id": i} for i in insert_turns(conn, agent, items)]
            else:
                results = [asdict(insert_narrative(conn, agent, item)) for item in items]
    finally:
        db.close()
    dispatcher = CeleryDispatcher(settings)
    queued = dispatcher.enqueue_embed(agent) if settings.embedder != "none" else False
    dispatcher.close()
    embedding = "queued" if queued else ("off" if settings.embedder == "none" else "pending (broker unreachable)")
    for result in results:
        print(_dump({**result, "agent": agent, "embedding": embedding}))
    return 0
