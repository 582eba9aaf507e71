"""Where LoCoMo session recall@5 is lost: by category, by how many sessions hold the evidence, by conversation.

    python bench/retrieval_lab/session_misses.py [-v] [service.NAME=value ...]

Runs the product runner (hybrid, cached e5 vectors, like `product.py`) over both splits and groups
each question's session R@5. `-v` also lists every question not fully recalled, with its gold
sessions and the first distinct sessions the search returned.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Sequence

import product  # puts the repository on sys.path
from tideline_core.evaluation import locomo, runner  # noqa: E402
from tideline_core.evaluation.metrics import recall_at  # noqa: E402

Outcome = tuple[list[str], list[str], float]


def _session_outcomes() -> tuple[list[tuple[str, locomo.Question]], list[Outcome]]:
    """Every question with (first distinct sessions, gold sessions, session R@5), in the runner's order."""
    outcomes: list[Outcome] = []

    def spy(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
        r = recall_at(ranked, gold, k)
        if k == 5 and ranked and ":" not in ranked[0]:  # session ids ("D3"), not turn ids ("D3:7")
            outcomes.append((list(ranked[:10]), sorted(set(gold)), r))
        return r

    runner.recall_at = spy
    embedder = product.CachedEmbedder()
    convs = locomo.load(product.EVAL / "locomo" / "locomo_dev.json")
    questions: list[tuple[str, locomo.Question]] = []
    for chosen in (convs[:3], convs[3:]):
        runner.run_locomo(product._fresh_db(), embedder, chosen, ["hybrid"], [5, 10, 20])
        questions += [(c.sample_id, q) for c in chosen for q in c.questions]
    if len(questions) != len(outcomes):
        raise SystemExit(f"{len(questions)} questions but {len(outcomes)} session recalls recorded")
    return questions, outcomes


def main(argv: list[str]) -> None:
    product._apply([a for a in argv if "=" in a])
    questions, outcomes = _session_outcomes()
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (conv, question), (_, gold, r) in zip(questions, outcomes):
        groups[("category", str(question.category))].append(r)
        groups[("gold sessions", "3+" if len(gold) >= 3 else str(len(gold)))].append(r)
        groups[("conversation", conv)].append(r)
    print(f"{'group':<28} {'questions':>9} {'S@5':>6} {'lost':>6}")
    for (kind, value), values in sorted(groups.items()):
        lost = sum(1 - v for v in values)
        print(f"{kind + ' ' + value:<28} {len(values):>9} {sum(values) / len(values):>6.3f} {lost:>6.1f}")
    if "-v" in argv:
        for (conv, question), (ranked, gold, r) in zip(questions, outcomes):
            if r < 1:
                print(f"{conv} c{question.category} {r:.2f} {question.question[:80]!r} gold {gold} got {ranked[:5]}")


if __name__ == "__main__":
    main(sys.argv[1:])
