"""The store's high-water marks: one cheap read that tells an in-memory index whether anything was written."""

from __future__ import annotations

from sqlalchemy import Connection, text

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
