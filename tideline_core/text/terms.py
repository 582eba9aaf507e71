"""A text's index and query terms, the same recipe for both so they always meet: segmented, stopwords out, stemmed.

``tokens.segment`` (jieba for Chinese, word characters otherwise), possessive ``'s`` dropped,
English stopwords dropped, a light English suffix stemmer (plural, -ing, -ed, final -e), Chinese
tokens kept as jieba gives them. Every keyword index reads these terms: the in-memory BM25
(`search.bm25`), PostgreSQL's tsvectors (`store.pg_keywords`) and the dream's word matching.
"""

from __future__ import annotations

from tideline_core.text.tokens import STOPWORDS, segment, segment_words

_VOWELS = frozenset("aeiouy")


def stem(word: str) -> str:
    """A light, deterministic English suffix stemmer; non-ASCII or short words are returned as is.

    It conflates the forms that matter for recall in conversation text (paint/paints/painted/
    painting, hike/hiking/hikes, study/studies/studied) and leaves everything else alone.
    """
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    w = word
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("sses", "ches", "shes", "xes", "zes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            base = w[: -len(suffix)]
            if not any(c in _VOWELS for c in base):
                break
            if suffix == "ed" and base.endswith("i"):
                base = base[:-1] + "y"
            elif len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]
            w = base
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def analyze(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Text → index/query terms (same recipe for both, so they always meet)."""
    out: list[str] = []
    for token in segment(text, for_index=True):
        if token.endswith("'s"):
            token = token[:-2]
        if not token or (not keep_stopwords and token in STOPWORDS):
            continue
        out.append(stem(token))
    return out


def analyze_words(text: str) -> list[tuple[str, ...]]:
    """`analyze`'s terms grouped by the word they come from (see `tokens.segment_words`); empty groups dropped."""
    out: list[tuple[str, ...]] = []
    for word in segment_words(text):
        terms = tuple(dict.fromkeys(stem(t[:-2] if t.endswith("'s") else t) for t in word if t and t not in STOPWORDS))
        terms = tuple(t for t in terms if t)
        if terms:
            out.append(terms)
    return out
