"""How far real e5 questions lie from the stored rows they search, beside how far a stored row lies from the others.

    .venv/bin/python bench/query_geometry.py [--locomo ../shared/eval/locomo/locomo_dev.json]

For each LoCoMo conversation: its turns embedded as e5 passages (as the store embeds them), its
questions as e5 queries (as a search embeds them). Printed per conversation: the mean cosine of a
question's nearest turn, and of a turn's nearest other turn (a row held out and asked as a query),
with the mean gap from the first to the tenth neighbour. An approximate index is walked from the
rows' own neighbourhoods; a query that lies further from every row than rows lie from each other
is what `bench/scale.py` asks of its synthetic rows with e5 question vectors, and this shows real
questions do the same. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from tideline_core.compose import build_embedder
from tideline_core.settings import Settings
from tideline_eval import locomo

K = 10


def neighbours(similarities: np.ndarray, *, held_out: bool) -> tuple[float, float]:
    """Mean nearest cosine and mean gap from the nearest to the K-th, over the rows of `similarities`."""
    ranked = -np.sort(-similarities, axis=1)
    if held_out:
        ranked = ranked[:, 1:]  # a row's nearest is itself
    return float(ranked[:, 0].mean()), float((ranked[:, 0] - ranked[:, K - 1]).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=Path("../shared/eval/locomo/locomo_dev.json"))
    args = parser.parse_args()
    if not args.locomo.is_file():
        parser.error(f"--locomo: no LoCoMo file at {args.locomo} (give the path of locomo_dev.json)")
    embedder = build_embedder(Settings())
    print("nearest cosine (gap from the 1st to the 10th neighbour)")
    print(f"{'conversation':<14}{'turns':>6}{'questions':>10}  {'question → turn':<18}turn → other turn")
    for conversation in locomo.load(args.locomo):
        turns = np.asarray(embedder.passages([t.text for t in conversation.turns]), dtype=np.float32)
        questions = np.asarray(embedder.queries([q.question for q in conversation.questions]), dtype=np.float32)
        asked, asked_gap = neighbours(questions @ turns.T, held_out=False)
        stored, stored_gap = neighbours(turns @ turns.T, held_out=True)
        print(
            f"{conversation.sample_id:<14}{len(turns):>6}{len(questions):>10}  {asked:.3f} ({asked_gap:.4f})"
            f"    {stored:.3f} ({stored_gap:.4f})"
        )


if __name__ == "__main__":
    main()
