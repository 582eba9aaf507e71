"""The map's pictures: accessible SVG that parses, text escaped, deserts apart, empty inputs explained, caps told."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from tideline_console.drawing import MAX_CLUSTERS, MAX_NODES, clusters_svg, entity_graph_svg, heatmap_svg, topics_svg
from tideline_core.attention.heatmap import Desert, Heatmap, HeatRow, Hit, KindHeat, heatmap
from tideline_core.dream.graph.store import EdgeView, NodeView
from tideline_core.dream.recluster.store import Neighbour, SoftClusterSummary
from tideline_core.service.results import GraphView, SoftClustersView, TopicSample, TopicsView, TopicView

SVG = "{http://www.w3.org/2000/svg}"
NASTY = '<script>&"'
NASTY_ESCAPED = "&lt;script&gt;&amp;&quot;"
T0 = datetime(2026, 5, 8, tzinfo=UTC)


def row(cluster: str, hits: int, similarity: float | None = 0.5, total: int = 10) -> HeatRow:
    return HeatRow(cluster, hits, hits / total, "█", similarity, {"t1": hits})


def heat(*kinds: KindHeat, total: int = 10) -> Heatmap:
    return Heatmap(total, T0, T0, kinds)


def cluster(label: int, name: str, size: int, *neighbours: tuple[int, int]) -> SoftClusterSummary:
    return SoftClusterSummary(label, name, size, tuple(Neighbour(n, shared) for n, shared in neighbours))


def topic(keyword: str, size: int, *gestures: str, label: str | None = None) -> TopicView:
    return TopicView(keyword, label or keyword, size, tuple(TopicSample(i, g) for i, g in enumerate(gestures)))


def node(name: str, mentions: int, known: bool = False) -> NodeView:
    return NodeView(name, mentions, known, ("actor",), "2026-05-01T08:00:00+00:00", "2026-05-08T08:00:00+00:00")


def edge(source: str, target: str, count: int) -> EdgeView:
    return EdgeView(source, target, "actor", "object", count)


HEAT = heat(
    KindHeat("topic", (row("游泳", 6, 0.812), row("garden", 2, None)), (Desert("silent", 4),), 1),
    KindHeat("embedding", (row("#0 tide", 8),), (Desert("#2 salt", 9), Desert("#3 月亮", 1)), 0),
)
CLUSTERS = SoftClustersView(
    (cluster(0, "#0 游泳", 12, (1, 3)), cluster(1, "#1 tide", 7, (0, 3), (2, 1)), cluster(2, "#2 salt", 2, (1, 1)))
)
TOPICS = TopicsView((topic("游泳", 9, "去游泳了", "swam 2 km"), topic("garden", 3, "planted basil")))
GRAPH = GraphView(
    "top",
    (node("Alice", 9, known=True), node("游泳池", 4), node("Bob", 2)),
    (edge("Alice", "游泳池", 3), edge("Alice", "Bob", 1)),
)
PICTURES = [(heatmap_svg, HEAT), (clusters_svg, CLUSTERS), (topics_svg, TOPICS), (entity_graph_svg, GRAPH)]


Draw = Callable[[Any], str]


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def child(element: ET.Element, tag: str) -> ET.Element:
    found = element.find(f"{SVG}{tag}")
    assert found is not None, f"no <{tag}> in <{element.tag}>"
    return found


def titles(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}title")]


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


@pytest.mark.parametrize(("draw", "value"), PICTURES)
def test_every_picture_is_an_accessible_svg_that_parses(draw: Draw, value: Any) -> None:
    root = parse(draw(value))
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img"
    assert root.get("aria-label")
    assert root.get("viewBox", "").startswith("0 0 ")
    assert root[0].tag == f"{SVG}title" and root[0].text == root.get("aria-label")


@pytest.mark.parametrize(("draw", "value"), PICTURES)
def test_the_same_input_draws_the_same_picture(draw: Draw, value: Any) -> None:
    assert draw(value) == draw(value)


@pytest.mark.parametrize(
    ("draw", "value"),
    [
        (heatmap_svg, heat(KindHeat("topic", (row(NASTY, 3),), (Desert(NASTY + " desert", 2),), 0))),
        (clusters_svg, SoftClustersView((cluster(0, NASTY, 3, (1, 1)), cluster(1, "b", 2, (0, 1))))),
        (topics_svg, TopicsView((topic(NASTY, 4, NASTY),))),
        (entity_graph_svg, GraphView("top", (node(NASTY, 3), node("b", 1)), (edge(NASTY, "b", 2),))),
    ],
)
def test_a_label_with_markup_comes_out_escaped(draw: Draw, value: Any) -> None:
    svg = draw(value)
    assert "<script>" not in svg
    assert NASTY_ESCAPED in svg
    root = parse(svg)
    assert NASTY in texts(root)
    assert any(NASTY in t for t in titles(root))


@pytest.mark.parametrize(("draw", "value"), PICTURES)
def test_chinese_labels_are_drawn_as_they_are(draw: Draw, value: Any) -> None:
    root = parse(draw(value))
    assert any("游泳" in t for t in texts(root))


def test_control_characters_in_stored_text_do_not_break_the_picture() -> None:
    root = parse(topics_svg(TopicsView((topic("bell\x07\nring", 2, "line one\x00\nline two"),))))
    assert "bell ring" in texts(root)


def test_a_long_label_is_clipped_on_the_picture_but_whole_in_its_tooltip() -> None:
    name = "游泳" * 30
    root = parse(clusters_svg(SoftClustersView((cluster(0, name, 5),))))
    [label] = texts(root)[:1]
    assert label.endswith("…") and len(label) < len(name)
    assert any(name in t for t in titles(root))


def cells(root: ET.Element, kind: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == f"cell {kind}"]


def test_a_desert_is_drawn_apart_from_lit_clusters() -> None:
    root = parse(heatmap_svg(HEAT))
    lit, deserts = cells(root, "lit"), cells(root, "desert")
    assert len(lit) == 3 and len(deserts) == 3
    desert_fills = {child(g, "rect").get("fill") for g in deserts}
    lit_fills = {child(g, "rect").get("fill") for g in lit}
    assert desert_fills == {"url(#tideline-desert-hatch)"}
    assert not desert_fills & lit_fills
    assert all("desert" in (g.findtext(f"{SVG}title") or "") for g in deserts)
    assert any("silent" in (g.findtext(f"{SVG}title") or "") for g in deserts)
    assert "Attention deserts: 2 embedding clusters never lit" in texts(root)


def test_the_most_hit_cluster_is_shaded_darkest() -> None:
    root = parse(heatmap_svg(HEAT))
    shade = {(g.findtext(f"{SVG}title") or "").split(":")[0]: child(g, "rect").get("fill") for g in cells(root, "lit")}

    def darkness(colour: str | None) -> int:
        assert colour is not None
        return -sum(int(colour[i : i + 2], 16) for i in (1, 3, 5))

    assert darkness(shade["游泳"]) > darkness(shade["garden"])


def test_a_lit_cell_tells_its_hits_share_and_mean_similarity() -> None:
    tips = titles(parse(heatmap_svg(HEAT)))
    assert "游泳: 6 hits (60% of all hits), mean similarity 0.812; sources: t1 6" in tips
    assert "garden: 2 hits (20% of all hits); sources: t1 2" in tips


def test_hits_on_memories_in_no_cluster_are_told() -> None:
    assert "1 hit landed on memories in no topic cluster." in texts(parse(heatmap_svg(HEAT)))


def test_a_heatmap_built_from_real_hits_draws_its_deserts() -> None:
    built = heatmap([Hit(1, 0.9, "t1", T0)], {"游泳": [1], "silent": [2, 3]}, {"#0 tide": [1]})
    root = parse(heatmap_svg(built))
    assert len(cells(root, "lit")) == 2
    assert [g.findtext(f"{SVG}title", "").split(":")[0] for g in cells(root, "desert")] == ["silent"]
    assert "No hit reached" not in " ".join(texts(root))


def test_a_heatmap_with_no_cluster_says_what_builds_them() -> None:
    empty = heatmap([], {}, {})
    svg = heatmap_svg(empty)
    assert svg.startswith('<p class="empty')
    assert "recluster stage" in svg
    assert "3 hits were logged" in heatmap_svg(heatmap([Hit(1, None, "recall", T0)] * 3, {}, {}))


def test_a_kind_with_no_cluster_is_named_in_a_heatmap_that_has_the_other() -> None:
    root = parse(heatmap_svg(heat(KindHeat("topic", (), (), 0), KindHeat("embedding", (row("a", 1),), (), 0))))
    assert "No topic clusters yet: the dream's recluster stage builds them." in texts(root)


def test_too_many_heat_cells_say_how_many_were_left_out() -> None:
    rows = tuple(row(f"c{i:02}", 30 - i) for i in range(30))
    root = parse(heatmap_svg(heat(KindHeat("topic", rows, (), 0))))
    assert len(cells(root, "lit")) == 24
    assert "Showing the 24 largest of 30 lit topic clusters; 6 left out." in texts(root)


def circles(root: ET.Element, css: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if (g.get("class") or "").split()[0] == css]


def lines(root: ET.Element, css: str) -> list[ET.Element]:
    return [line for line in root.iter(f"{SVG}line") if line.get("class") == css]


def test_a_larger_cluster_is_drawn_as_a_larger_circle() -> None:
    root = parse(clusters_svg(CLUSTERS))
    radius = {
        (g.findtext(f"{SVG}title") or "").split(" (")[0]: float(child(g, "circle").get("r", "0"))
        for g in circles(root, "cluster")
    }
    assert radius["#0 游泳"] > radius["#1 tide"] > radius["#2 salt"]


def test_neighbouring_clusters_are_joined_once_by_a_line_as_wide_as_what_they_share() -> None:
    root = parse(clusters_svg(CLUSTERS))
    joined = {line.findtext(f"{SVG}title"): float(line.get("stroke-width", "0")) for line in lines(root, "adjacency")}
    assert set(joined) == {"#0 游泳 — #1 tide: 3 memories in both", "#1 tide — #2 salt: 1 memory in both"}
    assert joined["#0 游泳 — #1 tide: 3 memories in both"] > joined["#1 tide — #2 salt: 1 memory in both"]


def test_a_cluster_tooltip_names_its_neighbours() -> None:
    tips = titles(parse(clusters_svg(CLUSTERS)))
    assert "#1 tide (cluster 1): 7 memories; shares memories with #0 游泳 (3), #2 salt (1)" in tips


def test_too_many_clusters_say_how_many_were_left_out_and_draw_the_largest() -> None:
    many = SoftClustersView(tuple(cluster(i, f"#{i}", 100 - i, ((i + 1) % 45, 1)) for i in range(45)))
    root = parse(clusters_svg(many))
    drawn = circles(root, "cluster")
    assert len(drawn) == MAX_CLUSTERS
    assert not any((g.findtext(f"{SVG}title") or "").startswith("#44 ") for g in drawn)
    assert "Showing the 40 largest of 45 clusters; 5 left out." in texts(root)
    assert len(lines(root, "adjacency")) == MAX_CLUSTERS - 1  # the links to the 5 left out are not drawn


def test_a_single_cluster_is_drawn() -> None:
    root = parse(clusters_svg(SoftClustersView((cluster(0, "alone", 3),))))
    assert len(circles(root, "cluster")) == 1


def test_bars_are_as_long_as_their_topic_is_large_and_tell_its_newest_memories() -> None:
    root = parse(topics_svg(TOPICS))
    width = {
        (g.findtext(f"{SVG}title") or "").split(":")[0]: float(child(g, "rect").get("width", "0"))
        for g in root.iter(f"{SVG}g")
    }
    assert width["游泳"] == pytest.approx(3 * width["garden"], abs=0.5)
    assert "游泳: 9 memories; newest: 去游泳了 | swam 2 km" in titles(root)


def test_a_topic_label_other_than_its_keyword_names_both() -> None:
    root = parse(topics_svg(TopicsView((topic("swim", 3, label="游泳 swimming"),))))
    assert "游泳 swimming (swim): 3 memories" in titles(root)
    assert "游泳 swimming" in texts(root)


def test_too_many_topics_say_how_many_were_left_out() -> None:
    root = parse(topics_svg(TopicsView(tuple(topic(f"t{i:02}", 50 - i) for i in range(43)))))
    assert "Showing the 40 largest of 43 topics; 3 left out." in texts(root)


def test_an_edge_is_as_wide_as_how_often_its_entities_appear_together() -> None:
    root = parse(entity_graph_svg(GRAPH))
    width = {
        (line.findtext(f"{SVG}title") or "").split(":")[0]: float(line.get("stroke-width", "0"))
        for line in lines(root, "edge")
    }
    assert width["Alice — 游泳池"] > width["Alice — Bob"]


def test_edges_between_the_same_two_entities_are_drawn_as_one() -> None:
    graph = GraphView("pair", (node("A", 2), node("B", 2)), (edge("A", "B", 1), edge("B", "A", 2)))
    [line] = lines(parse(entity_graph_svg(graph)), "edge")
    assert (line.findtext(f"{SVG}title") or "").startswith("A — B: together 3 times")


def test_a_known_person_is_drawn_apart_and_told_in_the_tooltip() -> None:
    root = parse(entity_graph_svg(GRAPH))
    known = [g for g in circles(root, "entity") if "known" in (g.get("class") or "")]
    assert [(g.findtext(f"{SVG}title") or "").split(":")[0] for g in known] == ["Alice"]
    assert "Alice: in 9 memories, a known person; usually actor; seen 2026-05-01 → 2026-05-08" in titles(root)


def test_too_many_entities_say_how_many_were_left_out_and_their_edges_are_not_drawn() -> None:
    nodes = tuple(node(f"e{i:02}", 100 - i) for i in range(65))
    edges = tuple(edge("e00", f"e{i:02}", 1) for i in range(1, 65))
    root = parse(entity_graph_svg(GraphView("top", nodes, edges)))
    assert len(circles(root, "entity")) == MAX_NODES
    assert len(lines(root, "edge")) == MAX_NODES - 1
    assert "Showing the 60 largest of 65 entities; 5 left out." in texts(root)
    assert "5 edges to entities left out not drawn." in texts(root)


NOTE = "nothing built yet: the nightly dream builds it, or start the recluster stage now (memory_trigger)"


@pytest.mark.parametrize(
    ("draw", "value", "what"),
    [
        (clusters_svg, SoftClustersView((), note=NOTE), "No soft clusters to draw"),
        (topics_svg, TopicsView((), note=NOTE), "No topics to draw"),
        (entity_graph_svg, GraphView("top", (), (), note="no such entity in the graph"), "No entity graph to draw"),
    ],
)
def test_an_empty_view_repeats_its_own_note(draw: Draw, value: Any, what: str) -> None:
    shown = draw(value)
    assert shown.startswith('<p class="empty')
    assert f"{what} — {value.note}" in (parse(shown).text or "")


@pytest.mark.parametrize(
    ("draw", "value", "message"),
    [
        (clusters_svg, SoftClustersView(()), "No soft clusters yet: the dream's recluster stage draws them."),
        (topics_svg, TopicsView(()), "No topics yet: the dream's recluster stage finds them"),
        (entity_graph_svg, GraphView("top", (), ()), "No entity graph yet: the dream's graph stage builds it"),
    ],
)
def test_an_empty_view_without_a_note_names_the_stage_that_fills_it(draw: Draw, value: Any, message: str) -> None:
    assert message in (parse(draw(value)).text or "")


def test_a_graph_of_nodes_without_edges_still_draws_the_nodes() -> None:
    root = parse(entity_graph_svg(GraphView("entity", (node("游泳池", 1),), ())))
    assert len(circles(root, "entity")) == 1 and not lines(root, "edge")
