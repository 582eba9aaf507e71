"""Many processes starting at once on a fresh database all come up: one migrates, the others wait for it."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings

from sqlalchemy import create_engine, insert, select, text, update
from sqlalchemy.exc import SAWarning

from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn, SearchIn
from tideline_core.embedding import NoEmbedder
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
from tideline_core.store.database import Database
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.schema import Amendment, Narrative
from tideline_core.text.dates import utcnow

PROCESSES = 8
# Each process waits for the same moment, then opens (and so migrates) the database.
OPEN = """
import sys, time
from tideline_core.store.database import Database
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
Database.open(sys.argv[1]).close()
"""


def start_together(url: str) -> list[subprocess.CompletedProcess[str]]:
    at = time.time() + 3.0  # past every interpreter's start-up, so all of them migrate at once
    running = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN, url, str(at)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(PROCESSES)
    ]
    return [subprocess.CompletedProcess(p.args, p.wait(timeout=120), *p.communicate()) for p in running]


def versions(url: str) -> list[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version"))]
    finally:
        engine.dispose()


def test_eight_processes_starting_on_a_fresh_database_all_start(empty_store_url: str) -> None:
    done = start_together(empty_store_url)
    failed = [p.stderr.strip().splitlines()[-1] for p in done if p.returncode != 0]
    assert failed == []
    assert len(versions(empty_store_url)) == 1  # migrated once, to one head


def test_the_migrations_build_exactly_the_tables_the_schema_declares(empty_store_url: str) -> None:
    assert undeclared_differences(empty_store_url) == []


def test_without_pgvector_too_the_migrations_build_exactly_the_tables_the_schema_declares(
    postgres_without_pgvector_url: str,
) -> None:
    assert undeclared_differences(postgres_without_pgvector_url) == []


def undeclared_differences(url: str) -> list[object]:
    """What a fresh store migrated at `url` has that the declared schema does not, or lacks that it does."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from tideline_core.store.database import Database
    from tideline_core.store.schema import Base

    Database.open(url).close()
    engine = create_engine(url)
    try:
        with engine.connect() as conn, warnings.catch_warnings():
            # SQLAlchemy reflects pgvector's halfvec as an unknown type; that column is left out below anyway.
            warnings.filterwarnings("ignore", "Did not recognize type 'halfvec'", SAWarning)
            differences = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    # The full-text tables are built by hand (FTS5 / tsvector), outside the declared schema.
    return [d for d in differences if not _is_fts(d)]


def _is_fts(difference: object) -> bool:
    # ... and so are pgvector's search copy of each vector (`embeddings.vec`) and its HNSW indexes.
    return any(mark in repr(difference) for mark in ("fts", "'vec'", "ix_embeddings_vec_", "ix_vec_agent_"))


def test_the_newest_revision_is_read_from_the_scripts_as_alembic_reads_them() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from tideline_core.store.database import MIGRATIONS, newest_revision

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert [newest_revision()] == ScriptDirectory.from_config(config).get_heads()


def test_a_store_at_the_newest_revision_opens_without_alembic(empty_store_url: str) -> None:
    # A hook's process opens the store for each prompt: only a store behind is worth alembic's import.
    script = "import sys; from tideline_core.store.database import Database; Database.open(sys.argv[1]).close(); "

    def alembic_loaded() -> str:
        done = subprocess.run(
            [sys.executable, "-c", script + "print('alembic' in sys.modules)", empty_store_url],
            capture_output=True,
            text=True,
        )
        return done.stdout.strip() or done.stderr

    assert [alembic_loaded(), alembic_loaded()] == ["True", "False"]  # the new store is migrated, then only read
    assert len(versions(empty_store_url)) == 1


def test_memories_amended_before_the_upgrade_are_found_by_their_notes_and_embedded_again(
    settings: Settings, database: Database
) -> None:
    with database.write() as conn:  # as an older release stored an amendment: the note in no index
        swim = insert_narrative(conn, "alice", NarrativeIn(gesture="Swimming on Thursday evenings")).id
        # A memory holding the word itself: the keyword index answers, not a fallback that reads the notes.
        dinner = insert_narrative(conn, "alice", NarrativeIn(gesture="Dinner with Sam on Friday")).id
        conn.execute(
            insert(Amendment).values(narrative_id=swim, agent_id="alice", note="moved to Friday", created_at=utcnow())
        )
        conn.execute(update(Narrative).where(Narrative.id == swim).values(embedding_state="done"))
        conn.execute(text("UPDATE alembic_version SET version_num = '0007'"))
    Database.open(settings.resolved_database_url).close()  # the upgrade

    service = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder(), database=database)
    found = service.search("alice", SearchIn(query="Friday", mode="keyword", kinds="narratives"))
    assert sorted(hit.id for hit in found.hits) == [swim, dinner]
    again = service.search("alice", SearchIn(query="swimming", mode="keyword", kinds="narratives"))
    assert [hit.id for hit in again.hits] == [swim]  # counted once in the statistics, its own words still found
    with database.read() as conn:
        assert conn.execute(select(Narrative.embedding_state).where(Narrative.id == swim)).scalar_one() == "pending"
