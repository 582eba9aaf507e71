"""What a dream stage changes, as a plan of intents applied in one transaction, recorded row by row for review and undo.

A stage that changes memory does not write: it returns a `Plan` (narratives to add, scores to
change, narratives to supersede, profile and self-concept entries to put, threads to open or
close, inferred source links to add, the scan watermark to move). `apply_plan` carries it out
inside the caller's write transaction and returns one `RowChange` per row it touched, with the
row's full state before and after: that list is the run's reviewable diff (`dream_changes`), and
undo writes each `before`
back (or deletes what was inserted) in reverse order.

Every intent is checked against the store inside the same transaction: a narrative, thread or
turn id that does not exist for the agent is an InvalidInput and the whole plan is refused, so
an answer that names someone else's rows applies nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, and_, delete, func, insert, select, update

from tideline_core.domain import scoring
from tideline_core.dream.plan import (
    AddNarrative,
    AddSourceLink,
    Intent,
    MoveWatermark,
    Plan,
    PutProfile,
    PutSelfConcept,
    PutThread,
    Rebuild,
    ReplaceEntityGraph,
    ReplaceSoftClusters,
    ReplaceTopics,
    Rescore,
    Restore,
    Reweight,
    Supersede,
)
from tideline_core.errors import InvalidInput
from tideline_core.store import keywords
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.profiles import upsert_profile, upsert_self_concept, write_thread
from tideline_core.store.schema import (
    Amendment,
    AttentionHit,
    ContextTurn,
    Embedding,
    EmbeddingClaim,
    EmbeddingClusterMember,
    Injection,
    Narrative,
    NarrativeSource,
    NarrativeTag,
    Profile,
    ProfileHistory,
    ScanWatermark,
    SelfConcept,
    SelfConceptHistory,
    Thread,
    TopicClusterMember,
    UTCDateTime,
)
from tideline_core.text.dates import utcnow

REBUILD = "rebuild"  # a derived table replaced whole: its counts before and after, never restored
# Columns a worker changes on its own after a run (the embedding of a new narrative): not part of the diff.
UNTRACKED = frozenset({"embedding_state"})

TABLES: dict[str, Table] = {
    t.name: t
    for t in cast(
        tuple[Table, ...],
        (
            Narrative.__table__,
            Profile.__table__,
            ProfileHistory.__table__,
            SelfConcept.__table__,
            SelfConceptHistory.__table__,
            Thread.__table__,
            ScanWatermark.__table__,
            NarrativeSource.__table__,
        ),
    )
}


# ---- what was applied -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowChange:
    action: str  # "insert" | "update" | REBUILD
    target: str  # table name
    key: Mapping[str, Any]  # primary key columns → values
    before: Mapping[str, Any] | None  # None for an insert
    after: Mapping[str, Any]
    summary: str
    extra: Mapping[str, Any] = field(default_factory=dict)  # shown in the diff, not restored (tags, links)

    @property
    def row_key(self) -> str:
        return ",".join(f"{k}={self.key[k]}" for k in sorted(self.key))

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "target": self.target,
            "key": dict(self.key),
            "before": None if self.before is None else dict(self.before),
            "after": {**self.after, **({"_with": dict(self.extra)} if self.extra else {})},
            "summary": self.summary,
        }


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    return value


def _decode(table: Table, column: str, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(table.c[column].type, UTCDateTime):
        return datetime.fromisoformat(value)
    if isinstance(value, dict) and set(value) == {"base64"}:
        return base64.b64decode(value["base64"])
    return value


def _where(table: Table, key: Mapping[str, Any]) -> Any:
    return and_(*(table.c[name] == value for name, value in key.items()))


def key_of(target: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """The primary key of a recorded row (a snapshot holds every column, the key's among them); none for a rebuild."""
    if target not in TABLES:
        return {}
    return {column.name: row[column.name] for column in TABLES[target].primary_key.columns}


def snapshot(conn: Connection, target: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
    """The row's every column as JSON values, or None when there is no such row."""
    table = TABLES[target]
    row = conn.execute(select(table).where(_where(table, key))).mappings().one_or_none()
    return None if row is None else {name: _encode(value) for name, value in row.items()}


class _Recorder:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.changes: list[RowChange] = []

    def updated(
        self, target: str, key: Mapping[str, Any], before: dict[str, Any], summary: str
    ) -> dict[str, Any] | None:
        after = snapshot(self.conn, target, key)
        if after is None or after == before:
            return after  # nothing changed: nothing to record or undo
        self.changes.append(RowChange("update", target, dict(key), before, after, summary))
        return after

    def inserted(
        self, target: str, key: Mapping[str, Any], summary: str, extra: Mapping[str, Any] | None = None
    ) -> None:
        after = snapshot(self.conn, target, key)
        assert after is not None, f"{target} {key} was just inserted"
        self.changes.append(RowChange("insert", target, dict(key), None, after, summary, dict(extra or {})))


def _owned(conn: Connection, table: Any, agent_id: str, ids: Sequence[int], what: str, field_name: str) -> None:
    wanted = sorted(set(ids))
    if not wanted:
        return
    found = set(conn.execute(select(table.id).where(table.agent_id == agent_id, table.id.in_(wanted))).scalars())
    missing = [i for i in wanted if i not in found]
    if missing:
        raise InvalidInput(field_name, f"{what} ids {missing} do not exist for this agent")


def check_plan(conn: Connection, agent_id: str, plan: Plan) -> None:
    """Refuse (InvalidInput) a plan naming narratives or threads that are not this agent's."""
    narrative_ids = [i.narrative_id for i in plan.intents if isinstance(i, Rescore | Reweight | Restore)]
    narrative_ids += [n for i in plan.intents if isinstance(i, Supersede) for n in (i.old_id, i.new_id)]
    narrative_ids += [n for i in plan.intents if isinstance(i, AddNarrative) for n in i.supersedes]
    narrative_ids += [i.narrative_id for i in plan.intents if isinstance(i, AddSourceLink)]
    _owned(conn, Narrative, agent_id, narrative_ids, "narrative", "narrative_id")
    turn_ids = [c for i in plan.intents if isinstance(i, AddNarrative) for c in i.links]
    turn_ids += [i.context_id for i in plan.intents if isinstance(i, AddSourceLink)]
    _owned(conn, ContextTurn, agent_id, turn_ids, "context turn", "source_links")
    thread_ids = [i.data.thread_id for i in plan.intents if isinstance(i, PutThread) and i.data.thread_id]
    _owned(conn, Thread, agent_id, [t for t in thread_ids if t is not None], "thread", "thread_id")


def apply_plan(conn: Connection, agent_id: str, plan: Plan) -> list[RowChange]:
    """Carry out every intent in the caller's transaction; the changes, in the order made."""
    check_plan(conn, agent_id, plan)
    recorder = _Recorder(conn)
    for intent in plan.intents:
        _apply(recorder, agent_id, intent)
    return recorder.changes


def _apply(rec: _Recorder, agent_id: str, intent: Intent) -> None:
    conn = rec.conn
    key: dict[str, Any]
    if isinstance(intent, AddNarrative):
        written = insert_narrative(conn, agent_id, intent.data)
        conn.execute(update(Narrative).where(Narrative.id == written.id).values(origin=intent.origin))
        more = [c for c in dict.fromkeys(intent.links) if c not in set(intent.data.source_links)]
        if more:
            conn.execute(
                insert(NarrativeSource),
                [{"narrative_id": written.id, "context_id": c, "agent_id": agent_id, "inferred": False} for c in more],
            )
        rec.inserted(
            "narratives",
            {"id": written.id},
            f"new {intent.data.narrative_type} #{written.id} ({intent.origin}): {intent.data.gesture[:120]}",
            {"tags": list(intent.data.tags), "source_links": list(dict.fromkeys([*intent.data.source_links, *more]))},
        )
        for old in intent.supersedes:
            _apply(rec, agent_id, Supersede(old, written.id))
    elif isinstance(intent, Rescore | Reweight):
        key = {"id": intent.narrative_id}
        before = snapshot(conn, "narratives", key)
        assert before is not None  # checked by check_plan
        if isinstance(intent, Rescore):
            scores = {
                name: getattr(intent, name) if getattr(intent, name) is not None else before[name]
                for name in ("importance", "emotional", "unresolved")
            }
            weight = scoring.weight(
                scores["importance"], scores["emotional"], before["recurrence"], scores["unresolved"]
            )
            values: dict[str, Any] = {**scores, "weight": weight}
            summary = f"re-weighed #{intent.narrative_id}: {before['weight']:.3f} → {weight:.3f}"
            if intent.reason:
                summary += f" ({intent.reason[:200]})"
        else:
            values = {"recurrence": intent.recurrence, "weight": intent.weight}
            summary = f"refreshed #{intent.narrative_id}: weight {before['weight']:.3f} → {intent.weight:.3f}"
        if any(before[name] != value for name, value in values.items()):
            conn.execute(
                update(Narrative).where(Narrative.id == intent.narrative_id).values(**values, updated_at=utcnow())
            )
            rec.updated("narratives", key, before, summary)
    elif isinstance(intent, Supersede):
        if intent.old_id == intent.new_id:
            raise InvalidInput("superseded_ids", f"narrative {intent.old_id} cannot supersede itself")
        key = {"id": intent.old_id}
        before = snapshot(conn, "narratives", key)
        assert before is not None
        if before["superseded_by"] is None:
            conn.execute(update(Narrative).where(Narrative.id == intent.old_id).values(superseded_by=intent.new_id))
            rec.updated("narratives", key, before, f"#{intent.old_id} superseded by #{intent.new_id}")
    elif isinstance(intent, Restore):
        key = {"id": intent.narrative_id}
        before = snapshot(conn, "narratives", key)
        assert before is not None
        if before["superseded_by"] is not None:
            conn.execute(update(Narrative).where(Narrative.id == intent.narrative_id).values(superseded_by=None))
            rec.updated(
                "narratives",
                key,
                before,
                f"#{intent.narrative_id} restored (was superseded by #{before['superseded_by']})",
            )
    elif isinstance(intent, PutProfile | PutSelfConcept):
        _put_entry(rec, agent_id, intent)
    elif isinstance(intent, PutThread):
        if intent.data.thread_id is None:
            thread_id = write_thread(conn, agent_id, intent.data, source="dream")
            rec.inserted("threads", {"id": thread_id}, f"opened thread #{thread_id}: {intent.data.title}")
        else:
            key = {"id": intent.data.thread_id}
            before = snapshot(conn, "threads", key)
            assert before is not None
            write_thread(conn, agent_id, intent.data, source="dream")
            rec.updated("threads", key, before, f"thread #{intent.data.thread_id} → {intent.data.status or 'updated'}")
    elif isinstance(intent, AddSourceLink):
        key = {"narrative_id": intent.narrative_id, "context_id": intent.context_id}
        if snapshot(conn, "narrative_sources", key) is None:  # a link already there (explicit or not) stays as it is
            conn.execute(insert(NarrativeSource).values(**key, agent_id=agent_id, inferred=True, score=intent.score))
            rec.inserted(
                "narrative_sources",
                key,
                f"inferred source link #{intent.narrative_id} → turn #{intent.context_id} "
                f"(score {intent.score:.3f}: {intent.describe()})",
                {"cosine": intent.cosine, "shared_words": list(intent.shared_words), "speaker": intent.speaker},
            )
    elif isinstance(intent, Rebuild):
        _rebuild(rec, agent_id, intent)
    elif isinstance(intent, MoveWatermark):
        key = {"agent_id": agent_id}
        before = snapshot(conn, "scan_watermarks", key)
        if before is None:
            conn.execute(insert(ScanWatermark).values(agent_id=agent_id, last_context_id=intent.to))
            rec.inserted("scan_watermarks", key, f"scan watermark → {intent.to}")
        elif intent.to > before["last_context_id"]:
            conn.execute(
                update(ScanWatermark)
                .where(ScanWatermark.agent_id == agent_id)
                .values(last_context_id=intent.to, updated_at=utcnow())
            )
            rec.updated("scan_watermarks", key, before, f"scan watermark {before['last_context_id']} → {intent.to}")


def _rebuild(rec: _Recorder, agent_id: str, intent: Rebuild) -> None:
    from tideline_core.dream.graph import store as entities
    from tideline_core.dream.recluster import store as clusters

    conn = rec.conn
    if isinstance(intent, ReplaceTopics):
        target, label, counts = "topic_clusters", "topic clusters", clusters.topic_counts
        before = counts(conn, agent_id)
        clusters.replace_topics(conn, agent_id, intent)
    elif isinstance(intent, ReplaceSoftClusters):
        target, label, counts = "emb_clusters", "soft clusters", clusters.soft_counts
        before = counts(conn, agent_id)
        clusters.replace_soft_clusters(conn, agent_id, intent)
    else:
        assert isinstance(intent, ReplaceEntityGraph)
        target, label, counts = "entity_nodes", "entity graph", entities.graph_counts
        before = counts(conn, agent_id)
        entities.replace_entity_graph(conn, agent_id, intent)
    after = counts(conn, agent_id)
    shown = ", ".join(f"{name} {before[name]} → {after[name]}" for name in after)
    rec.changes.append(
        RowChange(REBUILD, target, {"agent_id": agent_id}, before, after, f"rebuilt the {label} whole: {shown}")
    )


def _put_entry(rec: _Recorder, agent_id: str, intent: PutProfile | PutSelfConcept) -> None:
    conn = rec.conn
    table: Any
    history: Any
    if isinstance(intent, PutProfile):
        table, history, owner, target, history_target = (
            Profile,
            ProfileHistory,
            "profile_id",
            "profiles",
            "profile_history",
        )
        where = and_(
            Profile.agent_id == agent_id, Profile.entity == intent.data.entity, Profile.kind == intent.data.kind
        )
        label = f"profile {intent.data.entity} ({intent.data.kind})"
    else:
        table, history, owner, target = SelfConcept, SelfConceptHistory, "self_concept_id", "self_concept"
        history_target = "self_concept_history"
        where = and_(
            SelfConcept.agent_id == agent_id, SelfConcept.kind == intent.data.kind, SelfConcept.key == intent.data.key
        )
        label = f"self-concept {intent.data.kind}/{intent.data.key}"
    existing = conn.execute(select(table.id, table.content).where(where)).one_or_none()
    if existing is not None and existing.content == intent.data.content:
        return  # the same text again: no new version
    before = None if existing is None else snapshot(conn, target, {"id": existing.id})
    if isinstance(intent, PutProfile):
        entry_id, version = upsert_profile(conn, agent_id, intent.data)
    else:
        entry_id, version = upsert_self_concept(conn, agent_id, intent.data)
    if before is None:
        rec.inserted(target, {"id": entry_id}, f"new {label}")
        return
    history_id = conn.execute(
        select(func.max(history.id)).where(getattr(history, owner) == entry_id, history.version == version - 1)
    ).scalar_one()
    rec.inserted(history_target, {"id": history_id}, f"{label}: version {version - 1} kept in history")
    rec.updated(target, {"id": entry_id}, before, f"{label}: version {version - 1} → {version}")


# ---- undo ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredChange:
    id: int
    run_id: int
    action: str
    target: str
    row_key: str
    key: Mapping[str, Any]
    before: Mapping[str, Any] | None
    after: Mapping[str, Any]
    summary: str


def tracked(state: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A recorded row state without what a worker changes on its own (and the diff's extras)."""
    if state is None:
        return None
    return {k: v for k, v in state.items() if k not in UNTRACKED and not k.startswith("_")}


def rebuilt(changes: Sequence[StoredChange]) -> list[str]:
    """What the changes replaced whole (the summaries of their rebuilds): such a run cannot be undone."""
    return [c.summary for c in changes if c.action == REBUILD]


def undo_blockers(
    conn: Connection, agent_id: str, changes: Sequence[StoredChange], later: Sequence[StoredChange]
) -> list[str]:
    """Why the changes cannot be undone: a later run changed the same rows, or the rows are not as the run left them."""
    reasons: list[str] = []
    touched = {(c.target, c.row_key) for c in changes}
    for other in later:
        if (other.target, other.row_key) in touched:
            reasons.append(
                f"{other.target} {other.row_key} was changed again by dream run {other.run_id} ({other.summary})"
            )
    if reasons:
        return reasons
    final: dict[tuple[str, str], StoredChange] = {}
    for change in changes:
        final[(change.target, change.row_key)] = change  # the last change of a row holds its state after the run
    for (target, row_key), change in final.items():
        now = tracked(snapshot(conn, target, change.key))
        if now != tracked(change.after):
            what = "was deleted" if now is None else "was changed after the run"
            reasons.append(f"{target} {row_key} {what}")
        if target == "narratives" and change.action == "insert":
            narrative_id = change.key["id"]
            if conn.execute(
                select(func.count()).select_from(Amendment).where(Amendment.narrative_id == narrative_id)
            ).scalar_one():
                reasons.append(f"narratives {row_key} has amendments written after the run")
            # A narrative this run itself marked superseded by the new one is restored with the rest.
            own = [int(c.key["id"]) for c in changes if c.target == "narratives" and c.action == "update"]
            if conn.execute(
                select(func.count())
                .select_from(Narrative)
                .where(Narrative.superseded_by == narrative_id, Narrative.id.not_in(own))
            ).scalar_one():
                reasons.append(f"narratives {row_key} now supersedes another narrative")
    return reasons


def undo_changes(conn: Connection, agent_id: str, changes: Sequence[StoredChange]) -> int:
    """Restore every row to its state before the run, last change first; how many rows were restored."""
    for change in reversed(changes):
        table = TABLES[change.target]
        if change.action == "insert":
            if change.target == "narratives":
                _delete_narrative(conn, int(change.key["id"]))
            else:
                conn.execute(delete(table).where(_where(table, change.key)))
        else:
            assert change.before is not None
            values = {
                name: _decode(table, name, value)
                for name, value in change.before.items()
                if name not in UNTRACKED and name not in change.key
            }
            conn.execute(update(table).where(_where(table, change.key)).values(**values))
    return len(changes)


def _delete_narrative(conn: Connection, narrative_id: int) -> None:
    # Everything that exists only because the narrative did: its tags, links, keyword row, vectors and
    # what workers derived from it since (attention hits, what sessions were shown, cluster memberships).
    conn.execute(delete(NarrativeTag).where(NarrativeTag.narrative_id == narrative_id))
    conn.execute(delete(NarrativeSource).where(NarrativeSource.narrative_id == narrative_id))
    conn.execute(delete(Embedding).where(Embedding.kind == "narrative", Embedding.row_id == narrative_id))
    conn.execute(
        delete(EmbeddingClaim).where(EmbeddingClaim.kind == "narrative", EmbeddingClaim.row_id == narrative_id)
    )
    conn.execute(delete(AttentionHit).where(AttentionHit.narrative_id == narrative_id))
    conn.execute(delete(Injection).where(Injection.kind == "narrative", Injection.row_id == narrative_id))
    conn.execute(delete(TopicClusterMember).where(TopicClusterMember.narrative_id == narrative_id))
    conn.execute(delete(EmbeddingClusterMember).where(EmbeddingClusterMember.narrative_id == narrative_id))
    keywords.forget_narratives(conn, [narrative_id])
    conn.execute(delete(Narrative).where(Narrative.id == narrative_id))


__all__ = [
    "REBUILD",
    "RowChange",
    "StoredChange",
    "apply_plan",
    "check_plan",
    "rebuilt",
    "snapshot",
    "undo_blockers",
    "undo_changes",
]
