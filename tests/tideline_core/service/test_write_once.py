"""Writes with an idempotency key happen once per agent and key, even when two arrive at the same moment."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings
from tideline_core.store.schema import Narrative


@pytest.fixture
def service(tmp_path: Path, store_url: str) -> Iterator[Service]:
    built = compose(Settings(home=tmp_path, embedder="none", database_url=store_url), jobs=NullJobQueue())
    yield built
    built.close()


def narratives(service: Service, agent: str) -> int:
    with service.db.read() as conn:
        return int(conn.execute(select(func.count()).where(Narrative.agent_id == agent)).scalar_one())


def test_two_retries_racing_with_one_key_store_one_memory_and_both_get_its_id(service: Service) -> None:
    results: list[int] = []
    start = threading.Barrier(4)

    def retry() -> None:
        start.wait()
        results.append(service.write_narrative("alice", NarrativeIn(gesture="sent twice"), key="race-1").id)

    threads = [threading.Thread(target=retry) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and len(set(results)) == 1
    assert narratives(service, "alice") == 1


def test_keys_belong_to_one_agent(service: Service) -> None:
    mine = service.write_narrative("alice", NarrativeIn(gesture="same words"), key="k")
    theirs = service.write_narrative("bob", NarrativeIn(gesture="same words"), key="k")
    assert mine.id != theirs.id
    assert narratives(service, "alice") == narratives(service, "bob") == 1


def test_a_batch_written_with_a_key_comes_back_whole_on_retry(service: Service) -> None:
    batch = [NarrativeIn(gesture="one"), NarrativeIn(gesture="two", importance=5)]
    first = service.write_narratives("alice", batch, key="batch-1")
    again = service.write_narratives("alice", batch, key="batch-1")
    assert [(w.id, w.weight, w.recurrence) for w in again] == [(w.id, w.weight, w.recurrence) for w in first]
    assert narratives(service, "alice") == 2
