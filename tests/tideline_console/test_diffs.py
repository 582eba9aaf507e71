"""A recorded change as the console's diff shows it, field by field."""

from __future__ import annotations

from tideline_console.diffs import FieldChange, field_changes


def test_an_update_shows_only_the_fields_that_moved_and_no_bookkeeping() -> None:
    rows = field_changes(
        "update",
        {"weight": 0.64, "recurrence": 1, "gesture": "北京出差", "updated_at": "a"},
        {"weight": 0.69, "recurrence": 2, "gesture": "北京出差", "updated_at": "b"},
    )
    assert rows == [FieldChange("weight", "0.640", "0.690"), FieldChange("recurrence", "1", "2")]


def test_an_insert_shows_what_it_wrote_beside_the_row_as_fields_of_their_own() -> None:
    rows = field_changes(
        "insert",
        None,
        {"gesture": "Digest of session s1", "context": "", "_with": {"tags": ["游泳"], "source_links": [1, 2]}},
    )
    assert rows == [
        FieldChange("gesture", "", "Digest of session s1"),
        FieldChange("tags", "", '["游泳"]'),
        FieldChange("source links", "", "[1, 2]"),
    ]


def test_a_long_value_is_cut_with_an_ellipsis() -> None:
    (row,) = field_changes("insert", None, {"moment": "x" * 1000})
    assert len(row.after) == 400 and row.after.endswith("…")
