"""Write receipts: a write made with an idempotency key keeps what it returned, in the same transaction as the write."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from tideline_core.errors import Conflict
from tideline_core.store.schema import WriteReceipt


@dataclass(frozen=True)
class Receipt:
    operation: str
    fingerprint: str
    result: Any


class KeyRace(Conflict):
    """Another write with the same key committed while this one ran (PostgreSQL); read its receipt instead."""


def fingerprint(parts: list[str]) -> str:
    """A digest of a write's arguments, so a key reused for different arguments is caught."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\x1e")
    return digest.hexdigest()


def find_receipt(conn: Connection, agent_id: str, key: str) -> Receipt | None:
    row = conn.execute(
        select(WriteReceipt.operation, WriteReceipt.fingerprint, WriteReceipt.result).where(
            WriteReceipt.agent_id == agent_id, WriteReceipt.key == key
        )
    ).first()
    return Receipt(row.operation, row.fingerprint, row.result) if row else None


def keep_receipt(
    conn: Connection, agent_id: str, key: str, *, operation: str, fingerprint: str, result: Any, now: datetime
) -> None:
    """Record the write's result under `key`, in the write's own transaction.

    Raises KeyRace if a concurrent write took the key first (on PostgreSQL the insert waits for that
    transaction, then fails); the caller's transaction must then roll back, taking its write with it.
    """
    values = {"operation": operation, "fingerprint": fingerprint, "result": result, "created_at": now}
    try:
        conn.execute(insert(WriteReceipt).values(agent_id=agent_id, key=key, **values))
    except IntegrityError:
        raise KeyRace(f"idempotency key {key!r} was taken by a concurrent write") from None
