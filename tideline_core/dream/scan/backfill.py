"""Source-link inference: for a narrative without links, the one conversation turn it plainly came from, or none.

Pure: plain values in (narratives and turns with their text, speaker and time, embeddings in
aligned matrices), `InferredLink`s out, each with the evidence it rests on so it can be shown.

Similarity of embeddings alone cannot tell a memory's own turn from an unrelated one of the same
language and register: e5 scores both high. So a link needs several kinds of evidence at once,
and when they do not agree nothing is linked (a wrong link is worse than none):

- time: the turn was said within `window` of when the narrative happened;
- role: it is something a person or the agent said (not a system or tool turn);
- words: it shares at least `min_shared` content words with the narrative (stemmed English,
  jieba's Chinese words, stopwords and the speakers' own names left out), and they make at least
  `min_share` of the narrative's content words, rare words in the window weighing more (two
  words of time, "Thursday evening", are not a topic);
- speaker: when the narrative names a speaker of the window, the turn is by one it names;
- meaning: its cosine similarity clears `min_cosine`;
- a clear winner: its score (cosine plus `words_weight` times the share of the narrative's
  content words it holds, weighted by rarity in the window) beats every other turn of the window
  by `margin`, except the turns just before and after it in its session (a question and its
  answer are one source).

Only the best turn is linked. A narrative written in one language from a conversation in another
shares no words with it and is left unlinked: the rule measures precision first. Its constants
were chosen on some LoCoMo conversations and confirmed on others (`tideline eval locomo --links`);
measure again there when the embedder or the tokeniser changes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tideline_core.embedding import normalize
from tideline_core.errors import InvalidInput
from tideline_core.numeric import np
from tideline_core.text.dates import as_utc
from tideline_core.text.terms import analyze

WINDOW = timedelta(hours=6)
MIN_SHARED = 2
MIN_SHARE = 0.25
MIN_COSINE = 0.80
WORDS_WEIGHT = 0.3
MARGIN = 0.05
SOURCE_ROLES = frozenset({"user", "assistant"})


@dataclass(frozen=True, slots=True)
class NarrativeAnchor:
    """A narrative with no source links: when it happened and its text (gesture, and context if any)."""

    id: int
    occurred_at: datetime
    text: str


@dataclass(frozen=True, slots=True)
class TurnAnchor:
    id: int
    created_at: datetime
    content: str
    session_id: str = ""
    role: str = "user"
    speaker: str = ""


@dataclass(frozen=True, slots=True)
class Evidence:
    """Why a link was inferred: each signal that had to agree."""

    cosine: float
    shared_words: tuple[str, ...]  # content words of the narrative the turn holds, rarest first
    word_share: float  # their rarity-weighted share of the narrative's content words, 0-1
    speaker: str  # the turn's speaker when the narrative names it, else ""
    runner_up: float | None  # the best score of any other turn of the window not next to this one
    minutes_apart: float  # from the narrative's time to the turn's, signed (a turn after it is positive)


@dataclass(frozen=True, slots=True)
class InferredLink:
    narrative_id: int
    context_id: int
    score: float  # cosine + words_weight × word share: what the decision was made on
    evidence: Evidence
    inferred: bool = True


@dataclass(frozen=True, slots=True)
class _Turn:
    anchor: TurnAnchor
    at: float
    words: frozenset[str]
    speaker_words: frozenset[str]
    before: int | None  # index of the turn just before it in its session (None: first), in time order
    after: int | None


def propose_links(
    narratives: Sequence[NarrativeAnchor],
    narrative_vectors: np.ndarray,
    turns: Sequence[TurnAnchor],
    turn_vectors: np.ndarray,
    *,
    window: timedelta = WINDOW,
    min_shared: int = MIN_SHARED,
    min_share: float = MIN_SHARE,
    min_cosine: float = MIN_COSINE,
    words_weight: float = WORDS_WEIGHT,
    margin: float = MARGIN,
) -> list[InferredLink]:
    """At most one link per narrative, to the turn every signal points at (see the module); ordered by narrative id.

    Row i of `narrative_vectors` belongs to narratives[i], row j of `turn_vectors` to turns[j].
    Pass only narratives that have no links yet: a narrative's existing links are not looked at.
    """
    n_matrix = _unit(narrative_vectors, len(narratives), "narrative_vectors")
    t_matrix = _unit(turn_vectors, len(turns), "turn_vectors")
    if len(narratives) and len(turns) and n_matrix.shape[1] != t_matrix.shape[1]:
        raise InvalidInput(
            "turn_vectors", f"dimension {t_matrix.shape[1]} differs from the narratives' {n_matrix.shape[1]}"
        )
    keep = [j for j in range(len(turns)) if turns[j].role in SOURCE_ROLES]
    keep.sort(key=lambda j: (as_utc(turns[j].created_at), turns[j].id))
    prepared = _prepare([turns[j] for j in keep])
    by_time = t_matrix[keep] if keep else t_matrix[:0]
    times = np.array([t.at for t in prepared], dtype=np.float64)
    links: list[InferredLink] = []
    for i, narrative in sorted(enumerate(narratives), key=lambda item: item[1].id):
        at = as_utc(narrative.occurred_at).timestamp()
        lo = int(np.searchsorted(times, at - window.total_seconds(), side="left"))
        hi = int(np.searchsorted(times, at + window.total_seconds(), side="right"))
        if lo >= hi:
            continue
        link = _best(narrative, at, prepared, lo, hi, by_time[lo:hi] @ n_matrix[i], min_shared, words_weight)
        if link is None or link.evidence.word_share < min_share or link.evidence.cosine < min_cosine:
            continue
        if link.evidence.runner_up is None or link.score - link.evidence.runner_up >= margin:
            links.append(link)
    return links


def _prepare(turns: Sequence[TurnAnchor]) -> list[_Turn]:
    last_of: dict[str, int] = {}
    before: list[int | None] = []
    after: list[int | None] = [None] * len(turns)
    for index, turn in enumerate(turns):
        previous = last_of.get(turn.session_id)
        before.append(previous)
        if previous is not None:
            after[previous] = index
        last_of[turn.session_id] = index
    return [
        _Turn(
            turn,
            as_utc(turn.created_at).timestamp(),
            frozenset(analyze(turn.content)),
            frozenset(analyze(turn.speaker)),
            before[index],
            after[index],
        )
        for index, turn in enumerate(turns)
    ]


def _best(
    narrative: NarrativeAnchor,
    at: float,
    turns: Sequence[_Turn],
    lo: int,
    hi: int,
    cosines: np.ndarray,
    min_shared: int,
    words_weight: float,
) -> InferredLink | None:
    window = turns[lo:hi]
    speakers = frozenset().union(*(t.speaker_words for t in window))
    own = frozenset(analyze(narrative.text))
    named = own & speakers
    content = own - speakers
    if not content:
        return None
    df = Counter(w for t in window for w in t.words & content)
    rarity = {w: math.log((len(window) + 1) / (df[w] + 0.5)) for w in content}
    total = sum(rarity.values())
    scores = np.empty(len(window), dtype=np.float64)
    for k, turn in enumerate(window):
        scores[k] = float(cosines[k]) + words_weight * sum(rarity[w] for w in turn.words & content) / total
    order = np.argsort(-scores, kind="stable")
    k = int(order[0])
    turn = window[k]
    shared = sorted(turn.words & content, key=lambda w: (-rarity[w], w))
    if len(shared) < min_shared or (named and not named & turn.speaker_words):
        return None
    beside = {lo + k, turn.before, turn.after}
    rivals = [float(scores[j]) for j in order[1:] if lo + int(j) not in beside]
    evidence = Evidence(
        cosine=round(float(cosines[k]), 6),
        shared_words=tuple(shared),
        word_share=round(sum(rarity[w] for w in shared) / total, 6),
        speaker=turn.anchor.speaker if named else "",
        runner_up=round(max(rivals), 6) if rivals else None,
        minutes_apart=round((turn.at - at) / 60, 1),
    )
    return InferredLink(narrative.id, turn.anchor.id, round(float(scores[k]), 6), evidence)


def _unit(vectors: np.ndarray, rows: int, name: str) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if rows == 0 and matrix.size == 0:
        return matrix.reshape(0, matrix.shape[-1] if matrix.ndim == 2 else 0)
    if matrix.ndim != 2 or matrix.shape[0] != rows:
        raise InvalidInput(name, f"must be a 2-d array with one row per record; got shape {matrix.shape} for {rows}")
    return normalize(matrix)
