from __future__ import annotations

import pytest

from tideline_core.errors import BudgetExhausted
from tideline_core.llm import TokenBudget


def test_remaining_is_what_the_run_cap_leaves_when_the_day_has_more() -> None:
    budget = TokenBudget(run_limit=10_000, day_limit=100_000, day_spent_before=20_000, spent=4_000)
    assert budget.remaining() == 6_000


def test_remaining_is_what_the_day_leaves_when_earlier_runs_spent_most_of_it() -> None:
    budget = TokenBudget(run_limit=10_000, day_limit=100_000, day_spent_before=95_000, spent=1_000)
    assert budget.remaining() == 4_000


def test_remaining_never_goes_below_zero_after_an_overshoot() -> None:
    budget = TokenBudget(run_limit=1_000, day_limit=100_000)
    budget.charge(1_500)
    assert budget.remaining() == 0


def test_charges_add_up() -> None:
    budget = TokenBudget(run_limit=10_000, day_limit=100_000)
    budget.charge(300)
    budget.charge(450)
    assert budget.spent == 750
    assert budget.remaining() == 9_250


def test_a_request_that_fits_exactly_passes_the_check() -> None:
    budget = TokenBudget(run_limit=1_000, day_limit=100_000, spent=400)
    budget.check(600)


def test_a_request_over_the_run_cap_is_refused_naming_the_run_limit() -> None:
    budget = TokenBudget(run_limit=1_000, day_limit=100_000, spent=400)
    with pytest.raises(BudgetExhausted, match=r"run token budget exhausted: 400 of 1,000 .* needs up to 601"):
        budget.check(601)


def test_a_request_over_the_day_cap_is_refused_naming_the_day_limit() -> None:
    budget = TokenBudget(run_limit=50_000, day_limit=100_000, day_spent_before=99_000, spent=500)
    with pytest.raises(BudgetExhausted, match=r"day token budget exhausted: 99,500 of 100,000 tokens spent today"):
        budget.check(1_000)


def test_a_negative_charge_is_a_bug_not_a_refund() -> None:
    with pytest.raises(ValueError):
        TokenBudget(run_limit=1_000, day_limit=1_000).charge(-1)
