"""`tideline eval`: retrieval recall on LoCoMo- and MADial-format benchmarks and MemDaily, in a throwaway data dir."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tideline_core.errors import InvalidInput

if TYPE_CHECKING:
    from tideline_core.service import Service
    from tideline_core.settings import Settings
    from tideline_eval.cache import CachedEmbedder
    from tideline_eval.dream import DreamResult
    from tideline_eval.links import LinksResult
    from tideline_eval.runner import InjectResult, ModeResult

MODES = ("keyword", "dense", "hybrid")
DREAM_TOKENS = 10**9  # an evaluation solidifies a whole benchmark at once: no daily LLM budget stops it midway


def add_parser(sub: Any) -> None:
    evaluate = sub.add_parser(
        "eval",
        help="measure retrieval recall on LoCoMo, MADial or MemDaily (a benchmark, not a test)",
        description="Load a benchmark into a fresh throwaway data dir through the real write path, embed it with "
        "the configured embedder (TIDELINE_EMBEDDER), ask every question through the same search the MCP tools "
        "use, and print recall@k and query latency. The data dir is deleted afterwards.",
    )
    bench = evaluate.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    lo = bench.add_parser(
        "locomo",
        help="LoCoMo-format conversations (turn- and session-level recall, categories 1-4)",
        description="PATH is a LoCoMo-format JSON file (a list of samples with conversation and qa).",
    )
    lo.add_argument("path", type=Path, help="LoCoMo-format JSON file, e.g. ../shared/eval/locomo/locomo_dev.json")
    lo.add_argument("--convs", default=None, help="which conversations, by position: '0-4', '0,2', '3' (default: all)")
    lo.add_argument(
        "--links",
        action="store_true",
        help="measure source-link inference instead of recall: record each conversation, write each of its "
        "'observation' facts as a memory without links (occurred at its session's time), embed, run the dream's "
        "scan and report the precision of the inferred links (a fact's own turn or its neighbour in the session) "
        "and coverage (facts that got a link), per conversation and overall",
    )
    lo.add_argument(
        "--solidify",
        action="store_true",
        help="instead of asking the questions: record the conversations, run scan + extractive solidify (never an "
        "LLM) and report the precision and recall of the memories it kept against the turns the benchmark's "
        "observation facts come from, per conversation and overall",
    )
    ma = bench.add_parser(
        "madial",
        help="MADial-Bench (Chinese): memories as narratives, dialogues as queries",
        description="DIR holds MADial-Bench-zh-memory.json, MADial-Bench-zh-dialogue.json and "
        "optionally published-top20/ (the benchmark's own top-20 runs, shown alongside).",
    )
    ma.add_argument("path", type=Path, help="the MADial directory, e.g. ../shared/eval/madial-zh")
    md = bench.add_parser(
        "memdaily",
        help="MemSim's MemDaily (Chinese): each file's trajectories pooled into one memory, unambiguous questions",
        description="DIR is a local checkout of MemSim (nuster1128/MemSim, no license: read in place, never "
        "copied) or its data_generation/final_dataset/messages_and_QAs folder. Each file's trajectories become "
        "one agent's memory (a trajectory a session of user turns, times read as UTC+8, each text kept once); "
        "recall is scored on the questions that name something only their own trajectory mentions, and "
        "on every question of the roles/items/places files. Only the roles, items, places and hybrid files "
        "are read: the events files are held out, their check made outside this project, and never opened here.",
    )
    md.add_argument("path", type=Path, help="the MemSim checkout or its messages_and_QAs folder")
    md.set_defaults(inject=False, dream=False, budget=None)
    ma.set_defaults(links=False)
    md.set_defaults(links=False)
    ma.set_defaults(solidify=False)
    md.set_defaults(solidify=False)
    for parser in (lo, ma, md):
        parser.add_argument(
            "--mode",
            choices=(*MODES, "all"),
            default="hybrid",
            help="search mode; 'all' runs keyword, dense and hybrid side by side (default: hybrid)",
        )
        parser.add_argument("--k", default="5,10,20", help="cut-offs for recall@k (default: 5,10,20)")
        parser.add_argument("--json", dest="json_file", type=Path, help="also write the figures to this JSON file")
        parser.add_argument(
            "--database-url",
            metavar="URL",
            help="load into a throwaway database made on this PostgreSQL server (dropped afterwards) instead of a "
            "throwaway SQLite file: the PostgreSQL search path, measured (e.g. postgresql+psycopg://postgres@host/postgres)",
        )
        parser.add_argument(
            "--embedding-cache",
            type=Path,
            metavar="FILE",
            help="keep the embeddings in this SQLite file, so a repeated run of the same texts skips the model "
            "(for iterating; latency figures of a cached run leave out the model pass)",
        )
    for parser in (lo, ma):
        parser.add_argument(
            "--inject",
            action="store_true",
            help="also build the per-turn block (memory_prefetch) for every question and report the share of its "
            "evidence inside the block, with the block's mean and p95 size in tokens",
        )
        parser.add_argument(
            "--dream",
            action="store_true",
            help="also run the dream's scan and solidify in-process after asking (extractive, or the LLM of "
            "TIDELINE_LLM_URL/_MODEL with its token budgets lifted), embed what it wrote and ask again: recall "
            "before the dream, after it with the dream's extracts (session digests, extractive memories) left "
            "out of search, and with them. Narratives and turns are searched together throughout. MADial holds "
            "no conversation: its dialogues are recorded "
            "as the users' past sessions (one a day after the last memory) for solidify to work on, and a "
            "dialogue's search leaves out what was solidified from itself",
        )
        parser.add_argument(
            "--budget",
            type=int,
            metavar="N",
            help="token budget of the per-turn block with --inject (default: TIDELINE_INJECT_TURN_BUDGET)",
        )


def _ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise InvalidInput("--k", f"must be comma-separated positive integers, got {text!r}") from None
    if not ks or ks[0] < 1 or ks[-1] > 100:
        raise InvalidInput("--k", "each cut-off must be between 1 and 100")
    return ks


def _selection(text: str | None, count: int) -> list[int]:
    if not text:
        return list(range(count))
    chosen: list[int] = []
    try:
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            chosen.extend(range(int(first), int(last or first) + 1))
    except ValueError:
        raise InvalidInput("--convs", f"must look like '0-4' or '0,2,3', got {text!r}") from None
    bad = [i for i in chosen if not 0 <= i < count]
    if bad:
        raise InvalidInput("--convs", f"positions {bad} are outside 0-{count - 1}")
    return list(dict.fromkeys(chosen))


class Bar:
    """A one-line progress bar on stderr (a line per tenth when stderr is not a terminal)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.stage = ""
        self.shown = -1

    def __call__(self, stage: str, done: int, total: int) -> None:
        total = max(total, 1)
        tenth = done * 10 // total
        if self.tty:
            filled = done * 30 // total
            sys.stderr.write(f"\r  {stage:<18} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
            if done >= total:
                sys.stderr.write("\n")
        elif stage != self.stage or tenth != self.shown:
            print(f"  {stage:<18} {done}/{total}", file=sys.stderr)
        self.stage, self.shown = stage, tenth
        sys.stderr.flush()


def _row(name: str, values: dict[int, float], ks: list[int]) -> str:
    return f"  {name:<24}" + "".join(f"{values.get(k, float('nan')):>8.3f}" for k in ks)


def _print_results(results: dict[str, ModeResult], ks: list[int], session: bool) -> None:
    header = f"  {'':<24}" + "".join(f"{'R@' + str(k):>8}" for k in ks)
    print("\nrecall@k (turn level)" if session else "\nrecall@k")
    print(header)
    for mode, result in results.items():
        print(_row(mode, result.recall, ks))
    if session:
        print("\nrecall@k (session level)")
        print(header)
        for mode, result in results.items():
            print(_row(mode, result.session_recall, ks))
        print("\nrecall@k per category (turn level)")
        print(header)
        for mode, result in results.items():
            for category, values in sorted(result.per_category.items()):
                print(_row(f"{mode} cat {category}", values, ks))
    print("\nquery latency (whole search = query embedding + the rest)")
    for mode, result in results.items():
        ms = result.latency_ms
        print(f"  {mode:<24} p50 {ms['p50']:7.1f} ms   p95 {ms['p95']:7.1f} ms   ({result.questions} questions)")
        if ms.get("embed_p95"):
            print(f"  {'  query embedding':<24} p50 {ms['embed_p50']:7.1f} ms   p95 {ms['embed_p95']:7.1f} ms")
            print(f"  {'  the rest':<24} p50 {ms['rest_p50']:7.1f} ms   p95 {ms['rest_p95']:7.1f} ms")


def _print_dream(before: dict[str, ModeResult], dream: DreamResult, ks: list[int], session: bool) -> None:
    done = dream.solidified
    print(
        f"\ndream: scan + solidify ({done.method}) wrote {done.memories} memories and {done.digests} digests "
        f"in {done.seconds:.1f} s (embedding them: {done.embed_seconds:.1f} s)"
    )
    for reason in done.stopped:
        print(f"  stopped early: {reason}")
    columns = [("turn" if session else "", k) for k in ks] + ([("session", k) for k in ks] if session else [])
    searched = "narratives and turns searched together" if session else "narratives searched, as always here"
    print(f"recall@k before and after the dream ({searched})")
    print(
        f"  {'':<34}"
        + "".join(f"{(unit + ' R@' if unit else 'R@') + str(k):>13}" for unit, k in columns)
        + "  dream hits"
    )
    depth = max(ks)
    for mode in before:
        for label, result in (
            ("before the dream", before[mode]),
            ("after, extracts left out", dream.without_extracts[mode]),
            ("after, with extracts", dream.with_extracts[mode]),
        ):
            values = [
                (result.session_recall if unit == "session" else result.recall).get(k, float("nan"))
                for unit, k in columns
            ]
            share = sum(s.dream_hits for s in result.scores) / max(1, len(result.scores) * depth)
            print(f"  {mode + ', ' + label:<34}" + "".join(f"{v:>13.3f}" for v in values) + f"{share:>12.0%}")
    if session:
        rule = (
            "a hit on a memory or digest the dream wrote counts for no evidence turn; in session recall it stands "
            "for the sessions of its source turns (a digest: its session)"
        )
    else:
        rule = (
            "a memory or digest the dream wrote is never one of the benchmark's memories: it only takes a place "
            "(a dialogue's search leaves out those solidified from itself)"
        )
    print(f"  {rule}; 'dream hits' is their share of the top {depth}")


def _print_inject(result: InjectResult, unit: str) -> None:
    print(f"\nper-turn block (memory_prefetch, budget {result.budget} tokens)")
    print(f"  {unit + ' inside the block':<32}{result.evidence_recall:>8.3f}")
    print(f"  {'tokens':<32}mean {result.tokens_mean:7.1f}   p95 {result.tokens_p95:7.1f}")
    print(f"  {'items':<32}mean {result.items_mean:7.2f}")
    ms = result.latency_ms
    print(f"  {'latency':<32}p50 {ms['p50']:7.1f} ms   p95 {ms['p95']:7.1f} ms   ({result.questions} questions)")


def _memdaily(
    service: Service, args: argparse.Namespace, modes: list[str], ks: list[int], bar: Bar, model: str
) -> dict[str, Any]:
    """Load the chosen MemDaily files, ask every question, print and return the figures."""
    from tideline_eval import memdaily, runner

    paths = memdaily.files(args.path)
    pools = [memdaily.load(path) for path in paths]
    questions = [(pool, q) for pool in pools for q in pool.questions]
    kept = sum(q.unambiguous for _, q in questions)
    which = (
        f"MemDaily tuning files ({', '.join(memdaily.TUNING_KINDS)}); the {', '.join(memdaily.HELD_OUT_KINDS)} "
        "files are held out (checked outside this project) and not read"
    )
    print(which, file=sys.stderr)
    print(
        f"  {len(pools)} files, {sum(p.messages for p in pools)} messages kept once as "
        f"{sum(len(p.turns) for p in pools)} turns (times read as UTC+8), {len(questions)} questions, "
        f"{kept} unambiguous; embedder {model}",
        file=sys.stderr,
    )
    key_of = runner.load_memdaily(service, pools, bar)
    results = runner.ask_memdaily(service, pools, key_of, modes, ks, bar)
    print(f"\n{which}")
    print(f"{'file':<30}{'trajectories':>13}{'messages':>10}{'turns':>8}{'questions':>11}{'kept':>7}{'dropped':>9}")
    for pool in pools:
        print(
            f"{pool.name:<30}{pool.trajectories:>13}{pool.messages:>10}{len(pool.turns):>8}{len(pool.questions):>11}"
            f"{pool.unambiguous:>7}{len(pool.questions) - pool.unambiguous:>9}"
        )
    print(f"{'all':<30}{'':>13}{'':>10}{'':>8}{len(questions):>11}{kept:>7}{len(questions) - kept:>9}")
    print("kept: the question and its evidence name something (a proper noun, a noun compound, a Latin/digit run, a")
    print("quoted title) that no stored text outside the question's own trajectory mentions")
    header = f"  {'':<24}" + "".join(f"{'R@' + str(k):>8}" for k in ks)
    unfiltered_kinds = [k for k in memdaily.UNFILTERED_KINDS if any(p.kind == k for p in pools)]
    sets = [
        (f"unambiguous questions ({kept})", "unambiguous", [q.unambiguous for _, q in questions]),
        (
            f"every question of the {'/'.join(unfiltered_kinds)} files, unfiltered "
            f"({sum(p.kind in unfiltered_kinds for p, _ in questions)})",
            "unfiltered",
            [p.kind in unfiltered_kinds for p, _ in questions],
        ),
    ]
    figures: dict[str, Any] = {
        "files": [
            {
                "file": p.name,
                "trajectories": p.trajectories,
                "messages": p.messages,
                "turns": len(p.turns),
                "questions": len(p.questions),
                "unambiguous": p.unambiguous,
            }
            for p in pools
        ]
    }
    for title, name, chosen in sets:
        if not any(chosen):
            continue
        subset = {mode: runner.restrict(r, chosen) for mode, r in results.items()}
        for level in ("turn", "session"):
            print(f"\nrecall@k, {title}, {level} level" + (" (a session = a trajectory)" if level == "session" else ""))
            print(header)
            for mode, r in subset.items():
                print(_row(mode, r.recall if level == "turn" else r.session_recall, ks))
        figures[name] = {mode: r.as_json() for mode, r in subset.items()}
    kinds = list(dict.fromkeys(p.kind for p, q in questions if q.unambiguous))
    if kinds:
        print("\nrecall@k, unambiguous questions by kind of file, turn level")
        print(header)
        by_kind: dict[str, dict[str, Any]] = {}
        for kind in kinds:
            chosen = [q.unambiguous and p.kind == kind for p, q in questions]
            for mode, r in results.items():
                part = runner.restrict(r, chosen)
                print(_row(f"{kind} ({part.questions}), {mode}", part.recall, ks))
                by_kind.setdefault(kind, {})[mode] = {str(k): round(v, 4) for k, v in part.recall.items()}
        figures["unambiguous_by_kind"] = by_kind
    print("\nquery latency (every question asked; whole search = query embedding + the rest)")
    for mode, r in results.items():
        ms = r.latency_ms
        print(f"  {mode:<24} p50 {ms['p50']:7.1f} ms   p95 {ms['p95']:7.1f} ms   ({r.questions} questions)")
    figures["latency_ms"] = {
        mode: {"questions": r.questions} | {k: round(v, 2) for k, v in r.latency_ms.items()}
        for mode, r in results.items()
    }
    return figures


def _solidify(service: Service, args: argparse.Namespace, bar: Bar) -> dict[str, Any]:
    """`--solidify`: load the chosen conversations, solidify them without an LLM, print and return the scores."""
    from tideline_eval import dream, locomo, runner
    from tideline_eval import solidify as judged

    if args.dream or args.inject:
        raise InvalidInput("--solidify", "runs on its own: leave out --dream and --inject")
    evidence = judged.observation_evidence(args.path)
    conversations = locomo.load(args.path)
    chosen = [conversations[i] for i in _selection(args.convs, len(conversations))]
    print(f"LoCoMo --solidify: {len(chosen)} conversations, {sum(len(c.turns) for c in chosen)} turns", file=sys.stderr)
    dia_of = runner.load_locomo(service, chosen, bar)
    agents = [c.sample_id for c in chosen]
    done = dream.solidify_all(service, agents, bar)
    score = judged.score_solidify(service, agents, dia_of, evidence, bar)
    judged.print_score(score)
    return {"solidify": done.as_json()} | score.as_json()


def _budget(value: int | None, inject: bool) -> int | None:
    if value is None:
        return None
    if not inject:
        raise InvalidInput("--budget", "applies to the per-turn block: add --inject")
    if not 100 <= value <= 32000:
        raise InvalidInput("--budget", f"must be between 100 and 32000 tokens, got {value}")
    return value


def run(settings: Settings, args: argparse.Namespace) -> int:
    from tideline_core.compose import build_embedder, compose
    from tideline_core.embedding import Embedder
    from tideline_core.service import NullJobQueue
    from tideline_eval import dream, links, locomo, madial, runner
    from tideline_eval.cache import CachedEmbedder

    ks = _ks(args.k)
    budget = _budget(args.budget, args.inject)
    if args.links and args.solidify:
        raise InvalidInput("--links", "measures the scan's source links alone: leave out --solidify")
    if args.links and (args.inject or args.dream):
        raise InvalidInput("--links", "measures the scan's source links alone: leave out --inject and --dream")
    modes = list(MODES) if args.mode == "all" else [args.mode]
    cache = CachedEmbedder(build_embedder(settings), args.embedding_cache) if args.embedding_cache else None
    embedder: Embedder = cache or build_embedder(settings)
    workdir = Path(tempfile.mkdtemp(prefix="tideline-eval-"))
    # A throwaway store in its own data dir; nothing is queued (the run embeds in-process).
    database = _throwaway_postgres(args.database_url) if args.database_url else f"sqlite:///{workdir / 'eval.db'}"
    update: dict[str, Any] = {"home": workdir, "database_url": database}
    if args.dream:
        update.update(llm_run_tokens=DREAM_TOKENS, llm_day_tokens=DREAM_TOKENS)
        how = (
            f"the LLM {settings.llm_model} at {settings.llm_url}" if settings.llm_enabled else "extractive (no LLM set)"
        )
        print(f"--dream: solidify will be {how}", file=sys.stderr)
    throwaway = settings.model_copy(update=update)
    bar = Bar()
    # --solidify measures the extractive solidifier: no LLM, whatever the settings name.
    service = compose(throwaway, jobs=NullJobQueue(), embedder=embedder, llm=None if args.solidify else "settings")
    try:
        results: dict[str, runner.ModeResult]
        figures: dict[str, Any]
        if args.solidify:
            figures = _solidify(service, args, bar)
        elif args.benchmark == "locomo":
            conversations = locomo.load(args.path)
            chosen = [conversations[i] for i in _selection(args.convs, len(conversations))]
            print(
                f"LoCoMo: {len(chosen)} conversations, {sum(len(c.turns) for c in chosen)} turns, "
                f"{sum(len(c.questions) for c in chosen)} questions (categories 1-4); embedder {embedder.model}",
                file=sys.stderr,
            )
            if args.links:
                measured = links.measure_links(service, args.path, chosen, bar)
                _print_links(measured)
                return _finish(args, {"links": measured.as_json()}, cache)
            dia_of = runner.load_locomo(service, chosen, bar)
            # With the dream, narratives will compete with turns: every column searches both, as memory_search does.
            kinds = "all" if args.dream else "context"
            results = runner.ask_locomo(service, chosen, dia_of, modes, ks, bar, kinds=kinds)
            if args.dream:
                print("\nbefore the dream (narratives and turns searched, as memory_search does; only turns yet)")
            _print_results(results, ks, session=True)
            figures = {mode: r.as_json() for mode, r in results.items()}
            if args.inject:
                on_locomo = runner.inject_locomo(service, chosen, dia_of, budget, bar)
                _print_inject(on_locomo, "evidence turns")
                figures["inject"] = on_locomo.as_json()
            if args.dream:
                dreamt = dream.dream_locomo(service, throwaway, chosen, dia_of, modes, ks, bar)
                _print_dream(results, dreamt, ks, session=True)
                figures["dream"] = dreamt.as_json()
        elif args.benchmark == "memdaily":
            figures = _memdaily(service, args, modes, ks, bar, embedder.model)
        else:
            if not args.path.is_dir():
                raise InvalidInput("path", f"{args.path} is not a directory (expected the MADial folder)")
            memories = madial.load_memories(args.path)
            dialogues = madial.load_dialogues(args.path)
            print(
                f"MADial: {len(memories)} memories, {len(dialogues)} dialogues; embedder {embedder.model}",
                file=sys.stderr,
            )
            memory_of = runner.load_madial(service, memories, bar)
            # Recorded before asking, so the dream is all that differs between the runs (turns are not searched).
            spoken = (
                dream.record_dialogues(service, dialogues, dream.dialogues_start(memories), bar) if args.dream else {}
            )
            results = runner.ask_madial(service, dialogues, memory_of, modes, ks, bar)
            _print_results(results, ks, session=False)
            injected = runner.inject_madial(service, dialogues, memory_of, budget, bar) if args.inject else None
            if injected is not None:
                _print_inject(injected, "relevant memories")
            published = runner.published_recall(madial.load_published(args.path), dialogues, ks)
            if published:
                print("\npublished top-20 runs of the benchmark, scored the same way")
                for system, values in published.items():
                    print(_row(system, values, ks))
            figures = {mode: r.as_json() for mode, r in results.items()}
            figures["published"] = {s: {str(k): round(v, 4) for k, v in vals.items()} for s, vals in published.items()}
            if injected is not None:
                figures["inject"] = injected.as_json()
            if args.dream:
                dreamt = dream.dream_madial(service, throwaway, dialogues, memory_of, spoken, modes, ks, bar)
                _print_dream(results, dreamt, ks, session=False)
                figures["dream"] = dreamt.as_json()
        return _finish(args, figures, cache)
    finally:
        service.close()
        if cache is not None:
            cache.close()
        shutil.rmtree(workdir, ignore_errors=True)
        if args.database_url:
            _drop_postgres(args.database_url, database)
    return 0


def _finish(args: argparse.Namespace, figures: dict[str, Any], cache: CachedEmbedder | None) -> int:
    if cache is not None:
        print(f"\nembedding cache {args.embedding_cache}: {cache.misses} texts embedded now", file=sys.stderr)
    if args.json_file:
        args.json_file.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nwrote {args.json_file}", file=sys.stderr)
    return 0


def _print_links(result: LinksResult) -> None:
    print("\nsource links inferred by the scan (right: a fact's own turn or its neighbour in the session)")
    print("(exact: the fact's own turn only, a stricter reading of the same links)")
    print(
        f"{'conversation':<14}{'facts':>7}{'linked':>8}{'links':>7}{'right':>7}{'precision':>11}{'coverage':>10}"
        f"{'exact':>8}"
    )
    rows = [*result.per_conversation.items(), ("overall", result.overall)]
    for name, s in rows:
        print(
            f"{name:<14}{s.facts:>7}{s.linked:>8}{s.links:>7}{s.right:>7}{s.precision:>11.3f}{s.coverage:>10.3f}"
            f"{s.exact_precision:>8.3f}"
        )


def _throwaway_postgres(server: str) -> str:
    """A new empty database on the PostgreSQL server `server` (a URL of any database there): its URL."""
    from sqlalchemy.engine import make_url

    from tideline_core.store.database import create_database

    if make_url(server).get_backend_name() != "postgresql":
        raise InvalidInput("--database-url", f"must be a PostgreSQL URL (postgresql+psycopg://...), got {server!r}")
    return create_database(server, f"tideline_eval_{os.getpid()}_{int(time.time())}")


def _drop_postgres(server: str, database: str) -> None:
    from tideline_core.store.database import drop_database

    drop_database(server, database)
