"""Content words: which English and Chinese words are topics and tags, and which forms are one word."""

from __future__ import annotations

import pytest

from tideline_core.dream.words import chinese_content, english_content, lemma_key, one_form


@pytest.mark.parametrize("word", ["painting", "festival", "family", "lisbon", "adoption", "python", "detective"])
def test_nouns_and_names_are_content_words(word: str) -> None:
    assert english_content(word)


@pytest.mark.parametrize(
    "word", ["amazing", "regardless", "together", "worked", "really", "wonderful", "creative", "helping", "isn't"]
)
def test_judgements_adverbs_past_tenses_and_verbs_are_not(word: str) -> None:
    assert not english_content(word)


def test_chinese_content_words_are_nouns_verbs_and_adjectives_of_two_characters() -> None:
    assert chinese_content("游泳", "v") and chinese_content("教练", "n") and chinese_content("复杂", "a")
    assert not chinese_content("猫", "n")
    assert not chinese_content("已经", "d")
    assert not chinese_content("我们", "r")


def test_the_forms_of_one_word_share_a_key() -> None:
    assert len({lemma_key(w) for w in ["work", "works", "working"]}) == 1
    assert len({lemma_key(w) for w in ["story", "stories"]}) == 1
    assert len({lemma_key(w) for w in ["run", "running"]}) == 1
    assert lemma_key("class") == lemma_key("classes") != lemma_key("clash")


def test_one_form_shows_the_form_used_most() -> None:
    assert one_form({"works": 1, "work": 3, "working": 2}) == {"works": "work", "work": "work", "working": "work"}
    assert one_form(["stories", "story"]) == {"stories": "story", "story": "story"}
