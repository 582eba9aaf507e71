"""The salient words of one line: TF-IDF over jieba's segmentation and the IDF table jieba ships, loaded on first use.

The same weights as `jieba.analyse.extract_tags(line, withWeight=True)`, without importing
`jieba.analyse`: that module loads jieba's part-of-speech tables (about 50 MiB) into every process
that imports it, and the IDF table (about 40 MiB) with it, though only a search given the
conversation's recent lines needs the table.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from tideline_core.text.tokens import initialize

# Skipped before counting, as jieba's extractor skips them: the weights depend on what is counted.
SKIPPED = frozenset(
    "the of is and to in that we for an are by be as on with can if from which you it this then at have all not "
    "one has or".split()
)


@dataclass(frozen=True)
class IdfTable:
    weights: dict[str, float]
    median: float  # what a word missing from the table weighs


def jieba_idf_file() -> Path:
    """The IDF table jieba ships (found beside jieba, imported by then: a text was segmented)."""
    import jieba

    return Path(jieba.__file__).parent / "analyse" / "idf.txt"


@functools.cache
def idf_table(path: Path | None = None) -> IdfTable:
    path = path or jieba_idf_file()
    weights: dict[str, float] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        word, weight = line.strip().split(" ")
        weights[word] = float(weight)
    return IdfTable(weights, sorted(weights.values())[len(weights) // 2])


def salient_words(text: str, top: int) -> list[tuple[str, float]]:
    """Up to `top` (word, TF-IDF weight) of `text`, heaviest first (ties in order of first appearance)."""
    counts: dict[str, float] = {}
    for word in initialize().cut(text):
        if len(word.strip()) < 2 or word.lower() in SKIPPED:
            continue
        counts[word] = counts.get(word, 0.0) + 1.0
    if not counts:
        return []
    table = idf_table()
    total = sum(counts.values())
    weighted = [(word, n * (table.weights.get(word, table.median) / total)) for word, n in counts.items()]
    return sorted(weighted, key=lambda pair: pair[1], reverse=True)[:top]
