"""Which rows of an append-only table a reader has absorbed, when ids may become visible out of order.

SQLite serializes writers, so its ids become visible in order. PostgreSQL draws an id from a
sequence at insert time and transactions commit in any order: a reader that asks only for ids above
the highest it has seen would skip, for good, a row whose transaction committed after a newer one.
A watermark therefore also remembers the ids below its highest that were nowhere in the table when
it last looked (holes) and asks for them again until they appear, or until they are old enough to
be a rolled-back insert rather than a slow commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# A write transaction here lasts milliseconds; an id still missing after this long was rolled back.
HOLE_GRACE_SECONDS = 300.0
# Only the newest ids can still be in flight; older gaps (past rollbacks) are not worth asking about.
TAIL = 10_000
MAX_HOLES = 1_000


@dataclass
class Watermark:
    """`last_id`: the highest id absorbed; `holes`: missing ids below it → when first missed (monotonic s)."""

    last_id: int = 0
    holes: dict[int, float] = field(default_factory=dict)

    def pending(self) -> list[int]:
        """Ids to ask for again, ascending."""
        return sorted(self.holes)

    def span(self, newest: int) -> tuple[int, int]:
        """The id range (exclusive low, inclusive high) whose visible ids `settle` needs after a load
        that reached `newest`: the ids above the old watermark, capped to the recent tail."""
        high = max(newest, self.last_id)
        return max(self.last_id, high - TAIL), high

    def settle(self, newest: int, visible: Iterable[int], now: float, *, grace: float = HOLE_GRACE_SECONDS) -> None:
        """Advance to `newest` after a load.

        `visible`: every id of the table (any agent's) visible in `span(newest)` or among the holes
        in the same snapshot as the load. Ids of the span missing from it become holes; holes that
        showed up, or outlived `grace`, are dropped.
        """
        seen = set(visible)
        holes = {i: t for i, t in self.holes.items() if i not in seen and now - t < grace}
        low, high = self.span(newest)
        # Newest first, so when the cap is reached it is the most recent gaps that are kept.
        for candidate in range(high - 1, low, -1):
            if len(holes) >= MAX_HOLES:
                break
            if candidate not in seen:
                holes.setdefault(candidate, now)
        self.last_id = high
        self.holes = holes
