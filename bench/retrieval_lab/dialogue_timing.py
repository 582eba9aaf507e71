"""How long the local e5 takes over a MADial dialogue's query texts, timed directly (no search, no cache).

    python bench/retrieval_lab/dialogue_timing.py

Prints p50/p95 over the 160 dialogues for the last two lines alone (the part a live conversation
could never have embedded before the newest line arrived) and for both texts the search embeds.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tideline_core.embedders import LocalE5Embedder  # noqa: E402
from tideline_core.evaluation import madial, runner  # noqa: E402
from tideline_core.search.query import conversation_texts  # noqa: E402


def _ms(embedder: LocalE5Embedder, texts: list[str]) -> float:
    started = time.perf_counter()
    embedder.queries(texts)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    dialogues = madial.load_dialogues(ROOT.parent / "shared" / "eval" / "madial-zh")
    embedder = LocalE5Embedder()
    embedder.queries(["warm up"])
    last_two, both = [], []
    for dialogue in dialogues:
        texts = conversation_texts(runner.conversation_of(dialogue))
        last_two.append(_ms(embedder, [texts[-1]]))
        both.append(_ms(embedder, texts))
    for name, values in (("last two lines alone", last_two), ("both texts", both)):
        p95 = sorted(values)[int(0.95 * len(values))]
        print(f"{name:<22} p50 {statistics.median(values):6.1f} ms   p95 {p95:6.1f} ms   ({len(values)} dialogues)")


if __name__ == "__main__":
    main()
