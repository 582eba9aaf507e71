"""Tideline as a Hermes Agent memory provider, driven by a stand-in for Hermes' MemoryManager (hermes_standin.py).

The provider is loaded the way Hermes loads it (the installed entry point, or the plugin directory),
configured only by TIDELINE_* variables, and a real worker embeds what it stores.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hermes_standin import PREFETCH_TIMEOUT, MemoryManager, load_from_entry_point, load_from_plugin_dir
from provider_helpers import all_embedded, turns_of
from sqlalchemy import select

from tideline_core.compose import compose
from tideline_core.domain.inputs import AmendmentIn, NarrativeIn
from tideline_core.embedding import NoEmbedder
from tideline_core.service import NullJobQueue
from tideline_core.settings import DEFAULT_AGENT, Settings
from tideline_core.store.database import Database
from tideline_core.store.schema import Narrative
from tideline_provider.hermes import TidelineMemoryProvider
from tideline_provider.hermes_plugin import install_plugin_dir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hermes_home(settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A user's environment for Hermes: TIDELINE_* naming this test's store and Redis, and a HERMES_HOME."""
    for name in list(os.environ):
        if name.startswith("TIDELINE_") and name not in ("TIDELINE_MODEL_CACHE",) and "_TEST_" not in name:
            monkeypatch.delenv(name)
    monkeypatch.delenv("AGENT_NAME", raising=False)
    monkeypatch.setenv("TIDELINE_HOME", str(settings.home))
    monkeypatch.setenv("TIDELINE_REDIS_URL", str(settings.redis_url))
    monkeypatch.setenv("TIDELINE_EMBEDDER", "local")
    if settings.database_url:
        monkeypatch.setenv("TIDELINE_DATABASE_URL", settings.database_url)
    home = tmp_path / "hermes-home"
    home.mkdir()
    return home


def hermes_kwargs(home: Path, **overrides: Any) -> dict[str, Any]:
    """What Hermes passes to initialize for the CLI's primary agent of profile `coder`."""
    return {
        "hermes_home": str(home),
        "platform": "cli",
        "agent_context": "primary",
        "agent_identity": "coder",
        "agent_workspace": "hermes",
        **overrides,
    }


def narratives_of(db: Database, agent: str) -> list[str]:
    with db.read() as conn:
        rows = conn.execute(select(Narrative.gesture).where(Narrative.agent_id == agent).order_by(Narrative.id))
        return [gesture for (gesture,) in rows]


def test_a_fact_told_in_one_turn_comes_back_by_meaning_in_a_later_turns_recall_well_inside_the_cutoff(
    hermes_home: Path, database: Database, celery_worker: Any, wait_until: Any
) -> None:
    hermes = MemoryManager(load_from_entry_point("tideline"))
    assert hermes.start("s1", **hermes_kwargs(hermes_home))
    prompt = hermes.system_prompt()
    messages: list[dict[str, Any]] = []
    told = "My sister Lena is getting married in June in Porto"
    _, first_took = hermes.turn(1, told, "Congratulations! June in Porto sounds lovely.", messages)
    hermes.drain()
    wait_until(lambda: all_embedded(database, "coder"), timeout=60, message="the worker embedded the turn")
    seen, later_took = hermes.turn(2, "a family celebration abroad this summer", "Lena's wedding, yes.", messages)
    hermes.shutdown()

    assert "<memory-context>" in seen and told in seen, "found by meaning: no word of the question is in it"
    assert max(first_took, later_took) < PREFETCH_TIMEOUT / 2 and hermes.timeouts == 0
    assert "tideline_search" in prompt and "tideline_remember" in prompt
    assert [(s, r) for s, r, _ in turns_of(database, "coder")] == [("s1", "user"), ("s1", "assistant")] * 2
    assert hermes.failures == []


def test_each_message_is_stored_once_whichever_hooks_see_it_and_across_a_compression(
    hermes_home: Path, database: Database
) -> None:
    hermes = MemoryManager(load_from_entry_point("tideline"))
    assert hermes.start("s1", **hermes_kwargs(hermes_home))
    messages: list[dict[str, Any]] = []
    hermes.turn(1, "The oven thermostat is broken again", "I'll note it for the repair call.", messages)
    hermes.turn(2, "Call the repair shop on Monday", "Monday it is.", messages)
    hermes.drain()
    hermes.pre_compress(messages)
    # Hermes compresses into a new session that continues the conversation.
    hermes.switch_session("s2", parent_session_id="s1", reset=False, rewound=False, reason="compression")
    hermes.turn(3, "Did they confirm?", "Not yet.", messages)
    hermes.drain()
    messages.append({"role": "user", "content": "Then order more flour"})  # a turn cut short: never synced
    hermes.end_session(messages)
    hermes.shutdown()

    assert turns_of(database, "coder") == [
        ("s1", "user", "The oven thermostat is broken again"),
        ("s1", "assistant", "I'll note it for the repair call."),
        ("s1", "user", "Call the repair shop on Monday"),
        ("s1", "assistant", "Monday it is."),
        ("s2", "user", "Did they confirm?"),
        ("s2", "assistant", "Not yet."),
        ("s2", "user", "Then order more flour"),
    ]
    assert hermes.failures == []


def test_the_tools_always_answer_json_and_bad_arguments_name_the_field_and_the_rule_storing_nothing(
    hermes_home: Path, database: Database
) -> None:
    unstarted = TidelineMemoryProvider()
    assert "error" in json.loads(unstarted.handle_tool_call("tideline_search", {"query": "tiles"}))
    hermes = MemoryManager(load_from_entry_point("tideline"))
    assert hermes.start("s1", **hermes_kwargs(hermes_home))
    assert set(hermes.tools) == {"tideline_search", "tideline_remember"}
    written = json.loads(
        hermes.call_tool(
            "tideline_remember",
            {"gesture": "Ada chose the blue tiles for the bakery floor", "importance": 4, "tags": ["bakery"]},
        )
    )
    found = json.loads(hermes.call_tool("tideline_search", {"query": "blue tiles", "kinds": "narratives"}))
    bad = [
        ("tideline_remember", {"gesture": "A second memory", "importance": 9}, "importance"),
        ("tideline_remember", {"importance": 2}, "gesture"),
        ("tideline_remember", {"gesture": "A third memory", "colour": "red"}, "colour"),
        ("tideline_remember", {"gesture": "A fourth memory", "occurred_at": "last tuesday"}, "occurred_at"),
        ("tideline_search", {"query": "tiles", "limit": "many"}, "limit"),
        ("tideline_search", ["tiles"], "args"),
        ("tideline_forget", {"id": written["id"]}, "tool_name"),
    ]
    answers = [json.loads(hermes.provider.handle_tool_call(tool, args)) for tool, args, _ in bad]
    hermes.shutdown()

    assert found["hits"][0]["id"] == written["id"] and found["hits"][0]["text"].startswith("Ada chose the blue")
    assert [a.get("field") for a in answers] == [field for _, _, field in bad]
    assert all(a["rule"] and a["error"].startswith(f"invalid input: {a['field']}") for a in answers)
    assert len(narratives_of(database, "coder")) == 1, "no bad call stored anything"
    assert hermes.failures == []


def test_the_plugin_directory_hermes_scans_registers_a_working_provider(hermes_home: Path, database: Database) -> None:
    path = install_plugin_dir(hermes_home)
    again = install_plugin_dir(hermes_home)
    provider = load_from_plugin_dir(hermes_home, "tideline")
    hermes = MemoryManager(provider)
    assert hermes.start("s1", **hermes_kwargs(hermes_home))
    hermes.turn(1, "Remember the flour order is due Friday", "Friday, noted.", [])
    hermes.shutdown()

    assert path == again == hermes_home / "plugins" / "tideline" / "__init__.py"
    assert type(provider) is TidelineMemoryProvider and provider.name == "tideline"
    assert len(turns_of(database, "coder")) == 2 and hermes.failures == []


class Documented:
    """The hooks as runtimes.md documents Hermes' MemoryProvider (self included, as on the class)."""

    def is_available(self): ...
    def initialize(self, session_id: str, **kwargs): ...
    def get_tool_schemas(self): ...
    def handle_tool_call(self, tool_name, args, **kw): ...
    def system_prompt_block(self): ...
    def prefetch(self, query, *, session_id=""): ...
    def queue_prefetch(self, query, *, session_id=""): ...
    def sync_turn(self, user_content, assistant_content, *, session_id="", messages=None): ...
    def on_turn_start(self, turn_number, message, **kw): ...
    def on_session_end(self, messages): ...
    def on_session_switch(self, new_session_id, *, parent_session_id="", reset=False, rewound=False, **kw): ...
    def on_pre_compress(self, messages): ...
    def on_memory_write(self, action, target, content, metadata=None): ...
    def on_delegation(self, task, result, *, child_session_id="", **kw): ...
    def shutdown(self): ...


def shape(function: Any) -> list[tuple[str, Any, Any]]:
    """Each parameter's name (any name for **kwargs), kind and default."""
    return [
        ("**" if p.kind is p.VAR_KEYWORD else p.name, p.kind, p.default)
        for p in inspect.signature(function).parameters.values()
    ]


@pytest.mark.parametrize("hook", [name for name in vars(Documented) if not name.startswith("_")])
def test_every_hook_takes_the_arguments_hermes_passes_keyword_only_ones_included(hook: str) -> None:
    assert shape(getattr(TidelineMemoryProvider, hook)) == shape(getattr(Documented, hook))


def test_the_name_is_a_property_saying_tideline() -> None:
    assert isinstance(inspect.getattr_static(TidelineMemoryProvider, "name"), property)
    assert TidelineMemoryProvider().name == "tideline"


def test_inside_hermes_the_provider_is_a_subclass_of_hermes_own_base_so_its_loaders_accept_it(tmp_path: Path) -> None:
    # Hermes' agent/memory_provider.py in miniature: an ABC with the four abstract members.
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "__init__.py").write_text("")
    (tmp_path / "agent" / "memory_provider.py").write_text(
        textwrap.dedent(
            """
            from abc import ABC, abstractmethod

            class MemoryProvider(ABC):
                @property
                @abstractmethod
                def name(self): ...
                @abstractmethod
                def is_available(self): ...
                @abstractmethod
                def initialize(self, session_id, **kwargs): ...
                @abstractmethod
                def get_tool_schemas(self): ...
            """
        )
    )
    check = (
        "from importlib.metadata import entry_points\n"
        "from agent.memory_provider import MemoryProvider\n"
        "(ep,) = [e for e in entry_points(group='hermes_agent.memory_providers') if e.name == 'tideline']\n"
        "cls = ep.load()\n"
        "assert issubclass(cls, MemoryProvider) and isinstance(cls(), MemoryProvider)\n"
        "print(cls().name)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "tideline"


def test_a_cron_run_recalls_but_keeps_no_conversation_while_deliberate_writes_are_kept(
    hermes_home: Path, database: Database
) -> None:
    hermes = MemoryManager(load_from_entry_point("tideline"))
    assert hermes.start("cron-1", **hermes_kwargs(hermes_home, agent_context="cron", platform="cron"))
    messages: list[dict[str, Any]] = []
    hermes.turn(1, "Run the nightly sales report", "Report sent to Ada.", messages)
    hermes.drain()
    hermes.pre_compress(messages)
    hermes.delegation("Sum the day's receipts", "412 euros", child_session_id="cron-1-sub")
    hermes.memory_write("add", "user", "Ada wants the report before 8am")
    remembered = json.loads(hermes.call_tool("tideline_remember", {"gesture": "The sales report moved to 7am"}))
    hermes.end_session(messages)
    hermes.shutdown()

    assert turns_of(database, "coder") == []
    assert "id" in remembered
    assert narratives_of(database, "coder") == ["Ada wants the report before 8am", "The sales report moved to 7am"]
    assert hermes.failures == []


def test_hermes_builtin_memory_writes_are_kept_once_as_tagged_memories_and_a_removal_deletes_nothing(
    hermes_home: Path, database: Database
) -> None:
    hermes = MemoryManager(load_from_entry_point("tideline"))
    assert hermes.start("s1", **hermes_kwargs(hermes_home))
    hermes.memory_write("add", "user", "Ada takes her coffee black", {"write_origin": "tool", "session_id": "s1"})
    hermes.memory_write("add", "user", "Ada takes her coffee black")
    hermes.memory_write("replace", "memory", "The bakery opens at 7 on weekdays")
    hermes.memory_write("remove", "user", "Ada takes her coffee black")
    found = json.loads(hermes.call_tool("tideline_search", {"query": "coffee black", "kinds": "narratives"}))
    hermes.shutdown()

    assert narratives_of(database, "coder") == ["Ada takes her coffee black", "The bakery opens at 7 on weekdays"]
    assert found["hits"][0]["tags"] == ["hermes-memory", "user"]
    assert hermes.failures == []


def test_a_subagents_task_and_answer_are_kept_as_one_turn_of_the_parents_session(
    hermes_home: Path, database: Database
) -> None:
    hermes = MemoryManager(load_from_entry_point("tideline"))
    assert hermes.start("s1", **hermes_kwargs(hermes_home))
    hermes.delegation("Find three flour suppliers near Porto", "Moagem, Ceres, Nacional", child_session_id="s1-sub")
    hermes.shutdown()

    ((session, role, content),) = turns_of(database, "coder")
    assert (session, role) == ("s1", "tool")
    assert "Find three flour suppliers near Porto" in content and "Moagem, Ceres, Nacional" in content
    assert hermes.failures == []


def test_hooks_given_bad_input_log_what_they_refused_and_return_their_empty_answer(
    hermes_home: Path, database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    hermes = MemoryManager(load_from_entry_point("tideline"))
    assert hermes.start("s1", **hermes_kwargs(hermes_home))
    provider = hermes.provider
    with caplog.at_level(logging.WARNING, logger="tideline_provider"):
        _, took = hermes.turn(1, "x" * 200_000, "That is a long message.", [])
        hermes.drain()
        answers = [
            provider.prefetch(None),
            provider.prefetch("   "),
            provider.on_pre_compress([1, "two", {"role": "user"}, {"role": "user", "content": [{"type": "image"}]}]),
            provider.on_pre_compress("not a list"),
        ]
        provider.sync_turn(None, 5)
        provider.on_session_end(None)
        provider.on_memory_write("add", "user", 42)
        provider.on_delegation("Summarise the log", "y" * 200_000, child_session_id="s1-sub")
        provider.on_turn_start("one", "hello")
    hermes.shutdown()

    assert answers == ["", "", "", ""] and took < PREFETCH_TIMEOUT
    assert turns_of(database, "coder") == [] and narratives_of(database, "coder") == []
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert any("sync_turn" in r and "content" in r and "100000" in r for r in refusals), refusals
    assert any("on_memory_write" in r and "content" in r for r in refusals), refusals
    assert hermes.failures == []


def test_the_agent_is_tideline_agent_else_the_hermes_profile_else_the_default_agent_of_every_entry_point(
    hermes_home: Path, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    def remember_as(**kwargs: Any) -> None:
        hermes = MemoryManager(load_from_entry_point("tideline"))
        assert hermes.start("s1", **hermes_kwargs(hermes_home, **kwargs))
        hermes.call_tool("tideline_remember", {"gesture": "Who wrote this?"})
        hermes.shutdown()

    remember_as(agent_identity="")
    remember_as(agent_identity="baker")
    monkeypatch.setenv("TIDELINE_AGENT", "ada")
    remember_as(agent_identity="baker")

    assert [len(narratives_of(database, agent)) for agent in (DEFAULT_AGENT, "baker", "ada")] == [1, 1, 1]


def test_availability_is_a_settings_check_that_opens_no_database(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fresh = tmp_path / "fresh" / "tideline"
    monkeypatch.setenv("TIDELINE_HOME", str(fresh))
    provider = TidelineMemoryProvider()
    available = provider.is_available()
    monkeypatch.setenv("TIDELINE_EMBEDDER", "http")
    without_url = provider.unavailable_reason()
    monkeypatch.setenv("TIDELINE_EMBEDDER", "local")
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("TIDELINE_HOME", str(tmp_path / "a-file" / "tideline"))
    blocked = provider.unavailable_reason()

    assert available and not fresh.parent.exists(), "checking created nothing"
    assert "TIDELINE_EMBEDDING_URL" in without_url
    assert "cannot be created or written to" in blocked


def test_the_connecting_guide_documents_every_hook_and_tool_of_the_hermes_provider() -> None:
    guide = (ROOT / "docs" / "connecting.md").read_text(encoding="utf-8")
    section = guide[guide.index("### Hermes Agent") : guide.index("## Claude Code and Codex hooks")]
    names = [*(name for name in vars(Documented) if not name.startswith("_")), "hermes_agent.memory_providers"]
    tools = [schema["name"] for schema in TidelineMemoryProvider().get_tool_schemas()]
    assert [name for name in [*names, *tools, "install_plugin_dir"] if f"`{name}" not in section] == []


def test_a_memorys_latest_amendment_is_shown_with_it_in_the_turns_recall(
    hermes_home: Path, settings: Settings, database: Database
) -> None:
    service = compose(settings, jobs=NullJobQueue(), embedder=NoEmbedder(), database=database)
    [written] = service.write_narratives("coder", [NarrativeIn(gesture="The ferry timetable changes every Monday")])
    service.amend("coder", AmendmentIn(narrative_id=written.id, note="from March the Monday ferry leaves at 7"))
    hermes = MemoryManager(load_from_entry_point("tideline"))
    assert hermes.start("s1", **hermes_kwargs(hermes_home))
    seen, _ = hermes.turn(1, "When does the ferry timetable change?", "Let me check.", [])
    hermes.shutdown()
    line = next(line for line in seen.splitlines() if "changes every Monday" in line)
    assert "amended" in line and "from March the Monday ferry leaves at 7" in line, seen
