"""Dates a query names become time windows; closeness is 1 inside a window and fades outside it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tideline_core.search.when import closeness, mentioned_times

NOW = datetime(2026, 11, 29, 15, 30, tzinfo=UTC)


def at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, 12, tzinfo=UTC)


def spans(text: str) -> list[tuple[str, str, str, bool]]:
    return [
        (w.start.date().isoformat(), w.end.date().isoformat(), w.granularity, w.yearly)
        for w in mentioned_times(text, NOW)
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What painting did Melanie show on October 13, 2023?", [("2023-10-13", "2023-10-14", "day", False)]),
        ("What did Gina find on 1 February, 2023?", [("2023-02-01", "2023-02-02", "day", False)]),
        ("What book did Tim finish on 8th December, 2023?", [("2023-12-08", "2023-12-09", "day", False)]),
        ("Where was the picture shared on December 1,2023 taken?", [("2023-12-01", "2023-12-02", "day", False)]),
        ("What setback did Melanie face in October 2023?", [("2023-10-01", "2023-11-01", "month", False)]),
        ("What state did Joanna visit in summer 2021?", [("2021-06-01", "2021-09-01", "season", False)]),
        ("Which performances did John achieve in 2023?", [("2023-01-01", "2024-01-01", "year", False)]),
        ("我2023年5月3日去了公园", [("2023-05-03", "2023-05-04", "day", False)]),
        ("2022年7月发生了什么", [("2022-07-01", "2022-08-01", "month", False)]),
        ("2021年的事", [("2021-01-01", "2022-01-01", "year", False)]),
        ("what happened on 2023-05-03?", [("2023-05-03", "2023-05-04", "day", False)]),
        ("notes from 2023/5/3", [("2023-05-03", "2023-05-04", "day", False)]),
        ("the 2024-02 release", [("2024-02-01", "2024-03-01", "month", False)]),
    ],
)
def test_absolute_dates_in_english_and_chinese_become_one_window_each(text: str, expected: list) -> None:
    assert spans(text) == expected


def test_a_year_named_once_serves_every_date_of_the_query() -> None:
    assert spans("Where was John between August 11 and August 15 2023?") == [
        ("2023-08-15", "2023-08-16", "day", False),
        ("2023-08-11", "2023-08-12", "day", False),
    ]


def test_a_month_or_day_without_a_year_means_that_stretch_of_any_year() -> None:
    windows = mentioned_times("When did Melanie go camping in June?", NOW)
    assert [w.granularity for w in windows] == ["month"] and windows[0].yearly
    assert closeness(windows, at(2019, 6, 20)) == 1.0 and closeness(windows, at(2024, 6, 2)) == 1.0
    assert closeness(windows, at(2024, 9, 15)) < 0.01
    assert closeness(mentioned_times("我5月3号去了公园", NOW), at(2022, 5, 3)) == 1.0


def test_the_modal_may_clock_times_and_a_person_called_jan_are_not_dates() -> None:
    assert mentioned_times("You may want to call at 10:30", NOW) == []
    assert mentioned_times("I may go there", NOW) == []
    assert mentioned_times("the poem written by Jan", NOW) == []
    assert mentioned_times("星期一和第一个月", NOW) == []


def test_chinese_numeral_months_are_months_of_any_year() -> None:
    assert [w.describe() for w in mentioned_times("我五月去了北京，十二月又去了", NOW)] == [
        "every May",
        "every December",
    ]


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("what did we talk about yesterday", "2026-11-28", "2026-11-29"),
        ("昨天说的那件事", "2026-11-28", "2026-11-29"),
        ("last week", "2026-11-16", "2026-11-23"),
        ("上个月", "2026-10-01", "2026-11-01"),
        ("去年的旅行", "2025-01-01", "2026-01-01"),
    ],
)
def test_relative_phrases_are_resolved_against_the_moment_of_the_query(text: str, start: str, end: str) -> None:
    [window] = mentioned_times(text, NOW)
    assert (window.start.date().isoformat(), window.end.date().isoformat()) == (start, end)


def test_closeness_is_one_inside_and_fades_faster_for_sharper_mentions() -> None:
    day = mentioned_times("on 3 June, 2023", NOW)
    month = mentioned_times("in June 2023", NOW)
    assert closeness(day, at(2023, 6, 3)) == 1.0
    assert closeness(day, at(2023, 6, 10)) < closeness(month, at(2023, 7, 10)) < 1.0
    assert closeness([], at(2023, 6, 3)) == 0.0


@given(st.integers(min_value=0, max_value=4000), st.integers(min_value=0, max_value=4000))
def test_closeness_never_grows_with_distance_from_the_window(a: int, b: int) -> None:
    windows = mentioned_times("in March 2024", NOW)
    base = datetime(2024, 4, 1, tzinfo=UTC)
    near, far = sorted((a, b))
    assert closeness(windows, base + timedelta(hours=near)) >= closeness(windows, base + timedelta(hours=far))
    assert 0.0 <= closeness(windows, base + timedelta(hours=far)) <= 1.0


def test_each_window_reads_back_in_words_for_explanations() -> None:
    texts = ["on 3 June, 2023", "in June 2023", "in June", "on May 5", "in 2021", "summer 2021"]
    assert [mentioned_times(t, NOW)[0].describe() for t in texts] == [
        "2023-06-03",
        "June 2023",
        "every June",
        "every May 5",
        "2021",
        "2021-06-01..2021-08-31",
    ]
