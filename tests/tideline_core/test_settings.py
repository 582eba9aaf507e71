"""Settings come from the documented environment names only; a user's shell variables are left alone."""

from __future__ import annotations

import pytest

from tideline_core.errors import ConfigurationError
from tideline_core.settings import Settings, is_loopback

SHELL = {"HOME": "/home/someone", "AGENT": "shell-agent", "HTTP_PORT": "1", "LOG_LEVEL": "DEBUG", "EMBEDDER": "none"}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for name in list(os.environ):
        if name.startswith("TIDELINE_") or name in ("MEMORY_MCP_DB", "AGENT_NAME", "KNOWN_PERSONS"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_the_data_dir_is_tideline_under_home_and_bare_field_names_are_not_read(clean_env: pytest.MonkeyPatch) -> None:
    for name, value in SHELL.items():
        clean_env.setenv(name, value)
    settings = Settings()
    assert str(settings.home) == "/home/someone/.tideline"
    assert settings.resolved_database_url == "sqlite:////home/someone/.tideline/memory.db"
    assert (settings.agent, settings.http_port, settings.log_level, settings.embedder) == (
        "default",
        8765,
        "INFO",
        "local",
    )


def test_the_tideline_names_and_the_seed_names_are_read(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("TIDELINE_HOME", "/srv/tl")
    clean_env.setenv("TIDELINE_HTTP_PORT", "9000")
    clean_env.setenv("AGENT_NAME", "hermes")
    clean_env.setenv("MEMORY_MCP_DB", "/srv/old/memory.db")
    clean_env.setenv("EMBEDDING_API_URL", "http://embed.local/embed_batch")
    settings = Settings()
    assert (str(settings.home), settings.http_port, settings.agent) == ("/srv/tl", 9000, "hermes")
    assert settings.resolved_database_url == "sqlite:////srv/old/memory.db"
    assert settings.embedding_url == "http://embed.local/embed_batch"


def test_keyword_arguments_use_the_field_names(clean_env: pytest.MonkeyPatch) -> None:
    settings = Settings(home="/tmp/x", agent="alice", http_port=1)
    assert (str(settings.home), settings.agent, settings.http_port) == ("/tmp/x", "alice", 1)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("127.255.0.9", True), ("::1", True), ("[::1]", True),
     ("localhost", True), ("0.0.0.0", False), ("::", False), ("192.168.1.20", False), ("127.0.0.1.nip.io", False)],
)  # fmt: skip
def test_every_loopback_address_is_loopback_and_nothing_else_is(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_malformed_token_list_is_a_configuration_error_naming_the_setting() -> None:
    with pytest.raises(ConfigurationError, match="TIDELINE_HTTP_TOKENS"):
        Settings(http_tokens="no-agent-here").http_token_map()
