"""What the workers do, each a method a thin task calls: embed, log attention, import, reconcile, run a stage.

Every operation is idempotent, so a redelivered task does no harm: saving a vector is an upsert,
an attention hit is keyed by its time, an import by its id, a stage run by (agent, day, stage).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from tideline_core.attention.store import log_hits
from tideline_core.domain.inputs import ContextTurnIn
from tideline_core.inject import sources
from tideline_core.service.base import ServiceParts
from tideline_core.store import events, keywords, turns
from tideline_core.text.dates import utcnow

if TYPE_CHECKING:
    from tideline_core import ingest


@dataclass(frozen=True)
class ImportReport:
    import_id: str
    imported: int
    already_imported: bool


KEYWORD_BATCH = 500  # rows indexed per committed transaction by an embed task
KEYWORD_BATCHES = 10  # batches a task indexes at most (a few seconds); a fresh task goes on


@dataclass(frozen=True)
class ReconcileReport:
    agents: tuple[str, ...]  # agents whose pending rows were handed to the queue again
    pending: int
    interrupted_dream_stages: int


class PipelineOps(ServiceParts):
    def embed_pending(
        self,
        agent_id: str | None,
        *,
        batch_size: int,
        max_batches: int,
        token: str | None = None,
        budget_seconds: float | None = None,
    ) -> ingest.EmbedReport:
        """Index the agent's rows no write indexed (PostgreSQL's keyword index: imports, dream stages), then embed its
        pending rows (every agent's with None) in claimed batches; see `ingest.embed_pending`."""
        from tideline_core import ingest

        indexed_all = self._index_keywords(agent_id)
        report = ingest.embed_pending(
            self.db,
            self.embedder,
            agent_id=agent_id,
            batch_size=batch_size,
            max_batches=max_batches,
            token=token,
            budget_seconds=budget_seconds,
        )
        if (report.remaining or not indexed_all) and agent_id is not None:
            # More than one task's share: the rest continues in a fresh task, far from any time limit.
            self.jobs.embed(agent_id)
        return report

    def _index_keywords(self, agent_id: str | None) -> bool:
        """Whether every row waiting for the keyword index got indexed (at most `KEYWORD_BATCHES` batches a task)."""
        if self.db.dialect != "postgresql":
            return True
        for _ in range(KEYWORD_BATCHES):  # committed batches: a backlog never holds its locks in one transaction
            with self.db.write() as conn:
                if not keywords.catch_up(conn, agent_id, most=KEYWORD_BATCH):
                    return True
        return False

    def log_attention(self, agent_id: str, hits: Sequence[tuple[int, float | None]], source: str, at: datetime) -> int:
        """Record retrieval hits on the agent's own narratives; `at` (when they happened) keys a replay."""
        with self.db.write() as conn:
            return log_hits(conn, agent_id, hits, source, at)

    def import_turns(self, agent_id: str, items: Sequence[ContextTurnIn], import_id: str) -> ImportReport:
        """Store a whole session's turns at once, exactly once per `import_id`, then queue their embedding."""
        with self.db.write() as conn:
            ids = turns.import_turns_once(conn, agent_id, import_id, items)
        if ids:
            self.jobs.embed(agent_id)
        return ImportReport(import_id, len(ids or []), ids is None)

    def reconcile(self, *, pending_before: datetime, stale_stages_before: datetime) -> ReconcileReport:
        """The outbox sweep: queue embedding again for rows pending since before `pending_before` (unless the
        deployment is keyword-only), and mark dream stages still 'running' since before
        `stale_stages_before` as failed (their worker is gone); and forget what sessions were shown a month ago."""
        from tideline_core.dream.runner.runs import expire_running
        from tideline_core.store import embeddings

        with self.db.write() as conn:
            interrupted = expire_running(conn, started_before=stale_stages_before)
            sources.forget_shown(conn, utcnow())
        with self.db.read() as conn:
            waiting = embeddings.pending_agents(conn, older_than=pending_before)
        agents = tuple(sorted({agent for _kind, agent, _count in waiting})) if self.embeds else ()
        for agent in agents:
            # Rows this old were missed (a publish lost, a task gone): ask again even if a job looks queued.
            self.jobs.embed(agent, again=True)
        return ReconcileReport(agents, sum(count for _kind, _agent, count in waiting), interrupted)

    def build_agent_indexes(self) -> list[str]:
        """PostgreSQL: build the indexes of its own (vector graph, keyword index) of every agent's view that has
        grown to `agent_indexes.OWN_ROWS` rows and lacks them, without blocking writes; their names (none on SQLite,
        or while another process builds). A view past `agent_indexes.TASK_MOST_ROWS` (imported whole) is left to
        `tideline db upgrade`, which has no time limit."""
        from tideline_core.store import agent_indexes

        return agent_indexes.build(self.db.engine, most=agent_indexes.TASK_MOST_ROWS)

    def mark_stale_embeddings(self) -> int:
        """Rows whose vectors come from another model (or lack a view) go back to pending; how many."""
        from tideline_core.store import embeddings

        with self.db.write() as conn:
            return sum(embeddings.mark_stale(conn, self.embedder.model, view) for view in embeddings.VIEWS)

    def dreaming_agents(self) -> list[str]:
        """Every agent the nightly dream runs for (those with narratives)."""
        from tideline_core.dream.runner.runs import agents_with_narratives

        with self.db.read() as conn:
            return agents_with_narratives(conn)

    def record_task_event(self, *, task_name: str, task_id: str, agent_id: str, state: str, detail: str) -> None:
        """Remember a task's failure or retry, for `status`."""
        with self.db.write() as conn:
            events.record_task_event(
                conn, task_name=task_name, task_id=task_id, agent_id=agent_id, state=state, detail=detail
            )
