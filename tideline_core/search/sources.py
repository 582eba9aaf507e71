"""The candidate-source contract: what the ranking (`hybrid`) asks of the indexes, whichever backend holds them.

Two sources answer it: `memory_source.MemorySource` (a long-running process's in-memory BM25 and
vector indexes, with SQLite's FTS5 for what BM25 cannot answer) and `pg_source.PostgresSource`
(PostgreSQL's own tsvector and HNSW indexes, read per query). The ranking reads the store only
through them and `StoreRows` (the ranked rows' text, the same on either backend), so the recipe
(signals, weights, fusion, joins, spreading) is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import Connection, literal, select, union_all

from tideline_core.domain.inputs import ConversationLine, SearchIn
from tideline_core.domain.records import AmendmentNote, ContextTurnRecord, NarrativeRecord
from tideline_core.search.reference import row_script
from tideline_core.search.signals import Key, Signals
from tideline_core.search.when import TimeWindow
from tideline_core.store.catchup import StoreVersion
from tideline_core.store.database import Database
from tideline_core.store.lookup import CHUNK, chunks
from tideline_core.store.narratives import load_narratives, turn_corrections
from tideline_core.store.schema import ContextTurn, Narrative
from tideline_core.store.turns import load_turns

if TYPE_CHECKING:
    from tideline_core.numeric import np

SCRIPTS_KEPT = 200_000  # rows whose script a process remembers


@dataclass(frozen=True)
class Snapshot:
    """What a search reads of the store before it ranks: the version to refresh the indexes to (None: no
    in-memory index is refreshed), the rows still without a vector, and when read up front the speakers' names
    and the agent's row count of each kind searched (a source asks small views in fewer statements)."""

    version: StoreVersion | None
    waiting: int
    speakers: frozenset[str] = frozenset()
    rows: Mapping[str, int] | None = None


@dataclass(frozen=True)
class Query:
    """One search as the candidate sources see it: whose rows of which kinds, for what, in which words, and how
    many candidates each keyword view hands over (`depth`)."""

    agent_id: str
    kinds: Sequence[str]
    params: SearchIn
    lines: Sequence[ConversationLine]
    terms: dict[str, float]
    groups: Mapping[str, str]
    snapshot: Snapshot
    depth: int


@dataclass(frozen=True)
class Rows:
    """The ranked rows as the store holds them, and the latest correction of each turn a memory was written from."""

    narratives: Mapping[int, NarrativeRecord]
    turns: Mapping[int, ContextTurnRecord]
    corrected: Mapping[int, AmendmentNote]


class CandidateSource(Protocol):
    """Where a search's candidates and the facts about them come from."""

    def snapshot(self, agent_id: str, kinds: Sequence[str], params: SearchIn) -> Snapshot:
        """The store's version and its rows still without a vector (and, where read up front, the speakers)."""
        ...

    def speaker_names(self, q: Query) -> Collection[str]:
        """Every speaker's name, for a question among turns whose dense view leaves them out."""
        ...

    def overlaps(self, agent_id: str, kinds: Sequence[str]) -> bool:
        """Whether the dense half is worth a thread of its own beside the keyword half."""
        ...

    def reading(self) -> AbstractContextManager[None]:
        """What a search's reads on the searching thread share while it lasts (one connection, or nothing)."""
        ...

    def nearest(
        self, q: Query, walks: Sequence[tuple[str, str]], vector: np.ndarray, depth: int
    ) -> list[list[tuple[int, float]]]:
        """For each (kind, view) of `walks`, in their order, the `depth` nearest rows to `vector`, as (id, cosine)."""
        ...

    def keyword_candidates(self, q: Query, signals: Signals) -> None:
        """The keyword views' candidates of every kind, into `signals`."""
        ...

    def row_signals(
        self, q: Query, windows: Sequence[TimeWindow], named_in: Sequence[str] | None, signals: Signals
    ) -> None:
        """The time signal and, when `named_in` are the texts that may name speakers, the speaker signal."""
        ...

    def session_joins(
        self, q: Query, ranked: Sequence[tuple[int, float]], turns: Mapping[int, float]
    ) -> Mapping[int, float]:
        """The lifts `joins.session_joins` gives the session mates of the top turns in `ranked`."""
        ...

    def adjacent(self, agent_id: str, turn_ids: Sequence[int]) -> Mapping[int, tuple[int, ...]]:
        """The turns just before and after each turn in its session."""
        ...


KnownScripts = Callable[[str, Collection[Key]], Mapping[Key, str | None]]


class StoreRows:
    """What a search reads of the rows it ranked, the same on either backend: their text's script, the rows to show.

    `known`: the scripts something else already holds (the in-memory keyword index read every row's text),
    asked before the store.
    """

    def __init__(self, db: Database, *, known: KnownScripts | None = None) -> None:
        self.db = db
        self.known = known
        self._scripts: dict[tuple[str, Key], str | None] = {}

    def scripts(self, agent_id: str, keys: Collection[Key]) -> dict[Key, str | None]:
        """The script (`reference.script_of`) of each row's text; None for a text too short to mean anything.

        Remembered by row (up to `SCRIPTS_KEPT`, then forgotten all at once): a row's text never changes under
        its id (an edit is a new row, a note an amendment row), and a search asks this of its few hundred dense
        candidates, which on a large SQLite store are as many page reads scattered over the table."""
        known = {key: self._scripts[(agent_id, key)] for key in keys if (agent_id, key) in self._scripts}
        missing = [key for key in keys if key not in known]
        if missing and self.known is not None:
            known.update(self.known(agent_id, missing))
            missing = [key for key in missing if key not in known]
        if missing:
            with self.db.read() as conn:
                found = read_scripts(conn, agent_id, missing)
            if len(self._scripts) + len(found) > SCRIPTS_KEPT:
                self._scripts.clear()
            self._scripts.update({(agent_id, key): script for key, script in found.items()})
            known.update(found)
        return known

    def rows(self, agent_id: str, narrative_ids: Sequence[int], turn_ids: Sequence[int]) -> Rows:
        """The rows to show, with the corrections of the turns among them."""
        with self.db.read() as conn:
            return read_rows(conn, agent_id, narrative_ids, turn_ids)


def read_rows(conn: Connection, agent_id: str, narrative_ids: Sequence[int], turn_ids: Sequence[int]) -> Rows:
    """The ranked rows as the store holds them, with the corrections of the turns among them."""
    return Rows(
        narratives=load_narratives(conn, agent_id, narrative_ids),
        turns=load_turns(conn, agent_id, turn_ids),
        corrected=turn_corrections(conn, agent_id, turn_ids),
    )


def read_scripts(conn: Connection, agent_id: str, keys: Collection[Key]) -> dict[Key, str | None]:
    """The script of each row's text (`StoreRows.scripts`): both kinds in one statement (per chunk of ids)."""
    narratives = list(chunks([i for k, i in keys if k == "narrative"], CHUNK // 2))
    turns = list(chunks([i for k, i in keys if k == "context"], CHUNK // 2))
    out: dict[Key, str | None] = {}
    for n in range(max(len(narratives), len(turns))):
        parts = [
            select(literal(kind).label("kind"), table.id, column.label("text")).where(
                table.agent_id == agent_id, table.id.in_(found[n])
            )
            for kind, table, column, found in (
                ("narrative", Narrative, Narrative.gesture, narratives),
                ("context", ContextTurn, ContextTurn.content, turns),
            )
            if n < len(found)
        ]
        for kind, row_id, text in conn.execute(union_all(*parts)).all():
            out[(str(kind), int(row_id))] = row_script(text)
    return out
