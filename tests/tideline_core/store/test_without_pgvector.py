"""PostgreSQL without pgvector still works: search keeps in-memory indexes, and `db upgrade` says where vectors are."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.words_embedder import WordsEmbedder
from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn, SearchIn
from tideline_core.search.pg_search import PostgresSearch
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings


def test_search_falls_back_to_in_memory_indexes_and_finds_by_keyword_and_by_vector(
    tmp_path: Path, postgres_without_pgvector_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(home=tmp_path, embedder="none", database_url=postgres_without_pgvector_url)
    with caplog.at_level(logging.WARNING):
        service = compose(settings, jobs=NullJobQueue(), embedder=WordsEmbedder())
    try:
        assert not isinstance(service.searcher, PostgresSearch)
        assert "PostgreSQL without pgvector" in caplog.text
        lake = service.write_narrative("alice", NarrativeIn(gesture="我们在湖边钓鱼 fishing by the lake")).id
        service.write_narrative("alice", NarrativeIn(gesture="The printer jams every morning"))
        bobs = service.write_narrative("bob", NarrativeIn(gesture="Bob went fishing by the lake too")).id
        while service.embed_pending(None, batch_size=16, max_batches=1).embedded:
            pass
        for mode in ("keyword", "dense", "hybrid"):
            hits = service.search("alice", SearchIn(query="湖边 fishing", mode=mode, limit=5)).hits
            assert [(h.kind, h.id) for h in hits][:1] == [("narrative", lake)], mode
            assert bobs not in [h.id for h in hits], mode
    finally:
        service.close()


def test_db_upgrade_says_vectors_are_searched_in_memory(tmp_path: Path, postgres_without_pgvector_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tideline_cli", "db", "upgrade", "--database-url", postgres_without_pgvector_url],
        capture_output=True,
        text=True,
        timeout=120,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}, "TIDELINE_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert "at the newest schema (postgresql)" in done.stdout
    assert "vectors searched in memory (pgvector not installed); 0 rows indexed" in done.stdout
