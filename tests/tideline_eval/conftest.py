"""The arguments that put an eval's throwaway store on the run's backend."""

from __future__ import annotations

import pytest


@pytest.fixture
def store_args(test_database_url: str | None) -> list[str]:
    """`--database-url` on PostgreSQL (the eval makes and drops a database on that server); none on SQLite."""
    return ["--database-url", test_database_url] if test_database_url else []
