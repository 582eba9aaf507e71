"""Tideline's domain library: memories stored, searched and digested; imports no Celery, MCP or Redis.

compose        settings → a ready `Service` (the one composition function); settings: the one settings object
service        the use-case layer every edge calls (MCP tools, CLI, worker tasks, hooks)
domain         validated inputs and their schemas, the frozen records the store hands out, scoring, a memory's text
text           Chinese and English tokenization, a text's token cost, dates
store          the schema and every SQL statement (SQLite or PostgreSQL)
search         one ranking over a candidate source: in-memory indexes or PostgreSQL's, fusion, hits
embedding      embedders (local e5, HTTP, none) and the one vector normalization
inject         the blocks injected at session start and each turn
dream          the dream stages, named once in a registry, each with its store code and kernel
llm            the dream's LLM client and token budget
attention      retrieval hits logged, and the heatmap of where they land
importing      session files (Hermes, Claude Code, Codex, JSONL) read into turns
errors         the one error hierarchy; numeric: numpy on first use; ingest: embedding pending rows
"""

__all__ = [
    "attention",
    "compose",
    "domain",
    "dream",
    "embedding",
    "errors",
    "importing",
    "ingest",
    "inject",
    "llm",
    "numeric",
    "search",
    "service",
    "settings",
    "store",
    "text",
]
