"""The one composition function: settings in, a ready `Service` out (store, embedder, searcher, stages).

Every process builds its service here: the MCP server, the CLI, each worker process, the
evaluation. Settings are read by the composition roots that call this, and by nothing below it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from tideline_core.dream.contract import StageContext
from tideline_core.embedding import Embedder, HttpEmbedder, LocalE5Embedder, NoEmbedder
from tideline_core.errors import ConfigurationError
from tideline_core.inject.setup import InjectSetup
from tideline_core.inject.tiers import InjectRules
from tideline_core.search.cold import ColdSearch
from tideline_core.search.hits import Searcher
from tideline_core.service import JobQueue, Service
from tideline_core.settings import Settings
from tideline_core.store.database import Database

if TYPE_CHECKING:
    from tideline_core.llm import ChatLLM
    from tideline_core.search.hybrid import HybridSearch
    from tideline_core.search.warming import WarmingSearch


def build_embedder(settings: Settings) -> Embedder:
    """The embedder the settings ask for; HTTP without a URL is a ConfigurationError."""
    if settings.embedder == "none":
        return NoEmbedder()
    if settings.embedder == "http":
        if not settings.embedding_url:
            raise ConfigurationError("TIDELINE_EMBEDDER=http needs TIDELINE_EMBEDDING_URL (or EMBEDDING_API_URL)")
        return HttpEmbedder(
            settings.embedding_url,
            api_key=settings.embedding_api_key,
            model=settings.embedding_model,
            timeout=settings.embedding_timeout,
        )
    return LocalE5Embedder(settings.model_cache, threads=settings.embed_threads)


def compose(
    settings: Settings,
    *,
    jobs: JobQueue,
    embedder: Embedder | None = None,
    database: Database | None = None,
    migrate: bool = True,
    llm: ChatLLM | Literal["settings"] | None = "settings",
    cold: bool = False,
    warming: bool = False,
) -> Service:
    """The service for `settings`, handing derived work to `jobs`.

    Opens the database (migrating it unless `migrate` is False, as the workers do: the process
    that starts them migrates first) unless one is given, and builds the embedder the settings
    name unless one is given. The model itself loads on the first embedding, not here. The dream's
    LLM is the one the settings name (none when TIDELINE_LLM_URL or _MODEL is unset) unless `llm` is given.

    `cold`: the service of a process that answers once and exits (`tideline hook` without a server):
    no embedder (`embedder` is not used), and search by keyword over the store's own index rather
    than in-memory indexes that would be built for a single query: SQLite's FTS5 tables (`ColdSearch`),
    PostgreSQL's BM25 tsvectors (`pg_source`, which keeps no per-agent state anyway).

    `warming`: the service of a long-running process (a server, a runtime's provider) on SQLite, whose
    in-memory indexes of an agent are built on a thread of their own (`Service.warm_up`, or the agent's
    first search) while its searches are answered from the store's full-text index (`search.warming`).
    Without it the first search of an agent builds them, and waits. PostgreSQL has none to build.
    """
    db = database or Database.open(settings.resolved_database_url, run_migrations=migrate)
    try:
        require_vectors(db)
    except ConfigurationError:
        if database is None:
            db.close()
        raise
    extracts = settings.dream_extracts_in_search
    if cold and db.dialect == "postgresql":
        from tideline_core.search import pg_source

        searcher: Searcher = pg_source.searcher(db, NoEmbedder(), extracts=extracts)
    elif cold:
        searcher = ColdSearch(db, extracts=extracts)
    else:
        timeout = settings.query_embedding_timeout
        searcher = searcher_for(
            db,
            embedder or build_embedder(settings),
            query_timeout=timeout,
            extracts=extracts,
            ef_search=settings.pg_ef_search,
            warming=warming,
        )
    active = searcher.embedder
    return Service(
        db=db,
        searcher=searcher,
        jobs=jobs,
        stages=StageContext(
            db=db,
            embedder=None if isinstance(active, NoEmbedder) else active,
            known_persons=settings.known_person_aliases(),
            llm=dream_llm(settings) if llm == "settings" else llm,
            llm_run_tokens=settings.llm_run_tokens,
            llm_day_tokens=settings.llm_day_tokens,
            review=settings.dream_review,
        ),
        query_timeout=settings.query_embedding_timeout,
        inject=inject_setup(settings),
    )


def dream_llm(settings: Settings) -> ChatLLM | None:
    """The LLM the settings name for the dream; None without one, and then its client is not even imported."""
    if not settings.llm_enabled:
        return None
    from tideline_core.llm import llm_from_settings

    return llm_from_settings(settings)


def require_vectors(db: Database) -> None:
    """PostgreSQL is a store only with pgvector in it (`pg_vectors.require`); SQLite needs nothing."""
    if db.dialect == "postgresql":
        from tideline_core.store import pg_vectors  # a SQLite process (the hook's) never loads it

        with db.read() as conn:
            pg_vectors.require(conn)


def searcher_for(
    db: Database, embedder: Embedder, *, query_timeout: float, extracts: bool, ef_search: int, warming: bool = False
) -> HybridSearch | WarmingSearch:
    """The ranking over PostgreSQL's own indexes (with pgvector, `require_vectors`; no per-agent state in the
    process), or over in-memory indexes of a SQLite store (built on a thread of their own when `warming`)."""
    if db.dialect == "postgresql":
        from tideline_core.search import pg_source  # only a PostgreSQL process loads it

        return pg_source.searcher(db, embedder, query_timeout=query_timeout, extracts=extracts, ef_search=ef_search)
    if warming:
        from tideline_core.search import warming as warm

        return warm.searcher(db, embedder, query_timeout=query_timeout, extracts=extracts)
    from tideline_core.search import memory_source  # the in-memory indexes: never loaded by a cold process

    return memory_source.searcher(db, embedder, query_timeout=query_timeout, extracts=extracts)


def inject_setup(settings: Settings) -> InjectSetup:
    """The injection rules the settings ask for."""
    budgets = settings.tier_budgets()
    rules = InjectRules(
        session_budget=settings.inject_session_budget,
        turn_budget=settings.inject_turn_budget,
        t1_limit=settings.inject_t1_limit,
        t2_min_weight=settings.inject_t2_min_weight,
        t2_days=settings.inject_t2_days,
        t2_keep=settings.inject_t2_keep,
        t2b_turns=settings.inject_t2b_turns,
        t2b_chars=settings.inject_t2b_chars,
        t3_topics=settings.inject_t3_topics,
        **{f"{tier.lower()}_budget": tokens for tier, tokens in budgets.items()},
    )
    return InjectSetup(rules=rules, soul_path=settings.soul_path, home=settings.home)
