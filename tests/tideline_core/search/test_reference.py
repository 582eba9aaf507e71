"""The dense floor's parts: which script a row is held against, which texts are too short to mean anything, and
which signals count as evidence that a row bears on the query."""

from __future__ import annotations

from tideline_core.search.reference import HAN, OTHER, meaningful, script_of
from tideline_core.search.signals import evidence_of, lifted_evidence


def test_a_row_is_held_against_the_script_most_of_its_words_are_in() -> None:
    assert script_of("周四晚上去游泳，教练叫小林") == HAN
    assert script_of("我妹妹Lena下个月在波尔图结婚") == HAN
    assert script_of("I love 饺子 and go swimming on Thursdays") == OTHER
    assert script_of("The train to Leeds leaves at 7:40") == OTHER


def test_an_identifier_in_a_chinese_sentence_leaves_it_chinese() -> None:
    assert script_of("我同事的邮箱地址是zhao-yuxuan1012@westlakehospital.com。") == HAN
    assert script_of("我手头的手机是OPPOReno7，网址是https://www.oppo.com/cn/smartphones/") == HAN
    assert script_of("我的电话是19880466415") == HAN
    assert script_of("Mail me at zhao.yuxuan@example.com tomorrow") == OTHER


def test_a_text_of_a_letter_or_two_is_too_short_to_mean_anything() -> None:
    assert not meaningful("x") and not meaningful("ok!") and not meaningful("嗯")
    assert meaningful("idem test 1") and meaningful("游泳课")


def test_a_keyword_a_dense_margin_a_speaker_or_a_time_inside_the_window_is_evidence_and_rank_is_not() -> None:
    signals = {
        "kw": {("context", 1): 2.3},
        "dense": {("context", 1): 0.01, ("context", 2): -0.02, ("narrative", 3): 0.04},
        "speaker": {("context", 2): 1.0},
        "time": {("context", 4): 1.0, ("narrative", 5): 0.4},
    }
    found = evidence_of(signals, dense=0.0)
    assert found == {
        ("context", 1): {"kw", "dense"},
        ("context", 2): {"speaker"},
        ("narrative", 3): {"dense"},
        ("context", 4): {"time"},
    }
    assert ("narrative", 3) not in evidence_of(signals, dense=None)


def test_a_dense_margin_is_no_evidence_below_the_bar_set_by_nonsense() -> None:
    signals = {"dense": {("context", 1): 0.01, ("context", 2): 0.05}}
    found = evidence_of(signals, dense=0.03)
    assert found == {("context", 2): {"dense"}}


def test_a_neighbour_lends_evidence_only_when_it_has_its_own() -> None:
    evidence = {("context", 1): {"kw"}}
    parts = {("context", 2): {"neighbour": 0.1}, ("context", 9): {"neighbour": 0.1}, ("context", 5): {"join": 0.3}}
    neighbours = {("context", 2): (("context", 1),), ("context", 9): (("context", 8),)}
    lifted_evidence(evidence, parts, neighbours)
    assert evidence == {("context", 1): {"kw"}, ("context", 2): {"neighbour"}, ("context", 5): {"join"}}
