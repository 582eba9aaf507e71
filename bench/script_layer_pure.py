"""Time each pure script-layer stage on synthetic bilingual narratives (default 10k and 100k).

    .venv/bin/python bench/script_layer_pure.py [--sizes 10000 100000]

No database, no Celery: only the functions the dream workers call. Prints one table, seconds per
stage per size. Numbers depend on machine load; run it on a quiet machine to compare.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic

from tideline_core import attention, backfill, entity_graph, reweigh, scanner, soft_clusters, topics
from tideline_core.text import initialize

T = TypeVar("T")


def timed(results: dict[str, float], stage: str, run: Callable[[], T]) -> T:
    start = time.perf_counter()
    value = run()
    results[stage] = time.perf_counter() - start
    return value


def text_of(row: dict[str, Any]) -> str:
    return " ".join((row["gesture"], row["context"], row["cognition_direction"]))


def run_size(n: int) -> tuple[dict[str, float], dict[str, Any]]:
    rows = synthetic.narratives(n)
    turns = synthetic.context_turns(n)
    vectors = synthetic.vectors(n)
    turn_vectors = synthetic.vectors(n, seed=1)
    ids = [r["id"] for r in rows]
    times: dict[str, float] = {}
    facts: dict[str, Any] = {"chars/narrative": round(sum(len(text_of(r)) for r in rows) / n)}

    topics.keywords.cache_clear()
    texts = [(r["id"], text_of(r)) for r in rows]
    keyword_sets = timed(times, "keywords (jieba POS)", lambda: topics.keyword_sets(texts))
    clusters = timed(times, "topic clusters (DF filter)", lambda: topics.clusters_from_keywords(keyword_sets))
    merged = timed(
        times, "topic clusters, Jaccard merge", lambda: topics.clusters_from_keywords(keyword_sets, merge=True)
    )
    facts["topic clusters"] = f"{len(clusters)} ({len(merged)} merged)"

    soft = timed(times, "soft clusters (k-means + assign)", lambda: soft_clusters.soft_clusters(ids, vectors))
    facts["soft clusters k"] = soft.k
    members = soft.members()
    groups = [members[c] for c in range(soft.k)]
    timed(times, "soft cluster names (keywords given)", lambda: soft_clusters.name_clusters(groups, keyword_sets))
    links = soft_clusters.neighbour_map(soft.adjacency)
    queries = synthetic.vectors(1000, seed=2)
    timed(times, "route 1000 queries", lambda: [soft_clusters.route(q, soft.centroids, links) for q in queries])

    scored = [
        reweigh.ScoredNarrative(
            r["id"],
            r["created_at"],
            tuple(r["tags"]),
            r["importance"],
            r["emotional"],
            r["unresolved"],
            r["recurrence"],
            0.6,
        )
        for r in rows
    ]
    changes = timed(times, "reweigh", lambda: reweigh.reweigh(scored))
    facts["weight changes"] = len(changes)

    mentions = [
        entity_graph.EntityMention(r["id"], r["occurred_at"], r["entities_role"], tuple(r["related_entities"]))
        for r in rows
    ]
    aliases = {"alice": "Alice", "bob": "Bob", "甜心": "甜心"}
    graph = timed(times, "entity graph", lambda: entity_graph.build_graph(mentions, aliases))
    facts["entities / edges"] = f"{len(graph.nodes)} / {len(graph.edges)}"

    narrative_rows = [scanner.NarrativeRow(r["id"], r["gesture"], r["created_at"], r["id"] % 3 == 0) for r in rows]
    turn_rows = [
        scanner.TurnRow(t["id"], t["session_id"], t["role"], t["speaker"], t["content"], t["created_at"]) for t in turns
    ]
    report = timed(times, "scanner (all turns new)", lambda: scanner.scan(narrative_rows, turn_rows, 0))
    timed(times, "scanner markdown", lambda: scanner.to_markdown(report))
    facts["chunks / short"] = f"{len(report.chunks)} / {len(report.short_chunks)}"

    anchors = [backfill.NarrativeAnchor(r["id"], r["occurred_at"]) for r in rows]
    turn_anchors = [backfill.TurnAnchor(t["id"], t["created_at"]) for t in turns]
    timed(times, "backfill (±6 h, 384-d)", lambda: backfill.propose_links(anchors, vectors, turn_anchors, turn_vectors))

    rng = np.random.default_rng(3)
    hits = [
        attention.Hit(int(i), float(s), "t1", rows[0]["created_at"])
        for i, s in zip(rng.integers(1, n + 1, n), rng.random(n), strict=True)
    ]
    topic_members = {c.keyword: c.narrative_ids for c in clusters}
    embedding_members = {soft.names[c]: ids_ for c, ids_ in members.items()}
    heat = timed(times, "attention heatmap (N hits)", lambda: attention.heatmap(hits, topic_members, embedding_members))
    timed(times, "attention markdown", lambda: attention.to_markdown(heat))
    return times, facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    initialize()
    runs = {n: run_size(n) for n in args.sizes}
    stages = list(next(iter(runs.values()))[0])
    width = max(len(s) for s in stages) + 2
    header = "stage".ljust(width) + "".join(f"{n:>12,}" for n in args.sizes)
    print(header)
    print("-" * len(header))
    for stage in stages:
        print(stage.ljust(width) + "".join(f"{runs[n][0][stage]:>11.2f}s" for n in args.sizes))
    print("-" * len(header))
    print("total".ljust(width) + "".join(f"{sum(runs[n][0].values()):>11.2f}s" for n in args.sizes))
    print()
    for fact in next(iter(runs.values()))[1]:
        print(fact.ljust(width) + "".join(f"{runs[n][1][fact]!s:>20}" for n in args.sizes))


if __name__ == "__main__":
    main()
