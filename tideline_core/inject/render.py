"""The blocks as text: fixed headings, items in tier order, and a version that changes only with what is shown.

Nothing about the call itself is rendered (no time of the call, no "3 days ago"): while nothing
the session-start block shows has changed, it is the same bytes, so a runtime's prompt cache
holds. The version is a hash of the block's body; the per-turn block is a separate text, meant
to be appended after the cached prefix.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

from tideline_core.inject.budget import Item
from tideline_core.text.cost import DIGIT, estimate_tokens

VERSION_CHARS = 12

HEADINGS = {
    "T0": "## Who I am",
    "T2": "## What weighed most lately",
    "T2b": "## Where the last conversation left off",
    "T3": "## Memory map",
    "T1": "## Recalled for this turn",
    "T4": "## Recalled by keyword",
}


@dataclass(frozen=True)
class Block:
    """A rendered block: its text, the items in it, estimated tokens, the budget it kept to, and its version."""

    text: str
    items: tuple[Item, ...]
    tokens: int
    budget: int
    version: str
    notes: tuple[str, ...] = ()
    left_out: tuple[Item, ...] = ()  # candidates the budget left no room for (never part of the text)


def title_tokens(title: str) -> int:
    """What a block's first line costs at most, whatever its version (a hex digit costs more than a letter)."""
    return estimate_tokens(f"# {title} · v") + math.ceil(VERSION_CHARS * DIGIT)


def section(tier: str, items: Sequence[Item], subtitle: str = "") -> str:
    if not items:
        return ""
    heading = HEADINGS[tier] + (f" ({subtitle})" if subtitle else "")
    return "\n".join([heading, *(f"- {item.text}" for item in items)])


def block(
    title: str,
    sections: Sequence[str],
    items: Sequence[Item],
    budget: int,
    notes: Sequence[str] = (),
    left_out: Sequence[Item] = (),
) -> Block:
    body = "\n\n".join(s for s in sections if s)
    version = hashlib.sha256(body.encode()).hexdigest()[:VERSION_CHARS]
    text = f"# {title} · v{version}\n\n{body}\n" if body else ""
    return Block(
        text, tuple(items), estimate_tokens(text), budget, version if body else "", tuple(notes), tuple(left_out)
    )
