"""Loading rows: one agent's rows by primary key in IN-lists of bounded size, and rows as frozen records."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import fields
from typing import Any, TypeVar

from sqlalchemy import Connection, FromClause, Result, Row, select

CHUNK = 500  # ids per IN (...): well under every driver's bound-parameter limit
R = TypeVar("R")


def no_pause() -> None:
    """The default pause hook of an index build: go on."""


def fetched_with_pauses(result: Result[Any], every: int, pause: Callable[[], None]) -> list[Row[Any]]:
    """Every row of `result`, `pause` called before each `every` rows: turning rows into values holds the GIL,
    so a build on a thread of its own lets other threads go first there."""
    rows: list[Row[Any]] = []
    for part in result.partitions(every):
        pause()
        rows.extend(part)
    return rows


def chunks(ids: Sequence[int], size: int = CHUNK) -> Iterator[Sequence[int]]:
    """`ids` in consecutive slices of at most `size`."""
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def owned_rows(
    conn: Connection, table: FromClause, agent_id: str, ids: Iterable[int], columns: Sequence[Any] = ()
) -> list[Row[Any]]:
    """Rows of `table` with these ids that belong to `agent_id` (all columns, or `columns` plus agent_id).

    Looked up by primary key alone, the owner checked on each row: with agent_id in the WHERE clause
    SQLite, lacking ANALYZE statistics, walks the agent's index instead, every row of a large agent
    (10 ms at 100k narratives against 0.5 ms for ten key lookups).
    """
    picked = [*columns, table.c.agent_id] if columns else [table]
    rows: list[Row[Any]] = []
    for chunk in chunks(list(dict.fromkeys(ids))):
        rows += [r for r in conn.execute(select(*picked).where(table.c.id.in_(chunk))) if r.agent_id == agent_id]
    return rows


def as_record(cls: type[R], row: Row[Any], **given: Any) -> R:
    """The frozen record `cls` of a row: each field from the column of the same name, unless `given`.

    A field neither in the row nor given keeps its default (a history not asked for, say).
    """
    columns = row._mapping
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    values = {
        name: given[name] if name in given else columns[name] for name in names if name in given or name in columns
    }
    return cls(**values)
