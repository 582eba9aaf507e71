"""Session joins on constructed turns: who a question identifies by one turn is found in another by a shared word."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tideline_core.search.joins import JoinCorpus, session_joins
from tideline_core.search.query import question_terms
from tideline_core.text.terms import analyze

RELATIVES = ("表姐", "叔叔", "舅妈", "上司", "下属", "表弟", "婶婶", "姑姑")
SESSIONS = {
    "s1": {1: "我同事的手机号是19842342126。", 2: "我同事的名字叫陈雪梅。", 3: "我表哥的名字叫王建国。"},
    "s2": {4: "我同事的名字叫李婷婷。", 5: "李婷婷的联系电话是18552856266。", 6: "我同事喜欢攀岩。"},
    # Other people's names and numbers, so that 名字, 叫 and 手机号 are common words here, as in any real store.
    **{
        f"other{n}": {100 + 2 * n: f"我{who}的名字叫张{n}号。", 101 + 2 * n: f"我{who}的手机号是1380000{n:04d}。"}
        for n, who in enumerate(RELATIVES)
    },
}


def corpus(sessions: Mapping[str, Mapping[int, str]]) -> JoinCorpus:
    tokens = {i: tuple(analyze(text)) for turns in sessions.values() for i, text in turns.items()}
    session_of = {i: list(turns) for turns in sessions.values() for i in turns}
    return JoinCorpus(
        tokens_of=lambda i: tokens[i],
        session_of=lambda i: session_of[i],
        rows_with=lambda word: sum(word in t for t in tokens.values()),
        rows=len(tokens),
    )


def lifts(question: str, ranked: Sequence[tuple[int, float]]) -> dict[int, float]:
    return session_joins(ranked, question_terms(question), dict(ranked), corpus(SESSIONS))


def test_the_turn_naming_someone_only_by_the_word_the_identifying_turn_used_is_lifted_toward_it() -> None:
    found = lifts("那个手机号是19842342126的人叫什么名字？", [(1, 3.0), (4, 1.0), (2, 0.5)])
    assert set(found) == {2}, "only the same session's turn sharing 同事; 表哥's turn shares no pivot"
    assert 0.5 + found[2] < 3.0, "a mate moves toward its anchor, never past it"
    assert 0.5 + found[2] > 1.0, "and past the other session's 同事, which the question does not identify"


def test_without_a_word_that_identifies_one_row_the_top_hit_anchors_nothing() -> None:
    assert lifts("我同事的手机号是多少？", [(1, 3.0), (2, 0.5)]) == {}


def test_a_mate_the_fused_ranking_already_puts_above_its_anchor_is_not_lifted() -> None:
    assert lifts("那个手机号是19842342126的人叫什么名字？", [(2, 3.5), (1, 3.0)]) == {}
