"""Source-link inference: one turn is linked only when its words, speaker, time and meaning all point at it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from tideline_core.dream.scan.backfill import InferredLink, NarrativeAnchor, TurnAnchor, propose_links
from tideline_core.errors import InvalidInput

T0 = datetime(2026, 5, 8, 20, 0, tzinfo=UTC)
SWIM = "Caroline goes swimming on Thursday evenings; her coach is called Lin."


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def unit(angle: float) -> list[float]:
    """A 2-d unit vector `angle` radians from (1, 0): cos(angle) is its cosine with the narrative's (1, 0)."""
    return [float(np.cos(angle)), float(np.sin(angle))]


def propose(narratives: list[NarrativeAnchor], turns: list[TurnAnchor], angles: list[float]) -> list[InferredLink]:
    return propose_links(
        narratives,
        np.array([[1.0, 0.0]] * len(narratives), np.float32).reshape(len(narratives), 2),
        turns,
        np.array([unit(a) for a in angles], np.float32).reshape(len(turns), 2),
    )


def turn(i: int, content: str, *, speaker: str = "Caroline", role: str = "user", minutes: float = 0.0) -> TurnAnchor:
    return TurnAnchor(i, at(minutes if minutes else i), content, "s1", role, speaker)


CLOSE, FAR = 0.3, 0.9  # angles: cosine 0.955 and 0.622


def test_the_turn_that_shares_the_memorys_words_and_meaning_is_linked_with_its_evidence() -> None:
    turns = [
        turn(1, "Hi Mel, how was your week?"),
        turn(2, "I go swimming every Thursday evening now, my coach is Lin.", minutes=2),
        turn(3, "I booked the dentist for Friday.", speaker="Melanie", minutes=3),
    ]
    [link] = propose([NarrativeAnchor(7, T0, SWIM)], turns, [FAR, CLOSE, FAR])
    assert (link.narrative_id, link.context_id, link.inferred) == (7, 2, True)
    assert {"swim", "thursday", "coach", "lin"} <= set(link.evidence.shared_words)
    assert link.evidence.speaker == "Caroline" and link.evidence.cosine == pytest.approx(np.cos(CLOSE), abs=1e-5)
    assert link.score > link.evidence.cosine and link.evidence.minutes_apart == 2.0


def test_a_memory_whose_conversation_was_not_recorded_gets_no_link_however_similar_a_turn_seems() -> None:
    turns = [turn(1, "周四晚上我要去看牙医，补两颗牙。"), turn(2, "牙医说要早点到。")]
    assert propose([NarrativeAnchor(1, T0, "周四晚上去游泳，教练叫小林")], turns, [0.1, 0.1]) == []


def test_a_single_shared_word_is_not_enough() -> None:
    turns = [turn(1, "On Thursday I have the dentist.")]
    assert propose([NarrativeAnchor(1, T0, SWIM)], turns, [CLOSE]) == []


def test_two_equally_good_turns_far_apart_leave_the_memory_unlinked() -> None:
    turns = [
        turn(1, "Swimming on Thursday with coach Lin again."),
        turn(2, "Something else entirely."),
        turn(3, "Thursday swimming, coach Lin, same as ever."),
    ]
    assert propose([NarrativeAnchor(1, T0, SWIM)], turns, [CLOSE, FAR, CLOSE]) == []


def test_the_turn_next_to_the_best_one_is_no_rival_a_question_and_its_answer_are_one_source() -> None:
    turns = [
        turn(1, "Do you still go swimming on Thursday with coach Lin?", speaker="Melanie"),
        turn(2, "Yes, Thursday evenings swimming, coach Lin is great."),
    ]
    [link] = propose([NarrativeAnchor(1, T0, SWIM)], turns, [CLOSE, CLOSE])
    assert link.context_id == 2 and link.evidence.runner_up is None


def test_a_turn_by_someone_the_memory_does_not_name_is_not_its_source() -> None:
    turns = [turn(1, "I go swimming on Thursday evenings, coach Lin.", speaker="Melanie"), turn(2, "Hi Melanie!")]
    assert propose([NarrativeAnchor(1, T0, SWIM)], turns, [CLOSE, FAR]) == []


def test_turns_outside_the_window_or_from_a_system_or_tool_are_never_sources() -> None:
    turns = [
        turn(1, "I go swimming on Thursday evenings, coach Lin.", minutes=60 * 7),
        TurnAnchor(2, at(1), "swimming Thursday coach Lin evening", "s1", "tool", ""),
        TurnAnchor(3, at(2), "swimming Thursday coach Lin evening", "s1", "system", ""),
    ]
    assert propose([NarrativeAnchor(1, T0, SWIM)], turns, [CLOSE, CLOSE, CLOSE]) == []


def test_a_low_similarity_turn_is_not_linked_even_with_shared_words() -> None:
    turns = [turn(1, "Thursday swimming? Coach Lin? No idea what you mean.")]
    assert propose([NarrativeAnchor(1, T0, SWIM)], turns, [FAR]) == []


def test_each_memory_gets_at_most_one_link_in_narrative_order() -> None:
    turns = [
        turn(1, "I go swimming on Thursday evenings, coach Lin."),
        turn(2, "Unrelated chatter about the weather today.", minutes=30),
        turn(3, "I painted a lake sunrise last year, it means a lot.", minutes=60),
    ]
    paint = NarrativeAnchor(3, T0, "Caroline painted a lake sunrise last year.")
    links = propose([paint, NarrativeAnchor(2, T0, SWIM)], turns, [CLOSE, FAR, CLOSE])
    assert [(link.narrative_id, link.context_id) for link in links] == [(2, 1), (3, 3)]


def test_nothing_in_gives_nothing_out_and_misshapen_vectors_are_refused() -> None:
    assert propose_links([], np.zeros((0, 4), np.float32), [], np.zeros((0, 4), np.float32)) == []
    assert propose_links([NarrativeAnchor(1, T0, SWIM)], np.ones((1, 2), np.float32), [], np.zeros((0, 2))) == []
    with pytest.raises(InvalidInput, match="narrative_vectors"):
        propose_links([NarrativeAnchor(1, T0, SWIM)], np.zeros((2, 3), np.float32), [], np.zeros((0, 3)))
    with pytest.raises(InvalidInput, match="turn_vectors"):
        propose_links(
            [NarrativeAnchor(1, T0, SWIM)], np.ones((1, 3), np.float32), [turn(1, "x")], np.ones((1, 4), np.float32)
        )
