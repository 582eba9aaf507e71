"""Attention heatmap: retrieval hits attributed to topic and embedding clusters, and the clusters never lit.

Pure: hits and cluster memberships in, a frozen `Heatmap` out, and `to_markdown` for the comb
stage and for people. Per kind of clustering (topic, embedding), each hit counts once for every
cluster holding its narrative; a cluster shows its hits, share of all hits, a bar, mean similarity
and sources; clusters no hit reached are the attention deserts. Membership is joined when the
heatmap is read, never baked into the hit, so a rebuilt clustering is read correctly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tideline_core.text.dates import as_utc, human

BAR_WIDTH = 20
BAR_CHAR = "█"
KINDS = ("topic", "embedding")


@dataclass(frozen=True, slots=True)
class Hit:
    """One logged retrieval hit (`source`: t1, search, recall, ...)."""

    narrative_id: int
    similarity: float | None  # None: the retrieval measured none (a recall)
    source: str
    created_at: datetime


@dataclass(frozen=True)
class HeatRow:
    """A cluster that was hit: how often, its share of all hits, a bar, mean similarity, sources.

    `mean_similarity` is over the hits that measured one (None when none did: recalls only).

    `sources` maps source → hits, most frequent first.
    """

    cluster: str
    hits: int
    share: float
    bar: str
    mean_similarity: float | None
    sources: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Desert:
    """A cluster no hit reached, and how many narratives it holds."""

    cluster: str
    size: int


@dataclass(frozen=True)
class KindHeat:
    """One kind of clustering: rows most hit first, deserts largest first, and the hits whose
    narrative is in no cluster of this kind."""

    kind: str
    rows: tuple[HeatRow, ...]
    deserts: tuple[Desert, ...]
    unclustered_hits: int


@dataclass(frozen=True)
class Heatmap:
    total_hits: int
    first_hit: datetime | None
    last_hit: datetime | None
    kinds: tuple[KindHeat, ...]

    def kind(self, name: str) -> KindHeat:
        return next(k for k in self.kinds if k.kind == name)


def heatmap(
    hits: Sequence[Hit],
    topic_members: Mapping[str, Iterable[int]],
    embedding_members: Mapping[str, Iterable[int]],
    *,
    bar_width: int = BAR_WIDTH,
    sizes: tuple[Mapping[str, int], Mapping[str, int]] | None = None,
) -> Heatmap:
    """Attribute each hit to every cluster holding its narrative, per kind of clustering.

    With `sizes` (per kind, cluster → members) the members need only hold the hit narratives: every
    cluster of `sizes` the hits missed is a desert of that size.

    A hit counts once for each cluster containing the narrative, so a kind's shares can add up
    to more than 1 (soft clusters hold each narrative three times). `share` is a cluster's hits
    over all hits; bars are scaled so the most hit cluster of a kind fills `bar_width`.
    """
    times = [as_utc(h.created_at) for h in hits]
    # Retrieval keeps hitting the same memories: aggregate per (narrative, source) once, then
    # spread the sums over clusters, instead of walking every cluster for every hit.
    per_source: dict[tuple[int, str], tuple[int, float, int]] = {}
    for hit in hits:
        count, similarity_sum, measured = per_source.get((hit.narrative_id, hit.source), (0, 0.0, 0))
        if hit.similarity is not None:
            similarity_sum, measured = similarity_sum + hit.similarity, measured + 1
        per_source[(hit.narrative_id, hit.source)] = (count + 1, similarity_sum, measured)
    return Heatmap(
        total_hits=len(hits),
        first_hit=min(times) if times else None,
        last_hit=max(times) if times else None,
        kinds=tuple(
            _kind(kind, per_source, len(hits), members, bar_width, None if sizes is None else sizes[i])
            for i, (kind, members) in enumerate(zip(KINDS, (topic_members, embedding_members), strict=True))
        ),
    )


def _kind(
    kind: str,
    per_source: Mapping[tuple[int, str], tuple[int, float, int]],
    total: int,
    members: Mapping[str, Iterable[int]],
    bar_width: int,
    known_sizes: Mapping[str, int] | None = None,
) -> KindHeat:
    clusters_of: dict[int, list[str]] = {}
    sizes: dict[str, int] = dict(known_sizes or {})
    for cluster, ids in members.items():
        unique = set(ids)
        if known_sizes is None:
            sizes[cluster] = len(unique)
        for narrative_id in unique:
            clusters_of.setdefault(narrative_id, []).append(cluster)
    counts: Counter[str] = Counter()
    similarity: dict[str, float] = {}
    measured: Counter[str] = Counter()
    sources: dict[str, Counter[str]] = {}
    unclustered = 0
    for (narrative_id, source), (n, similarity_sum, with_similarity) in per_source.items():
        holders = clusters_of.get(narrative_id)
        if not holders:
            unclustered += n
            continue
        for cluster in holders:
            counts[cluster] += n
            similarity[cluster] = similarity.get(cluster, 0.0) + similarity_sum
            measured[cluster] += with_similarity
            sources.setdefault(cluster, Counter())[source] += n
    top = max(counts.values(), default=0)
    rows = tuple(
        HeatRow(
            cluster=cluster,
            hits=count,
            share=count / total,
            bar=BAR_CHAR * max(1, round(bar_width * count / top)),
            mean_similarity=similarity[cluster] / measured[cluster] if measured[cluster] else None,
            sources=dict(sorted(sources[cluster].items(), key=lambda sc: (-sc[1], sc[0]))),
        )
        for cluster, count in sorted(counts.items(), key=lambda cc: (-cc[1], cc[0]))
    )
    deserts = tuple(
        Desert(cluster, size)
        for cluster, size in sorted(sizes.items(), key=lambda cs: (-cs[1], cs[0]))
        if cluster not in counts
    )
    return KindHeat(kind, rows, deserts, unclustered)


def to_markdown(heat: Heatmap, *, max_rows: int = 25, max_deserts: int = 50) -> str:
    """A table per kind (cluster, hits, share, bar, mean similarity, sources) and its deserts."""
    span = (
        f"{human(heat.first_hit)} → {human(heat.last_hit)}"
        if heat.first_hit is not None and heat.last_hit is not None
        else "no hits"
    )
    lines = ["# Attention heatmap", "", f"{heat.total_hits} hits, {span}.", ""]
    for kind in heat.kinds:
        lines += [f"## {kind.kind.capitalize()} clusters", ""]
        if not kind.rows and not kind.deserts:  # nothing to be lit, so no desert either
            lines.append("No cluster of this kind yet: the dream's recluster stage builds them.")
            if kind.unclustered_hits:
                lines += ["", f"{kind.unclustered_hits} hits were on narratives in no cluster of this kind."]
            lines.append("")
            continue
        if kind.rows:
            lines += ["| cluster | hits | share | bar | mean sim | sources |", "|---|---:|---:|---|---:|---|"]
            for row in kind.rows[:max_rows]:
                sources = ", ".join(f"{s} {n}" for s, n in row.sources.items())
                lines.append(
                    f"| {_cell(row.cluster)} | {row.hits} | {row.share:.0%} | {row.bar} | "
                    f"{'—' if row.mean_similarity is None else f'{row.mean_similarity:.3f}'} | {_cell(sources)} |"
                )
            if len(kind.rows) > max_rows:
                lines.append(f"\n… and {len(kind.rows) - max_rows} more clusters with hits.")
        else:
            lines.append("No hits reached a cluster of this kind.")
        if kind.unclustered_hits:
            lines += ["", f"{kind.unclustered_hits} hits were on narratives in no cluster of this kind."]
        lines += ["", f"### Attention deserts ({len(kind.deserts)} clusters never lit)", ""]
        shown = ", ".join(f"{_cell(d.cluster)} ({d.size})" for d in kind.deserts[:max_deserts])
        lines.append(shown or "None: every cluster was lit.")
        if len(kind.deserts) > max_deserts:
            lines.append(f"… and {len(kind.deserts) - max_deserts} more.")
        lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    # A pipe or newline inside a cell would break the table.
    return " ".join(text.split()).replace("|", "\\|")
