"""Embedding pending rows: concurrent runs share the work through claims, and a failed run frees its rows."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import func, select, update

from tideline_core.domain.inputs import AmendmentIn, NarrativeIn
from tideline_core.embedding import normalize
from tideline_core.errors import EmbedderUnavailable
from tideline_core.ingest import embed_pending
from tideline_core.store.database import Database
from tideline_core.store.embeddings import CLAIM_LEASE, claim_pending
from tideline_core.store.narratives import amend, insert_narrative
from tideline_core.store.schema import Embedding, EmbeddingClaim, Narrative
from tideline_core.text.dates import utcnow


class CountingEmbedder:
    """Deterministic vectors; counts every text it is asked to embed and takes a little time per call."""

    model = "counting/v1"

    def __init__(self, delay: float = 0.01, fail: bool = False) -> None:
        self.delay = delay
        self.fail = fail
        self.texts: list[str] = []
        self._lock = threading.Lock()

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(self.delay)  # long enough for a second run to reach the same rows if nothing stops it
        if self.fail:
            raise EmbedderUnavailable("the embedding service went away")
        with self._lock:
            self.texts.extend(texts)
        return normalize([[len(t), sum(map(ord, t)) % 97, 1.0] for t in texts])

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        return self.passages(texts)


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    database = Database.open(store_url)
    yield database
    database.close()


def write_narratives(db: Database, agent: str, count: int) -> list[int]:
    with db.write() as conn:
        return [
            insert_narrative(conn, agent, NarrativeIn(gesture=f"note number {i} about the garden")).id
            for i in range(count)
        ]


def test_two_runs_at_once_embed_every_pending_row_exactly_once(db: Database) -> None:
    ids = write_narratives(db, "alice", 120)
    embedder = CountingEmbedder()
    reports = []

    def run() -> None:
        reports.append(embed_pending(db, embedder, agent_id="alice", batch_size=8, max_batches=1_000))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(embedder.texts) == len(ids), "no row was embedded twice"
    assert sum(r.embedded for r in reports) == len(ids)
    assert all(r.embedded > 0 for r in reports), "both runs took a share of the work"
    with db.read() as conn:
        assert conn.execute(select(func.count()).select_from(Embedding)).scalar_one() == len(ids)
        assert conn.execute(select(func.count()).where(Narrative.embedding_state == "pending")).scalar_one() == 0
        assert conn.execute(select(func.count()).select_from(EmbeddingClaim)).scalar_one() == 0, "claims cleared"


def embed_at_once(db: Database, agent: str, runs: int, embedder: CountingEmbedder) -> list[BaseException]:
    """`runs` embed runs for `agent` started together, with tiny batches → what each failed with."""
    start = threading.Barrier(runs)
    errors: list[BaseException] = []

    def run() -> None:
        start.wait()
        try:
            embed_pending(db, embedder, agent_id=agent, batch_size=1, max_batches=1_000)
        except BaseException as exc:  # reported to the test: a failed run is one of the bugs it looks for
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(runs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.parametrize("runs", [2, 4])
def test_concurrent_runs_never_embed_a_row_twice_however_they_interleave(db: Database, runs: int) -> None:
    # Many short rounds of one-row batches and no embedder delay: the claims of one run commit while another
    # run's select is under way, the interleaving that once let two runs take the same rows.
    for round_number in range(150):
        agent = f"agent-{runs}-{round_number}"
        ids = write_narratives(db, agent, 8)
        embedder = CountingEmbedder(delay=0.0)

        assert embed_at_once(db, agent, runs, embedder) == [], f"round {round_number}: no run failed"
        assert sorted(embedder.texts) == sorted(set(embedder.texts)) and len(embedder.texts) == len(ids), (
            f"round {round_number}: every row embedded exactly once"
        )
        with db.read() as conn:
            saved = conn.execute(select(func.count()).where(Embedding.agent_id == agent)).scalar_one()
            assert saved == len(ids), f"round {round_number}: one vector per row"


def test_saving_a_row_again_replaces_its_vector_under_a_newer_id(db: Database) -> None:
    [row] = write_narratives(db, "alice", 1)
    embed_pending(db, CountingEmbedder(), agent_id="alice")
    with db.read() as conn:
        first = conn.execute(select(Embedding.id).where(Embedding.row_id == row)).scalar_one()
    with db.write() as conn:
        conn.execute(update(Narrative).where(Narrative.id == row).values(embedding_state="pending"))
    embed_pending(db, CountingEmbedder(), agent_id="alice")
    with db.read() as conn:
        ids = conn.execute(select(Embedding.id).where(Embedding.row_id == row)).scalars().all()
    assert len(ids) == 1 and ids[0] > first, "one vector, under an id a refreshing index reads as new"


def test_a_run_that_fails_frees_its_rows_for_the_next_run_at_once(db: Database) -> None:
    ids = write_narratives(db, "alice", 5)
    with pytest.raises(EmbedderUnavailable):
        embed_pending(db, CountingEmbedder(fail=True), agent_id="alice", batch_size=8)
    with db.read() as conn:
        assert conn.execute(select(func.count()).select_from(EmbeddingClaim)).scalar_one() == 0

    report = embed_pending(db, CountingEmbedder(), agent_id="alice", batch_size=8)
    assert report.embedded == len(ids)


def test_a_live_claim_of_another_run_is_left_alone_but_an_expired_one_or_our_own_is_taken(db: Database) -> None:
    write_narratives(db, "alice", 3)
    now = utcnow()
    with db.write() as conn:
        assert len(claim_pending(conn, "narrative", token="first", agent_id="alice", now=now)) == 3
    with db.write() as conn:
        assert claim_pending(conn, "narrative", token="second", agent_id="alice", now=now) == []
    with db.write() as conn:
        # A redelivered task carries its first run's id: it picks up the rows its killed run held.
        assert len(claim_pending(conn, "narrative", token="first", agent_id="alice", now=now)) == 3
    later = now + CLAIM_LEASE + timedelta(seconds=1)
    with db.write() as conn:
        assert len(claim_pending(conn, "narrative", token="second", agent_id="alice", now=later)) == 3


def test_claims_are_per_agent(db: Database) -> None:
    write_narratives(db, "alice", 2)
    write_narratives(db, "bob", 2)
    with db.write() as conn:
        mine = claim_pending(conn, "narrative", token="t", agent_id="alice", now=utcnow())
    assert {r.agent_id for r in mine} == {"alice"}
    report = embed_pending(db, CountingEmbedder(), agent_id="bob", batch_size=8)
    assert report.embedded == 2


def test_a_row_another_transaction_held_locked_is_reported_as_still_to_embed(db: Database) -> None:
    [held, _free] = write_narratives(db, "alice", 2)
    if db.dialect != "postgresql":
        pytest.skip("SQLite serializes writers: no claim passes over a locked row")
    with db.engine.connect() as other:  # what PostgreSQL's keyword catch-up does to new rows for a moment
        other.execute(select(Narrative.id).where(Narrative.id == held).with_for_update())
        report = embed_pending(db, CountingEmbedder(delay=0), agent_id="alice")
        other.rollback()
    assert report.embedded == 1 and report.remaining  # so the caller queues another run instead of leaving it
    again = embed_pending(db, CountingEmbedder(delay=0), agent_id="alice")
    assert again.embedded == 1 and not again.remaining
    with db.read() as conn:
        assert conn.execute(select(func.count()).select_from(Embedding).where(Embedding.row_id == held)).scalar() == 1


def test_a_run_out_of_time_claims_no_further_batch_and_reports_the_rest_as_still_to_embed(db: Database) -> None:
    ids = write_narratives(db, "alice", 12)
    slow = CountingEmbedder(delay=0.3)
    report = embed_pending(db, slow, agent_id="alice", batch_size=2, max_batches=100, budget_seconds=0.5)
    assert 1 <= report.batches < 6, "it stopped once the budget was spent, not when the rows ran out"
    assert report.remaining
    with db.read() as conn:
        assert conn.execute(select(func.count()).select_from(EmbeddingClaim)).scalar_one() == 0, "no claim is kept"

    rest = embed_pending(db, CountingEmbedder(), agent_id="alice", batch_size=2, max_batches=100)
    assert report.embedded + rest.embedded == len(ids) and not rest.remaining


class AmendingEmbedder(CountingEmbedder):
    """Amends the narrative while its old text is being embedded, as a user's correction may land mid-run."""

    def __init__(self, db: Database, narrative_id: int) -> None:
        super().__init__(delay=0)
        self.db, self.narrative_id, self.amended = db, narrative_id, False

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        if not self.amended:
            self.amended = True
            with self.db.write() as conn:
                amend(conn, "alice", AmendmentIn(narrative_id=self.narrative_id, note="moved to Friday evenings"))
        return super().passages(texts)


def test_an_amendment_made_while_the_old_text_is_embedded_is_embedded_too(db: Database) -> None:
    [swim] = write_narratives(db, "alice", 1)
    embedder = AmendingEmbedder(db, swim)
    report = embed_pending(db, embedder, agent_id="alice")
    assert report.embedded == 2 and not report.remaining, "the out-of-date vector did not mark the row done"
    assert "moved to Friday evenings" not in embedder.texts[0] and "moved to Friday evenings" in embedder.texts[1]
    with db.read() as conn:
        state = conn.execute(select(Narrative.embedding_state).where(Narrative.id == swim)).scalar_one()
        vectors = conn.execute(select(func.count()).select_from(Embedding).where(Embedding.row_id == swim))
        assert state == "done" and vectors.scalar_one() == 1
