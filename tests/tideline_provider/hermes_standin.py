"""A stand-in for Hermes Agent's memory plumbing, written from ../shared/reference/runtimes.md ("Hermes Agent").

Hermes is not installable here. This calls a provider the way its MemoryManager does: loaded
through the `hermes_agent.memory_providers` entry point or a `$HERMES_HOME/plugins/<name>/` directory
(`register(ctx)`), `initialize(session_id, hermes_home=..., platform=..., ...)`, the system prompt
block once, and per turn `on_turn_start`, `prefetch` on a daemon thread joined with an 8 s timeout
(on a timeout the turn gets "" and the provider is skipped until the call returns; the result is
appended to the user's message inside `<memory-context>`), then `sync_turn` and `queue_prefetch` on
one FIFO worker thread. Keyword arguments such as `messages=` are passed only when the method's
signature accepts them; every exception a provider raises is logged and ignored, and kept in
`failures` so a test can tell a provider that answered from one that raised.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import logging
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

log = logging.getLogger("hermes-standin")

ENTRY_POINTS_GROUP = "hermes_agent.memory_providers"
PREFETCH_TIMEOUT = 8.0
DRAIN_TIMEOUT = 5.0


class PluginContext:
    """What `register(ctx)` is given: it keeps the memory provider the plugin registers."""

    def __init__(self) -> None:
        self.provider: Any = None

    def register_memory_provider(self, provider: Any) -> None:
        self.provider = provider


def load_from_entry_point(name: str) -> Any:
    """The provider the installed entry point named `name` gives: an instance, a class, or a module with register."""
    (entry,) = [ep for ep in entry_points(group=ENTRY_POINTS_GROUP) if ep.name == name]
    loaded = entry.load()
    if inspect.isclass(loaded):
        return loaded()
    if hasattr(loaded, "register"):
        ctx = PluginContext()
        loaded.register(ctx)
        return ctx.provider
    return loaded


def load_from_plugin_dir(hermes_home: Path, name: str) -> Any:
    """Import `$HERMES_HOME/plugins/<name>/__init__.py` by path, under a name of its own, and run its register."""
    init = hermes_home / "plugins" / name / "__init__.py"
    # Hermes picks memory plugins out of the plugins folder by this text, without importing them.
    if "register_memory_provider" not in init.read_text(encoding="utf-8"):
        return None
    module_name = f"_hermes_user_memory_standin.{name}"
    spec = importlib.util.spec_from_file_location(module_name, init, submodule_search_locations=[str(init.parent)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(module_name, None)
    ctx = PluginContext()
    module.register(ctx)
    return ctx.provider


def accepts(method: Callable[..., Any], keyword: str) -> bool:
    """Whether `method` can take `keyword` (by name or through **kwargs)."""
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return True
    return keyword in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


class MemoryManager:
    """One external memory provider, called as Hermes calls it."""

    def __init__(self, provider: Any, *, prefetch_timeout: float = PREFETCH_TIMEOUT) -> None:
        self.provider = provider
        self.prefetch_timeout = prefetch_timeout
        self.session_id = ""
        self.failures: list[str] = []  # "hook: ExceptionType: message", for every exception the provider raised
        self.timeouts = 0
        self.tools: dict[str, Any] = {}
        self._prefetching: threading.Thread | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mem-sync")
        self._pending: list[Future[Any]] = []

    # -- calling the provider --------------------------------------------------------------------
    def _call(self, hook: str, *args: Any, default: Any = None, **optional: Any) -> Any:
        method = getattr(self.provider, hook, None)
        if method is None:
            return default
        kwargs = {key: value for key, value in optional.items() if accepts(method, key)}
        try:
            return method(*args, **kwargs)
        except Exception as exc:  # Hermes logs a provider's exception and goes on
            self.failures.append(f"{hook}: {type(exc).__name__}: {exc}")
            log.warning("memory provider %s %s failed: %s", self.provider.name, hook, exc)
            return default

    def _background(self, hook: str, *args: Any, **optional: Any) -> None:
        self._pending.append(self._worker.submit(self._call, hook, *args, **optional))

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self, session_id: str, **kwargs: Any) -> bool:
        """is_available, then initialize and the tool schemas; False when the provider is not available."""
        if not self._call("is_available", default=False):
            return False
        self.session_id = session_id
        self._call("initialize", session_id, **kwargs)
        for schema in self._call("get_tool_schemas", default=[]) or []:
            self.tools[schema["name"]] = schema
        return True

    def system_prompt(self) -> str:
        return str(self._call("system_prompt_block", default="") or "")

    def prefetch(self, query: str) -> str:
        """The provider's recall on a daemon thread, waited for at most the timeout ("" after it)."""
        if self._prefetching is not None and self._prefetching.is_alive():
            return ""  # still stuck in an earlier turn's call: skipped
        box: dict[str, Any] = {}

        def run() -> None:
            box["value"] = self._call("prefetch", query, default="", session_id=self.session_id)

        self._prefetching = threading.Thread(target=run, name="memory-prefetch", daemon=True)
        self._prefetching.start()
        self._prefetching.join(self.prefetch_timeout)
        if self._prefetching.is_alive():
            self.timeouts += 1
            return ""
        return str(box.get("value") or "")

    def turn(self, number: int, user: str, reply: str, messages: list[dict[str, Any]]) -> tuple[str, float]:
        """One turn: the user's message as the model sees it (recall appended) and how long the recall took."""
        self._call("on_turn_start", number, user, remaining_tokens=100_000, model="stand-in", platform="cli")
        started = time.monotonic()
        recalled = self.prefetch(user)
        took = time.monotonic() - started
        seen = f"{user}\n\n<memory-context>\n{recalled}\n</memory-context>" if recalled.strip() else user
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
        self._background("sync_turn", user, reply, session_id=self.session_id, messages=list(messages))
        self._background("queue_prefetch", user, session_id=self.session_id)
        return seen, took

    def call_tool(self, name: str, args: Any) -> str:
        if name not in self.tools:
            return json.dumps({"error": f"unknown tool {name}"})
        answer = self._call("handle_tool_call", name, args, default=None)
        return answer if isinstance(answer, str) else json.dumps({"error": f"{name} failed"})

    def pre_compress(self, messages: list[dict[str, Any]]) -> str:
        return str(self._call("on_pre_compress", messages, default="") or "")

    def switch_session(self, new_session_id: str, **kwargs: Any) -> None:
        self.session_id = new_session_id
        self._call("on_session_switch", new_session_id, **kwargs)

    def memory_write(self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None) -> None:
        self._call("on_memory_write", action, target, content, metadata=metadata)

    def delegation(self, task: str, result: str, child_session_id: str) -> None:
        self._call("on_delegation", task, result, child_session_id=child_session_id)

    def end_session(self, messages: list[dict[str, Any]]) -> None:
        self._call("on_session_end", messages)

    def drain(self) -> None:
        """Wait for the FIFO worker's queued syncs and prefetch warm-ups."""
        for future in self._pending:
            future.result(timeout=DRAIN_TIMEOUT)
        self._pending.clear()

    def shutdown(self) -> None:
        self.drain()
        self._worker.shutdown(wait=True)
        self._call("shutdown")
