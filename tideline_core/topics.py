"""Topic clusters: jieba POS keywords per narrative, a document-frequency filter, optional Jaccard merge.

Pure: (narrative id, text) pairs in, frozen `TopicCluster`s out (DESIGN §4 "Topic clusters").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import jieba.posseg
import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from tideline_core.text import CHINESE_STOPWORDS, ENGLISH_STOPWORDS

# Nouns (n, nr, ns, nt, nz, vn, ng), verbs (v) and adjectives (a) as DESIGN §4 lists them, plus
# jieba's finer tags of the same kinds: nrt/nrfg are person names (nr), an is an adjectival noun.
KEEP_POS = frozenset({"n", "nr", "nrt", "nrfg", "ns", "nt", "nz", "vn", "ng", "v", "a", "an"})
MIN_DF = 3
MAX_SHARE = 0.2
MAX_FLOOR = 4
MERGE_THRESHOLD = 0.7
# Longer "words" are identifiers, hashes or URLs, not topics (and keyword columns hold 128).
MAX_KEYWORD_LEN = 40

_PIECES = re.compile(
    r"(?P<han>[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)"
    r"|(?P<en>[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*(?:['’][A-Za-z]+)?)"
)


@dataclass(frozen=True)
class TopicCluster:
    """One surviving keyword (or, after a merge, a group of them) and the narratives under it.

    `keyword` is the cluster's name (the largest keyword of a merged group); `keywords` lists every
    keyword in the cluster, largest first; `label` is them joined for display.
    """

    keyword: str
    narrative_ids: tuple[int, ...]
    keywords: tuple[str, ...]
    size: int = field(init=False)
    label: str = field(init=False)

    def __post_init__(self) -> None:
        # Real fields rather than properties so `dataclasses.asdict` carries them.
        object.__setattr__(self, "size", len(self.narrative_ids))
        object.__setattr__(self, "label", " / ".join(self.keywords))


@lru_cache(maxsize=16384)
def keywords(text: str, *, hmm: bool = False) -> frozenset[str]:
    """The distinct topic keywords of one text: kept-POS Chinese words of 2+ characters and
    lower-cased English words of 3 to 40 characters that are not stopwords.

    HMM is off by default: it lets jieba guess words missing from its dictionary, but makes
    extraction about twice as slow; without it such words fall apart into single characters,
    which are dropped.
    """
    found: set[str] = set()
    for match in _PIECES.finditer(text):
        han = match.group("han")
        if han is not None:
            for word, flag in jieba.posseg.cut(han, HMM=hmm):
                if flag in KEEP_POS and len(word) >= 2 and word not in CHINESE_STOPWORDS:
                    found.add(word)
            continue
        word = match.group("en").lower().replace("’", "'")
        if word.endswith("'s"):
            word = word[:-2]
        # A remaining apostrophe is a contraction (isn't, we'll): function words, not topics.
        if 3 <= len(word) <= MAX_KEYWORD_LEN and "'" not in word and word not in ENGLISH_STOPWORDS:
            found.add(word)
    return frozenset(found)


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
    merge: bool = False,
    merge_threshold: float = MERGE_THRESHOLD,
    hmm: bool = False,
) -> list[TopicCluster]:
    """Topic clusters of an agent's narratives, largest first (ties by keyword).

    A keyword survives when it appears in at least `min_df` narratives and in no more than
    max(`max_floor`, `max_share` × N). With `merge`, clusters whose member sets have a Jaccard
    similarity ≥ `merge_threshold` are joined (transitively). Off by default: at a few hundred
    narratives merging cascades into one giant cluster.
    """
    return clusters_from_keywords(
        keyword_sets(narratives, hmm=hmm),
        min_df=min_df,
        max_share=max_share,
        max_floor=max_floor,
        merge=merge,
        merge_threshold=merge_threshold,
    )


def clusters_from_keywords(
    keyword_sets_by_id: Mapping[int, Collection[str]],
    *,
    min_df: int = MIN_DF,
    max_share: float = MAX_SHARE,
    max_floor: int = MAX_FLOOR,
    merge: bool = False,
    merge_threshold: float = MERGE_THRESHOLD,
) -> list[TopicCluster]:
    """`topic_clusters` for keywords already extracted (see `keyword_sets`)."""
    holders: dict[str, list[int]] = {}
    for narrative_id, words in keyword_sets_by_id.items():
        for word in set(words):
            holders.setdefault(word, []).append(narrative_id)
    low, high = df_bounds(len(keyword_sets_by_id), min_df=min_df, max_share=max_share, max_floor=max_floor)
    kept = {word: tuple(sorted(ids)) for word, ids in holders.items() if low <= len(ids) <= high}
    if merge and kept:
        clusters = _merge(kept, merge_threshold)
    else:
        clusters = [TopicCluster(word, ids, (word,)) for word, ids in kept.items()]
    clusters.sort(key=lambda c: (-c.size, c.keyword))
    return clusters


def jaccard(a: Collection[int], b: Collection[int]) -> float:
    """|a ∩ b| / |a ∪ b|; two empty sets are 0 (nothing shared)."""
    sa, sb = set(a), set(b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 0.0


def _merge(kept: Mapping[str, tuple[int, ...]], threshold: float) -> list[TopicCluster]:
    words = sorted(kept, key=lambda w: (-len(kept[w]), w))
    column_of: dict[int, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for row, word in enumerate(words):
        for narrative_id in kept[word]:
            rows.append(row)
            cols.append(column_of.setdefault(narrative_id, len(column_of)))
    incidence = sparse.csr_array((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=(len(words), len(column_of)))
    # Intersections of every pair of keywords that share a narrative, without a Python double loop.
    # Memory grows with the number of co-occurring keyword pairs: one reason merging is off by default.
    shared = sparse.triu(incidence @ incidence.T, k=1).tocoo()
    sizes = np.asarray(incidence.sum(axis=1)).ravel()
    union = sizes[shared.row] + sizes[shared.col] - shared.data
    strong = shared.data / union >= threshold
    graph = sparse.coo_array(
        (np.ones(int(strong.sum()), dtype=np.int8), (shared.row[strong], shared.col[strong])),
        shape=(len(words), len(words)),
    )
    _, component = connected_components(graph, directed=False)
    groups: dict[int, list[str]] = {}
    for row, word in enumerate(words):
        groups.setdefault(int(component[row]), []).append(word)
    merged: list[TopicCluster] = []
    for members in groups.values():
        # `words` is ordered largest first, so members[0] names the group.
        ids = sorted({narrative_id for word in members for narrative_id in kept[word]})
        merged.append(TopicCluster(members[0], tuple(ids), tuple(members)))
    return merged
