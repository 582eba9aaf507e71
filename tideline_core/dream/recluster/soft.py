"""Soft clusters: k-means on normalized embeddings, each narrative in its nearest centroids, adjacency, names, routing.

Pure: ids and a float32 (N, d) matrix in, a frozen `SoftClusters` out. k = min(N, max(5,
int(√N × 1.5))) k-means on the normalized vectors with a fixed seed; each narrative belongs to its
3 nearest centroids (distance = 1 − cosine); two clusters are adjacent when they share narratives,
and a query can be routed to its nearest clusters and their neighbours.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from tideline_core.dream.recluster import topics
from tideline_core.embedding import normalize
from tideline_core.errors import InvalidInput, MissingExtra
from tideline_core.numeric import np

PER_ITEM = 3
MINIBATCH_ABOVE = 5000
N_INIT = 3
SEED = 0
NAME_WORDS = 3
_CHUNK = 8192


@dataclass(frozen=True, slots=True)
class Membership:
    """Narrative `narrative_id` is in cluster `cluster`, its `rank`-th nearest (0 = nearest)."""

    narrative_id: int
    cluster: int
    rank: int
    distance: float  # 1 − cosine to the re-normalized centroid


@dataclass(frozen=True, slots=True)
class ClusterPair:
    """Clusters `a` < `b` share `shared` ≥ 1 narratives."""

    a: int
    b: int
    shared: int


@dataclass(frozen=True, eq=False)
class SoftClusters:
    """Clusters are labelled 0..k−1; row i of `centroids` is cluster i (unit length, float32).

    Every cluster has at least one member: centroids that won no narrative are dropped and the
    rest relabelled densely, so no label is an empty "desert" by construction.
    """

    centroids: np.ndarray
    sizes: tuple[int, ...]
    names: tuple[str, ...]
    memberships: tuple[Membership, ...]  # input order, then rank
    adjacency: tuple[ClusterPair, ...]  # sorted by (a, b)

    @property
    def k(self) -> int:
        return len(self.sizes)

    def members(self) -> dict[int, tuple[int, ...]]:
        """Cluster label → its narrative ids (input order)."""
        found: dict[int, list[int]] = {label: [] for label in range(self.k)}
        for m in self.memberships:
            found[m.cluster].append(m.narrative_id)
        return {label: tuple(ids) for label, ids in found.items()}


@dataclass(frozen=True)
class Route:
    """Where a query goes: its nearest clusters, then the clusters sharing narratives with them."""

    primary: tuple[int, ...]
    neighbours: tuple[int, ...]

    @property
    def clusters(self) -> tuple[int, ...]:
        return self.primary + self.neighbours


def choose_k(n: int) -> int:
    """k = min(N, max(5, int(√N × 1.5))); 0 for no narratives."""
    return min(n, max(5, int(math.sqrt(n) * 1.5)))


def soft_clusters(
    ids: Sequence[int],
    vectors: np.ndarray,
    *,
    texts: Mapping[int, str] | None = None,
    per_item: int = PER_ITEM,
    seed: int = SEED,
    minibatch_above: int = MINIBATCH_ABOVE,
    threads: int | None = 1,
) -> SoftClusters:
    """Cluster narratives `ids` (row i of `vectors` is narrative ids[i]) into soft clusters.

    KMeans up to `minibatch_above` narratives, MiniBatchKMeans beyond (both n_init=3, `seed`).
    k is `choose_k(N)`, lowered to the number of distinct vectors so duplicates cannot ask for
    more centroids than there are points. Each narrative joins its min(`per_item`, k) nearest
    centroids. With `texts`, clusters are named by their most distinctive keywords.

    `threads` caps BLAS/OpenMP threads for the call (None leaves them alone): on a busy machine
    two BLAS threads per worker process made k-means 3–30× slower than one, measured.
    """
    matrix = _check(ids, vectors)
    if not ids:
        return SoftClusters(np.zeros((0, matrix.shape[1]), np.float32), (), (), (), ())
    k = min(choose_k(len(ids)), len({hash(row.tobytes()) for row in matrix}))
    try:
        from threadpoolctl import threadpool_limits  # with scikit-learn: only processes that cluster load them
    except ImportError:
        raise MissingExtra("threadpoolctl", "dream", "clustering the memories (recluster)") from None

    with threadpool_limits(limits=threads):
        centroids = _fit(matrix, k, seed, minibatch_above)
        nearest, distances = assign(matrix, centroids, per_item)
    # Drop centroids that no narrative chose and relabel the rest 0..k'−1 in their old order.
    used = np.unique(nearest)
    relabel = np.full(len(centroids), -1, dtype=np.int64)
    relabel[used] = np.arange(len(used))
    nearest = relabel[nearest]
    centroids = centroids[used]
    sizes = np.bincount(nearest.ravel(), minlength=len(used))
    memberships = tuple(
        Membership(narrative_id, int(cluster), rank, float(distance))
        for narrative_id, row, row_distances in zip(ids, nearest.tolist(), distances.tolist(), strict=True)
        for rank, (cluster, distance) in enumerate(zip(row, row_distances, strict=True))
    )
    names: tuple[str, ...]
    if texts is None:
        names = tuple(f"#{label}" for label in range(len(used)))
    else:
        member_lists: list[list[int]] = [[] for _ in range(len(used))]
        for m in memberships:
            member_lists[m.cluster].append(m.narrative_id)
        sets = topics.keyword_sets((i, texts.get(i, "")) for i in ids)
        names = name_clusters(member_lists, sets)
    return SoftClusters(
        centroids=centroids,
        sizes=tuple(int(s) for s in sizes),
        names=names,
        memberships=memberships,
        adjacency=adjacency_of(nearest),
    )


def assign(vectors: np.ndarray, centroids: np.ndarray, per_item: int = PER_ITEM) -> tuple[np.ndarray, np.ndarray]:
    """Each row's min(`per_item`, k) nearest centroids (N, m) and their 1 − cosine distances (N, m).

    Nearest first; equal similarities go to the lower label. Usable on its own to place new
    narratives into existing clusters between rebuilds.
    """
    matrix = normalize(vectors)
    unit = normalize(centroids)
    m = min(per_item, len(unit))
    nearest = np.zeros((len(matrix), m), dtype=np.int64)
    sims = np.zeros((len(matrix), m), dtype=np.float32)
    if m == 0:
        return nearest, sims
    for start in range(0, len(matrix), _CHUNK):
        block = matrix[start : start + _CHUNK] @ unit.T
        if m < block.shape[1]:
            top = np.argpartition(-block, m - 1, axis=1)[:, :m]
        else:
            top = np.broadcast_to(np.arange(block.shape[1]), block.shape).copy()
        top_sims = np.take_along_axis(block, top, axis=1)
        order = np.lexsort((top, -top_sims), axis=1)
        nearest[start : start + _CHUNK] = np.take_along_axis(top, order, axis=1)
        sims[start : start + _CHUNK] = np.take_along_axis(top_sims, order, axis=1)
    return nearest, np.clip(1.0 - sims, 0.0, 2.0)


def adjacency_of(nearest: np.ndarray) -> tuple[ClusterPair, ...]:
    """For an (N, m) array of cluster labels per narrative: how many narratives each pair shares."""
    if nearest.size == 0 or nearest.shape[1] < 2:
        return ()
    k = int(nearest.max()) + 1
    codes = [
        np.minimum(nearest[:, i], nearest[:, j]) * k + np.maximum(nearest[:, i], nearest[:, j])
        for i in range(nearest.shape[1])
        for j in range(i + 1, nearest.shape[1])
    ]
    pairs, counts = np.unique(np.concatenate(codes), return_counts=True)
    return tuple(
        ClusterPair(code // k, code % k, count) for code, count in zip(pairs.tolist(), counts.tolist(), strict=True)
    )


def neighbour_map(pairs: Iterable[ClusterPair]) -> dict[int, frozenset[int]]:
    """Cluster → the clusters sharing at least one narrative with it."""
    found: dict[int, set[int]] = {}
    for pair in pairs:
        if pair.shared > 0:
            found.setdefault(pair.a, set()).add(pair.b)
            found.setdefault(pair.b, set()).add(pair.a)
    return {label: frozenset(others) for label, others in found.items()}


def route(
    query_vec: np.ndarray,
    centroids: np.ndarray,
    adjacency: Iterable[ClusterPair] | Mapping[int, Collection[int]],
    top: int = 3,
) -> Route:
    """The `top` clusters nearest the query (by cosine), then their neighbours, each part nearest first.

    `adjacency` is the cluster pairs, or a ready `neighbour_map` (build it once when routing many
    queries). An all-zero query or no centroids routes nowhere.
    """
    unit = normalize(centroids)
    query = normalize(np.asarray(query_vec, dtype=np.float32).reshape(-1))
    if len(unit) == 0 or not query.any():
        return Route((), ())
    sims = unit @ query
    ranked = [int(i) for i in np.lexsort((np.arange(len(sims)), -sims))]
    primary = tuple(ranked[:top])
    links = adjacency if isinstance(adjacency, Mapping) else neighbour_map(adjacency)
    near = {n for label in primary for n in links.get(label, ())} - set(primary)
    return Route(primary, tuple(label for label in ranked if label in near))


def name_clusters(
    members: Sequence[Sequence[int]], keyword_sets: Mapping[int, Collection[str]], words: int = NAME_WORDS
) -> tuple[str, ...]:
    """`#label kw1 / kw2 / kw3` per cluster: the keywords most frequent in it and rare elsewhere.

    Score = (share of the cluster's narratives holding the word) × log(N / narratives holding it).
    The label prefix keeps names unique when two clusters share their top words.
    """
    everyone = {i for group in members for i in group}
    df: Counter[str] = Counter()
    for narrative_id in everyone:
        df.update(keyword_sets.get(narrative_id, ()))
    total = max(1, len(everyone))
    names: list[str] = []
    for label, group in enumerate(members):
        tf: Counter[str] = Counter()
        for narrative_id in group:
            tf.update(keyword_sets.get(narrative_id, ()))
        scored = sorted(tf, key=lambda w: (-(tf[w] / len(group)) * math.log(total / df[w]), w))
        best = [w for w in scored if tf[w] >= min(2, len(group))][:words]
        names.append(f"#{label} " + " / ".join(best) if best else f"#{label}")
    return tuple(names)


def _check(ids: Sequence[int], vectors: np.ndarray) -> np.ndarray:
    matrix = np.asarray(vectors)
    if matrix.ndim != 2 or matrix.shape[0] != len(ids):
        raise InvalidInput(
            "vectors", f"must be a 2-d array with one row per id; got shape {matrix.shape} for {len(ids)} ids"
        )
    if len(set(ids)) != len(ids):
        raise InvalidInput("ids", "must be distinct")
    if not np.isfinite(matrix).all():
        raise InvalidInput("vectors", "must be finite (no NaN or infinity)")
    # Adding 0 turns -0.0 into 0.0, so equal vectors also have equal bytes for the duplicate count.
    return np.ascontiguousarray(normalize(matrix) + np.float32(0.0))


def _fit(matrix: np.ndarray, k: int, seed: int, minibatch_above: int) -> np.ndarray:
    try:
        from sklearn.cluster import KMeans, MiniBatchKMeans  # about 70 MiB: never loaded by the MCP server
    except ImportError:
        raise MissingExtra("scikit-learn", "dream", "clustering the memories (recluster)") from None

    model: KMeans | MiniBatchKMeans
    if len(matrix) > minibatch_above:
        model = MiniBatchKMeans(n_clusters=k, n_init=N_INIT, random_state=seed, batch_size=4096)
    else:
        model = KMeans(n_clusters=k, n_init=N_INIT, random_state=seed)
    model.fit(matrix)
    return normalize(model.cluster_centers_.astype(np.float32))
