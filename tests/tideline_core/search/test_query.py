"""Query construction from a dialogue: which texts are embedded and how keyword terms are weighted."""

from __future__ import annotations

from tideline_core.domain.inputs import ConversationLine
from tideline_core.search.bm25 import BM25Index
from tideline_core.search.query import (
    conversation_terms,
    conversation_texts,
    question_parts,
    question_terms,
    without_names,
)
from tideline_core.text.terms import analyze


def line(speaker: str, text: str, is_self: bool = False) -> ConversationLine:
    return ConversationLine(speaker=speaker, text=text, role="assistant" if is_self else "user")


def test_one_persons_lines_are_embedded_without_their_name_and_the_last_two_keep_who_said_what() -> None:
    lines = [line("Bart", "我要表演魔术"), line("Me", "太棒了", is_self=True), line("Bart", "我有点紧张")]
    assert conversation_texts(lines) == ["我要表演魔术\n我有点紧张", "Me: 太棒了\nBart: 我有点紧张"]


def test_in_a_group_the_other_peoples_lines_keep_their_names() -> None:
    lines = [line("Ann", "the lake trip"), line("Bob", "it rained"), line("Me", "oh no", is_self=True)]
    assert conversation_texts(lines)[0] == "Ann: the lake trip\nBob: it rained"


def test_a_dialogue_of_only_the_agents_own_lines_is_embedded_as_its_latest_lines() -> None:
    assert conversation_texts([line("Me", "hello", is_self=True)]) == ["Me: hello"]


def test_newer_lines_and_the_other_partys_words_weigh_more_in_the_keyword_query() -> None:
    terms = conversation_terms(
        [line("Ann", "kite beach"), line("Me", "kite museum", is_self=True), line("Ann", "festival tomorrow")]
    )
    assert terms["festival"] > terms["beach"] > terms["museum"]


def test_names_leave_a_question_whole_words_and_possessives_included_and_only_as_written() -> None:
    names = ["Caroline", "Mary Ann", "Ann", "Will"]
    assert without_names("What is Caroline's identity?", names) == "What is identity?"
    assert without_names("Where did Mary Ann and Annabel go?", names) == "Where did and Annabel go?"
    assert without_names("What will Will do?", names) == "What will do?"  # the word, not the name


def test_a_chinese_name_is_taken_out_as_written_and_a_question_of_only_names_stays_whole() -> None:
    assert without_names("王芳最近在忙什么？", ["王芳"]) == "最近在忙什么？"
    assert without_names("Caroline?", ["Caroline"]) == "Caroline?"
    assert without_names("Who is Caroline?", []) == "Who is Caroline?"
    assert without_names("A plan for B", ["A", "B"]) == "A plan for B"  # one-letter names are words too


def test_a_weekday_named_in_english_finds_a_memory_that_names_it_in_chinese_and_the_reverse() -> None:
    index = BM25Index()
    index.add("swim", analyze("周四晚上去游泳，教练叫小林"))
    index.add("sync", analyze("Alice moved the weekly team sync to Tuesday"))
    index.add("guitar", analyze("Guitar lessons with Marco on Thursdays"))
    assert [doc for doc, _ in index.score(question_terms("What do I do on Thursday night?"))] == ["guitar", "swim"]
    assert [doc for doc, _ in index.score(question_terms("星期二有什么安排？"))] == ["sync"]


def test_a_question_naming_no_weekday_gains_no_terms() -> None:
    assert question_terms("where did Marco teach guitar") == dict.fromkeys(analyze("where did Marco teach guitar"), 1.0)


def test_a_compound_question_is_the_questions_it_asks_without_their_joining_word() -> None:
    assert question_parts("上司是做什么工作的呢？另外，金融科技精英论坛的地点是什么？") == [
        "上司是做什么工作的呢？",
        "金融科技精英论坛的地点是什么？",
    ]
    assert question_parts("What did Anna buy? And where did Andrew go?") == [
        "What did Anna buy?",
        "where did Andrew go?",
    ]


def test_one_question_or_a_tag_question_is_not_compound() -> None:
    assert question_parts("When did Caroline go to the LGBTQ support group?") == []
    assert question_parts("我们周五去爬山，好吗？") == []
    assert question_parts("It's Friday, right? Ok?") == []
