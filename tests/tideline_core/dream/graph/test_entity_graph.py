"""Entity graph: every accepted `entities_role` shape, malformed input reported, and the graph built from it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tideline_core.dream.graph.entities import MAX_ROLES, EntityMention, build_graph, parse_entities_role

ALIASES = {"alice": "Alice", "ali": "Alice", "bob": "Bob", "bobby": "Bob", "照照": "照照"}
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def roles_of(text: str, aliases: dict[str, str] | None = None) -> list[tuple[str, tuple[str, ...]]]:
    parsed = parse_entities_role(1, text, aliases)
    assert parsed.problems == ()
    return [(e.name, e.roles) for e in parsed.entities]


def reasons(text: str) -> list[str]:
    return [p.reason for p in parse_entities_role(7, text).problems]


@pytest.mark.parametrize(
    "text",
    [
        "A=判断+执行; B=审查",
        "A=判断+执行；B=审查",
        "A = 判断 + 执行 ;  B = 审查 ;",
        "A: 判断+执行, B: 审查",
        "A：判断、执行，B：审查",
        "A: 判断, 执行; B: 审查",
        "A(判断+执行)→B(审查)",
        "A（判断, 执行）->B（审查）",
        "A(判断/执行) => B(审查)",
        "A=判断+执行\nB=审查",
    ],
)
def test_every_documented_shape_gives_the_same_entities_and_roles(text: str) -> None:
    assert roles_of(text) == [("A", ("判断", "执行")), ("B", ("审查",))]


def test_an_arrow_chain_keeps_every_entity_in_order() -> None:
    assert roles_of("A(提问)→B(回答)→C") == [("A", ("提问",)), ("B", ("回答",)), ("C", ())]


def test_bare_names_are_mentions_without_a_role() -> None:
    assert roles_of("小明, 小红") == [("小明", ()), ("小红", ())]


def test_names_resolve_through_known_person_aliases() -> None:
    parsed = parse_entities_role(1, "ali=判断; BOBBY: 审查; Zed=路人", ALIASES)
    assert [(e.name, e.known) for e in parsed.entities] == [("Alice", True), ("Bob", True), ("Zed", False)]


def test_an_entity_named_twice_merges_its_roles() -> None:
    assert roles_of("Alice=判断; ali=执行+判断", ALIASES) == [("Alice", ("判断", "执行"))]


def test_quotes_around_names_and_roles_are_stripped() -> None:
    assert roles_of("「小明」=“审查”") == [("小明", ("审查",))]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("=审查", "no entity name"),
        ("A=", "a role marker with no role after it"),
        ("A()", "a role marker with no role after it"),
        ("A(审查", "unbalanced or nested parentheses"),
        ("A审查)", "unbalanced or nested parentheses"),
        ("((A))", "unbalanced or nested parentheses"),
        ("A(x)y", "text after the closing parenthesis (ignored)"),
        ("→B(x)", "an arrow with nothing on one side"),
        ("A(x)->", "an arrow with nothing on one side"),
        (
            "这是一整句话而不是一个名字它太长了根本不可能是任何实体的名称真的很长很长很长很长很长=审查",
            "entity name longer than 40",
        ),
    ],
)
def test_malformed_fragments_are_reported_not_raised(text: str, reason: str) -> None:
    assert any(r.startswith(reason) for r in reasons(text))


def test_a_problem_names_the_narrative_and_the_bad_fragment() -> None:
    parsed = parse_entities_role(42, "A=判断; B(审查; C=执行")
    assert [(p.narrative_id, p.fragment) for p in parsed.problems] == [(42, "B(审查")]
    assert [e.name for e in parsed.entities] == ["A", "C"]


def test_roles_beyond_the_limit_are_reported_and_dropped() -> None:
    parsed = parse_entities_role(1, "A=" + "+".join(f"r{i}" for i in range(MAX_ROLES + 2)))
    assert len(parsed.entities[0].roles) == MAX_ROLES
    assert len(parsed.problems) == 2


def test_empty_or_missing_strings_parse_to_nothing() -> None:
    for text in ("", None, " ; ;; ", "，"):
        parsed = parse_entities_role(1, text)
        assert parsed.entities == () and parsed.problems == ()


def mention(i: int, text: str, related: tuple[str, ...] = (), days: int = 0) -> EntityMention:
    return EntityMention(i, T0 + timedelta(days=days), text, related)


def test_nodes_count_mentions_once_per_narrative_with_first_and_last_seen() -> None:
    graph = build_graph(
        [
            mention(1, "Alice=判断; Bob=审查", days=3),
            mention(2, "ali=判断+执行", ("Bob",), days=1),
            mention(3, "Bob(审查)→Carol(执行)", ("bobby", "Dan"), days=5),
        ],
        ALIASES,
    )
    nodes = {n.name: n for n in graph.nodes}
    assert [n.name for n in graph.nodes] == ["Bob", "Alice", "Carol", "Dan"]
    bob = nodes["Bob"]
    assert (bob.mentions, bob.known) == (3, True)
    assert (bob.first_seen, bob.last_seen) == (T0 + timedelta(days=1), T0 + timedelta(days=5))
    assert bob.roles == (("审查", 2),)
    assert nodes["Alice"].roles == (("判断", 2), ("执行", 1))
    assert nodes["Alice"].usual_roles == ("判断", "执行")
    assert (nodes["Dan"].known, nodes["Dan"].roles) == (False, ())


def test_edges_join_every_pair_in_a_narrative_with_both_roles_in_canonical_order() -> None:
    graph = build_graph(
        [
            mention(1, "Bob=审查; Alice=判断+执行"),
            mention(2, "Alice(执行+判断)→Bob(审查)"),
            mention(3, "Bob=审查", ("Carol",)),
        ]
    )
    edges = {(e.source, e.target, e.source_role, e.target_role): e.count for e in graph.edges}
    assert edges == {("Alice", "Bob", "判断+执行", "审查"): 2, ("Bob", "Carol", "审查", ""): 1}


def test_problems_of_every_narrative_are_collected_in_the_graph() -> None:
    graph = build_graph([mention(1, "A=x; =y"), mention(2, "B(z")])
    assert [(p.narrative_id, p.fragment) for p in graph.problems] == [(1, "=y"), (2, "B(z")]
    assert [n.name for n in graph.nodes] == ["A"]


def test_usual_roles_are_the_most_frequent_ones() -> None:
    roles = ["x", "y", "y", "z", "z", "z", "w"]
    graph = build_graph([mention(i, f"A={role}") for i, role in enumerate(roles)], usual_roles=2)
    assert graph.nodes[0].usual_roles == ("z", "y")


fragment_text = st.text(alphabet="AB小明=:：;；,，+()（）→-> 审查", max_size=40)


@settings(max_examples=300, deadline=None)
@given(fragment_text, st.lists(st.text(max_size=8), max_size=3))
def test_any_string_parses_without_raising_and_every_result_is_well_formed(text: str, related: list[str]) -> None:
    parsed = parse_entities_role(5, text, ALIASES)
    for entity in parsed.entities:
        assert entity.name and entity.name == entity.name.strip()
        assert len(entity.roles) <= MAX_ROLES and all(entity.roles)
        assert len(set(entity.roles)) == len(entity.roles)
    assert all(p.narrative_id == 5 for p in parsed.problems)
    graph = build_graph([EntityMention(5, T0, text, tuple(related))], ALIASES)
    for edge in graph.edges:
        assert edge.source < edge.target and edge.count == 1
    names = [n.name for n in graph.nodes]
    assert len(graph.edges) == len(names) * (len(names) - 1) // 2
