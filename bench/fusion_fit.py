"""Choose hybrid fusion's per-query trust by leaving one evaluation set out; prints every rotation's figures.

    .venv/bin/python bench/fusion_fit.py --locomo ../shared/eval/locomo/locomo_dev.json \\
        --madial ../shared/eval/madial-zh --memdaily MEMSIM_CHECKOUT --cache-dir DIR [--grid 0,0.5,1,2] \\
        [--relative | --typical | --dense-floor]
    .venv/bin/python bench/fusion_fit.py --memdaily MEMSIM_CHECKOUT --cache-dir DIR --by-type

Each set is loaded once through the service's write path (as `tideline eval` loads it) and every
question asked through the same search, once per candidate setting of `hybrid.TRUST` (an exponent
for the keyword views, one for the dense views). For each set left out, the setting with the best
mean R@5 + R@10 over the other two is chosen and then measured on the one left out. Keyword and
dense alone are asked once, for the bar hybrid must clear. `--relative` takes each view's confidence
over the geometric mean of the views' in the same query; `--typical` over the view's median
confidence in the two choosing sets, with one exponent for every view. MemDaily is scored on every question of
its tuning files; its events files are never read (`memdaily.files`). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import atexit
import itertools
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tideline_core.compose import build_embedder, compose
from tideline_core.search import hybrid
from tideline_core.search.fusion import confidence_of
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings
from tideline_eval import locomo, madial, memdaily, runner
from tideline_eval.cache import CachedEmbedder

KS = (5, 10)
KEYWORD_VIEWS = ("kw", "kw_ctx")
DENSE_VIEWS = ("dense", "ctx")
Setting = tuple[float, float]  # (keyword views' exponent, dense views' exponent)
Ask = Callable[[str], runner.ModeResult]
Signals = Mapping[str, Mapping[Hashable, float]]


@dataclass(frozen=True)
class Measured:
    r5: float
    r10: float

    @property
    def objective(self) -> float:
        return self.r5 + self.r10


def service_for(cache: Path) -> Service:
    settings = Settings()
    workdir = Path(tempfile.mkdtemp(prefix="tideline-fusion-"))
    atexit.register(shutil.rmtree, workdir, True)  # each set's store: gone with the run
    settings = settings.model_copy(update={"home": workdir, "database_url": f"sqlite:///{workdir / 'eval.db'}"})
    embedder = CachedEmbedder(build_embedder(settings), cache)
    service = compose(settings, jobs=NullJobQueue(), embedder=embedder, llm=None)
    # Every setting asks the same questions: their vectors are computed once.
    hybrid.QUERY_CACHE_SIZE = 10**6
    service.searcher.forget_queries = lambda: None  # type: ignore[method-assign]
    return service


def locomo_set(path: Path, cache: Path) -> Ask:
    service = service_for(cache)
    conversations = locomo.load(path)
    dia_of = runner.load_locomo(service, conversations)
    return lambda mode: runner.ask_locomo(service, conversations, dia_of, [mode], KS)[mode]


def madial_set(path: Path, cache: Path) -> Ask:
    service = service_for(cache)
    memory_of = runner.load_madial(service, madial.load_memories(path))
    dialogues = madial.load_dialogues(path)
    return lambda mode: runner.ask_madial(service, dialogues, memory_of, [mode], KS)[mode]


def memdaily_loaded(path: Path, cache: Path) -> tuple[Service, list[memdaily.Pool], dict[tuple[str, int], str]]:
    """The MemDaily tuning files loaded into a store of their own: the service, the pools and their turns' keys."""
    service = service_for(cache)
    pools = [memdaily.load(p) for p in memdaily.files(path)]
    return service, pools, runner.load_memdaily(service, pools)


def memdaily_set(path: Path, cache: Path) -> Ask:
    service, pools, key_of = memdaily_loaded(path, cache)
    return lambda mode: runner.ask_memdaily(service, pools, key_of, [mode], KS)[mode]


def memdaily_by_type(path: Path, cache: Path) -> None:
    """Hybrid turn R@5 / R@10 of MemDaily's tuning files by question type, with how often the asker's own
    trajectory is among the first five trajectories the ranking reaches (session R@5) and the best R@5 any
    ranking could reach: with five places (`best R@5`), and seeing only the question's text (`text only`:
    questions of one file asked in the same words share one ranking, `text_only_best`). The last rows are
    the issue's every-question measure, the roles, items and places files, split by whether a question names
    something only its asker's trajectory holds (`memdaily.Question.unambiguous`)."""
    service, pools, key_of = memdaily_loaded(path, cache)
    result = runner.ask_memdaily(service, pools, key_of, ["hybrid"], KS)["hybrid"]
    ceiling = {(pool.name, q.key): best for pool in pools for q, best in text_only_best(pool.questions).items()}
    by_type: dict[str, list[tuple[float, ...]]] = {}
    by_file: dict[str, list[tuple[float, ...]]] = {}
    by_naming: dict[str, list[tuple[float, ...]]] = {}
    asked = [(pool, q) for pool in pools for q in pool.questions]
    for (pool, question), score in zip(asked, result.scores, strict=True):
        cited = len(set(question.evidence))
        best = ceiling[(pool.name, question.key)]
        row = (score.recall[5], score.recall[10], score.session_recall[5], min(5, cited) / cited, best)
        by_type.setdefault(pool.name.split("_", 1)[1].rsplit("_", 1)[0], []).append(row)
        if pool.kind in memdaily.UNFILTERED_KINDS:
            by_file.setdefault(f"{pool.kind} files", []).append(row)
            naming = "  names its own" if question.unambiguous else "  names nothing of its own"
            by_naming.setdefault(naming, []).append(row)
    tables = {
        **by_type,
        "every question": [row for found in by_type.values() for row in found],
        **by_file,
        "roles/items/places": [row for found in by_file.values() for row in found],
        **by_naming,
    }
    print(
        f"{'MemDaily, hybrid':<26}{'questions':>10}{'R@5':>8}{'R@10':>8}{'session R@5':>13}{'best R@5':>10}"
        f"{'text only':>11}"
    )
    for kind, found in tables.items():
        means = [statistics.fmean(row[i] for row in found) for i in range(5)]
        widths = (8, 8, 13, 10, 11)
        print(f"{kind:<26}{len(found):>10}" + "".join(f"{m:>{w}.3f}" for m, w in zip(means, widths, strict=True)))


def text_only_best(questions: Sequence[memdaily.Question], places: int = 5) -> dict[memdaily.Question, float]:
    """The best turn R@`places` of each question for a ranking that sees only the question's text: questions of one
    store asked in the same words get the same ranking, so their best is the one set of `places` turns that
    maximises their summed recall (each turn worth the share of each such question's evidence it is)."""
    alike: dict[str, list[memdaily.Question]] = {}
    for q in questions:
        alike.setdefault(q.text.strip(), []).append(q)
    best: dict[memdaily.Question, float] = {}
    for group in alike.values():
        worth: dict[str, float] = {}
        for q in group:
            cited = set(q.evidence)
            for turn in cited:
                worth[turn] = worth.get(turn, 0.0) + 1 / len(cited)
        chosen = set(sorted(worth, key=lambda turn: -worth[turn])[:places])
        for q in group:
            cited = set(q.evidence)
            best[q] = len(cited & chosen) / len(cited)
    return best


_COMBINE = hybrid.combine


def view_confidences(signals: Signals, views: Iterable[str], floors: Mapping[str, float]) -> dict[str, float]:
    """Each view's confidence in this query, over its min-max scores as the fusion scales them."""
    sure: dict[str, float] = {}
    for name in views:
        found = signals.get(name)
        if found:
            # kept above 0: the relative forms divide by it and take its log
            sure[name] = max(1e-3, confidence_of(found, floors.get(name)))
    return sure


def relative_combine(signals: Signals, *, weights: Mapping[str, float], trust: Mapping[str, float], **rest: Any) -> Any:
    """`combine` with each trusted view's confidence taken relative to the geometric mean of all trusted views'."""
    sure = view_confidences(signals, [n for n, e in trust.items() if e], rest.get("floors") or {})
    if sure:
        mean = math.exp(statistics.mean(math.log(c) for c in sure.values()))
        weights = {n: w * (sure[n] / mean) ** trust[n] if n in sure else w for n, w in weights.items()}
    return _COMBINE(signals, weights=weights, **rest)


TYPICAL: dict[str, float] = {}  # each view's typical confidence, from the sets that choose
SEEN: dict[str, list[float]] = {}  # the confidences of the queries asked, while recording


def typical_combine(signals: Signals, *, weights: Mapping[str, float], trust: Mapping[str, float], **rest: Any) -> Any:
    """`combine` with each view's confidence taken over the view's typical confidence (`TYPICAL`)."""
    sure = view_confidences(signals, (*KEYWORD_VIEWS, *DENSE_VIEWS), rest.get("floors") or {})
    for name, value in sure.items():
        SEEN.setdefault(name, []).append(value)
    weights = {
        n: w * (sure[n] / TYPICAL[n]) ** trust[n] if trust.get(n) and n in sure and n in TYPICAL else w
        for n, w in weights.items()
    }
    return _COMBINE(signals, weights=weights, **rest)


def leave_typical_out(sets: Mapping[str, Ask], grid: Sequence[float]) -> None:
    """`--typical`: per rotation, the views' typical confidences from the two choosing sets, one exponent for all."""
    hybrid.combine = typical_combine  # type: ignore[assignment]
    typical: dict[str, dict[str, float]] = {}
    plain: dict[str, Measured] = {}
    for name, ask in sets.items():
        SEEN.clear()
        plain[name] = measure(ask, "hybrid", (0.0, 0.0))
        typical[name] = {view: statistics.median(values) for view, values in SEEN.items()}
        print(f"{name}: typical confidence {typical[name]}", file=sys.stderr, flush=True)
    print("\nleave one set out, each view's confidence over its typical one in the two choosing sets")
    for left_out in sets:
        others = [n for n in sets if n != left_out]
        TYPICAL.clear()
        TYPICAL.update(
            {
                view: statistics.mean(typical[n][view] for n in others if view in typical[n])
                for view in typical[others[0]]
            }
        )
        rows = {0.0: plain}
        for exponent in (g for g in grid if g):
            rows[exponent] = {n: measure(ask, "hybrid", (exponent, exponent)) for n, ask in sets.items()}
        chosen = chosen_on(rows, others, float)
        for exponent, by_set in rows.items():
            figures = "  ".join(f"{n} {m.r5:.3f} / {m.r10:.3f}" for n, m in by_set.items())
            print(f"  {left_out} left out, exponent {exponent:g}: {figures}")
        got = rows[chosen][left_out]
        print(
            f"  → {left_out}: chosen {chosen:g}, measured {got.r5:.3f} / {got.r10:.3f}, "
            f"without trust {plain[left_out].r5:.3f} / {plain[left_out].r10:.3f}",
            flush=True,
        )


def leave_floors_out(sets: Mapping[str, Ask]) -> None:
    """Today's floors against the dense views' floor at a margin of 0, each set left out in turn."""
    today = dict(hybrid.FLOORS)
    settings = {"today": today, "dense from its floor": {**today, **dict.fromkeys(DENSE_VIEWS, 0.0)}}
    table: dict[str, dict[str, Measured]] = {}
    for label, floors in settings.items():
        hybrid.FLOORS = floors
        table[label] = {name: measure(ask, "hybrid") for name, ask in sets.items()}
        row = "  ".join(f"{m.r5:.3f}/{m.r10:.3f}" for m in table[label].values())
        print(f"{label:<22} {row}", file=sys.stderr, flush=True)
    hybrid.FLOORS = today
    print("\nhybrid R@5 / R@10 (turn; MADial: memories)")
    print(f"{'':<22}" + "".join(f"{name:>34}" for name in sets))
    for label, by_set in table.items():
        print(f"{label:<22}" + "".join(f"{by_set[n].r5:>27.3f} / {by_set[n].r10:.3f}" for n in sets))
    if len(sets) < 2:
        return  # nothing to choose on: the table is all there is
    print("\nleave one set out: chosen on the other two (mean of R@5 + R@10), measured on the one left out")
    for left_out in sets:
        others = [n for n in sets if n != left_out]
        chosen = chosen_on(table, others, lambda label: label != "today")
        got = table[chosen][left_out]
        print(f"  {left_out}: chosen {chosen!r} → R@5 {got.r5:.3f}, R@10 {got.r10:.3f}")


def chosen_on(table: Mapping[Any, Mapping[str, Measured]], others: Sequence[str], size: Callable[[Any], float]) -> Any:
    """The setting with the best mean R@5 + R@10 over `others`; of equals, the one of least `size` (least trust)."""
    return max(table, key=lambda s: (statistics.mean(table[s][n].objective for n in others), -size(s)))


def measure(ask: Ask, mode: str, setting: Setting | None = None) -> Measured:
    if setting is not None:
        kw, dense = setting
        hybrid.TRUST = {**dict.fromkeys(KEYWORD_VIEWS, kw), **dict.fromkeys(DENSE_VIEWS, dense)}
    result = ask(mode)
    return Measured(result.recall[5], result.recall[10])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo_dev.json")
    parser.add_argument("--madial", type=Path, help="the MADial-Bench zh folder")
    parser.add_argument("--memdaily", type=Path, help="a MemSim checkout or its messages_and_QAs folder")
    parser.add_argument("--cache-dir", type=Path, required=True, help="embedding caches, one SQLite file per set")
    parser.add_argument(
        "--relative", action="store_true", help="each view's confidence over the mean of the views' in the same query"
    )
    parser.add_argument(
        "--typical", action="store_true", help="each view's confidence over its typical one in the choosing sets"
    )
    parser.add_argument(
        "--dense-floor", action="store_true", help="today's fusion against dense views counted from their floor"
    )
    parser.add_argument("--grid", default="0,0.5,1,2", help="exponents tried for each of the two view groups")
    parser.add_argument(
        "--by-type", action="store_true", help="only MemDaily's hybrid recall by question type (needs --memdaily)"
    )
    args = parser.parse_args()
    if args.by_type:
        if args.memdaily is None:
            parser.error("--by-type needs --memdaily")
        memdaily_by_type(args.memdaily, args.cache_dir / "memdaily.sqlite")
        return 0
    grid = [float(x) for x in args.grid.split(",")]
    if args.relative:
        hybrid.combine = relative_combine  # type: ignore[assignment]
    sets: dict[str, Ask] = {}
    for name, build, path in (
        ("MADial zh", madial_set, args.madial),
        ("LoCoMo dev", locomo_set, args.locomo),
        ("MemDaily tuning, every question", memdaily_set, args.memdaily),
    ):
        if path is None:
            continue
        started = time.perf_counter()
        sets[name] = build(path, args.cache_dir / f"{name.split()[0].lower()}.sqlite")
        print(f"loaded {name} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.typical:
        leave_typical_out(sets, grid)
        return 0
    if args.dense_floor:
        leave_floors_out(sets)
        return 0
    alone = {name: {mode: measure(ask, mode) for mode in ("keyword", "dense")} for name, ask in sets.items()}
    table: dict[Setting, dict[str, Measured]] = {}
    for setting in itertools.product(grid, grid):
        table[setting] = {name: measure(ask, "hybrid", setting) for name, ask in sets.items()}
        row = "  ".join(f"{m.r5:.3f}/{m.r10:.3f}" for m in table[setting].values())
        print(f"trust kw {setting[0]:<4} dense {setting[1]:<4} {row}", file=sys.stderr, flush=True)
    print("\nR@5 / R@10 (turn; MADial: memories)")
    print(f"{'':<34}" + "".join(f"{name:>34}" for name in sets))
    for mode in ("keyword", "dense"):
        print(f"{mode:<34}" + "".join(f"{alone[n][mode].r5:>27.3f} / {alone[n][mode].r10:.3f}" for n in sets))
    for setting, by_set in table.items():
        label = f"hybrid, trust kw {setting[0]:g} dense {setting[1]:g}"
        print(f"{label:<34}" + "".join(f"{by_set[n].r5:>27.3f} / {by_set[n].r10:.3f}" for n in sets))
    print("\nleave one set out: chosen on the other two (mean of R@5 + R@10), measured on the one left out")
    for left_out in sets:
        others = [n for n in sets if n != left_out]
        chosen = chosen_on(table, others, sum)
        got = table[chosen][left_out]
        bar = {k: max(getattr(alone[left_out][m], f"r{k}") for m in ("keyword", "dense")) for k in KS}
        untrusted = table.get((0.0, 0.0))
        before = f"; without trust {untrusted[left_out].r5:.3f} / {untrusted[left_out].r10:.3f}" if untrusted else ""
        print(
            f"  {left_out}: chosen kw {chosen[0]:g} dense {chosen[1]:g} → R@5 {got.r5:.3f} (best alone {bar[5]:.3f}), "
            f"R@10 {got.r10:.3f} (best alone {bar[10]:.3f}){before}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
