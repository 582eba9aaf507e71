"""A text's terms: the same for a row and a query, English forms conflated, stopwords and possessives out."""

from __future__ import annotations

from tideline_core.text.terms import analyze, analyze_words, stem


def test_stemming_conflates_common_english_forms() -> None:
    assert stem("painting") == stem("paints") == stem("painted") == stem("paint")
    assert stem("hiking") == stem("hikes") == stem("hike")
    assert stem("studies") == stem("studied") == stem("study")
    assert stem("bus") == "bus" and stem("公园") == "公园"


def test_stopwords_and_possessives_are_dropped() -> None:
    assert analyze("What is Caroline's plan?") == ["carolin", "plan"]
    assert "what" in analyze("what", keep_stopwords=True)


def test_a_words_terms_stay_together_and_a_stopword_alone_leaves_no_group() -> None:
    groups = analyze_words("the painted 公园")
    assert groups[0] == (stem("painted"),) and all(groups) and ("the",) not in groups
