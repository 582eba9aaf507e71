"""The store's high-water marks: one cheap read that tells an in-memory index whether anything was written."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import ColumnElement, Connection, FromClause, or_, select, text
from sqlalchemy.orm import InstrumentedAttribute

from tideline_core.store.lookup import chunks
from tideline_core.store.watermark import Watermark

# Rows are appended with increasing ids (embeddings, turns, narratives), so the three maxima change
# whenever anything an index reads was written, by this process or another.
_HIGH_WATER = text(
    "SELECT (SELECT max(id) FROM embeddings), (SELECT max(id) FROM context_turns), (SELECT max(id) FROM narratives)"
)

StoreVersion = tuple[int, int, int]


def high_water(conn: Connection) -> StoreVersion:
    """(newest embedding id, newest turn id, newest narrative id), 0 for an empty table."""
    row = conn.execute(_HIGH_WATER).one()
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)


def ids_after(column: InstrumentedAttribute[int], after: int, also: Sequence[int] = ()) -> ColumnElement[bool]:
    """Ids above a watermark, or among the older ones it still awaits."""
    return or_(column > after, column.in_(list(also))) if also else column > after


def visible_ids(conn: Connection, table: FromClause, span: tuple[int, int], holes: Sequence[int]) -> list[int]:
    """Ids of `table` (any agent's) in the id range `span` (exclusive low, inclusive high) or among `holes`."""
    low, high = span
    found: list[int] = []
    if high > low:
        found += conn.execute(select(table.c.id).where(table.c.id > low, table.c.id <= high)).scalars().all()
    for chunk in chunks(holes):
        found += conn.execute(select(table.c.id).where(table.c.id.in_(chunk))).scalars().all()
    return found


def catch_up(conn: Connection, table: FromClause, mark: Watermark, loaded: Iterable[int]) -> tuple[int, list[int]]:
    """After loading `loaded` (ids above `mark` or among its holes) in this snapshot: the newest id
    reached, and the visible ids `Watermark.settle` needs, read in the same snapshot."""
    newest = max([mark.last_id, *loaded])
    return newest, visible_ids(conn, table, mark.span(newest), mark.pending())
