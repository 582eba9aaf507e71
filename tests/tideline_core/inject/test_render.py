"""A rendered block is the same bytes for the same items, its version moves only with what it shows, and no clock."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from tideline_core.inject.budget import Item
from tideline_core.inject.render import Block, block, section
from tideline_core.text.cost import estimate_tokens


def item(tier: str, id: int, text: str, kind: str = "narrative") -> Item:
    return Item(tier, kind, id, text, 1.0, "chosen", estimate_tokens(text), False)


def items() -> list[Item]:
    return [
        item("T0", 1, "fact: I keep a garden on the balcony.", "self_concept"),
        item("T0", 2, "open thread (priority 4): find a new flat", "thread"),
        item("T3", 3, "topic travel (9 memories)", "topic"),
    ]


def render(chosen: Sequence[Item], title: str = "Tideline memory", budget: int = 2000) -> Block:
    t0 = section("T0", [i for i in chosen if i.tier == "T0"])
    t2 = section("T2", [i for i in chosen if i.tier == "T2"])
    t3 = section("T3", [i for i in chosen if i.tier == "T3"], "largest first")
    return block(title, [t0, t2, t3], chosen, budget)


def test_a_block_reads_as_a_titled_list_of_its_tiers_with_its_version_in_the_title() -> None:
    rendered = render(items())
    assert rendered.text == (
        f"# Tideline memory · v{rendered.version}\n"
        "\n"
        "## Who I am\n"
        "- fact: I keep a garden on the balcony.\n"
        "- open thread (priority 4): find a new flat\n"
        "\n"
        "## Memory map (largest first)\n"
        "- topic travel (9 memories)\n"
    )
    assert re.fullmatch(r"[0-9a-f]{12}", rendered.version)
    assert rendered.items == tuple(items()) and rendered.budget == 2000
    assert rendered.tokens == estimate_tokens(rendered.text)


def test_the_same_items_render_to_the_same_bytes_and_version() -> None:
    first, second = render(items()), render(items())
    assert first.text.encode() == second.text.encode()
    assert first.version == second.version


def test_a_changed_item_changes_the_version() -> None:
    changed = items()
    changed[1] = item("T0", 2, "open thread (priority 5): find a new flat", "thread")
    assert render(changed).version != render(items()).version


def test_items_in_another_order_change_the_version() -> None:
    reordered = items()
    reordered[0], reordered[1] = reordered[1], reordered[0]
    assert render(reordered).version != render(items()).version


def test_an_added_item_changes_the_version() -> None:
    more = [*items(), item("T2", 4, "2024-05-18 we moved the piano — it took six people")]
    assert render(more).version != render(items()).version


def test_the_title_budget_and_notes_leave_the_version_alone() -> None:
    plain = render(items())
    other = render(items(), title="Tideline recall", budget=900)
    noted = block("Tideline memory", [section("T0", items()[:2]), section("T3", items()[2:])], items(), 2000, ["x"])
    assert other.version == plain.version != ""
    assert other.text != plain.text
    assert noted.notes == ("x",)


def test_the_text_holds_no_date_or_time_of_the_call() -> None:
    before = datetime.now(UTC)
    rendered = render(items())
    after = datetime.now(UTC)
    body = rendered.text.split("\n", 1)[1]
    assert not re.search(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|\bago\b|\btoday\b", body)
    for moment in (before, after):
        assert moment.strftime("%Y-%m-%d") not in rendered.text
        assert str(moment.year) not in rendered.text


def test_a_block_with_nothing_to_show_is_empty_and_has_no_version() -> None:
    empty = block("Tideline memory", [section("T0", []), section("T3", [])], [], 2000)
    assert (empty.text, empty.version, empty.tokens, empty.items) == ("", "", 0, ())


def test_an_empty_tier_leaves_no_heading_behind() -> None:
    rendered = render(items())
    assert "## What weighed most lately" not in rendered.text
    assert "\n\n\n" not in rendered.text
