"""Tokenization for Chinese and English: jieba segmentation, stopwords, and keyword-query escaping."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jieba

# Han characters, as a class both Python's `re` and PostgreSQL's regular expressions read.
CJK_CLASS = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
_CJK = re.compile(CJK_CLASS)
_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+(?:['’][A-Za-z]+)?")
_LATIN_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+(?:['’][A-Za-z]+)?")
# A word the user ends with `*` asks for every word it begins ("swim*": swim, swimming, swimmer).
PREFIX = "*"
_ASKED_PREFIX = re.compile(r"(?<![\w*])([0-9A-Za-z\u00c0-\u024f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)\*")
MIN_LATIN_PREFIX = 2

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


@cache
def initialize() -> jieba.Tokenizer:
    """jieba's tokenizer with its dictionary loaded (the compact one, see `jieba_dictionary`); call it early
    to pay for the load (well under a second once the cache file exists) before the first request.

    jieba itself is imported here, on the first text with Chinese in it: a process that answers one
    English prompt (the hook without a server) never pays for it.
    """
    from tideline_core.text import jieba_dictionary

    jieba_dictionary.jieba.setLogLevel(logging.WARNING)
    jieba_dictionary.install(jieba_dictionary.jieba.dt)
    return jieba_dictionary.jieba.dt


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


@lru_cache(maxsize=16384)
def _cut(chunk: str, for_index: bool) -> tuple[str, ...]:
    # Cached per run of Chinese text, not per whole text: a write and the index refresh after it
    # segment the same runs, and a run is short where a turn may be 100,000 characters.
    # cut_for_search adds the shorter words inside long ones (中华人民共和国 → 中华, 人民, ...),
    # so a 2-character query matches text that jieba would otherwise keep as one long word.
    tokenizer = initialize()
    pieces = tokenizer.cut_for_search(chunk) if for_index else tokenizer.cut(chunk)
    return tuple(piece.lower() for piece in pieces if piece.strip())


@lru_cache(maxsize=16384)
def _cut_words(chunk: str) -> tuple[tuple[str, ...], ...]:
    # What cut_for_search emits, kept together per word: the dictionary words inside a long word,
    # then the word itself. A query scores each such group once (see bm25.BM25Index.score).
    tokenizer = initialize()
    words: list[tuple[str, ...]] = []
    for word in tokenizer.cut(chunk):
        if not word.strip():
            continue
        inner = [
            word[i : i + n]
            for n in (2, 3)
            if len(word) > n
            for i in range(len(word) - n + 1)
            if tokenizer.FREQ.get(word[i : i + n])
        ]
        words.append(tuple(piece.lower() for piece in (*inner, word)))
    return tuple(words)


def segment_words(text: str) -> list[tuple[str, ...]]:
    """The tokens `segment` gives for an index, grouped by the word they come from (a long Chinese word with
    the shorter words inside it; any other word alone)."""
    words: list[tuple[str, ...]] = []
    for chunk in _WORD.findall(text):
        if has_cjk(chunk):
            words.extend(_cut_words(chunk))
        else:
            words.append((chunk.lower().replace("’", "'"),))
    return words


def segment(text: str, *, for_index: bool = True) -> list[str]:
    """Text → lower-cased word tokens; Chinese by jieba, other scripts by word characters."""
    tokens: list[str] = []
    for chunk in _WORD.findall(text):
        if has_cjk(chunk):
            tokens.extend(_cut(chunk, for_index))
        else:
            tokens.append(chunk.lower().replace("’", "'"))
    return tokens


def index_text(*parts: str) -> str:
    """The space-joined token string that goes into a keyword index."""
    return " ".join(token for part in parts if part for token in segment(part, for_index=True))


def asked_prefixes(text: str) -> tuple[list[str], str]:
    """The prefixes a query asks for (its words written with a trailing `*`, lower-cased), and the rest of it.

    A prefix is only what a user asks for: a plain word matches itself and its stem, never the longer
    words it begins. One Latin letter (`a*`) begins too many words to mean anything and stays a word.
    """
    asked: dict[str, None] = {}

    def take(match: re.Match[str]) -> str:
        word = match.group(1).lower()
        if not has_cjk(word) and len(word) < MIN_LATIN_PREFIX:
            return word
        asked.setdefault(word, None)
        return " "

    rest = _ASKED_PREFIX.sub(take, text)
    return list(asked), rest


def is_prefix(term: str) -> bool:
    """Whether a query term is a prefix the user asked for (`asked_prefixes`), marked by its trailing `*`."""
    return term.endswith(PREFIX)


def query_terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Distinct search terms of a query, in order; stopwords dropped unless nothing else is left.

    A prefix the user asked for stays a term of its own, marked (`swim*`).
    """
    prefixes, text = asked_prefixes(text)
    seen: dict[str, None] = {}
    for token in segment(text, for_index=True):
        seen.setdefault(token, None)
    terms = list(seen)
    marked = [prefix + PREFIX for prefix in prefixes]
    if keep_stopwords:
        return terms + marked
    content = [t for t in terms if t not in STOPWORDS]
    return (content or terms) + marked


def fts_term(term: str) -> str:
    """One FTS5 query term: a quoted string, or for an asked prefix (`swim*`) a quoted prefix query."""
    return fts_quote(term[: -len(PREFIX)]) + PREFIX if is_prefix(term) else fts_quote(term)


def fts_quote(term: str) -> str:
    """One FTS5 string literal: whatever the term holds (quotes, AND, NEAR, *), it is only text."""
    return '"' + term.replace('"', '""') + '"'


def fts_any(terms: Iterable[str]) -> str:
    """An FTS5 expression matching any of the terms."""
    return " OR ".join(fts_term(t) for t in terms)


def identifier_parts(word: str) -> list[str]:
    """The parts of a word written as an identifier: HybridSearchIndex → Hybrid, Search, Index; HTTPServer2 →
    HTTP, Server, 2. A plain word is its only part."""
    parts: list[str] = []
    start = 0
    for i in range(1, len(word)):
        prev, char = word[i - 1], word[i]
        nxt = word[i + 1] if i + 1 < len(word) else ""
        if (
            prev.isdigit() != char.isdigit()
            or (prev.islower() and char.isupper())
            or (prev.isupper() and char.isupper() and nxt.islower())
        ):
            parts.append(word[start:i])
            start = i
    parts.append(word[start:])
    return parts


def holds_word(text: str, term: str) -> bool:
    """Whether `text` holds the query term `term` (lower-cased, as `segment` gives it) as a word.

    A Latin-script term is a whole word of the text or a run of whole parts of one ("searchindex" in
    HybridSearchIndex), never the start of a longer word: "go" is not in "goggles", nor "thu" in "Thursday".
    Chinese is written without spaces between words, so a Chinese term is held wherever it appears.
    An asked prefix (`swim*`) is held by every word it begins.
    """
    if is_prefix(term):
        prefix = term[: -len(PREFIX)]
        if has_cjk(prefix):
            return prefix in text.lower()
        return any(word.lower().replace("’", "'").startswith(prefix) for word in _LATIN_WORD.findall(text))
    if has_cjk(term):
        return term in text.lower()
    for word in _LATIN_WORD.findall(text):
        lowered = word.lower().replace("’", "'")
        if term not in lowered:
            continue
        if lowered == term:
            return True
        parts = [part.lower() for part in identifier_parts(word.replace("’", "'").split("'")[0])]
        for i in range(len(parts)):
            run = ""
            for part in parts[i:]:
                run += part
                if run == term:
                    return True
                if len(run) >= len(term):
                    break
    return False


def escape_like(text: str, escape: str = "\\") -> str:
    """Make `%`, `_` and the escape character literal inside a LIKE pattern."""
    return text.replace(escape, escape * 2).replace("%", escape + "%").replace("_", escape + "_")
