"""The dream in an evaluation: solidify what was loaded, in-process, embed its memories, and trace each to its sessions.

LoCoMo: the conversations are already recorded; scan and solidify turn them into memories and
one digest per session. MADial holds no conversation (its memories are written as narratives),
so `record_dialogues` records the benchmark's dialogues as the users' past sessions, one a day
after the latest memory: solidify then has conversation to turn into memories and digests, which
compete with the benchmark's memories in search (a dialogue's search leaves out its own).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from tideline_core.compose import compose
from tideline_core.domain.inputs import MAX_TURN, ContextTurnIn
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings
from tideline_core.store.narratives import load_narratives
from tideline_eval import locomo, madial
from tideline_eval.runner import ModeResult, Progress, agent_of_user, ask_locomo, ask_madial, embed_all

MAX_RUNS = 50  # solidify runs per agent at most: an LLM's token budget can stop a run midway, the next goes on
# MADial dialogues are recorded as evening conversations, a minute a line, from the day after the latest
# memory: far outside the scan's ±6 h source-link window of any memory, so no benchmark memory
# is linked to (and taken for a product of) a dialogue.
DIALOGUE_HOUR = 20


def _quiet(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class Solidified:
    """What scan + solidify wrote, how (extractive, or the LLM's model) and how long solidify took."""

    method: str
    memories: int
    digests: int
    seconds: float  # the solidify runs, every agent (the scan and the embedding not included)
    embed_seconds: float  # embedding the new memories
    stopped: tuple[str, ...] = ()  # why a run left turns unsolidified, when the last run of an agent did

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "method": self.method,
            "memories": self.memories,
            "digests": self.digests,
            "solidify_seconds": round(self.seconds, 2),
            "embed_seconds": round(self.embed_seconds, 2),
        }
        if self.stopped:
            out["stopped"] = list(self.stopped)
        return out


def solidify_all(service: Service, agents: Sequence[str], progress: Progress = _quiet) -> Solidified:
    """Scan, then solidify each agent's conversation (again while a run stops midway and gets further), then embed.

    Solidify is extractive unless the service was composed with an LLM (TIDELINE_LLM_URL and _MODEL).
    """
    memories = digests = 0
    methods: list[str] = []
    stopped: list[str] = []
    seconds = 0.0
    progress("solidifying", 0, len(agents))
    for number, agent in enumerate(agents, 1):
        service.run_stage("scan", agent, trigger="manual", task_id=f"eval-scan-{agent}")
        for attempt in range(MAX_RUNS):
            started = time.perf_counter()
            result = service.run_stage("solidify", agent, trigger="manual", task_id=f"eval-solidify-{agent}-{attempt}")
            seconds += time.perf_counter() - started
            memories += int(result.get("memories", 0))
            digests += int(result.get("digests", 0))
            method = str(result.get("method", "?"))
            methods.append(f"llm {result['model']}" if method == "llm" and "model" in result else method)
            if not result.get("stopped") or not result.get("chunks_handled"):
                if result.get("stopped"):
                    stopped.append(f"{agent}: {result['stopped']}")
                break
        progress("solidifying", number, len(agents))
    started = time.perf_counter()
    embed_all(service, agents, progress)
    return Solidified(
        method=", ".join(dict.fromkeys(methods)) or "none",
        memories=memories,
        digests=digests,
        seconds=seconds,
        embed_seconds=time.perf_counter() - started,
        stopped=tuple(stopped),
    )


@dataclass(frozen=True)
class DreamResult:
    """Recall after the dream, searched as the setting `dream_extracts_in_search` says: off, then on."""

    solidified: Solidified
    without_extracts: dict[str, ModeResult]
    with_extracts: dict[str, ModeResult]

    def as_json(self) -> dict[str, object]:
        return {
            "solidify": self.solidified.as_json(),
            "without_extracts": {mode: r.as_json() for mode, r in self.without_extracts.items()},
            "with_extracts": {mode: r.as_json() for mode, r in self.with_extracts.items()},
        }


def searching(settings: Settings, service: Service, *, extracts: bool) -> Service:
    """Another service over the same store and embedder, whose search returns the dream's extracts (digests
    and extractive memories) or leaves them out, as the setting `dream_extracts_in_search` says."""
    chosen = settings.model_copy(update={"dream_extracts_in_search": extracts})
    return compose(chosen, jobs=NullJobQueue(), embedder=service.embedder, database=service.db, llm=None)


def dream_locomo(
    service: Service,
    settings: Settings,
    conversations: Sequence[locomo.Conversation],
    dia_of: dict[tuple[str, int], str],
    modes: Sequence[str],
    ks: Sequence[int],
    progress: Progress = _quiet,
) -> DreamResult:
    """Solidify the loaded conversations, then ask every question again, with and without the digests.

    Narratives and turns are searched together (`kinds` "all", as memory_search does by default).
    A narrative hit stands for the sessions of its source turns in session recall, and for no turn
    in turn recall (a digest links every turn of its session: crediting them would be cheating).
    """
    solidified = solidify_all(service, [conv.sample_id for conv in conversations], progress)
    origins = Origins(service, {key: locomo.session_of(dia) for key, dia in dia_of.items()})
    asked = {
        label: ask_locomo(
            searching(settings, service, extracts=label == "with"),
            conversations,
            dia_of,
            modes,
            ks,
            progress,
            kinds="all",
            sessions_of=origins.sessions,
        )
        for label in ("without", "with")
    }
    return DreamResult(solidified, asked["without"], asked["with"])


def dream_madial(
    service: Service,
    settings: Settings,
    dialogues: Sequence[madial.Dialogue],
    memory_of: dict[tuple[str, int], str],
    session_of_turn: Mapping[tuple[str, int], str],
    modes: Sequence[str],
    ks: Sequence[int],
    progress: Progress = _quiet,
) -> DreamResult:
    """Solidify the recorded dialogues (`record_dialogues`), then ask every dialogue again, with and without digests.

    A dialogue's search leaves out what was solidified from that dialogue itself. Only the
    benchmark's memories are gold: a memory or digest the dream wrote can only take a place.
    """
    agents = sorted({agent for agent, _ in session_of_turn})
    solidified = solidify_all(service, agents, progress)
    origins = Origins(service, session_of_turn)
    asked = {
        label: ask_madial(
            searching(settings, service, extracts=label == "with"),
            dialogues,
            memory_of,
            modes,
            ks,
            progress,
            origin_of=origins.origin,
        )
        for label in ("without", "with")
    }
    return DreamResult(solidified, asked["without"], asked["with"])


class Origins:
    """The sessions a narrative's source turns belong to, read once per narrative.

    `session_of_turn`: (agent, turn id) → the benchmark's session of that turn (a LoCoMo "D3", a
    MADial dialogue id). A narrative with no source links (a benchmark's own memory) has none.
    """

    def __init__(self, service: Service, session_of_turn: Mapping[tuple[str, int], str]) -> None:
        self.service = service
        self.session_of_turn = session_of_turn
        self._sessions: dict[tuple[str, int], tuple[str, ...]] = {}

    def _load(self, agent: str, narrative_id: int) -> None:
        with self.service.db.read() as conn:
            found = load_narratives(conn, agent, [narrative_id])
        record = found.get(narrative_id)
        links = record.source_links if record else ()
        self._sessions[(agent, narrative_id)] = tuple(
            dict.fromkeys(s for t in links if (s := self.session_of_turn.get((agent, t))) is not None)
        )

    def sessions(self, agent: str, narrative_id: int) -> tuple[str, ...]:
        """The sessions the narrative's source turns are in, in the order of the turns."""
        if (agent, narrative_id) not in self._sessions:
            self._load(agent, narrative_id)
        return self._sessions[(agent, narrative_id)]

    def origin(self, agent: str, narrative_id: int) -> str:
        """The one session the narrative was solidified from ("" for a narrative linked to none)."""
        sessions = self.sessions(agent, narrative_id)
        return sessions[0] if sessions else ""


def dialogues_start(memories: Sequence[madial.Memory]) -> datetime:
    """The day after the latest dated memory, at the dialogues' hour: the first recorded dialogue's time."""
    dates = []
    for memory in memories:
        try:
            dates.append(datetime.strptime(memory.time, "%Y-%m-%d").replace(tzinfo=UTC))
        except ValueError:
            continue
    latest = max(dates, default=datetime(2024, 1, 1, tzinfo=UTC))
    return latest + timedelta(days=1, hours=DIALOGUE_HOUR)


def dialogue_lines(raw: Sequence[str]) -> list[tuple[str, str]]:
    """(speaker, text) of each line of a whole dialogue, without the <BOD>/<EOD> markers."""
    out = []
    for line in raw:
        text = line.strip()
        if text and text not in ("<BOD>", "<EOD>"):
            speaker, said = madial.parse_line(text)
            if said:
                out.append((speaker, said))
    return out


def record_dialogues(
    service: Service, dialogues: Sequence[madial.Dialogue], start: datetime, progress: Progress = _quiet
) -> dict[tuple[str, int], str]:
    """Each whole dialogue as a past session of its user, one a day from `start`, embedded.

    (agent, turn id) → the dialogue's id.
    """
    session_of: dict[tuple[str, int], str] = {}
    for number, dialogue in enumerate(dialogues):
        agent = agent_of_user(dialogue.user)
        began = start + timedelta(days=number)
        turns = [
            ContextTurnIn(
                role="assistant" if speaker == madial.SELF_SPEAKER else "user",
                speaker=speaker[:128],
                content=text[:MAX_TURN],
                session_id=f"madial-dialogue-{dialogue.id}",
                created_at=began + timedelta(minutes=line),
            )
            for line, (speaker, text) in enumerate(dialogue_lines(dialogue.lines))
        ]
        if turns:
            recorded = service.record_turns(agent, turns)
            session_of.update({(agent, i): dialogue.id for i in recorded.ids})
        progress("recording dialogues", number + 1, len(dialogues))
    embed_all(service, sorted({agent for agent, _ in session_of}), progress)
    return session_of
