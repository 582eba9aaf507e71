"""The watermark of an index's reader: ids that become visible out of order are asked for again, not skipped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tideline_core.store.catchup import HOLE_GRACE_SECONDS, MAX_HOLES, TAIL, IdCursor


def test_ids_seen_in_order_leave_nothing_to_ask_again() -> None:
    mark = IdCursor()
    mark.settle(3, [1, 2, 3], now=0.0)
    mark.settle(5, [4, 5], now=1.0)
    assert (mark.last_id, mark.pending()) == (5, [])


def test_an_id_missing_below_the_newest_is_asked_for_until_it_shows_up() -> None:
    mark = IdCursor()
    mark.settle(4, [1, 2, 4], now=0.0)  # 3's transaction has not committed yet
    assert mark.pending() == [3]
    mark.settle(4, [], now=1.0)  # still not there
    assert mark.pending() == [3]
    mark.settle(4, [3], now=2.0)
    assert (mark.last_id, mark.pending()) == (4, [])


def test_ids_of_other_agents_are_visible_rows_not_holes() -> None:
    mark = IdCursor()
    mark.settle(10, range(1, 11), now=0.0)  # the reader loaded only 2 and 10; the rest belong to others
    assert mark.pending() == []


def test_a_rolled_back_id_is_given_up_after_the_grace_period() -> None:
    mark = IdCursor()
    mark.settle(3, [1, 3], now=0.0)
    mark.settle(3, [], now=HOLE_GRACE_SECONDS - 1)
    assert mark.pending() == [2]
    mark.settle(3, [], now=HOLE_GRACE_SECONDS + 1)
    assert mark.pending() == []


def test_only_the_recent_tail_of_a_wide_gap_is_awaited_and_never_more_than_the_cap() -> None:
    mark = IdCursor()
    newest = 5 * TAIL
    low, high = mark.span(newest)
    assert (low, high) == (newest - TAIL, newest)
    mark.settle(newest, [newest], now=0.0)  # everything below is missing
    holes = mark.pending()
    assert len(holes) == MAX_HOLES
    assert holes == list(range(newest - MAX_HOLES, newest))


def test_a_load_of_only_old_holes_does_not_move_the_watermark_back() -> None:
    mark = IdCursor()
    mark.settle(9, [1, 2, 3, 9], now=0.0)
    mark.settle(5, [5], now=1.0)
    assert mark.last_id == 9
    assert mark.pending() == [4, 6, 7, 8]


@given(st.permutations(range(1, 31)), st.integers(min_value=1, max_value=5))
def test_every_id_is_absorbed_whatever_the_commit_order(order: list[int], batch: int) -> None:
    """Ids are drawn 1..30 and become visible in any order; a reader looks after every few commits."""
    mark = IdCursor()
    visible: set[int] = set()
    absorbed: set[int] = set()
    for start in range(0, len(order), batch):
        visible.update(order[start : start + batch])
        wanted = {i for i in visible if i > mark.last_id or i in mark.holes}
        absorbed |= wanted
        newest = max([mark.last_id, *wanted])
        low, high = mark.span(newest)
        seen = {i for i in visible if low < i <= high or i in mark.holes}
        mark.settle(newest, seen, now=float(start))
    wanted = {i for i in visible if i > mark.last_id or i in mark.holes}
    absorbed |= wanted
    assert absorbed == set(range(1, 31))
