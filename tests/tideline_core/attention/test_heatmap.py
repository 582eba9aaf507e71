"""Attention heatmap: hits attributed to every cluster holding their narrative, shares, bars, deserts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tideline_core.attention.heatmap import BAR_CHAR, Hit, heatmap, to_markdown

T0 = datetime(2026, 5, 8, tzinfo=UTC)
TOPICS = {"边界": [1, 2], "garden": [3], "silent": [7, 8]}
EMBEDDING = {"#0 tide": [1, 3], "#1 moon": [2, 3], "#2 salt": [9]}


def hit(narrative_id: int, similarity: float = 0.5, source: str = "t1", minutes: int = 0) -> Hit:
    return Hit(narrative_id, similarity, source, T0 + timedelta(minutes=minutes))


def test_a_hit_counts_for_every_cluster_that_holds_its_narrative() -> None:
    heat = heatmap([hit(3)], TOPICS, EMBEDDING)
    assert [(r.cluster, r.hits) for r in heat.kind("embedding").rows] == [("#0 tide", 1), ("#1 moon", 1)]
    assert [r.cluster for r in heat.kind("topic").rows] == ["garden"]


def test_rows_carry_hits_share_mean_similarity_and_sources_most_hit_first() -> None:
    hits = [hit(1, 0.9, "t1"), hit(2, 0.5, "search"), hit(2, 0.7, "t1"), hit(3, 0.3, "recall")]
    rows = heatmap(hits, TOPICS, EMBEDDING).kind("topic").rows
    top = rows[0]
    assert (top.cluster, top.hits, top.share) == ("边界", 3, 0.75)
    assert top.mean_similarity == pytest.approx(0.7)
    assert top.sources == {"t1": 2, "search": 1}
    assert list(top.sources) == ["t1", "search"]
    assert rows[1].cluster == "garden"


def test_bars_are_scaled_so_the_most_hit_cluster_fills_twenty_characters() -> None:
    hits = [hit(1)] * 10 + [hit(3)]
    rows = heatmap(hits, TOPICS, EMBEDDING).kind("topic").rows
    assert rows[0].bar == BAR_CHAR * 20
    assert rows[1].bar == BAR_CHAR * 2
    tiny = heatmap([hit(1)] * 100 + [hit(3)], TOPICS, EMBEDDING).kind("topic").rows
    assert tiny[1].bar == BAR_CHAR  # a lit cluster always shows at least one block


def test_clusters_with_no_hits_are_attention_deserts_largest_first() -> None:
    heat = heatmap([hit(1)], TOPICS, EMBEDDING)
    assert [(d.cluster, d.size) for d in heat.kind("topic").deserts] == [("silent", 2), ("garden", 1)]
    assert [d.cluster for d in heat.kind("embedding").deserts] == ["#1 moon", "#2 salt"]


def test_hits_on_narratives_in_no_cluster_are_counted_apart() -> None:
    heat = heatmap([hit(1), hit(99)], TOPICS, EMBEDDING)
    assert heat.kind("topic").unclustered_hits == 1
    assert heat.kind("topic").rows[0].share == 0.5


def test_no_hits_make_every_cluster_a_desert() -> None:
    heat = heatmap([], TOPICS, EMBEDDING)
    assert heat.total_hits == 0 and heat.first_hit is None
    assert heat.kind("topic").rows == ()
    assert len(heat.kind("topic").deserts) == 3


def test_the_markdown_shows_tables_and_deserts_per_kind() -> None:
    hits = [hit(1, 0.812, "t1", 0), hit(3, 0.5, "search", 90)]
    text = to_markdown(heatmap(hits, TOPICS | {"a|b": [4]}, EMBEDDING))
    assert "2 hits, 2026-05-08 00:00 UTC → 2026-05-08 01:30 UTC." in text
    assert "## Topic clusters" in text and "## Embedding clusters" in text
    assert f"| 边界 | 1 | 50% | {BAR_CHAR * 20} | 0.812 | t1 1 |" in text
    assert "silent (2)" in text
    assert "a\\|b (1)" in text


def test_the_markdown_of_no_hits_says_so() -> None:
    text = to_markdown(heatmap([], TOPICS, {}))
    assert "0 hits, no hits." in text
    assert "No hits reached a cluster of this kind." in text


def test_the_markdown_without_clusters_says_none_is_built_and_lists_no_deserts() -> None:
    text = to_markdown(heatmap([hit(1)], {}, {}))
    assert text.count("No cluster of this kind yet: the dream's recluster stage builds them.") == 2
    assert "Attention deserts" not in text and "None: every cluster was lit" not in text
    assert "1 hits were on narratives in no cluster of this kind." in text


memberships = st.dictionaries(st.sampled_from(list("abcdef")), st.lists(st.integers(0, 15), max_size=6), max_size=6)
hit_lists = st.lists(
    st.builds(hit, st.integers(0, 20), st.floats(0, 1), st.sampled_from(["t1", "search", "recall"])), max_size=40
)


@settings(max_examples=150, deadline=None)
@given(hit_lists, memberships, memberships)
def test_every_hit_is_attributed_to_exactly_the_clusters_holding_it(
    hits: list[Hit], topics: dict[str, list[int]], embedding: dict[str, list[int]]
) -> None:
    heat = heatmap(hits, topics, embedding)
    for kind, members in (("topic", topics), ("embedding", embedding)):
        table = heat.kind(kind)
        expected = {c: sum(h.narrative_id in set(ids) for h in hits) for c, ids in members.items()}
        assert {r.cluster: r.hits for r in table.rows} == {c: n for c, n in expected.items() if n}
        assert {d.cluster for d in table.deserts} == {c for c, n in expected.items() if not n}
        assert table.unclustered_hits == sum(all(h.narrative_id not in ids for ids in members.values()) for h in hits)
        assert [r.hits for r in table.rows] == sorted((r.hits for r in table.rows), reverse=True)
        for row in table.rows:
            assert 0 < row.share <= 1 and 1 <= len(row.bar) <= 20
            assert sum(row.sources.values()) == row.hits
            assert row.mean_similarity is None or 0 <= row.mean_similarity <= 1 + 1e-9


def test_a_recall_counts_as_a_hit_but_not_in_the_mean_similarity() -> None:
    at = datetime(2026, 5, 1, tzinfo=UTC)
    hits = [Hit(1, 0.8, "search", at), Hit(1, None, "recall", at), Hit(2, None, "recall", at)]
    heat = heatmap(hits, {"garden": [1], "river": [2]}, {})
    rows = {row.cluster: row for row in heat.kind("topic").rows}
    assert rows["garden"].hits == 2 and rows["garden"].mean_similarity == pytest.approx(0.8)
    assert rows["river"].hits == 1 and rows["river"].mean_similarity is None
    assert "| river | 1 | 33% | " in to_markdown(heat) and "| — |" in to_markdown(heat)


def test_given_the_cluster_sizes_the_hit_narratives_memberships_alone_give_the_same_heatmap() -> None:
    hits = [hit(1), hit(1), hit(3, 0.4), hit(4, None)]
    hit_ids = {h.narrative_id for h in hits}
    members_of_hits = [
        {cluster: [i for i in ids if i in hit_ids] for cluster, ids in members.items() if set(ids) & hit_ids}
        for members in (TOPICS, EMBEDDING)
    ]
    sizes = ({c: len(set(ids)) for c, ids in TOPICS.items()}, {c: len(set(ids)) for c, ids in EMBEDDING.items()})
    assert heatmap(hits, *members_of_hits, sizes=sizes) == heatmap(hits, TOPICS, EMBEDDING)
