"""`tideline dream`: start the dream (or one stage) now, dry or for real; read its log, one run's diff; undo a run."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from tideline_cli.output import dumps
from tideline_cli.stages import EXIT_FAILED, follow, result_lines
from tideline_core.dream import STAGES, nightly_stages
from tideline_core.errors import BrokerUnavailable

if TYPE_CHECKING:
    from tideline_core.settings import Settings
from tideline_core.text.dates import iso

DESCRIPTION = """\
The dream digests an agent's day: scan → solidify → refresh → recluster → graph → comb → drift → symbolic.
Each stage runs on the dream queue (a `tideline worker dream`, started by `tideline up`) and records in
dream_runs what it did and the exact rows it changed, so a run can be reviewed and undone.

  tideline dream --now [--stage S] [--dry-run] [--wait]   run the whole dream (or one stage) now
  tideline dream log [--stage S] [--limit N]              the latest runs
  tideline dream show RUN                                 one run and every change it applied
  tideline dream undo RUN                                 restore what the run changed
  tideline dream review [--approve RUN | --reject RUN]    the proposals waiting for review; approve or reject one

--dry-run computes what each stage would change and writes nothing (it waits for the answer). Without
--stage it dry-runs every nightly stage in turn, each against the memory as it is now (so a later
stage does not see what an earlier one would write). Stages that ask an LLM are skipped, saying why,
when none is configured (TIDELINE_LLM_URL, TIDELINE_LLM_MODEL); solidify then works extractively.

recluster and graph replace derived tables whole (clusters, the entity graph): `show` lists each
rebuild with its counts before and after, and `undo` refuses such a run, saying why (run the stage
again instead), as it refuses a run that changed nothing; a refused undo changes nothing.

With TIDELINE_DREAM_REVIEW=llm (plans an LLM answer shaped) or all (every plan that changes memory), a
stage keeps its plan as a proposal instead of applying it: `review` lists each with the changes it
would make; --approve applies it as the run would have (recorded, undoable; refused, naming the rows,
when one changed since), --reject discards it (its intents are never proposed again)."""


def add_parser(sub: Any) -> None:
    dream = sub.add_parser(
        "dream",
        help="run the dream now, read its log, show or undo a run",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(dream)
    dream.add_argument("--now", action="store_true", help="start the dream (or --stage) now")
    dream.add_argument("--stage", choices=[s.name for s in STAGES], help="only this stage")
    dream.add_argument("--dry-run", action="store_true", help="compute the changes, write nothing (waits)")
    dream.add_argument("--wait", action="store_true", help="follow it to its end and print what it did")
    dream.add_argument("--timeout", type=float, default=3600.0, help="with --wait: give up waiting after this (exit 3)")
    actions = dream.add_subparsers(dest="dream_action", metavar="{log,show,undo,review}")
    log = actions.add_parser("log", help="the latest dream runs, newest first")
    _common(log)
    log.add_argument("--stage", dest="log_stage", choices=[s.name for s in STAGES], help="only this stage's runs")
    log.add_argument("--limit", type=int, default=20, help="how many runs (1-200, default 20)")
    show = actions.add_parser("show", help="one run and every change it applied")
    _common(show)
    show.add_argument("run", type=int, help="the run id (from `tideline dream log`)")
    undo = actions.add_parser(
        "undo", help="restore every row the run changed to its state before it (refused, saying why, when it cannot)"
    )
    _common(undo)
    undo.add_argument("run", type=int, help="the run id (from `tideline dream log`)")
    review = actions.add_parser(
        "review", help="the proposals waiting for review (TIDELINE_DREAM_REVIEW); approve or reject one"
    )
    _common(review)
    decision = review.add_mutually_exclusive_group()
    decision.add_argument("--approve", type=int, metavar="RUN", help="apply this proposal as its run would have")
    decision.add_argument("--reject", type=int, metavar="RUN", help="discard this proposal; it is never proposed again")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", default=argparse.SUPPRESS, help="agent id (default: TIDELINE_AGENT)")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")


def run(settings: Settings, args: argparse.Namespace) -> int:
    from tideline_cli.compose import open_service

    agent = str(getattr(args, "agent", None) or settings.agent)
    as_json = bool(getattr(args, "json", False))
    action = args.dream_action
    if action is None and not args.now:
        print("tideline dream: say --now (run it), or log, show RUN, undo RUN; see --help", file=sys.stderr)
        return 2
    with open_service(settings, keyword_only=True) as service:
        if action == "log":
            from tideline_core.domain.inputs import DreamLogQuery, parse

            query = parse(DreamLogQuery, {"limit": args.limit, "stage": args.log_stage})
            runs = service.dream_log(agent, limit=query.limit, stage=query.stage)
            _print(as_json, [_run_dict(r) for r in runs], _log_lines)
            return 0
        if action == "show":
            view = service.dream_run(agent, args.run)
            from tideline_core.service import change_dict

            shown = {**_run_dict(view.run), "changes": [change_dict(c) for c in view.changes]}
            _print(as_json, shown, _show_lines)
            return 0
        if action == "review":
            return _review(service, agent, args, as_json)
        if action == "undo":
            report = service.dream_undo(agent, args.run)
            _print(
                as_json,
                {"run_id": args.run, "stage": report.run.stage, "restored": report.restored},
                lambda d: [f"undid dream run {d['run_id']} ({d['stage']}): {d['restored']} changes restored"],
            )
            return 0
        return _start(settings, service, agent, args, as_json)


def _review(service: Any, agent: str, args: argparse.Namespace, as_json: bool) -> int:
    from tideline_core.service import change_dict

    if args.approve is not None:
        view = service.dream_approve(agent, args.approve)
        shown = {**_run_dict(view.run), "changes": [change_dict(c) for c in view.changes]}
        _print(
            as_json,
            shown,
            lambda d: [f"approved dream run {d['run_id']} ({d['stage']}):", *_change_lines(d["changes"])],
        )
        return 0
    if args.reject is not None:
        run = service.dream_reject(agent, args.reject)
        _print(as_json, _run_dict(run), lambda d: [f"rejected dream run {d['run_id']} ({d['stage']}): nothing applied"])
        return 0
    waiting = [
        {**_run_dict(v.run), "changes": [change_dict(c) for c in v.changes]} for v in service.dream_review(agent)
    ]
    _print(as_json, waiting, _review_lines)
    return 0


def _review_lines(proposals: list[dict[str, Any]]) -> list[str]:
    if not proposals:
        return ["no dream proposals wait for review"]
    lines = []
    for p in proposals:
        lines += _show_lines(p)
    return [*lines, "approve one with `tideline dream review --approve RUN`, or reject it with --reject RUN"]


def _start(settings: Settings, service: Any, agent: str, args: argparse.Namespace, as_json: bool) -> int:
    try:
        if args.dry_run:
            stages = [args.stage] if args.stage else [s.name for s in nightly_stages()]
            tasks = [(stage, service.trigger(agent, stage, dry_run=True)) for stage in stages]
        else:
            tasks = [(args.stage or "dream", service.trigger(agent, args.stage or "dream"))]
    except BrokerUnavailable:
        raise BrokerUnavailable(
            f"cannot reach the broker at {settings.resolved_redis_url}: is `tideline up` running "
            "(or TIDELINE_REDIS_URL set)? Nothing was queued."
        ) from None
    if not (args.wait or args.dry_run):
        for job, task_id in tasks:
            _print(
                as_json,
                {"job": job, "agent": agent, "task_id": task_id},
                lambda d: [f"queued {d['job']} for agent {d['agent']}: task {d['task_id']}"],
            )
        return 0
    results: list[dict[str, Any]] = []
    for job, task_id in tasks:
        code, value = follow(settings, task_id, job, args.timeout)
        if code != 0:
            return code
        if job == "dream" and isinstance(value, dict) and value.get("last_task_id"):
            # The dream's first task only starts the chain: wait for its end, then read what the stages did.
            code, runs = _follow_chain(settings, service, agent, value, args.timeout)
            _print(as_json, [_run_dict(r) for r in reversed(runs)], _log_lines)
            return code if code != 0 else (EXIT_FAILED if any(r.status == "failed" for r in runs) else 0)
        results.append(value)
    _print(as_json, results, _results_lines)
    return 0


def _follow_chain(
    settings: Settings, service: Any, agent: str, started: dict[str, Any], timeout: float
) -> tuple[int, list[Any]]:
    """Wait for a whole dream's chain, each stage shown on stderr as it starts and ends: the exit code, its runs."""
    run_key = str(started.get("run_key"))
    shown: dict[int, str] = {}

    def chain_runs() -> list[Any]:
        return [r for r in service.dream_log(agent, limit=len(STAGES) * 2) if r.run_key == run_key]

    def progress() -> None:
        for r in reversed(chain_runs()):
            if shown.get(r.id) != r.status:
                shown[r.id] = r.status
                why = r.error or r.outputs.get("skipped", "")
                figures = _figures(r.outputs) if r.status != "running" else ""
                detail = f" ({why})" if why else (f": {figures}" if figures else "")
                print(f"dream {r.stage}: {r.status}{detail}", file=sys.stderr, flush=True)

    code, _ = follow(settings, str(started["last_task_id"]), "dream chain", timeout, progress)
    progress()
    return code, chain_runs()


def _print(as_json: bool, value: Any, lines: Any) -> None:
    if as_json:
        print(dumps(value))
        return
    for line in lines(value):
        print(line)


def _run_dict(run: Any) -> dict[str, Any]:
    return {
        "run_id": run.id,
        "stage": run.stage,
        "day": run.day,
        "status": run.status,
        "trigger": run.trigger,
        "run_key": run.run_key,
        "tokens": run.tokens_in + run.tokens_out,
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at) if run.finished_at else None,
        "undone_at": iso(run.undone_at) if run.undone_at else None,
        "outputs": run.outputs,
        "error": run.error,
    }


def _figures(outputs: dict[str, Any]) -> str:
    hidden = ("prompts", "markdown", "skipped", "method") if outputs.get("skipped") else ("prompts", "markdown")
    shown = {k: v for k, v in outputs.items() if k not in hidden and not isinstance(v, list | dict)}
    return ", ".join(f"{k}={v}" for k, v in shown.items())


def _log_lines(runs: list[dict[str, Any]]) -> list[str]:
    if not runs:
        return ["no dream runs yet"]
    lines = []
    for r in runs:
        state = "undone" if r["undone_at"] else r["status"]
        why = r["error"] or r["outputs"].get("skipped", "")
        lines.append(
            f"{r['run_id']:>6}  {r['day']}  {r['stage']:<9} {state:<8} {r['trigger']:<7} "
            f"tokens {r['tokens']:<6} {_figures(r['outputs'])}" + (f"  ({why})" if why else "")
        )
    return lines


def _change_lines(changes: list[dict[str, Any]]) -> list[str]:
    lines = []
    for c in changes:
        lines.append(f"  {c['action']:<6} {c['target']} {c['row']}: {c['summary']}")
        if c["before"] is not None:
            for name, value in c["after"].items():
                if name != "updated_at" and not name.startswith("_") and c["before"].get(name) != value:
                    lines.append(f"           {name}: {c['before'].get(name)!r} → {value!r}")
    return lines


def _show_lines(run: dict[str, Any]) -> list[str]:
    lines = _log_lines([run])
    lines.append(f"changes ({len(run['changes'])}):")
    return lines + (_change_lines(run["changes"]) or ["  none"])


def _results_lines(results: list[dict[str, Any]]) -> list[str]:
    lines = []
    for r in results:
        lines += result_lines(r)
        if not r.get("skipped"):
            lines += _change_lines(r.get("changes", []))
    return lines
