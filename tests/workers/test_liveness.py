"""Telling a dead worker's messages from a live one's."""

from __future__ import annotations

from workers.liveness import orphans

NOW = 1_000_000.0
SPAN = 30.0


def test_an_old_message_no_live_worker_holds_is_an_orphan_oldest_first() -> None:
    unacked = {"a": NOW - 100, "b": NOW - 31, "c": NOW - 200}
    assert orphans(unacked, held_by_live=[], now=NOW, span=SPAN) == ["c", "a", "b"]


def test_a_message_a_live_worker_holds_is_never_an_orphan_however_old() -> None:
    assert orphans({"a": NOW - 10_000}, held_by_live=["a"], now=NOW, span=SPAN) == []


def test_a_message_younger_than_the_span_waits_its_receiver_may_not_have_recorded_it_yet() -> None:
    assert orphans({"a": NOW - 29}, held_by_live=[], now=NOW, span=SPAN) == []
