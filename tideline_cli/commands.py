"""The `tideline` commands over an agent's memory: status, search, write — parse, one service call, print."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tideline_cli.compose import open_service
from tideline_cli.fields import add_fields, given_fields
from tideline_cli.health import BeatReport, beat_report
from tideline_cli.output import dumps
from tideline_cli.stack import console_answers, console_url, redacted_url
from tideline_core.domain.inputs import ContextTurnIn, InjectIn, NarrativeIn, PrefetchIn, SearchIn, WriteKey, parse
from tideline_core.errors import InvalidInput
from tideline_core.service.notices import other_agents_notice
from tideline_core.service.results import StatusReport
from tideline_core.settings import Settings

# Each option of `write` and `search` is a field of the core input model it fills (see `fields`).
NARRATIVE_FIELDS = tuple(NarrativeIn.model_fields)
NARRATIVE_FLAGS = {"narrative_type": "--type"}
TURN_FIELDS = tuple(ContextTurnIn.model_fields)
TURN_FLAGS = {"session_id": "--session"}
# The query is the command's argument; the recent lines that may stand in for it are the MCP tool's.
SEARCH_FIELDS = tuple(name for name in SearchIn.model_fields if name not in ("query", "conversation"))


def add_write_fields(write: argparse.ArgumentParser) -> None:
    add_fields(write.add_argument_group("narrative fields"), NarrativeIn, NARRATIVE_FIELDS, flags=NARRATIVE_FLAGS)
    turn = write.add_argument_group("context turn fields (with --turn)")
    add_fields(turn, ContextTurnIn, TURN_FIELDS, flags=TURN_FLAGS)


def add_search_fields(search: argparse.ArgumentParser) -> None:
    add_fields(search, SearchIn, SEARCH_FIELDS)


def _dump(value: Any) -> str:
    return dumps(value)


def _agent(settings: Settings, args: argparse.Namespace) -> str:
    return str(args.agent or settings.agent)


def cmd_status(settings: Settings, args: argparse.Namespace) -> int:
    agent = _agent(settings, args)
    with open_service(settings) as service:  # the model is not loaded by building the service
        report = service.status(agent)
        others = other_agents_notice(agent, service.agents_with_memories())
    # Which beat holds the schedule is the broker's business, asked here at the edge (a dead broker: not asked).
    beat = beat_report(settings) if report.broker_reachable else None
    if args.json:
        print(_dump({**_status_json(settings, agent, report, beat), "other_agents": others}))
        return 0
    c = report.counts
    print(f"agent {agent}  ({redacted_url(settings.resolved_database_url)})")
    print(
        f"  narratives {c.narratives}  context turns {c.context_turns}  profiles {c.profiles}  "
        f"self-concept {c.self_concept}  threads {c.threads}  snapshots {c.snapshots}"
    )
    lag = "" if report.ingest_lag_seconds is None else f"; the oldest has waited {_span(report.ingest_lag_seconds)}"
    print(f"  embeddings pending: narratives {c.pending_narratives}, context {c.pending_context}{lag}")
    depths, workers = report.queue_depths, report.workers
    print("  queues: " + ("broker unreachable" if depths is None else ", ".join(f"{q} {n}" for q, n in depths.items())))
    if workers is None:
        print("  workers: broker unreachable")
    else:
        print("  workers: " + (", ".join(f"{w} [{', '.join(q)}]" for w, q in workers.items()) or "none running"))
    if beat is not None:
        print("  beat: " + _beat_line(beat))
    if report.proposals_waiting:
        print(f"  dream proposals waiting for review: {report.proposals_waiting} (tideline dream review)")
    print(f"  console: {console_url(settings)} ({'answering' if console_answers(settings) else 'not running'})")
    if report.notice:
        print(f"  note: {report.notice}")
    if others:
        print(f"  note: {others}")
    if report.soul_path:
        missing = "" if report.soul_found else " (missing: identity from self-concept alone)"
        print(f"  SOUL file: {report.soul_path}{missing}")
    if report.last_dream:
        first = report.last_dream[0]
        print(f"  last dream: {first.day} ({first.trigger or 'nightly'})")
        for r in report.last_dream:
            print(f"    {r.stage}: {r.status}" + (f" ({r.error})" if r.error else ""))
    for e in report.last_task_errors:
        print(f"  {e.state}: {e.task_name} at {e.created_at:%Y-%m-%d %H:%M} UTC: {e.detail}")
    listed = {r.id for r in report.last_dream}
    earlier = [r for r in report.dream_runs if r.id not in listed]  # the latest dream's stages are listed above
    if earlier:
        print("  other recent runs:")
    for r in earlier:
        print(f"    {r.day} {r.stage}: {r.status}" + (f" ({r.error})" if r.error else ""))
    return 0


def _status_json(settings: Settings, agent: str, report: StatusReport, beat: BeatReport | None) -> dict[str, Any]:
    last = report.last_dream
    return {
        "agent": agent,
        "database": redacted_url(settings.resolved_database_url),
        "counts": asdict(report.counts),
        "embeddings_pending": report.embeddings_pending,
        "oldest_pending_at": report.oldest_pending_at,
        "ingest_lag_seconds": report.ingest_lag_seconds,
        "proposals_waiting": report.proposals_waiting,
        "console": {"url": console_url(settings), "answering": console_answers(settings)},
        "queues": report.queue_depths,
        "workers": report.workers,
        "beat": None
        if beat is None
        else {"holder": beat.holder, "beats": [{"node": b.node, "role": b.role} for b in beat.beats]},
        "last_dream": None
        if not last
        else {
            "day": last[0].day,
            "run_key": last[0].run_key,
            "trigger": last[0].trigger,
            "stages": [
                {
                    "stage": r.stage,
                    "status": r.status,
                    "error": r.error,
                    "started_at": r.started_at,
                    "finished_at": r.finished_at,
                }
                for r in last
            ],
        },
        "last_task_events": [asdict(e) for e in report.last_task_errors],
        "dream_runs": [asdict(r) for r in report.dream_runs],
        "notice": report.notice,
        "soul_path": report.soul_path,
        "soul_found": report.soul_found,
    }


def _beat_line(beat: BeatReport) -> str:
    if beat.holder is None:
        return "none holds the schedule: nothing periodic is sent (start `tideline beat`)"
    standing_by = [b.node for b in beat.beats if b.role != "active"]
    return f"{beat.holder} holds the schedule" + (f"; standing by: {', '.join(standing_by)}" if standing_by else "")


def _span(seconds: float) -> str:
    """12s, 4m 05s, 3h 20m, 2d 4h."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d {whole % 86400 // 3600}h"


def cmd_search(settings: Settings, args: argparse.Namespace) -> int:
    if not args.query.strip():  # the recent lines that stand in for a query are the MCP tool's, not the CLI's
        raise InvalidInput("query", "must name what to look for (it is empty)")
    params = parse(SearchIn, {"query": args.query, **given_fields(args, SearchIn, SEARCH_FIELDS)})
    with open_service(settings, keyword_only=args.mode == "keyword") as service:
        outcome = service.search(_agent(settings, args), params, source="cli")
    if args.json:
        print(_dump({"mode": outcome.mode, "degraded": outcome.degraded, "hits": [asdict(h) for h in outcome.hits]}))
        return 0
    if outcome.degraded:
        print(f"note: {outcome.degraded}", file=sys.stderr)
    if args.explain:
        dates = f"   dates: {', '.join(outcome.dates)}" if outcome.dates else ""
        print(f"terms: {' '.join(outcome.terms) or '-'}   mode: {outcome.mode}{dates}")
        for text in outcome.embedded:
            print(f"embedded: {text!r}")
    for h in outcome.hits:
        print(f"{h.kind}#{h.id}  {h.score:.3f}  {h.occurred_at:%Y-%m-%d %H:%M}  {h.text}")
        if args.explain:
            parts = sorted(h.signals.items(), key=lambda kv: -kv[1])
            print("    " + ("  ".join(f"{name} +{value:.3f}" for name, value in parts) or "no signal"))
    return 0


def cmd_inject(settings: Settings, args: argparse.Namespace) -> int:
    agent = _agent(settings, args)
    with open_service(settings) as service:
        if args.query is not None:
            request = parse(PrefetchIn, {"query": args.query, "session_id": args.session_id, "budget": args.budget})
            block = service.prefetch(agent, request)
        else:
            block = service.session_start(
                agent, parse(InjectIn, {"session_id": args.session_id, "budget": args.budget})
            )
    if args.json:
        print(_dump({**asdict(block), "items": [asdict(item) for item in block.items]}))
        return 0
    for note in block.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.explain:
        for item in block.items:
            where = f"{item.kind}#{item.id}" if item.id is not None else item.kind
            cut = ", cut" if item.clipped else ""
            print(f"{item.tier:<3} {where:<18} {item.tokens:>4} tokens{cut}  {item.reason}", file=sys.stderr)
        print(f"total {block.tokens} of {block.budget} tokens, version {block.version or '-'}", file=sys.stderr)
    print(block.text, end="")
    return 0


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
    if args.turn:
        return [given_fields(args, ContextTurnIn, TURN_FIELDS)]
    return [given_fields(args, NarrativeIn, NARRATIVE_FIELDS)]


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
    records = _read_json_records(args.json_file) if args.json_file else _records_from_flags(args)
    items = _validated(records, args.turn)  # every record is checked before anything is stored
    key = parse(WriteKey, {"idempotency_key": args.idempotency_key}).idempotency_key
    agent = _agent(settings, args)
    settings.ensure_home()
    with open_service(settings) as service:
        if args.turn:
            recorded = service.record_turns(agent, items, key=key)
            results: list[dict[str, Any]] = [{"id": i} for i in recorded.ids]
            queued = recorded.queued
        else:
            written = service.write_narratives(agent, items, key=key)
            results = [{"id": w.id, "weight": w.weight, "recurrence": w.recurrence} for w in written]
            queued = all(w.queued for w in written)
    # What memory_write answers: embedding pending, and whether its job reached the queue now.
    for result in results:
        print(_dump({**result, "agent": agent, "embedding": "pending", "queued": queued}))
    return 0
