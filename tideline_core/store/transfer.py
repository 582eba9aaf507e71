"""Copying a whole store to another database (SQLite → PostgreSQL): every table in key order, resumable, verified.

Each table is copied in batches ordered by its primary key, each batch in one transaction on the
target. A copy killed at any point leaves whole batches behind; the next run starts after the
highest key the target holds, so nothing is copied twice and nothing is skipped (the source must
not be written to meanwhile: stop the stack that uses it). Vectors go in with their pgvector copy
(`pg_vectors`); on PostgreSQL the agents' own indexes are dropped for the copy and built once at
the end (`agent_indexes`), and serial counters are moved past the copied ids. `verify` then compares every table's row
count and a checksum of its rows in key order, read back from both sides.

The keyword columns of PostgreSQL are not copied (SQLite has none; its FTS5 tables are SQLite's):
they are built after the copy by the search layer's catch-up (`tideline db copy` runs it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, Table, select, text, tuple_

from tideline_core.numeric import np
from tideline_core.store import agent_indexes, pg_vectors
from tideline_core.store.database import Database
from tideline_core.store.schema import Base
from tideline_core.text.dates import as_utc

Progress = Callable[[str, int, int], None]  # table, rows copied so far, rows in the source


@dataclass(frozen=True)
class TableCheck:
    table: str
    source_rows: int
    target_rows: int
    source_checksum: str
    target_checksum: str

    @property
    def matches(self) -> bool:
        return self.source_rows == self.target_rows and self.source_checksum == self.target_checksum


def tables() -> list[Table]:
    """Every declared table, parents before children (foreign keys hold at every batch)."""
    return list(Base.metadata.sorted_tables)


def copy_all(
    source: Engine, target: Database, *, batch: int = 2000, progress: Progress | None = None
) -> dict[str, int]:
    """Copy every table's rows the target lacks; returns rows copied now per table."""
    postgres = target.dialect == "postgresql"
    with target.write() as conn:
        vectors = pg_vectors.enabled(conn)
        if vectors:
            agent_indexes.drop_all(conn)
    copied: dict[str, int] = {}
    for table in tables():
        copied[table.name] = _copy_table(source, target, table, batch, progress, vectors)
    if postgres:
        with target.write() as conn:
            _advance_sequences(conn)
            if vectors:
                conn.execute(text("SET LOCAL maintenance_work_mem = '1GB'"))
                agent_indexes.create_due(conn)
    return copied


def _copy_table(
    source: Engine, target: Database, table: Table, batch: int, progress: Progress | None, vectors: bool
) -> int:
    key = list(table.primary_key.columns)
    with target.read() as conn:
        newest = conn.execute(select(*key).order_by(*(c.desc() for c in key)).limit(1)).first()
        already = conn.execute(select(text("count(*)")).select_from(table)).scalar_one()
    with source.connect() as conn:
        total = conn.execute(select(text("count(*)")).select_from(table)).scalar_one()
    done = 0
    last = tuple(newest) if newest is not None else None
    while True:
        query = select(table).order_by(*key).limit(batch)
        if last is not None:
            query = query.where(tuple_(*key) > tuple_(*last))
        with source.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(query)]
        if not rows:
            return done
        with target.write() as conn:
            if table.name == "embeddings" and vectors:
                _insert_embeddings(conn, rows)
            else:
                conn.execute(table.insert(), rows)
        done += len(rows)
        last = tuple(rows[-1][c.name] for c in key)
        if progress is not None:
            progress(table.name, already + done, total)


def _insert_embeddings(conn: Connection, rows: list[dict[str, Any]]) -> None:
    conn.execute(
        text(
            "INSERT INTO embeddings (id, kind, row_id, agent_id, model, dim, vector, view, created_at, vec) "
            "VALUES (:id, :kind, :row_id, :agent_id, :model, :dim, :vector, :view, :created_at, CAST(:vec AS halfvec))"
        ),
        [
            {
                **r,
                "vec": pg_vectors.literal(np.frombuffer(r["vector"], dtype=np.float32, count=r["dim"]))
                if r["dim"] == pg_vectors.DIM
                else None,
            }
            for r in rows
        ],
    )


def _advance_sequences(conn: Connection) -> None:
    """Serial counters past the copied ids, so the next row written gets a new one."""
    for table in tables():
        if "id" not in table.c or not table.c.id.primary_key:
            continue
        sequence = conn.execute(text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": table.name}).scalar_one()
        if sequence:
            conn.execute(
                text(f"SELECT setval(:s, (SELECT coalesce(max(id), 0) + 1 FROM {table.name}), false)"), {"s": sequence}
            )


def verify(source: Engine, target: Engine) -> list[TableCheck]:
    """Row count and checksum of every table on both sides (rows in key order, values in a canonical form)."""
    checks = []
    for table in tables():
        counts, sums = [], []
        for engine in (source, target):
            digest = hashlib.sha256()
            rows = 0
            for row in _rows_in_order(engine, table):
                digest.update(_canonical(row).encode("utf-8"))
                rows += 1
            counts.append(rows)
            sums.append(digest.hexdigest())
        checks.append(TableCheck(table.name, counts[0], counts[1], sums[0], sums[1]))
    return checks


def _rows_in_order(engine: Engine, table: Table, batch: int = 5000) -> Iterator[tuple[Any, ...]]:
    key = list(table.primary_key.columns)
    last = None
    while True:
        query = select(table).order_by(*key).limit(batch)
        if last is not None:
            query = query.where(tuple_(*key) > tuple_(*last))
        with engine.connect() as conn:
            rows = conn.execute(query).all()
        if not rows:
            return
        yield from (tuple(r) for r in rows)
        last = tuple(getattr(rows[-1], c.name) for c in key)


def _canonical(row: tuple[Any, ...]) -> str:
    return json.dumps([_value(v) for v in row], sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def _value(value: Any) -> Any:
    if isinstance(value, datetime):
        return as_utc(value).isoformat()
    if isinstance(value, bytes | memoryview):
        return bytes(value).hex()
    if isinstance(value, float):
        return repr(value)
    return value
