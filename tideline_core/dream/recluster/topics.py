"""Topic clusters: content words per narrative, then a document-frequency filter.

Pure: (narrative id, text) pairs in, frozen `TopicCluster`s out. A narrative's keywords are its
content words (`dream.words`): Chinese nouns, verbs and adjectives by jieba's part-of-speech tags,
of two characters or more; English nouns and names of 3–40 letters, not the verbs, adjectives and
adverbs ("amazing", "together", "worked"). Across the narratives, the forms of one word are one
keyword ("painting" and "paintings"). A keyword is dropped when it appears in more than max(4,
20 % of N) narratives (it says nothing) or in fewer than 3 (it groups nothing); each surviving
keyword is a cluster.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tideline_core.dream.words import chinese_content, english_content, one_form
from tideline_core.text.tokens import initialize

MIN_DF = 3
MAX_SHARE = 0.2
MAX_FLOOR = 4
# Longer "words" are identifiers, hashes or URLs, not topics (and keyword columns hold 128).
MAX_KEYWORD_LEN = 40

_PIECES = re.compile(
    r"(?P<han>[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)"
    r"|(?P<en>[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*(?:['’][A-Za-z]+)?)"
)


@dataclass(frozen=True)
class TopicCluster:
    """One surviving keyword and the narratives holding it (ascending ids)."""

    keyword: str
    narrative_ids: tuple[int, ...]
    size: int = field(init=False)

    def __post_init__(self) -> None:
        # A real field rather than a property so `dataclasses.asdict` carries it.
        object.__setattr__(self, "size", len(self.narrative_ids))


@lru_cache(maxsize=16384)
@functools.cache
def _tagger() -> Any:
    # jieba's part-of-speech tables take about 50 MiB: only the processes that cluster topics load them.
    initialize()  # the compact dictionary, jieba imported as it should be, before the tagger loads its own
    import jieba.posseg

    return jieba.posseg.dt


def keywords(text: str, *, hmm: bool = False) -> frozenset[str]:
    """The distinct topic keywords of one text: its Chinese and English content words (see the module),
    English lower-cased and in one form each.

    HMM is off by default: it lets jieba guess words missing from its dictionary, but makes
    extraction about twice as slow; without it such words fall apart into single characters,
    which are dropped.
    """
    found: set[str] = set()
    for match in _PIECES.finditer(text):
        han = match.group("han")
        if han is not None:
            for word, flag in _tagger().cut(han, HMM=hmm):
                if chinese_content(word, flag):
                    found.add(word)
            continue
        word = match.group("en").lower().replace("’", "'")
        if word.endswith("'s"):
            word = word[:-2]
        # A remaining apostrophe is a contraction (isn't, we'll): function words, not topics.
        if len(word) <= MAX_KEYWORD_LEN and english_content(word):
            found.add(word)
    forms = one_form(found)
    return frozenset(forms[word] for word in found)


def keyword_sets(narratives: Iterable[tuple[int, str]], *, hmm: bool = False) -> dict[int, frozenset[str]]:
    """Narrative id → its keywords; a repeated id keeps its last text."""
    return {narrative_id: keywords(text, hmm=hmm) for narrative_id, text in narratives}


def df_bounds(
    n: int, *, min_df: int = MIN_DF, max_share: float = MAX_SHARE, max_floor: int = MAX_FLOOR
) -> tuple[int, float]:
    """(lowest, highest) document frequency a keyword may have among `n` narratives to survive."""
    return min_df, max(float(max_floor), max_share * n)


def topic_clusters(
    narratives: Sequence[tuple[int, str]],
    *,
    min_df: int = MIN_DF,
    max_share: float = MAX_SHARE,
    max_floor: int = MAX_FLOOR,
    hmm: bool = False,
) -> list[TopicCluster]:
    """Topic clusters of an agent's narratives, largest first (ties by keyword).

    A keyword survives when it appears in at least `min_df` narratives and in no more than
    max(`max_floor`, `max_share` × N).
    """
    return clusters_from_keywords(
        keyword_sets(narratives, hmm=hmm), min_df=min_df, max_share=max_share, max_floor=max_floor
    )


def clusters_from_keywords(
    keyword_sets_by_id: Mapping[int, Collection[str]],
    *,
    min_df: int = MIN_DF,
    max_share: float = MAX_SHARE,
    max_floor: int = MAX_FLOOR,
) -> list[TopicCluster]:
    """`topic_clusters` for keywords already extracted (see `keyword_sets`)."""
    forms = one_form(Counter(word for words in keyword_sets_by_id.values() for word in set(words)))
    holders: dict[str, set[int]] = {}
    for narrative_id, words in keyword_sets_by_id.items():
        for word in set(words):
            holders.setdefault(forms[word], set()).add(narrative_id)
    low, high = df_bounds(len(keyword_sets_by_id), min_df=min_df, max_share=max_share, max_floor=max_floor)
    clusters = [TopicCluster(word, tuple(sorted(ids))) for word, ids in holders.items() if low <= len(ids) <= high]
    clusters.sort(key=lambda c: (-c.size, c.keyword))
    return clusters
