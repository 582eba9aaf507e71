"""The store's high-water marks: one cheap read that tells an in-memory index whether anything was written."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, FromClause, select, text

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


_CHUNK = 500


def visible_ids(conn: Connection, table: FromClause, span: tuple[int, int], holes: Sequence[int]) -> list[int]:
    """Ids of `table` (any agent's) in the id range `span` (exclusive low, inclusive high) or among `holes`."""
    low, high = span
    found: list[int] = []
    if high > low:
        found += conn.execute(select(table.c.id).where(table.c.id > low, table.c.id <= high)).scalars().all()
    for start in range(0, len(holes), _CHUNK):
        found += conn.execute(select(table.c.id).where(table.c.id.in_(holes[start : start + _CHUNK]))).scalars().all()
    return found
