"""Choose hybrid fusion's per-query trust by leaving one evaluation set out; prints every rotation's figures.

    .venv/bin/python bench/fusion_fit.py --locomo ../shared/eval/locomo/locomo_dev.json \\
        --madial ../shared/eval/madial-zh --memdaily MEMSIM_CHECKOUT --cache-dir DIR [--grid 0,0.5,1,2]

Each set is loaded once through the service's write path (as `tideline eval` loads it) and every
question asked through the same search, once per candidate setting of `hybrid.TRUST` (an exponent
for the keyword views, one for the dense views). For each set left out, the setting with the best
mean R@5 + R@10 over the other two is chosen and then measured on the one left out. Keyword and
dense alone are asked once, for the bar hybrid must clear. MemDaily is scored on every question of
its tuning files; its events files are never read (`memdaily.files`). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tideline_core.compose import build_embedder, compose
from tideline_core.search import hybrid
from tideline_core.search.fusion import confidence
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
    seconds: float

    @property
    def objective(self) -> float:
        return self.r5 + self.r10


def service_for(cache: Path) -> Service:
    settings = Settings()
    workdir = Path(tempfile.mkdtemp(prefix="tideline-fusion-"))
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


def memdaily_set(path: Path, cache: Path) -> Ask:
    service = service_for(cache)
    pools = [memdaily.load(p) for p in memdaily.files(path)]
    key_of = runner.load_memdaily(service, pools)
    return lambda mode: runner.ask_memdaily(service, pools, key_of, [mode], KS)[mode]


_COMBINE = hybrid.combine


def relative_combine(signals: Signals, *, weights: Mapping[str, float], trust: Mapping[str, float], **rest: Any) -> Any:
    """`combine` with each trusted view's confidence taken relative to the geometric mean of all trusted views'."""
    floors = rest.get("floors") or {}
    sure: dict[str, float] = {}
    for name, exponent in trust.items():
        found = signals.get(name)
        if exponent and found:
            lo, hi = min(min(found.values()), floors.get(name, float("inf"))), max(found.values())
            sure[name] = max(1e-3, confidence({d: (v - lo) / (hi - lo) if hi > lo else 1.0 for d, v in found.items()}))
    if sure:
        mean = math.exp(statistics.mean(math.log(c) for c in sure.values()))
        weights = {n: w * (sure[n] / mean) ** trust[n] if n in sure else w for n, w in weights.items()}
    return _COMBINE(signals, weights=weights, **rest)


def measure(ask: Ask, mode: str, setting: Setting | None = None) -> Measured:
    if setting is not None:
        kw, dense = setting
        hybrid.TRUST = {**dict.fromkeys(KEYWORD_VIEWS, kw), **dict.fromkeys(DENSE_VIEWS, dense)}
    started = time.perf_counter()
    result = ask(mode)
    return Measured(result.recall[5], result.recall[10], time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo_dev.json")
    parser.add_argument("--madial", type=Path, help="the MADial-Bench zh folder")
    parser.add_argument("--memdaily", type=Path, help="a MemSim checkout or its messages_and_QAs folder")
    parser.add_argument("--cache-dir", type=Path, required=True, help="embedding caches, one SQLite file per set")
    parser.add_argument(
        "--relative", action="store_true", help="each view's confidence over the mean of the views' in the same query"
    )
    parser.add_argument("--grid", default="0,0.5,1,2", help="exponents tried for each of the two view groups")
    args = parser.parse_args()
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
        chosen = max(table, key=lambda s: (statistics.mean(table[s][n].objective for n in others), -sum(s)))
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
