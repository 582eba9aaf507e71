"""A complete run of the in-process provider, the way a runtime's plugin hooks call it.

    .venv/bin/python docs/provider_example.py

Uses a throwaway data dir and no Redis (writes are stored and keyword-searchable at once; without
`tideline up` nothing embeds them, and the blocks say so). Point TIDELINE_HOME at your data dir
and keep `tideline up` running there to use it for real.
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("TIDELINE_HOME", tempfile.mkdtemp(prefix="tideline-provider-"))
os.environ.setdefault("TIDELINE_EMBEDDER", "none")  # this example runs without a worker to embed

from tideline_core.domain.inputs import NarrativeIn, SelfConceptIn
from tideline_provider import TidelineProvider

with TidelineProvider(agent="hermes", session_id="2026-12-01-morning") as memory:
    # Something worth keeping, written the way the memory_write tool writes it.
    memory.service.write_self_concept("hermes", SelfConceptIn(kind="fact", content="I help Ada run her bakery."))
    memory.service.write_narrative(
        "hermes",
        NarrativeIn(
            gesture="Ada decided to open the bakery on Sundays from March",
            importance=5,
            emotional=4,
            tags=["bakery", "plans"],
        ),
    )
    memory.service.write_narrative(
        "hermes", NarrativeIn(gesture="The flour supplier raised prices by 8 percent", tags=["suppliers"])
    )

    # Building the system prompt: the session-start block (cache it until its version changes).
    print(memory.system_prompt_block())

    # Each turn: what bears on the user's words goes into this turn's context...
    user = "Did the flour supplier change anything?"
    print(memory.prefetch(user))
    # ...and the finished turn is stored verbatim.
    memory.sync_turn(user, "Yes, prices went up by 8 percent. And Sundays open from March.")

    # Before the runtime compresses the conversation: store it, and keep the heavy memories it touched.
    messages = [
        {"role": "user", "content": user},
        {"role": "assistant", "content": "Yes, prices went up by 8 percent. And Sundays open from March."},
    ]
    print("rescued into the summary:\n" + (memory.on_pre_compress(messages) or "(none)"))

    # At the end of the session: whatever was not stored yet (each message is stored once).
    memory.on_session_end(messages)
