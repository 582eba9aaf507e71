"""PostgreSQL without pgvector is refused at start, with what to install; `db upgrade` migrates it and says the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from tideline_core.compose import compose
from tideline_core.errors import ConfigurationError
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
from tideline_core.store.database import Database, newest_revision
from tideline_core.store.schema import Narrative


def cli(tmp_path: Path, *argv: str, database_url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    env.update(TIDELINE_HOME=str(tmp_path), TIDELINE_DATABASE_URL=database_url, TIDELINE_EMBEDDER="none")
    return subprocess.run(
        [sys.executable, "-m", "tideline_cli", *argv], capture_output=True, text=True, timeout=120, env=env
    )


def test_no_service_is_built_on_it_and_the_error_says_what_to_install(
    tmp_path: Path, postgres_without_pgvector_url: str
) -> None:
    settings = Settings(home=tmp_path, embedder="none", database_url=postgres_without_pgvector_url)
    for cold in (False, True):
        with pytest.raises(
            ConfigurationError, match=r"no pgvector .*postgresql-<version>-pgvector.*tideline db upgrade"
        ):
            compose(settings, jobs=NullJobQueue(), cold=cold)


def test_a_command_refuses_it_before_storing_anything(tmp_path: Path, postgres_without_pgvector_url: str) -> None:
    done = cli(tmp_path, "write", "--gesture", "a memory never half-stored", database_url=postgres_without_pgvector_url)
    assert done.returncode != 0
    assert "no pgvector" in done.stderr and "Traceback" not in done.stderr
    db = Database.open(postgres_without_pgvector_url, run_migrations=False)
    try:
        with db.read() as conn:
            assert conn.execute(select(func.count()).select_from(Narrative)).scalar_one() == 0
    finally:
        db.close()


def test_db_upgrade_migrates_it_and_then_says_what_is_missing(
    tmp_path: Path, postgres_without_pgvector_url: str
) -> None:
    done = cli(tmp_path, "db", "upgrade", "--database-url", postgres_without_pgvector_url, database_url="")
    assert done.returncode != 0
    assert "no pgvector" in done.stderr and "Traceback" not in done.stderr
    db = Database.open(postgres_without_pgvector_url, run_migrations=False)
    try:
        with db.read() as conn:
            assert list(conn.execute(text("SELECT version_num FROM alembic_version")).scalars()) == [newest_revision()]
    finally:
        db.close()
