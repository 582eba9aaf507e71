"""Search: one ranking (`hybrid`) over a candidate source (`sources`): in-memory indexes or PostgreSQL's own.

Pure parts: `bm25` (the index structure and text analysis), `fusion`, `query` (terms and
embedding texts of a question or a dialogue), `when` (dates a query names), `signals`, `joins`.
`memory_source` answers from `keyword_index` and `vector_index`, kept fresh from the store;
`pg_source` from PostgreSQL's tsvectors and vectors (`pg_keywords`, `store.pg_vectors`, `store.agent_indexes`);
`cold` ranks by keyword over SQLite's FTS5 for a process that answers once, and for a server
while `warming` builds an agent's in-memory indexes. `hits` is what every search answers.
"""

__all__ = [
    "bm25",
    "cold",
    "fusion",
    "glossary",
    "hits",
    "hybrid",
    "joins",
    "keyword_index",
    "memory_source",
    "pg_keywords",
    "pg_source",
    "query",
    "reference",
    "salience",
    "signals",
    "sources",
    "vector_index",
    "warming",
    "when",
]
