"""The token budget of one stage run: what it may still spend, against its own cap and the agent's day.

The budget caps what a run may *start*: each request is checked against an estimate of its prompt
plus the most it may answer, and charged what the endpoint reports once it answers. A single
answer can therefore overshoot a limit by at most its own size, never more.
"""

from __future__ import annotations

from dataclasses import dataclass

from tideline_core.errors import BudgetExhausted


@dataclass
class TokenBudget:
    """A mutable accumulator for one stage run; callers sum the day's earlier runs into `day_spent_before`."""

    run_limit: int  # tokens this run may spend
    day_limit: int  # tokens the agent may spend this UTC day
    day_spent_before: int = 0  # tokens the agent already spent today, before this run
    spent: int = 0  # spent by this run so far

    def _run_left(self) -> int:
        return self.run_limit - self.spent

    def _day_left(self) -> int:
        return self.day_limit - self.day_spent_before - self.spent

    def remaining(self) -> int:
        """Tokens this run may still spend: the smaller of what its own cap and the day leave, never below 0."""
        return max(0, min(self._run_left(), self._day_left()))

    def check(self, estimated: int) -> None:
        """Raise BudgetExhausted when a request estimated at `estimated` tokens does not fit what is left."""
        if estimated <= self.remaining():
            return
        if self._run_left() <= self._day_left():
            raise BudgetExhausted(
                f"run token budget exhausted: {self.spent:,} of {self.run_limit:,} tokens spent this run; "
                f"the next request needs up to {estimated:,}"
            )
        day_spent = self.day_spent_before + self.spent
        raise BudgetExhausted(
            f"day token budget exhausted: {day_spent:,} of {self.day_limit:,} tokens spent today; "
            f"the next request needs up to {estimated:,}"
        )

    def charge(self, usage_total: int) -> None:
        """Count `usage_total` tokens an answered request cost."""
        if usage_total < 0:
            raise ValueError(f"a request cannot cost {usage_total} tokens")
        self.spent += usage_total
