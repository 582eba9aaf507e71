"""Query construction, pure: keyword terms and embedding texts from a question or a dialogue."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from tideline_core.search.salience import salient_words
from tideline_core.text.terms import analyze, analyze_words, stem
from tideline_core.text.tokens import PREFIX, asked_prefixes, is_prefix

LINE_DECAY = 0.8  # a line's keywords weigh 0.8 ** age (age 0 = newest line): the dialogue drifts
SELF_LINE_WEIGHT = 0.5  # the agent's own lines say less about what to recall than the other party's
KEYWORDS_PER_LINE = 10
# An asked prefix stands for at most this many of the words it begins, the most frequent first.
PREFIX_WORDS = 32


class Line(Protocol):
    """One line of a dialogue: who said it, what, and whether the agent itself said it."""

    @property
    def speaker(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def is_self(self) -> bool: ...


# The days of the week in English and Chinese: a day named in one language is the same day in the
# other, a fact no embedding has to guess ("what do I do on Thursday?" of "周四晚上去游泳").
WEEKDAYS: tuple[tuple[str, ...], ...] = (
    ("monday", "周一", "星期一", "礼拜一"),
    ("tuesday", "周二", "星期二", "礼拜二"),
    ("wednesday", "周三", "星期三", "礼拜三"),
    ("thursday", "周四", "星期四", "礼拜四"),
    ("friday", "周五", "星期五", "礼拜五"),
    ("saturday", "周六", "星期六", "礼拜六"),
    ("sunday", "周日", "周天", "星期日", "星期天", "礼拜天", "礼拜日"),
    ("weekend", "周末"),
)
_SAME_DAY = {name: names for names in WEEKDAYS for name in names}


def same_day_terms(terms: Iterable[str]) -> set[str]:
    """The other languages' names of each weekday among `terms` (analyzed terms), not those given."""
    given = set(terms)
    return {other for term in given for other in _SAME_DAY.get(term, ()) if other not in given}


def question_terms(text: str) -> dict[str, float]:
    """A one-line query: each analyzed term once, weight 1, and a weekday's names in the other language.

    A word written with a trailing `*` is an asked prefix, kept marked (`swim*`) for `expand_prefixes`.
    """
    prefixes, rest = asked_prefixes(text)
    terms = dict.fromkeys(analyze(rest), 1.0)
    terms.update(dict.fromkeys(sorted(same_day_terms(terms)), 1.0))
    terms.update(dict.fromkeys((prefix + PREFIX for prefix in prefixes), 1.0))
    return terms


def prefix_forms(term: str) -> tuple[str, ...]:
    """The beginnings an asked prefix (`goggle*`) matches index terms by: itself and its stem (`goggl`).

    Index terms are stems, so "goggles" is held as "goggl": the stem of the prefix begins it.
    """
    prefix = term[: -len(PREFIX)]
    return tuple(dict.fromkeys((prefix, stem(prefix))))


def expand_prefixes(
    terms: Mapping[str, float], words_beginning: Callable[[Sequence[str]], Sequence[str]]
) -> tuple[dict[str, float], dict[str, str]]:
    """`terms` with each asked prefix replaced by the index terms it begins, and their groups.

    `words_beginning(forms)`: an index's terms beginning with any of `forms`, most frequent first. The
    words one prefix stands for are one unit of the query (grouped under the prefix): a row scores
    the best of them, so "swim*" weighs as one word however many it begins. A word the query also
    asks for by itself keeps its own weight and no group.
    """
    out = {term: weight for term, weight in terms.items() if not is_prefix(term)}
    groups: dict[str, str] = {}
    for term, weight in terms.items():
        if not is_prefix(term):
            continue
        for word in list(words_beginning(prefix_forms(term)))[:PREFIX_WORDS]:
            if word in out:
                continue
            out[word] = weight
            groups[word] = term
    return out, groups


def word_groups(texts: Iterable[str]) -> dict[str, str]:
    """Term → the word it was cut from, for the terms of a long word (its inner words and itself); others absent."""
    groups: dict[str, str] = {}
    for text in texts:
        for word in analyze_words(text):
            if len(word) > 1:
                for term in word:
                    groups.setdefault(term, word[-1])
    return groups


# A question part: up to and including its question mark. A compound question is two or more of them.
_QUESTION_PART = re.compile(r"[^?？]+[?？]")
# What joins the parts ("…？另外，…？", "…? Also, …?"): said to the listener, not asked about.
_JOINER = re.compile(
    r"^(?:还有就是|顺便问一下|顺便问下|再问一下|另外|还有|以及|对了"
    r"|(?:oh and|and also|by the way|btw|also|and|plus)\b)[，,、:： ]*",
    re.IGNORECASE,
)
MIN_PART_CHARS = 4  # a shorter "part" ("好吗？", "right?") asks nothing of its own


def question_parts(text: str) -> list[str]:
    """The questions a compound question asks ("…？另外，…？"), each without its joining word; [] for one question.

    Asked whole, the more specific part fills the top with its own rows and the other part's answer
    never ranks; asked alone, a part loses what the other pins down. The search asks both ways and
    interleaves (`fusion.interleave`).
    """
    parts = [_JOINER.sub("", part.strip(" \t\n，,。.;；")) for part in _QUESTION_PART.findall(text)]
    parts = [part for part in parts if len(part.rstrip("?？")) >= MIN_PART_CHARS]
    return parts if len(parts) >= 2 else []


def conversation_terms(lines: Sequence[Line]) -> dict[str, float]:
    """TF-IDF keywords of each line (jieba), weighted by recency and by who said it.

    Plain BM25 over a whole dialogue drowns in its chit-chat; a line's few salient words, newest
    lines first, carry what the other party is talking about.
    """
    weights: dict[str, float] = {}
    n = len(lines)
    for j, line in enumerate(lines):
        w = LINE_DECAY ** (n - 1 - j) * (SELF_LINE_WEIGHT if line.is_self else 1.0)
        for keyword, salience in salient_words(line.text, KEYWORDS_PER_LINE):
            for term in analyze(keyword):
                weights[term] = weights.get(term, 0.0) + w * float(salience)
    return weights


def merge_terms(*parts: Mapping[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in parts:
        for term, w in part.items():
            out[term] = out.get(term, 0.0) + w
    return out


def _line(line: Line) -> str:
    return f"{line.speaker}: {line.text}" if line.speaker else line.text


def conversation_texts(lines: Sequence[Line]) -> list[str]:
    """Texts whose query embeddings are summed: the other party's lines, and the last two lines.

    The first holds the topic the other party keeps returning to, the second where the dialogue
    is now (including the agent's own last words). When one person said every line of the first,
    their name is left off: repeated on each line it carries nothing about the topic, yet pulls the
    pooled embedding toward the name (MADial-zh R@5 0.648 → 0.664) and costs tokens. The last two
    lines keep their names: there who said what matters.
    """
    texts: list[str] = []
    others = [x for x in lines if not x.is_self]
    if others:
        one_voice = len({x.speaker for x in others}) == 1
        texts.append("\n".join(x.text if one_voice else _line(x) for x in others))
    texts.append("\n".join(_line(x) for x in lines[-2:]))
    return texts


def named_speakers(texts: Iterable[str], speakers: Iterable[str]) -> set[str]:
    """Speakers a query names (a word of the name is a word of the query, case-insensitive).

    Empty when the query names no speaker or every speaker: then the name tells nothing apart.
    """
    words: set[str] = set()
    for text in texts:
        words.update(analyze(text, keep_stopwords=True))
    everyone = set(speakers)
    named = {sp for sp in everyone if sp and set(analyze(sp, keep_stopwords=True)) & words}
    return named if len(named) < len(everyone) else set()


def without_names(text: str, names: Iterable[str]) -> str:
    """`text` with each of `names` (and its possessive) taken out; `text` itself if nothing would be left.

    For the dense view of a question over conversation turns: a turn is embedded as
    "Speaker: text", so a name left in the question pulls toward every turn of that speaker rather
    than the ones on the topic asked about. Who is asked about is carried by the speaker signal and
    the keywords (LoCoMo hybrid turn R@10 0.821 → 0.832 on conversations 0–2, 0.780 → 0.792 on 3–4).
    Latin-script names match as whole words, case-sensitively ("Will" the name, not "will"), and a
    one-letter name ("A") is left alone, being a word too; others (Chinese) match as written.
    """
    out = text
    kept = {n.strip() for n in names if n and n.strip() and not (len(n.strip()) == 1 and n.strip().isascii())}
    for name in sorted(kept, key=len, reverse=True):
        escaped = re.escape(name)
        pattern = rf"(?<!\w){escaped}(?:['’]s)?(?!\w)" if name.isascii() else escaped
        out = re.sub(pattern, " ", out)
    out = re.sub(r"\s+", " ", out).strip()
    return out if re.search(r"\w", out) else text
