"""TidelineMemoryProvider: Tideline as a Hermes Agent memory provider (`memory.provider: tideline`).

Hermes' `MemoryProvider` contract (agent/memory_provider.py), hook by hook, over `TidelineProvider`.
Hermes is not a dependency: inside a Hermes process the class subclasses Hermes' own base (its
loaders check for it), elsewhere it stands alone with the same methods.

Reads work in every agent context. Automatic writes (turns, transcripts, delegations) happen only
in the primary context, as the contract asks: a cron job's or a memory flush's synthetic
conversation is not the user's. Deliberate writes (the `tideline_remember` tool, mirrored writes
of Hermes' built-in memory tool) are kept in every context.

A bad input never raises into Hermes: a hook logs what was refused (the field and the rule) and
returns its empty answer; a tool answers `{"error", "field", "rule"}`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from tideline_core.compose import build_embedder
from tideline_core.domain.inputs import MAX_GESTURE, MAX_QUERY, NarrativeIn, parse
from tideline_core.errors import InvalidInput, TidelineError
from tideline_core.settings import Settings
from tideline_provider import hermes_tools
from tideline_provider.provider import TidelineProvider

log = logging.getLogger(__name__)
T = TypeVar("T")

NAME = "tideline"
WRITING_CONTEXTS = ("primary",)  # Hermes' agent_context values whose conversation is stored
MIRROR_IMPORTANCE = 4  # an entry Hermes' memory tool saved was chosen to be kept for good
SHUTDOWN_WAIT = 5.0  # seconds a warm-up may take to finish before the database closes under it
TOOLS_HINT = (
    "Your long-term memory is Tideline: memories bearing on each message are recalled for you in "
    "<memory-context>; `tideline_search` finds more (memories and past conversations), "
    "`tideline_remember` keeps a moment worth remembering. Conversations are kept on their own."
)


def _hermes_base() -> type:
    """Hermes' MemoryProvider when this runs inside Hermes (its loaders accept only its subclasses), else object."""
    # By name: Hermes is the host that loads this module, never a dependency of the package.
    try:
        module = importlib.import_module("agent.memory_provider")
    except ImportError:
        return object
    base = getattr(module, "MemoryProvider", None)
    return base if isinstance(base, type) else object


if TYPE_CHECKING:
    _Base = object
else:
    _Base = _hermes_base()


class TidelineMemoryProvider(_Base):
    """Tideline for Hermes Agent; built with no arguments (Hermes' loaders do), configured by TIDELINE_* variables.

    `settings` replaces the environment's (for embedding the provider in code and in tests).
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self._settings = settings
        self._memory: TidelineProvider | None = None
        self._failure = "not initialized: Hermes calls initialize() first"
        self._session_id = ""
        self._writes = True
        self._turn = 0
        self._warming: threading.Thread | None = None
        self._warm_lock = threading.Lock()

    # -- required ------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return NAME

    def is_available(self) -> bool:
        """Whether the settings can work (no network, no database opened)."""
        return not self.unavailable_reason()

    def unavailable_reason(self) -> str:
        """Why `is_available()` is False, for the user; "" when it is True."""
        try:
            settings = self._settings or Settings()
            settings.tier_budgets()
            build_embedder(settings)
        except (ValidationError, TidelineError) as exc:
            return f"Tideline settings do not work: {exc}"
        if not _writable(settings.home):
            return f"TIDELINE_HOME {settings.home} cannot be created or written to"
        return ""

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Open memory for this session: the agent is TIDELINE_AGENT, else Hermes' profile name, else the
        default agent every other entry point uses."""
        if self._memory is not None:
            self.shutdown()
        self._session_id = str(session_id or "")
        self._turn = 0
        context = str(kwargs.get("agent_context") or "primary")
        self._writes = context in WRITING_CONTEXTS
        try:
            settings = self._settings or Settings()
            agent = settings.agent if "agent" in settings.model_fields_set else _profile(kwargs, settings.agent)
            self._memory = TidelineProvider(agent, settings=settings, session_id=self._session_id)
        # Hermes runs on without memory when a provider fails to start: say why, once, and stay inert.
        except Exception as exc:
            self._failure = f"could not start: {type(exc).__name__}: {exc}"
            log.exception("tideline %s", self._failure)
            return
        log.info(
            "tideline memory for agent %r, session %r, %s context (%s)",
            agent,
            self._session_id,
            context,
            "conversation stored" if self._writes else "conversation not stored",
        )
        self._start_warming("")

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return hermes_tools.schemas()

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """The tool's answer as JSON, always: an error is `{"error": ..., "field": ..., "rule": ...}`."""
        memory = self._memory
        if memory is None:
            return json.dumps({"error": f"Tideline memory is unavailable ({self._failure})"})
        try:
            return hermes_tools.call(memory, tool_name, args)
        except InvalidInput as exc:
            return json.dumps(
                {"error": f"invalid input: {exc.field}: {exc.rule}", "field": exc.field, "rule": exc.rule}
            )
        except TidelineError as exc:
            return json.dumps({"error": str(exc)})
        # The contract is a JSON answer for every call: anything else is logged in full and answered too.
        except Exception as exc:
            log.exception("tideline tool %s failed", tool_name)
            return json.dumps({"error": f"{type(exc).__name__}: {exc}"})

    # -- optional hooks ------------------------------------------------------------------------------
    def system_prompt_block(self) -> str:
        """The session-start block (who the agent is, what weighed most, where the last conversation left off,
        the memory map), then how to use the tools; "" without memory."""
        if self._memory is None:
            return ""
        block = self._call("system_prompt_block", "", lambda m: m.system_prompt_block(session_id=self._session_id))
        return f"{block}\n{TOOLS_HINT}" if block else TOOLS_HINT

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """This turn's memories for the user's message (a long one by its last 2,000 characters); "" for none."""
        if not isinstance(query, str) or not query.strip():
            return ""
        session = str(session_id or self._session_id)
        return self._call("prefetch", "", lambda m: m.prefetch(query[-MAX_QUERY:], session_id=session))

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """Warm the next prefetch on a thread of its own and return at once (see `TidelineProvider.warm`)."""
        if isinstance(query, str) and query.strip():
            self._start_warming(query[-MAX_QUERY:])

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        """Store the finished turn's two messages verbatim (the worker embeds them); `messages` is not read: the
        turn's tool calls and results are not kept."""
        if self._writes:
            session = str(session_id or self._session_id)
            self._call("sync_turn", None, lambda m: m.sync_turn(user_content, assistant_content, session_id=session))

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """Nothing to store yet: a turn is stored once it is complete (`sync_turn`)."""
        self._turn = turn_number if isinstance(turn_number, int) else self._turn + 1
        log.debug("tideline: turn %d of session %r", self._turn, self._session_id)

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """Store what the session said that no turn sync stored."""
        if self._writes:
            self._call(
                "on_session_end", None, lambda m: m.on_session_end(_messages(messages), session_id=self._session_id)
            )

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        """Follow Hermes to the new session id. After a compression (`reason="compression"`) the new session
        continues the old one's conversation, so the messages carried over are not stored twice; a rewind
        keeps what was stored (memories are never deleted)."""
        new = str(new_session_id or "")
        if self._memory is not None and kwargs.get("reason") == "compression" and not reset:
            self._memory.continue_session(new, str(parent_session_id or self._session_id))
        self._session_id = new
        if reset:
            self._turn = 0

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        """Store the messages about to be compressed away; return the heavy memories they bear on, for the summary."""
        transcript = _messages(messages)
        if self._writes:
            return self._call(
                "on_pre_compress", "", lambda m: m.on_pre_compress(transcript, session_id=self._session_id)
            )
        return self._call("on_pre_compress", "", lambda m: m.rescue(transcript))

    def on_memory_write(self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None) -> None:
        """Mirror an entry Hermes' built-in memory tool added or replaced as a narrative memory tagged
        `hermes-memory` and its target (`user` or `memory`); a removal is not mirrored (memories are never deleted).

        Narratives, not profiles: the built-in memory is a list of separate entries, and a profile keeps one text
        per entity and kind, so each entry would overwrite the last. The same entry again is stored once.
        """
        if action not in ("add", "replace"):
            log.info("tideline does not mirror a built-in memory %r: memories are kept", action)
            return
        self._call(
            "on_memory_write",
            None,
            lambda m: m.service.write_narrative(m.agent, _mirrored(target, content), key=_mirror_key(target, content)),
        )

    def on_delegation(self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any) -> None:
        """Store the delegated task and the subagent's answer as one turn of this session."""
        if self._writes:
            child = str(child_session_id or "")
            self._call(
                "on_delegation",
                None,
                lambda m: m.on_delegation(task, result, child_session_id=child, session_id=self._session_id),
            )

    def shutdown(self) -> None:
        """Let a warm-up in flight finish (briefly), then close the database and the broker connection."""
        memory, self._memory = self._memory, None
        self._failure = "shut down"
        warming = self._warming
        if warming is not None:
            warming.join(SHUTDOWN_WAIT)
        if memory is not None:
            memory.close()

    # -- helpers -------------------------------------------------------------------------------------
    def _call(self, hook: str, default: T, call: Callable[[TidelineProvider], T]) -> T:
        """`call` on the open memory; a refused input (or Tideline's own error) is logged and `default` returned.

        Without memory (not initialized, failed to start, shut down) it returns `default` at once.
        """
        memory = self._memory
        if memory is None:
            log.debug("tideline %s skipped: %s", hook, self._failure)
            return default
        try:
            return call(memory)
        except InvalidInput as exc:
            log.warning("tideline %s refused its input: %s: %s", hook, exc.field, exc.rule)
        except TidelineError as exc:
            log.warning("tideline %s failed: %s", hook, exc)
        return default

    def _start_warming(self, query: str) -> None:
        memory = self._memory
        if memory is None:
            return
        with self._warm_lock:
            if self._warming is not None and self._warming.is_alive():
                return  # one at a time: the one running warms the model and the indexes too
            self._warming = threading.Thread(
                target=_warm, args=(memory, query), name="tideline-hermes-warm", daemon=True
            )
            self._warming.start()


def _warm(memory: TidelineProvider, query: str) -> None:
    # A thread's last stop: a warm-up that fails costs only speed, so it is logged and the thread ends.
    try:
        memory.warm(query)
    except Exception:
        log.warning("tideline warm-up failed (the next recall may be slower)", exc_info=True)


def _profile(kwargs: Mapping[str, Any], default: str) -> str:
    identity = kwargs.get("agent_identity")
    return identity.strip() if isinstance(identity, str) and identity.strip() else default


def _messages(messages: Any) -> Sequence[Mapping[str, Any]]:
    """A transcript Hermes handed over, or nothing when it is not a list of messages."""
    if isinstance(messages, Sequence) and not isinstance(messages, str | bytes):
        return messages
    if messages is not None:
        log.warning("tideline ignored a transcript that is not a list of messages (%s)", type(messages).__name__)
    return ()


def _mirrored(target: str, content: str) -> NarrativeIn:
    """The narrative for one built-in memory entry: the entry as the gesture (whole, in context, if longer)."""
    if not isinstance(content, str):
        raise InvalidInput("content", f"must be a string, got {type(content).__name__}")
    text = content.strip()
    gesture = text if len(text) <= MAX_GESTURE else text[: MAX_GESTURE - 1] + "…"
    tags = ["hermes-memory", *([target.strip()] if isinstance(target, str) and target.strip() else [])]
    return parse(
        NarrativeIn,
        {
            "gesture": gesture,
            "context": text if gesture != text else "",
            "narrative_type": "other",
            "importance": MIRROR_IMPORTANCE,
            "unresolved": 1,
            "tags": tags,
        },
    )


def _mirror_key(target: str, content: str) -> str:
    digest = hashlib.sha256(f"{target}\x1f{content}".encode()).hexdigest()
    return f"hermes-memory-{digest[:40]}"


def _writable(home: Path) -> bool:
    """Whether `home` is a writable directory, or could be made one (its nearest existing ancestor is)."""
    for folder in (home, *home.parents):
        if folder.exists():
            return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)
    return False
