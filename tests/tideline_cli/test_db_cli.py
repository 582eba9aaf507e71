"""`tideline db copy` and `tideline db upgrade` as a user runs them: a SQLite store moved to PostgreSQL + pgvector."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import create_engine, text

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn, SearchIn, parse
from tideline_core.ingest import embed_pending
from tideline_core.search import pg_source
from tideline_core.store import pg_terms
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.turns import insert_turns
from tideline_core.text.terms import analyze

START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
TABLES = ("narratives", "narrative_tags", "context_turns", "embeddings")


class WordsEmbedder:
    model = "test-words"

    def _one(self, text_: str) -> np.ndarray:
        v = np.zeros(384, dtype=np.float32)
        for token in analyze(text_):
            v[zlib.crc32(token.encode()) % 384] += 1.0
        return v / max(float(np.linalg.norm(v)), 1e-9)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts])

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        return self.passages(texts)


def tideline(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    env["TIDELINE_HOME"] = str(tmp_path / "home")
    return subprocess.Popen(
        [sys.executable, "-m", "tideline_cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def source_store(tmp_path: Path, turns: int = 40, narratives: int = 12, embed: bool = True) -> str:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    db = Database.open(url)
    with db.write() as conn:
        for i in range(narratives):
            data = {"gesture": f"第{i}次去公园散步, walked the dog", "tags": ["散步", f"t{i % 3}"]}
            insert_narrative(conn, "alice", parse(NarrativeIn, {**data, "occurred_at": START.isoformat()}))
        insert_turns(
            conn,
            "alice",
            [
                parse(
                    ContextTurnIn,
                    {
                        "role": "user",
                        "content": f"turn {i}: 我们聊了咖啡 and the marathon",
                        "session_id": f"s{i // 10}",
                        "speaker": "Bob",
                        "created_at": (START + timedelta(minutes=i)).isoformat(),
                        "metadata": {"n": i},
                    },
                )
                for i in range(turns)
            ],
        )
    if embed:
        embed_pending(db, WordsEmbedder(), max_batches=10_000)
    db.close()
    return url


def counts(url: str) -> dict[str, int]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}
    finally:
        engine.dispose()


def test_a_copy_moves_every_table_with_its_vectors_and_verifies_it(tmp_path: Path, pgvector_url: str) -> None:
    source = source_store(tmp_path)
    code, out, err = finished(tideline(tmp_path, "db", "copy", "--from", source, "--to", pgvector_url, "--batch", "7"))
    assert code == 0, err
    assert "verified: every table has the same rows on both sides" in out
    assert (
        counts(pgvector_url)
        == counts(source)
        == {"narratives": 12, "narrative_tags": 24, "context_turns": 40, "embeddings": 12 + 2 * 40}
    )
    target = Database.open(pgvector_url)
    try:
        with target.read() as conn:
            assert conn.execute(text("SELECT count(*) FROM embeddings WHERE vec IS NULL")).scalar_one() == 0
            assert conn.execute(text("SELECT count(*) FROM context_turns WHERE fts_kw IS NULL")).scalar_one() == 0
        hits = (
            pg_source.searcher(target, WordsEmbedder())
            .search("alice", parse(SearchIn, {"query": "咖啡 marathon"}))
            .hits
        )
        assert hits and all(h.kind == "context" for h in hits[:5])
        with target.write() as conn:  # the serial counters moved past the copied ids
            (new,) = insert_turns(conn, "alice", [parse(ContextTurnIn, {"role": "user", "content": "after the move"})])
        assert new == 41
    finally:
        target.close()


def test_a_copy_killed_midway_resumes_where_it_stopped(tmp_path: Path, pgvector_url: str) -> None:
    source = source_store(tmp_path, turns=4000, narratives=5, embed=False)
    first = tideline(tmp_path, "db", "copy", "--from", source, "--to", pgvector_url, "--batch", "20")
    engine = create_engine(pgvector_url)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with engine.connect() as conn:
                    if conn.execute(text("SELECT count(*) FROM context_turns")).scalar_one() >= 100:
                        break
            except Exception:  # the tables appear with the first run's migration
                pass
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=30)
        with engine.connect() as conn:
            partial = conn.execute(text("SELECT count(*) FROM context_turns")).scalar_one()
    finally:
        engine.dispose()
    assert 100 <= partial < 4000
    code, out, err = finished(
        tideline(tmp_path, "db", "copy", "--from", source, "--to", pgvector_url, "--batch", "500")
    )
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.strip().startswith("context_turns"))
    assert line.split()[1] == "4000" and line.split()[5] == str(4000 - partial)
    assert counts(pgvector_url) == counts(source)


def test_upgrade_indexes_rows_an_older_release_left_unindexed_for_keyword_search(
    tmp_path: Path, pgvector_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database.open(pgvector_url)
    try:
        with monkeypatch.context() as older, db.write() as conn:  # a release that left the index to a catch-up
            older.setattr(pg_terms, "index_new", lambda *_: None)
            insert_turns(
                conn, "alice", [parse(ContextTurnIn, {"role": "user", "content": f"第{i}杯咖啡"}) for i in range(30)]
            )
    finally:
        db.close()
    code, out, err = finished(tideline(tmp_path, "db", "upgrade", "--database-url", pgvector_url))
    assert code == 0, err
    assert "30 rows indexed for keyword search now" in out
    code, out, _ = finished(tideline(tmp_path, "db", "upgrade", "--database-url", pgvector_url))
    assert code == 0 and "; 0 rows indexed" in out


def test_bad_arguments_are_refused_by_name_and_nothing_is_written(tmp_path: Path, pgvector_url: str) -> None:
    code, _, err = finished(
        tideline(tmp_path, "db", "copy", "--from", f"sqlite:///{tmp_path / 'missing.db'}", "--to", pgvector_url)
    )
    assert code == 2 and "--from" in err and "no SQLite file" in err
    assert not (tmp_path / "missing.db").exists()
    source = source_store(tmp_path, turns=3, narratives=1, embed=False)
    code, _, err = finished(tideline(tmp_path, "db", "copy", "--from", source, "--to", pgvector_url, "--batch", "0"))
    assert code == 2 and "--batch" in err
    engine = create_engine(pgvector_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")).scalar_one() == 0
    finally:
        engine.dispose()
