"""Soft clusters: k, memberships, adjacency, names and query routing."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tideline_core.dream.recluster.soft import (
    ClusterPair,
    SoftClusters,
    adjacency_of,
    assign,
    choose_k,
    name_clusters,
    neighbour_map,
    route,
    soft_clusters,
)
from tideline_core.errors import InvalidInput


def unit_rows(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def blobs(per_blob: int, centres: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    middle = unit_rows(centres, dim, seed + 1) * 5
    return np.concatenate([m + rng.standard_normal((per_blob, dim)) * 0.1 for m in middle]).astype(np.float32)


def check_invariants(result: SoftClusters, ids: list[int]) -> None:
    per_item = min(3, result.k)
    by_narrative: dict[int, list[int]] = {}
    for m in result.memberships:
        by_narrative.setdefault(m.narrative_id, []).append(m.cluster)
    assert sorted(by_narrative) == sorted(ids)
    assert all(len(set(c)) == len(c) == per_item for c in by_narrative.values())
    assert list(result.sizes) == [Counter(m.cluster for m in result.memberships)[c] for c in range(result.k)]
    assert all(size > 0 for size in result.sizes)
    expected = Counter(pair for clusters in by_narrative.values() for pair in combinations(sorted(clusters), 2))
    assert {(p.a, p.b): p.shared for p in result.adjacency} == dict(expected)
    assert all(p.a < p.b and p.shared > 0 for p in result.adjacency)
    assert np.allclose(np.linalg.norm(result.centroids, axis=1), 1.0, atol=1e-5) or result.k == 0


def test_k_is_one_and_a_half_root_n_with_a_floor_of_five_capped_by_n() -> None:
    assert [choose_k(n) for n in (0, 1, 4, 5, 10, 100, 10_000)] == [0, 1, 4, 5, 5, 15, 150]


def test_no_narratives_give_no_clusters() -> None:
    result = soft_clusters([], np.zeros((0, 8), np.float32))
    assert (result.k, result.memberships, result.adjacency, result.centroids.shape) == (0, (), (), (0, 8))


def test_fewer_than_five_narratives_get_one_cluster_each() -> None:
    result = soft_clusters([10, 20, 30], unit_rows(3))
    assert result.k == 3
    check_invariants(result, [10, 20, 30])


def test_every_narrative_is_in_its_three_nearest_clusters_nearest_first() -> None:
    vectors = blobs(30, 6)
    ids = list(range(100, 280))
    result = soft_clusters(ids, vectors)
    check_invariants(result, ids)
    for m in result.memberships[:30]:
        row = vectors[ids.index(m.narrative_id)]
        cosine = float(result.centroids[m.cluster] @ (row / np.linalg.norm(row)))
        assert m.distance == pytest.approx(1 - cosine, abs=1e-5)
    ranks = [[m.distance for m in result.memberships if m.narrative_id == i] for i in ids[:10]]
    assert all(r == sorted(r) for r in ranks)


def test_the_same_input_gives_the_same_clusters() -> None:
    vectors = blobs(20, 5)
    a = soft_clusters(list(range(100)), vectors)
    b = soft_clusters(list(range(100)), vectors)
    assert a.memberships == b.memberships and a.adjacency == b.adjacency
    assert np.array_equal(a.centroids, b.centroids)


def test_duplicate_vectors_never_ask_for_more_centroids_than_distinct_points() -> None:
    vectors = np.repeat(unit_rows(2), 6, axis=0)
    result = soft_clusters(list(range(12)), vectors)
    assert result.k == 2
    check_invariants(result, list(range(12)))


def test_all_zero_vectors_still_cluster_without_error() -> None:
    result = soft_clusters(list(range(6)), np.zeros((6, 4), np.float32))
    assert result.k == 1
    assert all(m.distance == 1.0 for m in result.memberships)


def test_large_inputs_use_minibatch_kmeans_and_keep_the_invariants() -> None:
    ids = list(range(600))
    result = soft_clusters(ids, blobs(100, 6), minibatch_above=500)
    check_invariants(result, ids)


def test_ids_must_be_distinct_and_match_the_rows() -> None:
    with pytest.raises(InvalidInput, match="distinct"):
        soft_clusters([1, 1], unit_rows(2))
    with pytest.raises(InvalidInput, match="one row per id"):
        soft_clusters([1, 2, 3], unit_rows(2))
    with pytest.raises(InvalidInput, match="finite"):
        soft_clusters([1, 2], np.array([[np.nan, 1.0], [1.0, 0.0]], np.float32))


def test_clusters_are_named_by_their_distinctive_keywords() -> None:
    vectors = blobs(10, 2)
    texts = {i: ("数据库 服务器 缓存" if i < 10 else "garden flowers river") for i in range(20)}
    result = soft_clusters(list(range(20)), vectors, texts=texts, per_item=1)
    names = {result.memberships[i].cluster: result.names[result.memberships[i].cluster] for i in (0, 10)}
    assert set(names[result.memberships[0].cluster].split()[1:]) >= {"数据库", "服务器"}
    assert "garden" in names[result.memberships[10].cluster]
    assert all(name.startswith(f"#{label}") for label, name in enumerate(result.names))


def test_without_texts_a_cluster_is_named_by_its_label() -> None:
    assert soft_clusters([1, 2, 3], unit_rows(3)).names == ("#0", "#1", "#2")


def test_a_name_keeps_words_shared_by_the_cluster_over_one_off_words() -> None:
    sets = {1: {"tide", "moon"}, 2: {"tide", "salt"}, 3: {"tide"}, 4: {"forest"}, 5: {"forest"}}
    assert name_clusters([[1, 2, 3], [4, 5]], sets) == ("#0 tide", "#1 forest")


def test_a_query_routes_to_its_nearest_clusters_and_then_their_neighbours() -> None:
    centroids = np.eye(4, dtype=np.float32)
    pairs = [ClusterPair(0, 3, 2), ClusterPair(1, 2, 1)]
    query = np.array([1.0, 0.2, 0.0, 0.0], np.float32)
    assert route(query, centroids, pairs, top=1).clusters == (0, 3)
    both = route(query, centroids, pairs, top=2)
    assert (both.primary, both.neighbours) == ((0, 1), (2, 3))
    assert route(query, centroids, neighbour_map(pairs), top=2) == both


def test_a_zero_query_or_no_centroids_routes_nowhere() -> None:
    assert route(np.zeros(4, np.float32), np.eye(4, dtype=np.float32), []).clusters == ()
    assert route(np.ones(4, np.float32), np.zeros((0, 4), np.float32), []).clusters == ()


def test_assign_breaks_ties_towards_the_lower_label() -> None:
    nearest, distances = assign(np.array([[1.0, 1.0]], np.float32), np.eye(2, dtype=np.float32), per_item=1)
    assert nearest.tolist() == [[0]]
    assert distances[0, 0] == pytest.approx(1 - 2**-0.5)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 40), st.integers(2, 6), st.integers(0, 3), st.integers(0, 2**16))
def test_memberships_and_adjacency_hold_for_any_input(n: int, dim: int, duplicates: int, seed: int) -> None:
    vectors = unit_rows(n, dim, seed)
    if n and duplicates:
        vectors[: min(n, duplicates * 3)] = vectors[0]
    ids = list(range(1000, 1000 + n))
    result = soft_clusters(ids, vectors)
    check_invariants(result, ids)
    assert result.k <= choose_k(n)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 7), min_size=3, max_size=3, unique=True), max_size=30))
def test_adjacency_is_the_count_of_shared_narratives_for_each_pair(rows: list[list[int]]) -> None:
    nearest = np.array(rows, dtype=np.int64).reshape(-1, 3)
    pairs = adjacency_of(nearest)
    for pair in pairs:
        assert pair.a < pair.b
        assert pair.shared == sum(pair.a in row and pair.b in row for row in rows)
    linked = neighbour_map(pairs)
    assert all(a in linked[b] for a, others in linked.items() for b in others)
