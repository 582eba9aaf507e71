"""How an in-memory index catches up with the store: high-water marks, and cursors over append-only ids.

One cheap read (`high_water`) tells an index whether anything was written since it last looked.
If so, it loads the rows after its `IdCursor`.

Why a cursor is more than "the highest id seen": SQLite serializes writers, so its ids become
visible in order. PostgreSQL draws an id from a sequence at insert time and transactions commit in
any order: a reader that asks only for ids above the highest it has seen would skip, for good, a
row whose transaction committed after a newer one. A cursor therefore also remembers the ids below
its highest that were nowhere in the table when it last looked (holes) and asks for them again
until they appear, or until they are old enough to be a rolled-back insert rather than a slow commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, Connection, FromClause, or_, select, text

from tideline_core.store.lookup import chunks

# A write transaction here lasts milliseconds; an id still missing after this long was rolled back.
HOLE_GRACE_SECONDS = 300.0
# Only the newest ids can still be in flight; older gaps (past rollbacks) are not worth asking about.
TAIL = 10_000
MAX_HOLES = 1_000

# Rows are appended with increasing ids (embeddings, turns, narratives, amendments: a memory's text
# grows only by a new amendment row), so the four maxima change whenever anything an index reads was
# written, by this process or another.
_HIGH_WATER = text(
    "SELECT (SELECT max(id) FROM embeddings), (SELECT max(id) FROM context_turns), (SELECT max(id) FROM narratives), "
    "(SELECT max(id) FROM amendments)"
)

StoreVersion = tuple[int, int, int, int]


def high_water(conn: Connection) -> StoreVersion:
    """(newest embedding id, newest turn id, newest narrative id, newest amendment id), 0 for an empty table."""
    row = conn.execute(_HIGH_WATER).one()
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0), int(row[3] or 0)


@dataclass
class IdCursor:
    """`last_id`: the highest id absorbed; `holes`: missing ids below it → when first missed (monotonic s)."""

    last_id: int = 0
    holes: dict[int, float] = field(default_factory=dict)

    def pending(self) -> list[int]:
        """Ids to ask for again, ascending."""
        return sorted(self.holes)

    def span(self, newest: int) -> tuple[int, int]:
        """The id range (exclusive low, inclusive high) whose visible ids `settle` needs after a load
        that reached `newest`: the ids above the old cursor, capped to the recent tail."""
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


def ids_after(column: ColumnElement[int], cursor: IdCursor) -> ColumnElement[bool]:
    """Ids above the cursor, or among the older ones it still awaits."""
    awaited = cursor.pending()
    return or_(column > cursor.last_id, column.in_(awaited)) if awaited else column > cursor.last_id


def visible_ids(conn: Connection, table: FromClause, span: tuple[int, int], holes: Sequence[int]) -> list[int]:
    """Ids of `table` (any agent's) in the id range `span` (exclusive low, inclusive high) or among `holes`."""
    low, high = span
    found: list[int] = []
    if high > low:
        found += conn.execute(select(table.c.id).where(table.c.id > low, table.c.id <= high)).scalars().all()
    for chunk in chunks(holes):
        found += conn.execute(select(table.c.id).where(table.c.id.in_(chunk))).scalars().all()
    return found


def catch_up(conn: Connection, table: FromClause, cursor: IdCursor, loaded: Iterable[int]) -> tuple[int, list[int]]:
    """After loading `loaded` (ids above `cursor` or among its holes) in this snapshot: the newest id
    reached, and the visible ids `IdCursor.settle` needs, read in the same snapshot."""
    newest = max([cursor.last_id, *loaded])
    return newest, visible_ids(conn, table, cursor.span(newest), cursor.pending())
