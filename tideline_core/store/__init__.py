"""The store: short transactions over the schema, returning frozen records."""

from tideline_core.store.database import Database

__all__ = ["Database"]
