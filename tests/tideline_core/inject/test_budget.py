"""What fits in a block: candidates taken in order, cut at a sentence end with a mark, never over the budget."""

from __future__ import annotations

import random

from tideline_core.inject.budget import LINE, Candidate, Item, fit, spent
from tideline_core.text.cost import MARK, estimate_tokens

HEADING = "## Recalled for this turn"
H = estimate_tokens(HEADING)  # 6
FIRST = "We walked by the river."  # 6 tokens
LONG_TAIL = " Then it rained " + " ".join(["and rained"] * 20) + " until dark."


def candidate(text: str, id: int = 1, score: float = 1.0) -> Candidate:
    return Candidate("T1", "narrative", id, text, score, f"chosen as #{id}")


def words(n: int) -> str:
    """`n` one-token words and no sentence end."""
    return " ".join(["word"] * n)


def test_candidates_that_fit_are_all_taken_whole_in_the_order_given_not_by_score() -> None:
    given = [candidate("alpha beta.", 1, 0.1), candidate("gamma delta.", 2, 0.9), candidate("epsilon.", 3, 0.5)]
    items = fit(given, heading=HEADING, tier_budget=100, block_left=100)
    assert [item.id for item in items] == [1, 2, 3]
    assert [item.text for item in items] == ["alpha beta.", "gamma delta.", "epsilon."]
    assert not any(item.clipped for item in items)


def test_an_item_keeps_its_candidates_tier_kind_score_and_reason_with_its_estimated_tokens() -> None:
    (item,) = fit(
        [Candidate("T0", "thread", 7, FIRST, 0.8, "open thread")], heading="## Who I am", tier_budget=50, block_left=50
    )
    assert item == Item("T0", "thread", 7, FIRST, 0.8, "open thread", 6, False)


def test_taking_stops_when_the_tier_budget_runs_out() -> None:
    ten = [candidate(words(10), id) for id in range(1, 5)]  # each costs 10 + a line
    items = fit(ten, heading=HEADING, tier_budget=H + LINE + 2 * 11 + 5, block_left=1000)
    assert [item.id for item in items] == [1, 2]


def test_the_block_budget_limits_a_tier_whose_own_budget_is_larger() -> None:
    ten = [candidate(words(10), id) for id in range(1, 5)]
    left = H + LINE + 2 * 11
    items = fit(ten, heading=HEADING, tier_budget=1000, block_left=left)
    assert [item.id for item in items] == [1, 2]
    assert spent(HEADING, items) == left


def test_a_tier_gets_nothing_once_the_block_has_run_out() -> None:
    assert fit([candidate("tiny.")], heading=HEADING, tier_budget=500, block_left=0) == []
    assert fit([candidate("tiny.")], heading=HEADING, tier_budget=500, block_left=-40) == []


def test_a_tier_budget_too_small_for_its_heading_holds_nothing() -> None:
    assert fit([candidate("tiny.")], heading=HEADING, tier_budget=H, block_left=500) == []


def test_an_item_that_does_not_fit_whole_is_cut_at_a_sentence_end_with_the_mark() -> None:
    text = FIRST + LONG_TAIL
    (item,) = fit([candidate(text)], heading=HEADING, tier_budget=H + LINE + 20, block_left=500)
    assert item.text == FIRST + " " + MARK
    assert item.clipped and item.tokens == estimate_tokens(item.text) == 7


def test_an_item_with_too_little_room_left_to_cut_is_skipped_and_a_later_smaller_one_is_taken() -> None:
    given = [candidate(words(10), 1), candidate(FIRST + LONG_TAIL, 2), candidate("short note.", 3)]
    # After the first, 5 tokens are left: the second does not fit, and a cut of it would keep under 6.
    items = fit(given, heading=HEADING, tier_budget=H + LINE + 11 + 5, block_left=500)
    assert [item.id for item in items] == [1, 3]
    assert not any(item.clipped for item in items)


def test_what_a_cut_item_leaves_over_goes_to_a_later_smaller_one() -> None:
    given = [candidate(FIRST + LONG_TAIL, 1), candidate("short note.", 2)]
    items = fit(given, heading=HEADING, tier_budget=H + LINE + 20, block_left=500)
    assert [(item.id, item.clipped) for item in items] == [(1, True), (2, False)]
    assert spent(HEADING, items) <= H + LINE + 20


def test_a_long_text_without_a_sentence_end_is_cut_between_words_and_still_marked() -> None:
    (item,) = fit([candidate(words(60))], heading=HEADING, tier_budget=H + LINE + 20, block_left=500)
    assert item.clipped and item.text.endswith("word" + MARK)
    assert words(60).startswith(item.text.removesuffix(MARK))
    assert item.tokens <= 19


def test_the_heading_is_paid_once_however_many_items_a_tier_holds() -> None:
    items = fit([candidate(words(5), id) for id in range(1, 4)], heading=HEADING, tier_budget=100, block_left=100)
    assert len(items) == 3
    assert spent(HEADING, items[:1]) == H + LINE + 5 + LINE
    assert spent(HEADING, items) == H + LINE + 3 * (5 + LINE)


def test_a_tier_that_holds_nothing_costs_the_block_nothing_not_even_its_heading() -> None:
    assert spent(HEADING, []) == 0


SENTENCES = [
    "We walked by the river.",
    "Then it rained for an hour and we ran home laughing!",
    "Did she ever call back about the apartment on Elm Street?",
    "我们在公园里散步。",
    "后来下雨了，我们跑回家，一路上笑个不停，鞋子全湿了。",
    "The meeting moved to Thursday; nobody told Marcus",
    "Remember: the keys are under the blue flowerpot by the door.",
]


def random_text(rng: random.Random) -> str:
    if rng.random() < 0.2:
        return " ".join(rng.choice(["river", "calendar", "Marcus", "42", "keys"]) for _ in range(rng.randint(3, 60)))
    return " ".join(rng.choice(SENTENCES) for _ in range(rng.randint(1, 8)))


def test_over_many_random_tiers_nothing_is_cut_without_the_mark_and_the_total_never_exceeds_the_budget() -> None:
    rng = random.Random(11)
    cut_seen = whole_seen = 0
    for _ in range(400):
        given = [candidate(random_text(rng), id) for id in range(rng.randint(1, 12))]
        tier_budget, block_left = rng.randint(0, 400), rng.randint(-20, 400)
        items = fit(given, heading=HEADING, tier_budget=tier_budget, block_left=block_left)
        assert spent(HEADING, items) <= max(0, min(tier_budget, block_left))
        ids = [item.id for item in items]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        for item in items:
            original = given[item.id].text  # type: ignore[index]
            assert item.tokens == estimate_tokens(item.text)
            if item.clipped:
                cut_seen += 1
                assert item.text.endswith(MARK) and item.text != original
                assert original.startswith(item.text.removesuffix(MARK).rstrip())
            else:
                whole_seen += 1
                assert item.text == original
    assert cut_seen > 20 and whole_seen > 20


def test_a_cut_that_would_leave_only_a_scrap_is_not_shown() -> None:
    scrap_first = candidate("Hi. " + words(40) + " end.")
    assert fit([scrap_first], heading=HEADING, tier_budget=25, block_left=100) == []
