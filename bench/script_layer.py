"""Time each dream stage's parts on a real SQLite file, and the nightly chain's stages in a row.

    OMP_NUM_THREADS=1 .venv/bin/python bench/script_layer.py [--sizes 10000 100000]

Per size: a throwaway SQLite file with N synthetic bilingual narratives (bench/synthetic.py), their
random unit vectors stored as embeddings of the local model, N context turns with vectors, a third
of the narratives linked to a turn, and N attention hits. Loading is bulk SQL and not timed. Each
stage is what its dream task runs (load fresh state, pure function, one write transaction).
"full chain" runs the registry's nightly stages (scan → refresh → recluster → graph) again on the
built state, as the nightly chain does. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")  # see tideline_core/soft_clusters.py: threads oversubscribe

import numpy as np
import synthetic
from sqlalchemy import insert

from tideline_core.attention.heatmap import heatmap
from tideline_core.attention.store import hits_since
from tideline_core.dream import StageContext, nightly_stages
from tideline_core.dream.graph import store as graph
from tideline_core.dream.plan import AddSourceLink, Plan
from tideline_core.dream.recluster import store as clusters
from tideline_core.dream.refresh import store as weights
from tideline_core.dream.runner import running, runs
from tideline_core.dream.runner.changes import apply_plan
from tideline_core.dream.scan import store as scan
from tideline_core.dream.scan.scanner import to_markdown
from tideline_core.embedding import LOCAL_MODEL, LocalE5Embedder
from tideline_core.store.database import Database
from tideline_core.store.embeddings import to_blob
from tideline_core.store.schema import AttentionHit, ContextTurn, Embedding, Narrative, NarrativeSource, NarrativeTag
from tideline_core.text.tokens import initialize

AGENT = "bench"
BATCH = 5_000
ALIASES = {"alice": "Alice", "bob": "Bob", "甜心": "甜心"}


def _batches(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [rows[i : i + BATCH] for i in range(0, len(rows), BATCH)]


def load(db: Database, n: int) -> None:
    """N narratives, tags, vectors, N turns with vectors, links for a third, N attention hits (bulk inserts)."""
    rows = synthetic.narratives(n)
    turns = synthetic.context_turns(n)
    vectors, turn_vectors = synthetic.vectors(n), synthetic.vectors(n, seed=1)
    rng = np.random.default_rng(3)
    narrative_rows = [
        {
            "id": r["id"],
            "agent_id": AGENT,
            "gesture": r["gesture"],
            "context": r["context"],
            "cognition_direction": r["cognition_direction"],
            "importance": r["importance"],
            "emotional": r["emotional"],
            "recurrence": r["recurrence"],
            "unresolved": r["unresolved"],
            "weight": 0.6,
            "entities_role": r["entities_role"],
            "related_entities": r["related_entities"],
            "occurred_at": r["occurred_at"],
            "created_at": r["created_at"],
            "updated_at": r["created_at"],
            "embedding_state": "done",
        }
        for r in rows
    ]
    tag_rows = [{"narrative_id": r["id"], "tag": t, "agent_id": AGENT} for r in rows for t in r["tags"]]
    turn_rows = [
        {
            "id": t["id"],
            "agent_id": AGENT,
            "session_id": t["session_id"],
            "role": t["role"],
            "speaker": t["speaker"],
            "content": t["content"],
            "created_at": t["created_at"],
            "recorded_at": t["created_at"],
            "embedding_state": "done",
        }
        for t in turns
    ]
    embeddings = [
        {"kind": kind, "row_id": i + 1, "agent_id": AGENT, "model": LOCAL_MODEL, "dim": 384, "vector": to_blob(v)}
        for kind, matrix in (("narrative", vectors), ("context", turn_vectors))
        for i, v in enumerate(matrix)
    ]
    links = [
        {"narrative_id": r["id"], "context_id": r["id"], "agent_id": AGENT, "inferred": False}
        for r in rows
        if r["id"] % 3 == 0
    ]
    hits = [
        {
            "agent_id": AGENT,
            "narrative_id": int(i),
            "similarity": float(s),
            "source": "t1",
            "created_at": rows[-1]["created_at"],
        }
        for i, s in zip(rng.integers(1, n + 1, n), rng.random(n), strict=True)
    ]
    for table, values in (
        (Narrative, narrative_rows),
        (NarrativeTag, tag_rows),
        (ContextTurn, turn_rows),
        (Embedding, embeddings),
        (NarrativeSource, links),
        (AttentionHit, hits),
    ):
        for batch in _batches(values):
            with db.write() as conn:
                conn.execute(insert(table), batch)


def stage_scan(db: Database) -> str:
    # As the stage does: infer the links (read only), scan, then apply them as its plan in one transaction.
    _, links = scan.infer_source_links(db, AGENT, LOCAL_MODEL)
    report = scan.scan_agent(db, AGENT)
    to_markdown(report)
    plan = Plan(
        tuple(
            AddSourceLink(k.narrative_id, k.context_id, k.score, k.evidence.cosine, k.evidence.shared_words)
            for k in links
        )
    )
    with db.write() as conn:
        applied = apply_plan(conn, AGENT, plan)
    return f"{len(applied)} links inferred, {len(report.unlinked)} unlinked, {len(report.chunks)} chunks"


def stage_refresh(db: Database) -> str:
    report = weights.refresh_weights(db, AGENT)
    return f"{report.changed} of {report.narratives} changed"


def stage_topics(db: Database) -> str:
    return f"{clusters.rebuild_topics(db, AGENT).clusters} topic clusters"


def stage_soft(db: Database) -> str:
    return f"k = {clusters.rebuild_soft_clusters(db, AGENT, LOCAL_MODEL).clusters}"


def stage_graph(db: Database) -> str:
    report = graph.rebuild_entity_graph(db, AGENT, ALIASES)
    return f"{report.nodes} nodes, {report.edges} edges"


def stage_heatmap(db: Database) -> str:
    with db.read() as conn:
        hits = hits_since(conn, AGENT, days=3650)
        topics, soft = clusters.memberships(conn, AGENT)
    return f"{heatmap(hits, topics, soft).total_hits} hits"


STAGES: dict[str, Callable[[Database], str]] = {
    "scan (inferred links + tracks A-D + markdown)": stage_scan,
    "refresh (recurrence + weights)": stage_refresh,
    "recluster: topic clusters": stage_topics,
    "recluster: soft clusters": stage_soft,
    "entity graph": stage_graph,
    "attention heatmap (read path)": stage_heatmap,
}


def run_size(n: int, root: Path) -> tuple[dict[str, float], dict[str, str], float]:
    db = Database.open(f"sqlite:///{root / f'bench-{n}.db'}")
    started = time.perf_counter()
    load(db, n)
    load_s = time.perf_counter() - started
    times: dict[str, float] = {}
    facts: dict[str, str] = {}
    for name, stage in STAGES.items():
        t0 = time.perf_counter()
        facts[name] = stage(db)
        times[name] = time.perf_counter() - t0
    # The nightly chain's stage functions from the registry, as the dream worker runs them (the
    # embedder is only asked for its model's name, so it never loads).
    # Each through the runner, so what a stage plans (solidify's narratives, refresh's weights) is applied
    # and recorded as the worker would; the LLM stages are skipped (no LLM here).
    context = StageContext(db=db, embedder=LocalE5Embedder(root / "unused-model-cache"), known_persons=ALIASES)
    t0 = time.perf_counter()
    for stage in nightly_stages():
        t1 = time.perf_counter()
        outcome = running.run_stage(context, stage, AGENT, runs.day_of(), {"trigger": "bench"}, run_key="bench")
        times[f"  in the chain: {stage.name}"] = time.perf_counter() - t1
        facts[f"  in the chain: {stage.name}"] = outcome.output.skipped or f"{len(outcome.changes)} rows changed"
    times["full chain (" + " → ".join(s.name for s in nightly_stages()) + ")"] = time.perf_counter() - t0
    db.close()
    return times, facts, load_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    initialize()
    root = Path(tempfile.mkdtemp(prefix="tl-script-bench-"))
    try:
        results = {n: run_size(n, root) for n in args.sizes}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"# Dream stages of the script layer on a SQLite file — {os.cpu_count()} cores, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}"
    )
    stages = list(next(iter(results.values()))[0])
    width = max(len(s) for s in stages) + 2
    header = "stage".ljust(width) + "".join(f"{n:>12,}" for n in args.sizes)
    print(header)
    print("-" * len(header))
    for stage in stages:
        print(stage.ljust(width) + "".join(f"{results[n][0][stage]:>11.2f}s" for n in args.sizes))
    print("-" * len(header))
    print("load (bulk insert, untimed)".ljust(width) + "".join(f"{results[n][2]:>11.1f}s" for n in args.sizes))
    print()
    for n in args.sizes:
        print(f"{n:,}: " + "; ".join(f"{name.split(' (')[0]}: {fact}" for name, fact in results[n][1].items()))


if __name__ == "__main__":
    main()
