"""Tokenization for Chinese and English: jieba segmentation, stopwords, and keyword-query escaping."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from functools import lru_cache

import jieba

jieba.setLogLevel(logging.WARNING)

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+(?:['’][A-Za-z]+)?")

ENGLISH_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing for from had has have having he her
    hers him his how i if in into is it its itself just me my myself no nor not of off on once only or other
    our ours out over own same she should so some such than that the their theirs them then there these they
    this those through to too under until up very was we were what when where which while who whom why will
    with would you your yours yourself am s t don't i'm it's that's what's let's did didn't""".split()
)
CHINESE_STOPWORDS = frozenset(
    """的 了 和 是 在 我 你 他 她 它 们 我们 你们 他们 这 那 这个 那个 就 也 都 而 及 与 着 或
    一个 没有 有 吗 呢 吧 啊 把 被 让 给 从 对 但 但是 所以 因为 如果 还 又 很 太 会 能 要 说
    去 来 上 下 里 么 什么 怎么 一 不 没 就是 这样 那样""".split()
)
STOPWORDS = ENGLISH_STOPWORDS | CHINESE_STOPWORDS


def initialize() -> None:
    """Load jieba's dictionary now (about a second) instead of on the first request."""
    jieba.initialize()


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


@lru_cache(maxsize=4096)
def _segment_cached(text: str, for_index: bool) -> tuple[str, ...]:
    tokens: list[str] = []
    for chunk in _WORD.findall(text):
        if has_cjk(chunk):
            # cut_for_search adds the shorter words inside long ones (中华人民共和国 → 中华, 人民, ...),
            # so a 2-character query matches text that jieba would otherwise keep as one long word.
            pieces = jieba.cut_for_search(chunk) if for_index else jieba.cut(chunk)
            tokens.extend(piece.lower() for piece in pieces if piece.strip())
        else:
            tokens.append(chunk.lower().replace("’", "'"))
    return tuple(tokens)


def segment(text: str, *, for_index: bool = True) -> list[str]:
    """Text → lower-cased word tokens; Chinese by jieba, other scripts by word characters."""
    return list(_segment_cached(text, for_index))


def index_text(*parts: str) -> str:
    """The space-joined token string that goes into a keyword index."""
    return " ".join(token for part in parts if part for token in segment(part, for_index=True))


def query_terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Distinct search terms of a query, in order; stopwords dropped unless nothing else is left."""
    seen: dict[str, None] = {}
    for token in segment(text, for_index=True):
        seen.setdefault(token, None)
    terms = list(seen)
    if keep_stopwords:
        return terms
    content = [t for t in terms if t not in STOPWORDS]
    return content or terms


def fts_quote(term: str) -> str:
    """One FTS5 string literal: whatever the term holds (quotes, AND, NEAR, *), it is only text."""
    return '"' + term.replace('"', '""') + '"'


def fts_any(terms: Iterable[str]) -> str:
    """An FTS5 expression matching any of the terms."""
    return " OR ".join(fts_quote(t) for t in terms)


def escape_like(text: str, escape: str = "\\") -> str:
    """Make `%`, `_` and the escape character literal inside a LIKE pattern."""
    return text.replace(escape, escape * 2).replace("%", escape + "%").replace("_", escape + "_")
