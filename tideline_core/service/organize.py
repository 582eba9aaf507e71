"""What the dream stages built, read back (graph, topics, soft clusters, attention), a stage started by hand, status."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Connection

from tideline_core.domain.inputs import GraphQuery, SoftClustersQuery, TopicsQuery
from tideline_core.errors import ConfigurationError, EmbedderUnavailable
from tideline_core.service.base import ServiceParts
from tideline_core.service.notices import embedding_notice
from tideline_core.store import events, status
from tideline_core.store.narratives import load_narratives
from tideline_core.text.dates import human, utcnow

if TYPE_CHECKING:
    from tideline_core.attention.heatmap import Heatmap
    from tideline_core.service.results import GraphMode, GraphView, SoftClustersView, StatusReport, TopicsView

NOT_BUILT = "nothing built yet: the nightly dream builds it, or start the {stage} stage now (memory_trigger)"
BUILT_EMPTY = "the {stage} stage ran {when} and found {what}"
# What an empty result means once its stage has run (not "nothing built").
FOUND_NONE = {
    "graph": "no entity yet: entities come from the memories' entities_role and related_entities",
    "recluster": "no recurring topic yet: a keyword becomes a topic once 3 or more memories hold it",
}
NO_SUCH_ENTITY = "no such entity in the graph (names match exactly)"
LAST_TASK_EVENTS = 5
LAST_DREAM_RUNS = 8


class OrganizeOps(ServiceParts):
    def graph(self, agent_id: str, query: GraphQuery) -> GraphView:
        """Top nodes and edges; one entity and its edges; or the edges between two entities."""
        from tideline_core.dream.graph import store as entities
        from tideline_core.service.results import GraphView

        mode: GraphMode = "pair" if query.other is not None else "entity" if query.entity is not None else "top"
        note = None
        with self.db.read() as conn:
            nodes, edges = entities.read_graph(conn, agent_id, entity=query.entity, other=query.other, top=query.top)
            if not nodes:
                note = self._empty_note(conn, agent_id, "graph") if mode == "top" else NO_SUCH_ENTITY
        return GraphView(mode, tuple(nodes), tuple(edges), note)

    def heatmap(self, agent_id: str, days: int) -> Heatmap:
        """Where the agent's retrieval hits of the last `days` landed, per cluster, and the clusters never lit."""
        from tideline_core.attention.heatmap import heatmap
        from tideline_core.attention.store import hits_since
        from tideline_core.dream.recluster import store as clusters

        with self.db.read() as conn:
            hits = hits_since(conn, agent_id, days)
            # Only the hit narratives' clusters are read whole; every other cluster is a desert of its stored size.
            topics, soft = clusters.memberships(conn, agent_id, [h.narrative_id for h in hits])
            sizes = clusters.cluster_sizes(conn, agent_id)
        return heatmap(hits, topics, soft, sizes=sizes)

    def soft_clusters(self, agent_id: str, query: SoftClustersQuery) -> SoftClustersView:
        """Every soft cluster; or one cluster's members; and, for a query text, where it would land."""
        from tideline_core.dream.recluster import store as clusters
        from tideline_core.service.results import ClusterMemberView, SoftClustersView

        vector, note = None, None
        if query.query is not None:
            # The query is embedded before any transaction opens.
            try:
                vector = self.embedder.queries([query.query], timeout=self.query_timeout)[0]
            except (EmbedderUnavailable, ConfigurationError) as exc:
                note = f"cannot route the query: the embedder is unavailable ({exc})"
        members: tuple[ClusterMemberView, ...] = ()
        with self.db.read() as conn:
            if query.label is not None:
                detail = clusters.read_soft_cluster(conn, agent_id, query.label, limit=query.limit)
                found = [detail.summary]
                gestures = load_narratives(conn, agent_id, [m[0] for m in detail.members])
                members = tuple(
                    ClusterMemberView(nid, rank, distance, gestures[nid].gesture if nid in gestures else "")
                    for nid, rank, distance in detail.members
                )
            else:
                found = clusters.read_soft_clusters(conn, agent_id)
            routed = clusters.route_query(conn, agent_id, vector, self.embedder.model) if vector is not None else None
            empty = None if found else self._empty_note(conn, agent_id, "recluster")
        if empty is not None:
            note = note or empty
        elif vector is not None and routed is None:
            note = "no soft clusters of the current embedding model yet: the recluster stage builds them"
        return SoftClustersView(tuple(found), members, routed, note)

    def topics(self, agent_id: str, query: TopicsQuery) -> TopicsView:
        """The largest topic clusters, each with a few of its newest narratives."""
        from tideline_core.dream.recluster import store as clusters
        from tideline_core.service.results import TopicSample, TopicsView, TopicView

        with self.db.read() as conn:
            found = clusters.read_topics(conn, agent_id, limit=query.limit, sample=query.sample)
            gestures = load_narratives(conn, agent_id, sorted({i for t in found for i in t.narrative_ids}))
            empty = None if found else self._empty_note(conn, agent_id, "recluster")
        topics = tuple(
            TopicView(
                t.keyword,
                t.label,
                t.size,
                tuple(TopicSample(i, gestures[i].gesture) for i in t.narrative_ids if i in gestures),
            )
            for t in found
        )
        return TopicsView(topics, empty)

    @staticmethod
    def _empty_note(conn: Connection, agent_id: str, stage: str) -> str:
        """Why a read of what `stage` builds is empty: not built yet, or built and found nothing."""
        from tideline_core.dream.runner.runs import last_done

        run = last_done(conn, agent_id, stage)
        if run is None:
            return NOT_BUILT.format(stage=stage)
        when = human(run.finished_at or run.started_at)
        return BUILT_EMPTY.format(stage=stage, when=when, what=FOUND_NONE[stage])

    def agents_with_memories(self) -> dict[str, int]:
        """Which agents this store holds memories for (narratives and turns): for the local user only,
        never an MCP caller, who may see its own agent alone."""
        with self.db.read() as conn:
            return status.agents_with_memories(conn)

    def status(self, agent_id: str) -> StatusReport:
        """What the agent's memory holds, what is pending, and how the pipeline is doing."""
        from tideline_core.dream.runner import review
        from tideline_core.dream.runner.runs import last_chain, recent_runs
        from tideline_core.service.results import StatusReport

        with self.db.read() as conn:
            counts = status.counts(conn, agent_id)
            oldest = status.oldest_pending(conn, agent_id)
            task_events = events.recent_task_events(conn, limit=LAST_TASK_EVENTS, agent_id=agent_id)
            runs = recent_runs(conn, agent_id, LAST_DREAM_RUNS)
            chain = last_chain(conn, agent_id)
            proposals = review.count_waiting(conn, agent_id)
        depths = self.jobs.queue_depths()
        # Only asked when the queue answered: asking a dead broker would just wait out its timeout.
        workers = self.jobs.workers() if depths is not None else None
        pending = counts.pending_narratives + counts.pending_context
        soul_path, soul = self.soul(agent_id)
        return StatusReport(
            agent=agent_id,
            counts=counts,
            queue_depths=depths,
            workers=workers,
            embedder=self.embedder.model,
            last_task_errors=tuple(task_events),
            dream_runs=tuple(runs),
            notice=embedding_notice(pending, workers) if self.embeds else None,
            soul_path=str(soul_path) if soul_path else None,
            soul_found=soul is not None,
            oldest_pending_at=oldest,
            ingest_lag_seconds=None if oldest is None else max(0.0, (utcnow() - oldest).total_seconds()),
            last_dream=tuple(chain),
            proposals_waiting=proposals,
        )
