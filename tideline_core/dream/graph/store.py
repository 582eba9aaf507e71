"""The entity graph: planned from every narrative's `entities_role`, swapped in whole, read by entity, pair or top."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, delete, func, insert, or_, select

from tideline_core.dream.graph.entities import EntityMention, ParseProblem, build_graph
from tideline_core.dream.graph.others import own_speakers
from tideline_core.dream.plan import ReplaceEntityGraph
from tideline_core.store.database import Database
from tideline_core.store.schema import EntityEdge, EntityNode, Narrative
from tideline_core.store.turns import speaker_roles
from tideline_core.text.dates import iso


@dataclass(frozen=True)
class GraphReport:
    nodes: int
    edges: int
    problems: tuple[ParseProblem, ...]


def own_names(conn: Connection, agent_id: str) -> frozenset[str]:
    """The agent's and its user's own names as the agent's turns show them (`others.own_speakers`): never entities."""
    return own_speakers(speaker_roles(conn, agent_id))


def plan_entity_graph(db: Database, agent_id: str, aliases: Mapping[str, str]) -> ReplaceEntityGraph:
    """The agent's entity graph computed from its narratives now (nothing written)."""
    with db.read() as conn:
        rows = conn.execute(
            select(Narrative.id, Narrative.occurred_at, Narrative.entities_role, Narrative.related_entities)
            .where(Narrative.agent_id == agent_id)
            .order_by(Narrative.id)
        ).all()
        own = own_names(conn, agent_id)
    return ReplaceEntityGraph(
        build_graph(
            [EntityMention(r.id, r.occurred_at, r.entities_role, tuple(r.related_entities or ())) for r in rows],
            aliases,
            own=own,
            agent_id=agent_id,
        )
    )


def graph_counts(conn: Connection, agent_id: str) -> dict[str, int]:
    count = {
        name: conn.execute(select(func.count()).select_from(table).where(table.agent_id == agent_id)).scalar_one()
        for name, table in (("nodes", EntityNode), ("edges", EntityEdge))
    }
    return {name: int(n) for name, n in count.items()}


def replace_entity_graph(conn: Connection, agent_id: str, intent: ReplaceEntityGraph) -> None:
    """Swap the agent's entity graph for the planned one, in the caller's transaction."""
    graph = intent.graph
    conn.execute(delete(EntityEdge).where(EntityEdge.agent_id == agent_id))
    conn.execute(delete(EntityNode).where(EntityNode.agent_id == agent_id))
    if graph.nodes:
        conn.execute(
            insert(EntityNode),
            [
                {
                    "agent_id": agent_id,
                    "name": n.name,
                    "mentions": n.mentions,
                    "known": n.known,
                    "roles": dict(n.roles),
                    "first_seen": n.first_seen,
                    "last_seen": n.last_seen,
                }
                for n in graph.nodes
            ],
        )
    if graph.edges:
        conn.execute(
            insert(EntityEdge),
            [
                {
                    "agent_id": agent_id,
                    "source": e.source,
                    "target": e.target,
                    "source_role": e.source_role,
                    "target_role": e.target_role,
                    "count": e.count,
                }
                for e in graph.edges
            ],
        )


def rebuild_entity_graph(db: Database, agent_id: str, aliases: Mapping[str, str]) -> GraphReport:
    """Compute and swap in the agent's entity graph at once, outside any dream run (tests, benches)."""
    intent = plan_entity_graph(db, agent_id, aliases)
    with db.write() as conn:
        replace_entity_graph(conn, agent_id, intent)
    graph = intent.graph
    return GraphReport(nodes=len(graph.nodes), edges=len(graph.edges), problems=graph.problems)


@dataclass(frozen=True)
class NodeView:
    name: str
    mentions: int
    known: bool
    usual_roles: tuple[str, ...]
    first_seen: str
    last_seen: str


@dataclass(frozen=True)
class EdgeView:
    source: str
    target: str
    source_role: str
    target_role: str
    count: int


def _node(row: Row[Any]) -> NodeView:
    roles: dict[str, int] = dict(row.roles or {})
    usual = tuple(sorted(roles, key=lambda r: (-roles[r], r))[:3])
    return NodeView(row.name, row.mentions, row.known, usual, iso(row.first_seen), iso(row.last_seen))


def read_graph(
    conn: Connection, agent_id: str, *, entity: str | None = None, other: str | None = None, top: int = 20
) -> tuple[list[NodeView], list[EdgeView]]:
    """Top nodes and edges; or one entity and its edges; or the edges between two entities."""
    nodes_q = select(EntityNode.__table__).where(EntityNode.agent_id == agent_id)
    edges_q = select(EntityEdge.__table__).where(EntityEdge.agent_id == agent_id)
    if entity is not None and other is not None:
        nodes_q = nodes_q.where(EntityNode.name.in_([entity, other]))
        edges_q = edges_q.where(
            or_(
                (EntityEdge.source == entity) & (EntityEdge.target == other),
                (EntityEdge.source == other) & (EntityEdge.target == entity),
            )
        )
    elif entity is not None:
        nodes_q = nodes_q.where(EntityNode.name == entity)
        edges_q = edges_q.where(or_(EntityEdge.source == entity, EntityEdge.target == entity))
    nodes = [_node(r) for r in conn.execute(nodes_q.order_by(EntityNode.mentions.desc(), EntityNode.name).limit(top))]
    edges = [
        EdgeView(r.source, r.target, r.source_role, r.target_role, r._mapping["count"])
        for r in conn.execute(
            edges_q.order_by(EntityEdge.count.desc(), EntityEdge.source, EntityEdge.target).limit(top)
        )
    ]
    return nodes, edges
