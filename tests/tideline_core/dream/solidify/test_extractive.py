"""The extractive solidifier: which sentences become memories and digests, and what they say about them."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from tideline_core.domain.inputs import NarrativeIn
from tideline_core.dream.scan.scanner import Chunk, TurnRow
from tideline_core.dream.solidify.extractive import (
    ExtractedMemory,
    digest_text,
    extract_digest,
    extract_memories,
    named_people,
    turn_centrality,
)
from tideline_core.errors import InvalidInput

T0 = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)


def turns(lines: list[tuple[str, str]], session: str = "s1", first_id: int = 1) -> tuple[TurnRow, ...]:
    """One turn a minute; a speaker named "tool" speaks as the tool role, anyone else as a user."""
    return tuple(
        TurnRow(
            first_id + i,
            session,
            "tool" if speaker == "tool" else "user",
            "" if speaker == "tool" else speaker,
            text,
            T0 + timedelta(minutes=i),
        )
        for i, (speaker, text) in enumerate(lines)
    )


def chunk(lines: list[tuple[str, str]], session: str = "s1") -> Chunk:
    return Chunk(session, turns(lines, session))


ENGLISH = [
    ("Alice", "Hi Bob, good morning!"),
    ("Bob", "Morning! The staging deploy failed last night because the Redis cluster ran out of memory."),
    ("Alice", "Ok thanks."),
    ("Bob", "Sure."),
]

CHINESE = [
    ("张伟", "李娜，早上好！"),
    ("李娜", "早上好！"),
    ("张伟", "下周三我们去北京参加金融科技论坛，我准备讲跨境支付。"),
    ("李娜", "好的！"),
]

TOPICS = [
    "The staging deploy failed because the Redis cluster ran out of memory.",
    "Our quarterly budget review with finance moved to Thursday afternoon.",
    "The new hire, Priya, starts on the data platform team next month.",
    "Customers keep reporting slow invoice exports from the billing dashboard.",
]


def long_chunk() -> Chunk:
    """18 turns: each topic sentence once, amid acknowledgements and filler questions."""
    lines: list[tuple[str, str]] = []
    for i in range(18):
        speaker = "Alice" if i % 2 else "Bob"
        if i % 4 == 1 and i // 4 < len(TOPICS):
            lines.append((speaker, TOPICS[i // 4]))
        else:
            lines.append((speaker, "Ok, thanks!"))
    return chunk(lines)


def as_narrative(memory: ExtractedMemory) -> NarrativeIn:
    return NarrativeIn(
        gesture=memory.gesture,
        context=memory.context,
        tags=list(memory.tags),
        related_entities=list(memory.related_entities),
        entities_role=memory.entities_role,
        source_links=list(memory.source_turns),
        narrative_type=memory.narrative_type,  # type: ignore[arg-type]
        occurred_at=memory.occurred_at,
    )


def test_an_english_chunk_yields_the_informative_sentence_not_the_greeting() -> None:
    [memory] = extract_memories(chunk(ENGLISH))
    assert memory.gesture == f"Bob: {ENGLISH[1][1].removeprefix('Morning! ')}"
    assert memory.occurred_at == T0 + timedelta(minutes=1)
    assert {"redis", "memory", "deploy"} <= set(memory.tags)
    assert {"Bob", "Alice", "Redis"} <= set(memory.related_entities)
    assert memory.entities_role == "Bob=speaker; Alice=speaker"
    assert memory.context == "Conversation in session s1 between Alice and Bob, 2026-05-08 13:00–13:03 UTC."


def test_a_chinese_chunk_yields_a_chinese_gesture_with_the_speaker_tags_and_entities() -> None:
    [memory] = extract_memories(chunk(CHINESE))
    assert memory.gesture == "张伟：下周三我们去北京参加金融科技论坛，我准备讲跨境支付。"
    assert {"论坛", "跨境", "支付"} <= set(memory.tags)
    assert {"张伟", "北京", "金融科技论坛"} <= set(memory.related_entities)
    assert memory.context == "张伟与李娜在会话 s1 中的对话，2026-05-08 13:00–13:03 UTC。"


def test_a_sentence_stating_a_plan_becomes_a_decision() -> None:
    [memory] = extract_memories(chunk(CHINESE))
    assert memory.narrative_type == "decision"
    [event] = extract_memories(chunk(ENGLISH))
    assert event.narrative_type == "event"


LISBON = [
    ("Bob", "Hi Alice, good to see you!"),
    ("Alice", "Speaking of trips, what motivates you to travel so much?"),
    ("Bob", "It's amazing how it brings people together."),
    ("Alice", "I'm flying to Lisbon on March 3rd for the design conference, and I present on the 5th."),
    ("Bob", "Wow, that's amazing. You're so brave!"),
    ("Alice", "Thanks Bob!"),
]


def test_questions_greetings_and_reactions_are_never_kept_and_the_fact_is() -> None:
    [memory] = extract_memories(chunk(LISBON))
    assert memory.gesture == f"Alice: {LISBON[3][1]}"
    assert "amazing" not in memory.tags


def test_a_chinese_chunk_keeps_the_plan_not_the_chit_chat() -> None:
    lines = [
        ("张伟", "哈哈，太好了！"),
        ("李娜", "你周末有什么安排吗？"),
        ("张伟", "我周六早上在公园跑步五公里，下午带女儿去上钢琴课。"),
        ("李娜", "真棒！"),
    ]
    [memory] = extract_memories(chunk(lines))
    assert memory.gesture == f"张伟：{lines[2][1]}"


def test_each_fact_bearing_statement_of_a_long_chunk_is_kept_from_its_own_turn() -> None:
    memories = extract_memories(long_chunk())
    # The fourth topic states no plan, time, name, number or person's own doing: precision first, not kept.
    assert [m.gesture.split(": ", 1)[1] for m in memories] == TOPICS[:3]
    assert len({m.occurred_at for m in memories}) == 3
    assert len(extract_memories(long_chunk(), max_memories=2)) == 2


def test_a_chunk_keeps_at_most_one_memory_per_two_turns() -> None:
    lines = [("Alice", TOPICS[0]), ("Bob", TOPICS[1]), ("Alice", TOPICS[2])]
    assert len(extract_memories(chunk(lines))) == 2
    assert len(extract_memories(chunk(lines[:2]))) == 1


def test_a_turn_keeps_all_its_fact_sentences_and_drops_its_reaction() -> None:
    text = "Wow, that's so cool! I signed up for a programming class on Monday. What about you?"
    [memory] = extract_memories(chunk([("Alice", "I started a new job at Acme last week."), ("Bob", text)]))
    assert memory.gesture in (
        "Bob: I signed up for a programming class on Monday.",
        "Alice: I started a new job at Acme last week.",
    )
    said = "I've worked with Python and Rust for 5 years. Wow! I plan to build an app for dog walkers."
    [both] = extract_memories(chunk([("Bob", said)]))
    assert both.gesture == f"Bob: {said.replace(' Wow! ', ' … ')}"


def test_two_turns_saying_nearly_the_same_thing_give_one_memory() -> None:
    lines = [("Alice", "Ok, thanks!")] * 18
    lines[1] = ("Bob", "The staging deploy failed because the Redis cluster ran out of memory.")
    lines[5] = ("Alice", "So the staging deploy failed because the Redis cluster ran out of memory again.")
    lines[9] = ("Bob", TOPICS[1])
    gestures = [m.gesture for m in extract_memories(chunk(lines))]
    assert len(gestures) == 2
    assert sum("Redis" in g for g in gestures) == 1


def test_small_talk_yields_no_memory() -> None:
    assert extract_memories(chunk([("Alice", "hi"), ("Bob", "ok thanks")])) == []
    assert extract_memories(chunk([("张伟", "哈哈"), ("李娜", "好的，谢谢！"), ("张伟", "Thanks Bob!")])) == []


def test_system_and_tool_turns_are_never_quoted() -> None:
    lines = [("Alice", "I moved the invoice exports to Friday."), ("tool", TOPICS[0] + " " + TOPICS[2])]
    [memory] = extract_memories(chunk(lines))
    assert memory.gesture == "Alice: I moved the invoice exports to Friday."
    assert memory.source_turns == (1, 2)


def test_centrality_moves_the_pick_between_equal_facts_to_the_central_turn() -> None:
    lines = [("Alice", "I moved the budget review to Thursday."), ("Bob", "I moved the design review to Friday.")]
    [first] = extract_memories(chunk(lines), centrality={1: 1.0, 2: 0.0})
    [second] = extract_memories(chunk(lines), centrality={1: 0.0, 2: 1.0})
    assert first.gesture == f"Alice: {lines[0][1]}"
    assert second.gesture == f"Bob: {lines[1][1]}"


def test_source_turns_are_the_turn_and_its_neighbours_within_the_chunk() -> None:
    whole = long_chunk()
    for memory in extract_memories(whole):
        own = whole.turn_ids[[t.created_at for t in whole.turns].index(memory.occurred_at)]
        assert memory.source_turns == (own - 1, own, own + 1)
    [first] = extract_memories(chunk([("Bob", TOPICS[0]), ("Alice", "Ok."), ("Bob", "Sure.")]))
    assert first.source_turns == (1, 2)


def test_known_persons_resolve_speakers_and_mentions() -> None:
    aliases = {"bobby": "Bob", "bob": "Bob", "carol": "Carol", "cc": "Carol"}
    lines = [("bobby", "CC says the Redis cluster ran out of memory during the staging deploy."), ("Alice", "Ok.")]
    [memory] = extract_memories(chunk(lines), known_persons=aliases)
    assert memory.gesture.startswith("Bob: ")
    assert memory.entities_role == "Bob=speaker; Alice=speaker; Carol=mentioned"
    assert "Carol" in memory.related_entities
    assert "CC" not in memory.related_entities


def test_a_very_long_sentence_is_cut_at_a_clause_boundary_with_an_ellipsis() -> None:
    sentence = "On Friday I moved " + ", ".join(f"clause {i} about the deployment pipeline" for i in range(120)) + "."
    [memory] = extract_memories(chunk([("Alice", sentence), ("Bob", "Ok.")]))
    assert len(memory.gesture) <= 2000
    assert memory.gesture.endswith("pipeline…")
    assert as_narrative(memory).gesture == memory.gesture


def test_every_memory_is_a_valid_narrative_input() -> None:
    rambling = "I moved " + ", ".join(f"clause {i} about the billing pipeline" for i in range(200))
    cases = [chunk(ENGLISH), chunk(CHINESE), long_chunk(), chunk([("x" * 128, rambling), ("Bob", TOPICS[3])])]
    memories = [m for c in cases for m in extract_memories(c)]
    assert len(memories) == 6
    for memory in memories:
        narrative = as_narrative(memory)
        assert 1 <= len(narrative.tags) <= 6
        assert len(narrative.related_entities) <= 16


def test_extraction_is_deterministic() -> None:
    first = extract_memories(long_chunk()) + extract_memories(chunk(CHINESE))
    assert extract_memories(long_chunk()) + extract_memories(chunk(CHINESE)) == first


DIGEST = [
    ("Alice", "Can you send me the budget report by Friday?"),
    ("Bob", "Yes, it is almost done."),
    ("Alice", "We decided to move the product launch to June 3."),
    ("Bob", "I still need the final pricing sheet from marketing by Friday."),
    ("Bob", "Should we invite Carol to the launch review as well?"),
]


def test_the_digest_lists_speakers_span_decisions_and_only_the_unanswered_question() -> None:
    digest = extract_digest("s1", turns(DIGEST))
    assert digest.who == ("Alice", "Bob")
    assert (digest.start, digest.end) == (T0, T0 + timedelta(minutes=4))
    assert digest.decisions == ("Alice: We decided to move the product launch to June 3.",)
    assert digest.open_questions == ("Bob: Should we invite Carol to the launch review as well?",)
    assert digest.what == (
        "Alice: We decided to move the product launch to June 3.",
        "Bob: I still need the final pricing sheet from marketing by Friday.",
    )
    assert 1 <= len(digest.tags) <= 6
    assert digest.source_turns == (1, 2, 3, 4, 5)


def test_a_question_answered_by_another_speaker_is_not_open() -> None:
    answered = [*DIGEST, ("Alice", "Yes, Carol should come.")]
    assert extract_digest("s1", turns(answered)).open_questions == ()


def test_the_digest_does_not_depend_on_the_order_turns_come_in() -> None:
    rows = list(turns(DIGEST))
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    assert extract_digest("s1", shuffled) == extract_digest("s1", rows)


def test_digest_text_is_labelled_in_the_sessions_language() -> None:
    english = digest_text(extract_digest("s1", turns(DIGEST)))
    gesture, context, moment, direction = english
    assert gesture == (
        "Digest of session s1 (2026-05-08): Alice and Bob. Alice: We decided to move the product launch to June 3. "
        "Bob: I still need the final pricing sheet from marketing by Friday. "
        "Open: Bob: Should we invite Carol to the launch review as well?"
    )
    assert context == "Conversation in session s1 between Alice and Bob, 2026-05-08 13:00–13:04 UTC, 5 turns."
    assert moment.startswith("What was said:\n- ")
    assert "Decisions and plans:\n- Alice: We decided" in direction
    assert "Open questions:\n- Bob: Should we invite Carol" in direction

    chinese = [*CHINESE, ("李娜", "那我负责订酒店和高铁票。"), ("张伟", "论坛的报名截止到什么时候？")]
    gesture, context, moment, direction = digest_text(extract_digest("s2", turns(chinese, "s2")))
    assert gesture.startswith("会话 s2 摘要（2026-05-08）：张伟与李娜。张伟：" + CHINESE[2][1])
    assert gesture.endswith("未决：张伟：论坛的报名截止到什么时候？")
    assert context.endswith("，共 6 轮。")
    assert moment.startswith("经过：\n- ")
    assert "决定与计划：\n- 张伟：下周三我们去北京参加金融科技论坛" in direction
    assert "- 李娜：那我负责订酒店和高铁票。" in direction
    assert "待解决的问题：\n- 张伟：论坛的报名截止到什么时候？" in direction


def test_digest_text_says_when_there_is_nothing_to_list() -> None:
    digest = extract_digest("s1", turns([("Alice", "hi"), ("Bob", "ok thanks")]))
    assert digest.what == digest.decisions == digest.open_questions == ()
    _, _, moment, direction = digest_text(digest)
    assert moment == ""
    assert direction == "Decisions and plans: none.\n\nOpen questions: none."


def test_a_digest_needs_at_least_one_turn() -> None:
    with pytest.raises(InvalidInput) as raised:
        extract_digest("s1", [])
    assert raised.value.field == "turns"


def test_turn_centrality_is_the_cosine_to_the_mean_direction() -> None:
    scores = turn_centrality({1: [2.0, 0.0], 2: [1.0, 0.0], 3: [0.0, 5.0], 4: [0.0, 0.0]})
    # Unit vectors (1,0), (1,0), (0,1), (0,0): their mean (0.5, 0.25) points along (2, 1)/√5.
    assert scores[1] == pytest.approx(2 / 5**0.5)
    assert scores[2] == pytest.approx(2 / 5**0.5)
    assert scores[3] == pytest.approx(1 / 5**0.5)
    assert scores[4] == 0.0
    assert turn_centrality({}) == {}
    assert turn_centrality({1: [1.0, 0.0], 2: [-1.0, 0.0]}) == {1: 0.0, 2: 0.0}


def test_tags_are_content_words_in_one_form_never_judgements_or_past_tenses() -> None:
    lines = [
        ("John", "I worked on my programming projects all week, it's amazing how it brings people together."),
        ("James", "I work with Python and build programs for dog walkers; regardless, work is work."),
        ("John", "I signed up for a programming class that starts next Saturday."),
    ]
    tags = {t for m in extract_memories(chunk(lines)) for t in m.tags} | set(extract_digest("s1", turns(lines)).tags)
    assert tags
    assert not tags & {"amazing", "regardless", "together", "worked", "signed", "john", "james"}
    assert "programming" in tags
    assert not {"program", "programs"} <= tags


def unnamed(lines: list[tuple[str, str]]) -> tuple[TurnRow, ...]:
    """Turns that name no speaker, only their role, as a runtime that records "user" and "assistant" gives them."""
    return tuple(
        TurnRow(i + 1, "s9", role, "", text, T0 + timedelta(minutes=i)) for i, (role, text) in enumerate(lines)
    )


UNNAMED = [
    ("user", "我周四晚上要去游泳，教练是小林"),
    ("assistant", "好的，我记下了：周四晚上游泳，教练小林。"),
    ("user", "Also, my dentist moved me to next Wednesday at 3pm"),
    ("assistant", "Noted: dentist next Wednesday, 3pm."),
]


def test_speakers_known_only_by_their_role_are_no_entity_of_a_memory_or_a_digest() -> None:
    memories = extract_memories(Chunk("s9", unnamed(UNNAMED)))
    assert memories
    for memory in memories:
        assert not {"user", "assistant"} & set(memory.related_entities), memory.related_entities
        assert "user=" not in memory.entities_role and "assistant=" not in memory.entities_role
    digest = extract_digest("s9", unnamed(UNNAMED))
    assert digest.who == ("user", "assistant")  # still said in its text: who talked, by role
    assert named_people(digest.who) == []


def test_a_digest_quoting_two_sentences_without_a_full_stop_reads_as_two() -> None:
    gesture = digest_text(extract_digest("s9", unnamed(UNNAMED)))[0]
    assert "教练是小林。 user: Also" in gesture and "Wednesday at 3pm." in gesture, gesture
    assert "小林 user" not in gesture and "3pm assistant" not in gesture, gesture
