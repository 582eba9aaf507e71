"""A memory's text, defined once: what each consumer reads of a narrative and of a context turn.

Narrative views:

- `narrative_search_text`: what keyword search matches (the BM25 index and the FTS5 index): every
  text field, the tags and who did what.
- `narrative_passage`: what the embedder sees: the gesture first (it says what happened), then
  its surroundings and the tags. Changing it changes every stored vector's meaning, so it is kept
  stable; a new form would need the stored vectors re-embedded.
- `narrative_prose`: the narrative's own words, for topic keywords and cluster names (tags are
  the agent's labels, not the memory's vocabulary; `entities_role` is a role list).

Turn views (a turn is stored with its speaker, the role when none was given):

- `turn_text`: "speaker: content", for the embedder and both keyword indexes.
- `turn_window`: the turn after up to `WINDOW_TURNS` turns before it in its session, for the
  second ("ctx") vector of a turn; only earlier turns, so it is fixed once the turn is written.
  The keyword index keeps a lighter window of its own: the previous turn and this one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# The narrative columns whose text keyword search matches (tags live in their own table).
NARRATIVE_SEARCH_COLUMNS = ("gesture", "context", "moment", "cognition_direction", "entities_role")
WINDOW_TURNS = 2


class NarrativeText(Protocol):
    """The text fields of a narrative, as an input, a stored record or a loaded row carries them."""

    @property
    def gesture(self) -> str: ...

    @property
    def context(self) -> str: ...

    @property
    def moment(self) -> str: ...

    @property
    def cognition_direction(self) -> str: ...

    @property
    def entities_role(self) -> str: ...

    @property
    def tags(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class NarrativeFields:
    """The text fields of a narrative loaded column by column (tags come from their own table)."""

    gesture: str
    context: str
    moment: str
    cognition_direction: str
    entities_role: str
    tags: tuple[str, ...]


def _joined(parts: Sequence[str], sep: str) -> str:
    return sep.join(part for part in parts if part)


def narrative_search_text(n: NarrativeText) -> str:
    return _joined([n.gesture, n.context, n.moment, n.cognition_direction, " ".join(n.tags), n.entities_role], " ")


def narrative_passage(n: NarrativeText) -> str:
    return _joined([n.gesture, n.context, n.cognition_direction, n.moment, " ".join(n.tags)], "\n")


def narrative_prose(n: NarrativeText) -> str:
    return _joined([n.gesture, n.context, n.moment, n.cognition_direction], "\n")


def turn_text(speaker: str, content: str) -> str:
    return f"{speaker}: {content}" if speaker else content


def turn_window(earlier: Sequence[tuple[str, str]], speaker: str, content: str) -> str:
    """The turn after the (speaker, content) of the turns before it, oldest first, newline-joined."""
    kept = list(earlier)[-WINDOW_TURNS:] if WINDOW_TURNS else []
    return "\n".join([*(turn_text(s, c) for s, c in kept), turn_text(speaker, content)])
