"""Bulk session imports of context turns, exactly once per import id."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select

from tideline_core.inputs import ContextTurnIn
from tideline_core.schema import ContextTurn
from tideline_core.store.context import insert_turns

IMPORT_KEY = "import_id"


def import_turns_once(
    conn: Connection, agent_id: str, import_id: str, turns: Sequence[ContextTurnIn]
) -> list[int] | None:
    """Insert `turns` tagged with `import_id` in their metadata; None when this import is already stored.

    Call inside one write transaction: either the whole import is there or none of it is, so a
    redelivered import task finds its first turn and stops.
    """
    first_session = turns[0].session_id if turns else ""
    seen = conn.execute(
        select(ContextTurn.id)
        .where(
            ContextTurn.agent_id == agent_id,
            ContextTurn.session_id == first_session,
            ContextTurn.meta[IMPORT_KEY].as_string() == import_id,
        )
        .limit(1)
    ).first()
    if seen is not None:
        return None
    tagged = [turn.model_copy(update={"metadata": {**turn.metadata, IMPORT_KEY: import_id}}) for turn in turns]
    return insert_turns(conn, agent_id, tagged)
