"""A search's reads on one connection (`Database.one_read`): shared on its thread, fresh on others, never stale;
a lookup beside it (`Database.lookup`) outside any transaction."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import event, text

from tests.pgvector_server import pgvector_url  # noqa: F401 - the fixture
from tideline_core.store.database import Database


@pytest.fixture
def pg(pgvector_url: str) -> Iterator[Database]:  # noqa: F811 - the fixture imported above
    db = Database.open(pgvector_url)
    yield db
    db.close()


def checkouts(db: Database) -> list[int]:
    taken = [0]
    event.listen(db.engine.pool, "checkout", lambda *_: taken.__setitem__(0, taken[0] + 1))
    return taken


def test_reads_inside_one_read_share_one_connection_and_one_transaction(pg: Database) -> None:
    taken = checkouts(pg)
    with pg.one_read():
        with pg.read() as first:
            began = first.execute(text("SELECT txid_current()")).scalar_one()
        with pg.read() as second:
            again = second.execute(text("SELECT txid_current()")).scalar_one()
    assert taken[0] == 1
    assert began == again


def test_a_read_inside_one_read_sees_what_another_connection_committed_meanwhile(pg: Database) -> None:
    with pg.write() as conn:
        conn.execute(text("CREATE TABLE notes (body text)"))
    with pg.one_read():
        with pg.read() as conn:
            assert conn.execute(text("SELECT count(*) FROM notes")).scalar_one() == 0
        with pg.write() as conn:  # what a search's catch-up writes before it reads again
            conn.execute(text("INSERT INTO notes VALUES ('written meanwhile')"))
        with pg.read() as conn:
            assert conn.execute(text("SELECT body FROM notes")).scalars().all() == ["written meanwhile"]


def test_another_thread_inside_one_read_takes_a_connection_of_its_own(pg: Database) -> None:
    seen: list[int] = []

    def backend() -> None:
        with pg.read() as conn:
            seen.append(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())

    with pg.one_read():
        backend()
        other = threading.Thread(target=backend)
        other.start()
        other.join(timeout=10)
        backend()
    assert len(seen) == 3
    assert seen[0] == seen[2] != seen[1]


def test_reads_after_one_read_ends_take_their_own_connections_again(pg: Database) -> None:
    with pg.one_read(), pg.read() as conn:
        inside = conn.execute(text("SELECT txid_current()")).scalar_one()
    with pg.read() as conn:
        after = conn.execute(text("SELECT txid_current()")).scalar_one()
    assert after != inside


def test_a_failed_statement_inside_one_read_fails_the_caller_and_frees_the_connection(pg: Database) -> None:
    with pytest.raises(Exception, match="no_such_table"), pg.one_read(), pg.read() as conn:
        conn.execute(text("SELECT * FROM no_such_table"))
    with pg.read() as conn:
        assert conn.execute(text("SELECT 1")).scalar_one() == 1


def test_a_lookup_runs_each_statement_as_a_transaction_of_its_own(pg: Database) -> None:
    with pg.lookup() as conn:
        first = conn.execute(text("SELECT txid_current()")).scalar_one()
        second = conn.execute(text("SELECT txid_current()")).scalar_one()
    assert first != second  # no BEGIN held them together, nor a COMMIT to send after


def test_a_lookup_inside_one_read_on_its_thread_is_that_read(pg: Database) -> None:
    taken = checkouts(pg)
    with pg.one_read():
        with pg.read() as conn:
            held = conn.execute(text("SELECT txid_current()")).scalar_one()
        with pg.lookup() as conn:
            looked = conn.execute(text("SELECT txid_current()")).scalar_one()
    assert looked == held
    assert taken[0] == 1


def test_a_connection_that_served_a_lookup_serves_reads_in_transactions_again(pg: Database) -> None:
    with pg.lookup() as conn:
        conn.execute(text("SELECT 1"))
    for _ in range(3):  # whichever pooled connection comes back
        with pg.read() as conn:
            first = conn.execute(text("SELECT txid_current()")).scalar_one()
            second = conn.execute(text("SELECT txid_current()")).scalar_one()
        assert first == second
