"""Judging one sentence of conversation: a question, a greeting, a reaction, or a statement carrying facts."""

from __future__ import annotations

import pytest

from tideline_core.dream.solidify.statements import judge

SPEAKERS = ("John", "James")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Speaking of personal touches, what motivates you to work on your programming projects?", "question"),
        ("你周末有什么安排吗", "question"),
        ("Hey James! Good to see you!", "greeting"),
        ("Thanks, John!", "greeting"),
        ("好的，谢谢！", "greeting"),
        ("It's amazing how it brings people together.", "reaction"),
        ("Wow, your garden looks incredible this year!", "reaction"),
        ("You'd be a great counselor!", "reaction"),
        ("太棒了，真为你高兴！", "reaction"),
    ],
)
def test_questions_greetings_and_reactions_carry_no_fact(text: str, kind: str) -> None:
    judged = judge(text, SPEAKERS)
    assert judged.kind == kind
    assert not judged.fact


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("I signed up for a programming class last week.", "decision"),
        ("I'm going to try VR gaming next Saturday.", "plan"),
        ("I love hiking in the Alps with my sister.", "preference"),
        ("I ran a charity race for mental health on Sunday.", "event"),
        ("We've been married for 5 years.", "number"),
        ("下周三我们去北京参加金融科技论坛，我准备讲跨境支付。", "plan"),
        ("我最喜欢在周六早上去公园跑步。", "preference"),
    ],
)
def test_statements_of_plans_dates_names_numbers_and_preferences_carry_facts(text: str, cue: str) -> None:
    judged = judge(text, SPEAKERS)
    assert judged.kind == "statement"
    assert cue in judged.cues
    assert judged.fact


@pytest.mark.parametrize(
    "text",
    [
        "Don't be afraid to take risks - I'm 100% behind you!",
        "Enjoy the good feels tomorrow, you earned it!",
        "If you know anyone who might be interested in volunteering for the event, let me know.",
        "Feel free to call me on Sunday.",
        "别忘了周五下午三点的会。",
        "记得明天带上护照。",
    ],
)
def test_telling_the_listener_what_to_do_is_a_directive_not_a_fact(text: str) -> None:
    judged = judge(text, SPEAKERS)
    assert judged.kind == "directive"
    assert not judged.fact


@pytest.mark.parametrize(
    "text", ["Been a busy week since we talked.", "Since we spoke last, I've had quite the adventure!"]
)
def test_catching_up_on_the_time_between_two_conversations_carries_no_fact(text: str) -> None:
    assert not judge(text, SPEAKERS).fact


def test_what_follows_catching_up_is_judged_on_its_own() -> None:
    judged = judge("Since we last spoke, I signed up for a pottery class in March.", SPEAKERS)
    assert judged.kind == "statement"
    assert {"decision", "date"} <= judged.cues
    assert judged.fact
    assert judge("好久没聊了，我下个月要去上海出差。", SPEAKERS).fact
    assert not judge("好久没聊了！", SPEAKERS).fact


def test_a_maxim_with_no_person_time_or_name_carries_no_fact() -> None:
    assert not judge("Family is everything.", SPEAKERS).fact
    assert not judge("Taking care of ourselves is vital.", SPEAKERS).fact


def test_a_speakers_own_name_is_not_a_name_cue() -> None:
    assert "name" not in judge("I told James about it.", SPEAKERS).cues
    assert "name" in judge("I told Priya about it.", SPEAKERS).cues
