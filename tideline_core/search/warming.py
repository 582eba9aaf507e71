"""Search while an agent's in-memory indexes are being built: answered from the store's full-text index until then.

A long-running process on SQLite ranks with in-memory BM25 and vector indexes (`memory_source`),
which the first search of an agent builds; at 100,000 memories that takes longer than a runtime's
hook waits for an answer. `WarmingSearch` builds them on a thread of its own instead, started by
`warm_up` (a server warms the agents it serves as it starts) or else by the agent's first search,
and until they are built answers as a process without them does, from the store's FTS5 tables
(`cold.ColdSearch`: keyword only, nothing embedded), saying so in `SearchOutcome.degraded`. A write
is in those tables as it commits, so it is found meanwhile too. Once built, every search is the
in-memory ranking and ranks exactly as it does without warming. The build also embeds the reference
sentences (`reference`), so the first search after it pays for nothing but itself.

An agent with fewer than `FOREGROUND_ROWS` rows is not warmed: its first search builds its indexes
as before, in less time than a ranking from the fallback is worth.

Analysing text is Python, so the build and every other thread share one core's worth of the GIL, and a
thread reading rows gives it up at each row and waits for it back: while a search answers from the store,
or any other thread holds a connection to it (a per-turn block reading what its session was shown), the
build waits at its next pause (`KeywordIndex.pause`), for at most `SEARCH_SHARE` times as long as it
worked since the last one, so that a stream of calls slows the build but cannot stop it.

A build that fails is said in the outcome of the searches it leaves on the fallback (and logged),
and the next search starts it again.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import deque
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import replace

from sqlalchemy import event, func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import ConnectionPoolEntry

from tideline_core.domain.inputs import SearchIn
from tideline_core.embedding import Embedder
from tideline_core.search.cold import ColdSearch
from tideline_core.search.hits import SearchOutcome
from tideline_core.search.hybrid import HybridSearch
from tideline_core.search.memory_source import MemorySource
from tideline_core.search.signals import Key
from tideline_core.store.database import Database
from tideline_core.store.schema import ContextTurn, Narrative

log = logging.getLogger(__name__)

_FOREGROUND = "tideline.warming.foreground"  # marks a pooled connection taken outside the build

FOREGROUND_ROWS = 5_000  # an agent with fewer rows (memories and turns) has its indexes built by its first search
# At a pause the build waits for the searches from the store at most this many times as long as it worked
# since its last pause: a stream of searches slows it to a quarter of its speed, and stops it never.
SEARCH_SHARE = 3.0


class Build:
    """One agent's indexes being built on the warming thread: wait for it, then read how it went."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self.started = time.monotonic()
        self.took: float | None = None  # seconds from the start to the end, once ended
        self.error: str | None = None  # why it failed, if it did
        self._ended = threading.Event()

    @property
    def done(self) -> bool:
        return self._ended.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the build has ended (well or not), waiting up to `timeout` seconds (None: until it has)."""
        return self._ended.wait(timeout)

    def end(self, error: str | None = None) -> None:
        self.took = time.monotonic() - self.started
        self.error = error
        self._ended.set()


class _Gate:
    """Holds the warming thread at its pauses while any search answers from the store, or any other thread
    holds a connection to it."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._searching = 0
        self._thread = threading.local()

    def connected(self, _dbapi: object, record: ConnectionPoolEntry, _proxy: object) -> None:
        """A pool's checkout: a connection taken by any thread but the builder holds the build at its pauses.

        Reading rows gives up the GIL at every row, and each time takes it back only when the build's
        thread lets go of it: a read of a few thousand rows beside the build would take seconds.
        """
        if getattr(self._thread, "since", None) is None:
            record.info[_FOREGROUND] = True
            with self._changed:
                self._searching += 1

    def released(self, _dbapi: object, record: ConnectionPoolEntry) -> None:
        """A pool's checkin: the connection's hold on the build ends."""
        if record.info.pop(_FOREGROUND, False):
            with self._changed:
                self._searching -= 1
                self._changed.notify_all()

    @contextmanager
    def searching(self) -> Iterator[None]:
        with self._changed:
            self._searching += 1
        try:
            yield
        finally:
            with self._changed:
                self._searching -= 1
                self._changed.notify_all()

    def builder(self) -> None:
        """Mark the calling thread as the one that builds: only there does `pause` wait."""
        self._thread.since = time.monotonic()

    def pause(self) -> None:
        since: float | None = getattr(self._thread, "since", None)
        if since is None:
            return
        worked = time.monotonic() - since
        with self._changed:
            self._changed.wait_for(lambda: self._searching == 0, timeout=SEARCH_SHARE * worked)
        self._thread.since = time.monotonic()


class WarmingSearch:
    """A `Searcher`: the in-memory ranking `warm` once an agent's indexes in `source` are built, `cold` until then.

    `foreground_rows`: below this many rows an agent's first search builds its indexes itself (`FOREGROUND_ROWS`).
    """

    def __init__(
        self, warm: HybridSearch, source: MemorySource, cold: ColdSearch, *, foreground_rows: int = FOREGROUND_ROWS
    ) -> None:
        self.warm = warm
        self.source = source
        self.cold = cold
        self.embedder: Embedder = warm.embedder
        self.foreground_rows = foreground_rows
        self._gate = _Gate()
        source.keywords.pause = source.index.pause = self._gate.pause
        event.listen(source.db.engine, "checkout", self._gate.connected)
        event.listen(source.db.engine, "checkin", self._gate.released)
        self._lock = threading.Lock()
        self._warm: set[str] = set()
        self._builds: dict[str, Build] = {}
        self._queue: deque[Build] = deque()
        self._worker: threading.Thread | None = None

    def forget_queries(self) -> None:
        self.warm.forget_queries()

    def warm_up(self, agent_id: str) -> Build:
        """Start building the agent's indexes on the warming thread (one agent after another); its `Build`.

        An agent already warm, or too small to warm (`foreground_rows`), gets a build that has ended; one
        whose rows cannot be counted, an ended build with the error (nothing raised: its first search builds).
        """
        with self._lock:
            build = self._builds.get(agent_id)
            if build is not None and not (build.done and build.error):
                return build
        try:
            large = agent_id not in self._warm and self._rows(agent_id) >= self.foreground_rows
        except SQLAlchemyError as exc:
            # Ahead of time, on a thread nobody waits on: a store that cannot be read now (a server stopping as
            # it starts, its folder gone) leaves the agent to its first search, which says what is wrong.
            log.warning("could not start building the search indexes of %s: %s", agent_id, exc)
            failed = Build(agent_id)
            failed.end(f"{type(exc).__name__}: {exc}")
            return failed
        if large:
            return self._start(agent_id)
        with self._lock:
            self._warm.add(agent_id)
            build = self._builds.get(agent_id)
            if build is None or build.error:
                build = self._builds[agent_id] = Build(agent_id)
                build.end()
            return build

    def search(self, agent_id: str, params: SearchIn, *, exclude: Collection[Key] = ()) -> SearchOutcome:
        """The in-memory ranking once the agent is warm; until then the store's, its `degraded` saying why."""
        if agent_id in self._warm:
            return self.warm.search(agent_id, params, exclude=exclude)
        building, failed = self._building(agent_id)
        if building is None:
            return self.warm.search(agent_id, params, exclude=exclude)
        with self._gate.searching():
            outcome = self.cold.search(agent_id, params, exclude=exclude)
        so_far = time.monotonic() - building.started
        why = (
            f"the search indexes failed to build ({failed}) and are being built again"
            if failed
            else f"the search indexes are being built ({so_far:.0f} s so far)"
        )
        return replace(outcome, degraded=f"{why}; results are keyword-only, from the full-text index")

    def _building(self, agent_id: str) -> tuple[Build | None, str | None]:
        """The build in flight for the agent (None: it is warm now) and why the one before it failed, if it did."""
        with self._lock:
            build = self._builds.get(agent_id)
        if build is None:
            if self._rows(agent_id) < self.foreground_rows:
                with self._lock:
                    self._warm.add(agent_id)
                return None, None
            return self._start(agent_id), None
        if not build.done:
            return build, None
        if build.error is None:
            with self._lock:
                self._warm.add(agent_id)
            return None, None
        return self._start(agent_id), build.error

    def _start(self, agent_id: str) -> Build:
        """The agent's build queued for the warming thread (the one queued or running, if there is one)."""
        with self._lock:
            build = self._builds.get(agent_id)
            if build is not None and not build.done:
                return build
            build = self._builds[agent_id] = Build(agent_id)
            self._queue.append(build)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="tideline-search-warming", daemon=True)
                self._worker.start()
        return build

    def _work(self) -> None:
        """The warming thread: the queued builds, one after another, then it ends."""
        self._gate.builder()
        while True:
            with self._lock:
                if not self._queue:
                    self._worker = None
                    return
                build = self._queue.popleft()
            try:
                self.source.build(build.agent_id)
                self.warm.reference.prepare()
            except Exception as exc:  # the thread's last stop: a failed build is the searches' to report and retry
                log.warning("building the search indexes of %s failed", build.agent_id, exc_info=True)
                build.end(f"{type(exc).__name__}: {exc}")
            else:
                # The indexes are millions of objects that live as long as the process: left to the collector,
                # its next full pass walks them all (about a second, in the middle of some search).
                gc.freeze()
                build.end()

    def _rows(self, agent_id: str) -> int:
        """The agent's memories and turns, counted up to `foreground_rows` (past that the count does not matter)."""
        total = 0
        with self.source.db.read() as conn:
            for table in (Narrative, ContextTurn):
                left = self.foreground_rows - total
                if left > 0:
                    some = select(table.id).where(table.agent_id == agent_id).limit(left).subquery()
                    total += conn.execute(select(func.count()).select_from(some)).scalar_one()
        return total


def searcher(
    db: Database,
    embedder: Embedder,
    *,
    query_timeout: float = 2.0,
    extracts: bool = False,
    foreground_rows: int = FOREGROUND_ROWS,
) -> WarmingSearch:
    """The in-memory ranking of `db` (`memory_source.searcher`), warmed on a thread, the store's until then."""
    source = MemorySource(db, embedder.model, extracts=extracts)
    warm = HybridSearch(embedder, source, source.store_rows(), query_timeout=query_timeout, extracts=extracts)
    return WarmingSearch(warm, source, ColdSearch(db, extracts=extracts), foreground_rows=foreground_rows)
