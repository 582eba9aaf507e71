"""TidelineProvider: a runtime's hooks (system prompt, prefetch, turn sync, pre-compression, session end) as calls.

Each hook parses its input, calls the service and formats the result, as the MCP tools do: a
write goes through the same validation, persistence and queued embedding. Turns are stored once
per session and content (an idempotency key made of their hash), so the same message reaching
`sync_turn`, `on_pre_compress` and `on_session_end` is kept once.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from tideline_core.compose import compose
from tideline_core.inputs import (
    MAX_CONVERSATION,
    MAX_LINE,
    ContextTurnIn,
    ConversationLine,
    InjectIn,
    PrefetchIn,
    SearchIn,
    parse,
)
from tideline_core.service import Service
from tideline_core.settings import Settings
from workers.jobqueue import CeleryJobQueue

log = logging.getLogger(__name__)

RESCUE = 3  # memories handed back before a compression
RESCUE_ABOVE_WEIGHT = 0.6  # above a default memory's weight
# A runtime's system prompt is its own configuration, not conversation: it is not stored.
ROLES = {"user": "user", "assistant": "assistant", "tool": "tool"}


class TidelineProvider:
    """Memory for one agent, in the runtime's own process.

    `agent` defaults to `TIDELINE_AGENT`; `settings` to the environment's. The provider opens the
    database (migrating it if needed) and publishes to the configured Redis, so the ingest worker
    of `tideline up` embeds what it stores. Call `close()` (or use it as a context manager) at exit.
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
            service = compose(self.settings, jobs=self._jobs)
        self.service = service

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

    # -- writes ------------------------------------------------------------------------------------
    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str | None = None) -> None:
        """Store a completed turn (the user's message and the reply) verbatim, each once."""
        self._store([("user", user_content), ("assistant", assistant_content)], self._session(session_id))

    def on_pre_compress(self, messages: Sequence[Mapping[str, Any]], *, session_id: str | None = None) -> str:
        """Store the messages about to be compressed; return the heavy memories they touch, to keep in the summary."""
        pairs = _pairs(messages)
        self._store(pairs, self._session(session_id))
        spoken = [(role, text) for role, text in pairs if role in ("user", "assistant")][-MAX_CONVERSATION:]
        if not spoken:
            return ""
        lines = [
            ConversationLine(speaker=role, text=text[:MAX_LINE], is_self=role == "assistant") for role, text in spoken
        ]
        outcome = self.service.search(
            self.agent, SearchIn(conversation=lines, kinds="narratives", limit=10), source="compress"
        )
        heavy = sorted(
            (h for h in outcome.hits if (h.weight or 0) > RESCUE_ABOVE_WEIGHT), key=lambda h: -(h.weight or 0)
        )
        return "\n".join(f"- {h.occurred_at:%Y-%m-%d} {h.text}" for h in heavy[:RESCUE])

    def on_session_end(self, messages: Sequence[Mapping[str, Any]] = (), *, session_id: str | None = None) -> None:
        """Store what the session said that is not stored yet (each message once)."""
        self._store(_pairs(messages), self._session(session_id))

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

    def _store(self, pairs: Sequence[tuple[str, str]], session_id: str) -> None:
        for role, text in pairs:
            turn = parse(ContextTurnIn, {"role": role, "content": text, "session_id": session_id})
            # The same words in the same session and role are one turn, whichever hook sees them first.
            key = "turn-" + hashlib.sha256(f"{session_id}\x1f{role}\x1f{text}".encode()).hexdigest()[:40]
            self.service.record_turns(self.agent, [turn], key=key)


def _pairs(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(role, text) of chat messages: content as a string or a list of parts with `text`; system and unknown roles
    skipped."""
    out = []
    for message in messages:
        role = ROLES.get(str(message.get("role", "")))
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
        if role and isinstance(content, str) and content.strip():
            out.append((role, content))
    return out
