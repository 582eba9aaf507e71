"""A memory's text, defined once: what each consumer reads of a narrative and of a context turn.

Narrative views:

- `narrative_search_text`: what keyword search matches (the BM25 index and the FTS5 index): every
  text field, the tags, who did what, and every amendment (a correction is found by its words).
- `narrative_passage`: what the embedder sees: the gesture first (it says what happened), then
  its latest amendments (what it turned out to be), its surroundings and the tags. Changing it
  changes every stored vector's meaning, so it is kept stable (a memory without amendments reads as
  it always did); a new form would need the stored vectors re-embedded.
- `narrative_prose`: the narrative's own words, for topic keywords and cluster names (tags are
  the agent's labels, not the memory's vocabulary; `entities_role` is a role list).

How a memory is shown with its correction (`amendment_mark`, `with_amendment`): its line, then its
latest amendment marked " — amended YYYY-MM-DD: note", so the correction is read with, and after,
what it corrects. Every place that shows a memory (search hits, recall, the injected blocks, the
runtime provider, the hooks) renders it so; a cut keeps the mark and shortens the memory first.

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

from tideline_core.domain.records import AmendmentNote

# The narrative columns whose text keyword search matches (tags live in their own table).
NARRATIVE_SEARCH_COLUMNS = ("gesture", "context", "moment", "cognition_direction", "entities_role")
WINDOW_TURNS = 2
# The newest amendments the embedder sees, newest first: the model reads a few hundred tokens, and the
# memory's own words must stay in them.
PASSAGE_AMENDMENTS = 3
AMENDED = " — amended "
CUT = "…"
MIN_SHOWN_CHARS = 8  # of a memory's line cut to make room for its amendment's mark


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


def narrative_search_text(n: NarrativeText, amendments: Sequence[str] = ()) -> str:
    """`amendments`: the memory's notes, oldest first."""
    fields = [n.gesture, n.context, n.moment, n.cognition_direction, " ".join(n.tags), n.entities_role]
    return _joined([*fields, *amendments], " ")


def narrative_passage(n: NarrativeText, amendments: Sequence[str] = ()) -> str:
    """`amendments`: the memory's notes, oldest first (the newest `PASSAGE_AMENDMENTS` are embedded, newest first)."""
    newest = list(amendments)[::-1][:PASSAGE_AMENDMENTS]
    return _joined([n.gesture, *newest, n.context, n.cognition_direction, n.moment, " ".join(n.tags)], "\n")


def amendment_mark(amended: AmendmentNote | None) -> str:
    """What follows a memory's line when it was amended: " — amended 2026-11-30: the note" ('' when not)."""
    if amended is None:
        return ""
    return f"{AMENDED}{amended.at:%Y-%m-%d}: {' '.join(amended.note.split())}"


def with_amendment(text: str, amended: AmendmentNote | None, *, chars: int | None = None) -> str:
    """A memory's line with its latest amendment marked after it; within `chars` characters when given (`cut`)."""
    whole = text + amendment_mark(amended)
    return whole if chars is None else cut(whole, amendment_mark(amended), chars)


def cut(shown: str, mark: str, chars: int) -> str:
    """`shown` (a line ending in its amendment `mark`, or '' for none) within `chars` characters.

    The line before the mark is shortened first (ending in "…"); the whole mark is kept while at
    least a few characters of the line fit beside it, and only then is the mark itself cut.
    """
    if len(shown) <= chars:
        return shown
    room = chars - len(mark) - len(CUT)
    if mark and shown.endswith(mark) and room >= MIN_SHOWN_CHARS:
        return shown[: len(shown) - len(mark)][:room].rstrip() + CUT + mark
    return shown[: max(0, chars - len(CUT))].rstrip() + CUT


def narrative_prose(n: NarrativeText) -> str:
    return _joined([n.gesture, n.context, n.moment, n.cognition_direction], "\n")


def turn_text(speaker: str, content: str) -> str:
    return f"{speaker}: {content}" if speaker else content


def turn_window(earlier: Sequence[tuple[str, str]], speaker: str, content: str) -> str:
    """The turn after the (speaker, content) of the turns before it, oldest first, newline-joined."""
    kept = list(earlier)[-WINDOW_TURNS:] if WINDOW_TURNS else []
    return "\n".join([*(turn_text(s, c) for s, c in kept), turn_text(speaker, content)])
