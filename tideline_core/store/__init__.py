"""The store: the schema, short transactions over it, and frozen records out; the only package with SQL.

Each module owns one group of tables: `narratives`, `turns`, `profiles` (profiles, self-concept,
threads, snapshots), `embeddings`, `keywords` (the keyword index kept with the rows, one port
over `fts`, SQLite's FTS5 tables, and `pg_terms`, PostgreSQL's tsvectors), `events` (task events),
`status` (counts). `catchup` is how an in-memory index follows the store, `lookup` loads one
agent's rows by key. The dream stages and attention keep their tables' code beside their logic
(`tideline_core.dream.*.store`, `tideline_core.attention.store`).
"""

from tideline_core.store.database import Database

__all__ = ["Database"]
