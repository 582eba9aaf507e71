"""Tideline's domain library: memories stored, searched and digested; imports no Celery, MCP or Redis.

compose        settings → a ready `Service` (the one composition function)
service        the use-case layer every edge calls (MCP tools, CLI, worker tasks, hooks)
inputs         validated inputs at the boundary; records: the frozen values the store hands out
store          the schema and every SQL statement (SQLite or PostgreSQL)
search         keyword and vector indexes, fusion, the hybrid searcher
embedding      embedders (local e5, HTTP, none) and the one vector normalization
dream          the dream stages, named once in a registry, each with its store code and kernel
attention      retrieval hits logged, and the heatmap of where they land
memory_text    what each consumer reads of a narrative or a turn, defined once
scoring        weight, recurrence and anti-inflation, defined once
tokens         Chinese and English tokenization; errors, settings, timeutil: as named
"""

__all__ = [
    "attention",
    "compose",
    "dream",
    "embedding",
    "errors",
    "inputs",
    "memory_text",
    "records",
    "scoring",
    "search",
    "service",
    "settings",
    "store",
    "timeutil",
    "tokens",
]
