"""What the dream's extracts (digests, extractive memories) do to multi-session questions, against single-session ones.

    .venv/bin/python bench/digests.py [--embedding-cache FILE] [--convs 0-4] [--mode hybrid] [--only locomo|madial]

For each benchmark in ../shared/eval (skipped with a message when absent), as `tideline eval ... --dream`
does: a throwaway store, the benchmark loaded through the write path and embedded, every question
asked (narratives and turns searched together), then scan + solidify in-process (extractive, or the
LLM of TIDELINE_LLM_URL/_MODEL), the new memories embedded, and every question asked again with
the dream's extracts (session digests and extractive memories) left out of search
(`dream_extracts_in_search` off, the default) and with them. Figures per group of questions,
before / after without extracts / after with extracts:

- LoCoMo dev: by the number of distinct sessions the evidence turns are in (one, two or more);
  turn and session recall@5/@10. A narrative hit counts for no evidence turn (a digest links every
  turn of its session); in session recall it stands for its source turns' sessions.
- MADial: by the number of relevant memories (one, two or more); the benchmark has no sessions.
  Its dialogues are recorded as the users' past sessions for solidify to work on; a dialogue's
  search leaves out what came from itself. Only the benchmark's memories are gold, so a narrative
  the dream wrote can only take a place: MADial measures what the digests crowd out.

`--embedding-cache FILE` keeps the vectors between runs (the first run embeds everything; a rerun
of the same texts embeds nothing). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tideline_core.compose import build_embedder, compose
from tideline_core.embedding import Embedder
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings
from tideline_eval import dream, locomo, madial, runner
from tideline_eval.cache import CachedEmbedder
from tideline_eval.metrics import mean

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
LOCOMO = EVAL / "locomo" / "locomo_dev.json"
MADIAL = EVAL / "madial-zh"
KS = (5, 10)
DREAM_TOKENS = 10**9  # a whole benchmark is solidified at once: no daily LLM budget stops it midway
PHASES = ("before the dream", "after, extracts left out", "after, with extracts")


def _progress(stage: str, done: int, total: int) -> None:
    if done == total:
        print(f"  {stage:<20} {done}/{total}", file=sys.stderr)


@contextmanager
def _store(embedder: Embedder) -> Iterator[tuple[Service, Settings]]:
    """A service on a fresh throwaway data dir, composed from the environment's settings (its LLM included)."""
    workdir = Path(tempfile.mkdtemp(prefix="tideline-digests-"))
    settings = Settings().model_copy(
        update={
            "home": workdir,
            "database_url": f"sqlite:///{workdir / 'bench.db'}",
            "llm_run_tokens": DREAM_TOKENS,
            "llm_day_tokens": DREAM_TOKENS,
        }
    )
    service = compose(settings, jobs=NullJobQueue(), embedder=embedder)
    try:
        yield service, settings
    finally:
        service.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _table(
    groups: dict[str, list[int]], phases: Sequence[runner.ModeResult], columns: Sequence[tuple[str, int]]
) -> None:
    """Mean recall of each group's questions (by position in the order asked), per phase."""
    print(f"  {'':<42}" + "".join(f"{unit + ' R@' + str(k):>13}" for unit, k in columns))
    for group, members in groups.items():
        for phase, result in zip(PHASES, phases, strict=True):
            rows = [result.scores[i] for i in members]
            values = [
                mean([(s.session_recall if unit == "session" else s.recall)[k] for s in rows]) for unit, k in columns
            ]
            label = f"{group} ({len(members)}), {phase}"
            print(f"  {label:<42}" + "".join(f"{v:>13.3f}" for v in values))


def _groups(counts: Sequence[int], unit: str, units: str) -> dict[str, list[int]]:
    return {
        "all": list(range(len(counts))),
        f"one {unit}": [i for i, n in enumerate(counts) if n == 1],
        f"2+ {units}": [i for i, n in enumerate(counts) if n >= 2],
        f"3+ {units}": [i for i, n in enumerate(counts) if n >= 3],
    }


def _solidified(done: dream.Solidified) -> None:
    print(
        f"  solidify ({done.method}): {done.memories} memories, {done.digests} digests in {done.seconds:.1f} s; "
        f"embedding them {done.embed_seconds:.1f} s"
    )
    for reason in done.stopped:
        print(f"  stopped early: {reason}")


def bench_locomo(embedder: Embedder, selection: Callable[[int], list[int]], mode: str) -> None:
    conversations = locomo.load(LOCOMO)
    chosen = [conversations[i] for i in selection(len(conversations))]
    questions = [q for conv in chosen for q in conv.questions]
    print(f"\nLoCoMo dev: {len(chosen)} conversations, {len(questions)} questions, mode {mode}")
    with _store(embedder) as (service, settings):
        dia_of = runner.load_locomo(service, chosen, _progress)
        before = runner.ask_locomo(service, chosen, dia_of, [mode], KS, _progress, kinds="all")[mode]
        dreamt = dream.dream_locomo(service, settings, chosen, dia_of, [mode], KS, _progress)
    _solidified(dreamt.solidified)
    spans = [len({locomo.session_of(d) for d in q.evidence}) for q in questions]
    print("  by the number of sessions the evidence is in (a narrative hit: no turn; its sessions)")
    columns = [("turn", k) for k in KS] + [("session", k) for k in KS]
    _table(
        _groups(spans, "session", "sessions"),
        [before, dreamt.without_extracts[mode], dreamt.with_extracts[mode]],
        columns,
    )


def bench_madial(embedder: Embedder, mode: str) -> None:
    memories = madial.load_memories(MADIAL)
    dialogues = madial.load_dialogues(MADIAL)
    print(f"\nMADial: {len(memories)} memories, {len(dialogues)} dialogues, mode {mode}")
    with _store(embedder) as (service, settings):
        memory_of = runner.load_madial(service, memories, _progress)
        spoken = dream.record_dialogues(service, dialogues, dream.dialogues_start(memories), _progress)
        before = runner.ask_madial(service, dialogues, memory_of, [mode], KS, _progress)[mode]
        dreamt = dream.dream_madial(service, settings, dialogues, memory_of, spoken, [mode], KS, _progress)
    _solidified(dreamt.solidified)
    print("  by the number of relevant memories (only the benchmark's memories are gold)")
    counts = [len(set(d.relevant)) for d in dialogues]
    _table(
        _groups(counts, "memory", "memories"),
        [before, dreamt.without_extracts[mode], dreamt.with_extracts[mode]],
        [("", k) for k in KS],
    )


def _selection(text: str | None) -> Callable[[int], list[int]]:
    def chosen(count: int) -> list[int]:
        if not text:
            return list(range(count))
        picked: list[int] = []
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            picked.extend(range(int(first), int(last or first) + 1))
        return [i for i in dict.fromkeys(picked) if 0 <= i < count]

    return chosen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedding-cache", type=Path, metavar="FILE", help="keep the embeddings in this SQLite file")
    parser.add_argument("--convs", help="LoCoMo conversations by position: '0-4', '0,2' (default: all)")
    parser.add_argument("--mode", choices=("keyword", "dense", "hybrid"), default="hybrid")
    parser.add_argument("--only", choices=("locomo", "madial"), help="run one benchmark")
    args = parser.parse_args(argv)
    settings = Settings()
    cache = CachedEmbedder(build_embedder(settings), args.embedding_cache) if args.embedding_cache else None
    embedder: Embedder = cache or build_embedder(settings)
    how = f"the LLM {settings.llm_model}" if settings.llm_enabled else "extractive (no TIDELINE_LLM_URL/_MODEL)"
    print(f"digests bench: embedder {embedder.model}; solidify {how}")
    started = time.perf_counter()
    try:
        if args.only in (None, "locomo"):
            if LOCOMO.is_file():
                bench_locomo(embedder, _selection(args.convs), args.mode)
            else:
                print(f"\nLoCoMo dev data not found at {LOCOMO}; skipped")
        if args.only in (None, "madial"):
            if MADIAL.is_dir():
                bench_madial(embedder, args.mode)
            else:
                print(f"\nMADial data not found at {MADIAL}; skipped")
    finally:
        if cache is not None:
            print(f"\nembedding cache {args.embedding_cache}: {cache.misses} texts embedded now", file=sys.stderr)
            cache.close()
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
