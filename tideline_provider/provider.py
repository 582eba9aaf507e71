"""TidelineProvider: a runtime's hooks (system prompt, prefetch, turn sync, pre-compression, session end) as calls.

Each hook parses its input, calls the service and formats the result, as the MCP tools do: a
write goes through the same validation, persistence and queued embedding. Turns are stored once
per conversation and content (an idempotency key made of their hash), so the same message reaching
`sync_turn`, `on_pre_compress` and `on_session_end` is kept once; a session that continues another
(`continue_session`, e.g. after a compression) is the same conversation.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from tideline_core.compose import compose
from tideline_core.domain.inputs import (
    MAX_CONVERSATION,
    MAX_LINE,
    ContextTurnIn,
    ConversationLine,
    InjectIn,
    PrefetchIn,
    SearchIn,
    parse,
)
from tideline_core.errors import InvalidInput
from tideline_core.service import Service
from tideline_core.settings import Settings
from tideline_core.text.tokens import initialize as load_tokenizer
from workers.jobqueue import CeleryJobQueue

log = logging.getLogger(__name__)

RESCUE = 3  # memories handed back before a compression
RESCUE_ABOVE_WEIGHT = 0.6  # above a default memory's weight
# A runtime's system prompt is its own configuration, not conversation: it is not stored.
ROLES = {"user": "user", "assistant": "assistant", "tool": "tool"}
DELEGATE = "subagent"  # the speaker of a delegated task's record


class TidelineProvider:
    """Memory for one agent, in the runtime's own process.

    `agent` defaults to `TIDELINE_AGENT`; `settings` to the environment's. The provider opens the
    database (migrating it if needed) and publishes to the configured Redis, so the ingest worker
    of `tideline up` embeds what it stores. Call `close()` (or use it as a context manager) at exit.
    Its methods may be called from several threads at once.
    """

    def __init__(
        self,
        agent: str | None = None,
        *,
        settings: Settings | None = None,
        session_id: str = "",
        service: Service | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.agent = agent or self.settings.agent
        self.session_id = session_id
        self._jobs: CeleryJobQueue | None = None
        if service is None:
            self.settings.ensure_home()
            self._jobs = CeleryJobQueue(self.settings)
            service = compose(self.settings, jobs=self._jobs, warming=True)
        self.service = service
        self._first_of: dict[str, str] = {}  # session id -> the session its conversation began in
        self._lock = threading.Lock()

    # -- reads -------------------------------------------------------------------------------------
    def system_prompt_block(self, *, session_id: str | None = None) -> str:
        """The session-start block (identity, what matters now, where the last conversation left off, memory map)."""
        request = parse(InjectIn, {"session_id": self._session(session_id)})
        return self.service.session_start(self.agent, request).text

    def prefetch(
        self, query: str, *, session_id: str | None = None, recent_turns: Sequence[Mapping[str, Any]] = ()
    ) -> str:
        """This turn's memories for `query` (and the conversation's recent lines, as `{speaker, text, role}`)."""
        request = parse(
            PrefetchIn,
            {"query": query, "conversation": list(recent_turns), "session_id": self._session(session_id)},
            names={"conversation": "recent_turns"},
        )
        return self.service.prefetch(self.agent, request).text

    def rescue(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The heavy memories (weight > 0.6, at most 3) the messages' spoken lines bear on, one per line."""
        spoken = [(role, text) for role, text in chat_pairs(messages) if role in ("user", "assistant")]
        if not spoken:
            return ""
        lines = [
            ConversationLine(speaker=role, text=text[:MAX_LINE], is_self=role == "assistant")
            for role, text in spoken[-MAX_CONVERSATION:]
        ]
        outcome = self.service.search(
            self.agent, SearchIn(conversation=lines, kinds="narratives", limit=10), source="compress"
        )
        heavy = sorted(
            (h for h in outcome.hits if (h.weight or 0) > RESCUE_ABOVE_WEIGHT), key=lambda h: -(h.weight or 0)
        )
        return "\n".join(f"- {h.occurred_at:%Y-%m-%d} {h.text}" for h in heavy[:RESCUE])

    def warm(self, query: str = "") -> None:
        """Make the next recall fast; returns when done (run it on a thread of its own).

        Loads the keyword tokenizer, starts loading the embedding model and building the agent's search
        indexes in the background (recalls meanwhile are answered from the store's full-text index); with
        a `query`, also brings the search indexes up to the rows stored since and embeds the query (a
        repeated question then costs no model pass). Recalls nothing: no attention is logged and
        nothing counts as shown.
        """
        load_tokenizer()
        start_loading = getattr(self.service.embedder, "warm_up", None)  # the local model has one
        if callable(start_loading):
            start_loading()
        self.service.warm_up(self.agent)
        if query.strip():
            # The searcher itself, not Service.search: that one logs the hits as attention, and a warm-up is no recall.
            self.service.searcher.search(self.agent, parse(SearchIn, {"query": query, "limit": 1}))

    # -- writes ------------------------------------------------------------------------------------
    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str | None = None) -> None:
        """Store a completed turn (the user's message and the reply) verbatim, each once.

        An empty side (a turn cut short) is left out; a message that breaks a rule (over 100,000
        characters, say) is refused with InvalidInput and neither is stored.
        """
        sides = [("user", user_content), ("assistant", assistant_content)]
        pairs = [(role, text) for role, text in sides if not isinstance(text, str) or text.strip()]
        self._store(pairs, self._session(session_id), strict=True)

    def on_pre_compress(self, messages: Sequence[Mapping[str, Any]], *, session_id: str | None = None) -> str:
        """Store the messages about to be compressed; return the heavy memories they touch, to keep in the summary."""
        self._store(chat_pairs(messages), self._session(session_id))
        return self.rescue(messages)

    def on_session_end(self, messages: Sequence[Mapping[str, Any]] = (), *, session_id: str | None = None) -> None:
        """Store what the session said that is not stored yet (each message once)."""
        self._store(chat_pairs(messages), self._session(session_id))

    def on_delegation(
        self, task: str, result: str, *, child_session_id: str = "", session_id: str | None = None
    ) -> None:
        """Store a task handed to a subagent and what came back, as one tool turn spoken by `subagent`."""
        text = f"Delegated to a subagent: {task}\n\nIts result: {result}"
        metadata = {"child_session_id": child_session_id} if child_session_id else {}
        self._store([("tool", text)], self._session(session_id), strict=True, speaker=DELEGATE, metadata=metadata)

    def continue_session(self, session_id: str, previous_session_id: str) -> None:
        """`session_id` continues `previous_session_id`'s conversation (a compression): its messages are stored once
        across both."""
        if session_id and previous_session_id and session_id != previous_session_id:
            with self._lock:
                self._first_of[session_id] = self._first_of.get(previous_session_id, previous_session_id)

    def close(self) -> None:
        if self._jobs is not None:
            self.service.close()
            self._jobs.close()

    def __enter__(self) -> TidelineProvider:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- helpers -----------------------------------------------------------------------------------
    def _session(self, session_id: str | None) -> str:
        return self.session_id if session_id is None else session_id

    def _store(
        self,
        pairs: Sequence[tuple[str, Any]],
        session_id: str,
        *,
        strict: bool = False,
        speaker: str = "",
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Store each (role, text) once. All are checked first: `strict`, one refused message refuses them all
        (InvalidInput, nothing stored); otherwise a refused message is logged and the others are stored."""
        turns: list[tuple[ContextTurnIn, str]] = []
        for index, (role, text) in enumerate(pairs):
            data = {"role": role, "content": text, "session_id": session_id, "speaker": speaker}
            try:
                turns.append((parse(ContextTurnIn, {**data, "metadata": dict(metadata or {})}), text))
            except InvalidInput as exc:
                if strict:
                    raise
                log.warning("message %d (%s) not stored: %s: %s", index, role, exc.field, exc.rule)
        with self._lock:
            conversation = self._first_of.get(session_id, session_id)
        for turn, text in turns:
            # The same words in the same conversation and role are one turn, whichever hook sees them first.
            digest = hashlib.sha256(f"{conversation}\x1f{turn.role}\x1f{text}".encode()).hexdigest()
            try:
                self.service.record_turns(self.agent, [turn], key="turn-" + digest[:40])
            except InvalidInput as exc:
                # The key kept for other arguments: the words were stored under an earlier session of this
                # conversation (the session id is what differs). They are stored already.
                if exc.field != "idempotency_key":
                    raise


def chat_pairs(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(role, text) of chat messages: content as a string or a list of parts with `text`; system and unknown roles,
    empty messages and anything that is not a message skipped."""
    out = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = ROLES.get(str(message.get("role", "")))
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(
                part["text"] for part in content if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            )
        if role and isinstance(content, str) and content.strip():
            out.append((role, content))
    return out
