"""What a search reads of the rows it ranked (`StoreRows`): a row's script read once, or not where an index has it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import event

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn, parse
from tideline_core.search import sources
from tideline_core.search.memory_source import MemorySource
from tideline_core.search.reference import HAN, OTHER
from tideline_core.search.sources import StoreRows
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.turns import insert_turns


def test_a_rows_script_is_read_once_and_remembered_until_it_keeps_too_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database.open(f"sqlite:///{tmp_path / 'memory.db'}")
    try:
        with db.write() as conn:
            chinese = insert_narrative(conn, "alice", NarrativeIn(gesture="我们今天讨论了记忆系统的设计")).id
            english = insert_narrative(conn, "alice", NarrativeIn(gesture="We talked about the memory design")).id
            (short,) = insert_turns(conn, "alice", [parse(ContextTurnIn, {"role": "user", "content": "ok"})])
        statements: list[str] = []
        event.listen(db.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
        rows = StoreRows(db)
        keys = [("narrative", chinese), ("narrative", english), ("context", short)]
        expected = {keys[0]: HAN, keys[1]: OTHER, keys[2]: None}
        assert rows.scripts("alice", keys) == expected
        read = len(statements)
        assert rows.scripts("alice", keys) == expected and len(statements) == read  # remembered: nothing read
        assert rows.scripts("bob", keys[:1]) == {}  # another agent's row is not alice's, remembered or not
        monkeypatch.setattr(sources, "SCRIPTS_KEPT", 2)
        assert StoreRows(db).scripts("alice", keys) == expected  # more than it keeps: still right
    finally:
        db.close()


def test_the_in_memory_searcher_takes_each_rows_script_from_its_keyword_index_without_reading_the_store(
    tmp_path: Path,
) -> None:
    db = Database.open(f"sqlite:///{tmp_path / 'memory.db'}")
    try:
        with db.write() as conn:
            chinese = insert_narrative(conn, "alice", NarrativeIn(gesture="我们今天讨论了记忆系统的设计")).id
            (short,) = insert_turns(conn, "alice", [parse(ContextTurnIn, {"role": "user", "content": "ok"})])
        source = MemorySource(db, "multilingual-e5-small")
        for kind in ("narrative", "context"):
            source.keywords.refresh("alice", kind)
        with db.write() as conn:  # written after the index last looked: the store is asked for it
            later = insert_narrative(conn, "alice", NarrativeIn(gesture="We talked about the memory design")).id
        statements: list[str] = []
        event.listen(db.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
        rows = source.store_rows()
        indexed = [("narrative", chinese), ("context", short)]
        assert rows.scripts("alice", indexed) == {indexed[0]: HAN, indexed[1]: None}
        assert statements == []
        assert rows.scripts("alice", [("narrative", later)]) == {("narrative", later): OTHER}
        assert [s for s in statements if s.startswith("SELECT")] == [statements[-1]]
        assert rows.scripts("bob", indexed) == {}  # alice's index is not bob's
    finally:
        db.close()
