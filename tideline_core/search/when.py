"""Dates a query mentions, pure: English, Chinese and numeric date phrases → time windows, and closeness to them.

"What did Maria donate in December 2023?", "on 3 June, 2023", "October 13, 2023", "summer 2021",
"2023年5月3日", "去年", "last week": each becomes a half-open UTC window [start, end). Relative
phrases are resolved against `now` (the moment of the query). A memory's closeness to the query's
time is 1 inside a window and decays with its distance outside, on the window's own scale (a day
mention is sharper than a year mention).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
CHINESE_MONTHS = {
    name: number
    for number, name in enumerate(("一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二"), start=1)
}
SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}
_FULL_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_MONTH = r"(?P<{}>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{}>(?:19|20)\d\d)"

# Longest forms first; each match's span is blanked before shorter forms look, so "3 June, 2023"
# is one day, not also the month "June, 2023" and the year "2023".
_ENGLISH = [
    ("day", re.compile(rf"\b{_DAY.format('d')}\s+(?:of\s+)?{_MONTH.format('m')},?\s*{_YEAR.format('y')}\b", re.I)),
    ("day", re.compile(rf"\b{_MONTH.format('m')}\s+{_DAY.format('d')},?\s*{_YEAR.format('y')}\b", re.I)),
    ("season", re.compile(rf"\b(?P<s>spring|summer|autumn|fall|winter)\s+(?:of\s+)?{_YEAR.format('y')}\b", re.I)),
    ("month", re.compile(rf"\b{_MONTH.format('m')},?\s+(?:of\s+)?{_YEAR.format('y')}\b", re.I)),
    ("day", re.compile(rf"\b{_DAY.format('d')}\s+(?:of\s+)?{_MONTH.format('m')}\b", re.I)),
    ("day", re.compile(rf"\b{_MONTH.format('m')}\s+{_DAY.format('d')}\b(?!\s*:)", re.I)),
    ("year", re.compile(rf"(?<![\d:/.-]){_YEAR.format('y')}(?![\d:/.-])")),
    # A month with no year ("camping in June"): that month of any year. A preposition is required so
    # the modal "may" is not read as a month.
    # Full month names only: "written by Jan" is a person, "in January" a month.
    (
        "yearly",
        re.compile(rf"\b(?:in|during|since|until|by|early|late|mid|last|this|next)[\s-]+(?P<m>{_FULL_MONTHS})\b", re.I),
    ),
]
# Numeric forms agents write: 2023-05-03, 2023/5/3, 2023.05.03 and 2023-05 (not times like 10:30).
_NUMERIC = [
    (
        "day",
        re.compile(r"(?<![\d])(?P<y>(?:19|20)\d\d)([-/.])(?P<m>1[0-2]|0?[1-9])\2(?P<d>3[01]|[12]\d|0?[1-9])(?![\d])"),
    ),
    ("month", re.compile(r"(?<![\d])(?P<y>(?:19|20)\d\d)-(?P<m>1[0-2]|0[1-9])(?![\d-])")),
]
_CHINESE = [
    ("day", re.compile(r"(?:(?P<y>(?:19|20)\d\d)\s*年\s*)?(?P<m>1[0-2]|0?[1-9])\s*月\s*(?P<d>[0-3]?\d)\s*[日号]")),
    ("month", re.compile(r"(?P<y>(?:19|20)\d\d)\s*年\s*(?P<m>1[0-2]|0?[1-9])\s*月")),
    ("year", re.compile(r"(?P<y>(?:19|20)\d\d)\s*年")),
    ("yearly", re.compile(r"(?<![\d年])(?P<m>1[0-2]|0?[1-9])\s*月份?(?![\d])(?!\s*[\d]+\s*[日号])")),
    (
        "yearly",
        re.compile(
            r"(?<![一二三四五六七八九十年])(?P<m>十[一二]|[一二三四五六七八九十])月份?(?![一二三四五六七八九十\d])"
        ),
    ),
]
# Fixed-date holidays (lunar ones move and are left out): a holiday is a date, even when the memory
# itself only carries the date.
HOLIDAYS = {
    "christmas eve": (12, 24),
    "christmas": (12, 25),
    "new year's eve": (12, 31),
    "new year's day": (1, 1),
    "new year": (1, 1),
    "valentine's day": (2, 14),
    "valentine": (2, 14),
    "halloween": (10, 31),
    "independence day": (7, 4),
    "平安夜": (12, 24),
    "圣诞节": (12, 25),
    "圣诞": (12, 25),
    "元旦": (1, 1),
    "跨年": (12, 31),
    "情人节": (2, 14),
    "万圣节": (10, 31),
    "儿童节": (6, 1),
    "劳动节": (5, 1),
    "五一": (5, 1),
    "国庆节": (10, 1),
    "国庆": (10, 1),
    "教师节": (9, 10),
    "妇女节": (3, 8),
    "愚人节": (4, 1),
}
_HOLIDAY = re.compile(
    "|".join(rf"\b{re.escape(h)}\b" if h.isascii() else re.escape(h) for h in sorted(HOLIDAYS, key=len, reverse=True)),
    re.I,
)
_RELATIVE_DAYS = {"today": 0, "yesterday": 1, "今天": 0, "今日": 0, "昨天": 1, "昨日": 1, "前天": 2}
_RELATIVE = re.compile(
    r"\b(?P<en>today|yesterday|last\s+(?:week|month|year)|this\s+(?:week|month|year))\b"
    r"|(?P<zh>今天|今日|昨天|昨日|前天|上周|上星期|上个月|上個月|去年|今年|本周|这周|这个月|本月)",
    re.I,
)
# How far outside its window a time may lie and still count for something, per granularity.
SCALE_DAYS = {"day": 3.0, "week": 4.0, "month": 10.0, "season": 20.0, "year": 60.0}


@dataclass(frozen=True)
class TimeWindow:
    start: datetime
    end: datetime  # exclusive
    granularity: str  # day | week | month | season | year
    yearly: bool = False  # the same stretch of every year ("in June"): compared within `when`'s year

    def describe(self) -> str:
        """A short reading of the window for explanations: '2023-06-03', 'June 2023', 'every June'."""
        last = self.end - timedelta(days=1)
        if self.granularity == "day":
            return f"every {self.start:%B %-d}" if self.yearly else f"{self.start:%Y-%m-%d}"
        if self.granularity == "month":
            return f"every {self.start:%B}" if self.yearly else f"{self.start:%B %Y}"
        if self.granularity == "year":
            return f"{self.start:%Y}"
        return f"{self.start:%Y-%m-%d}..{last:%Y-%m-%d}"

    def closeness(self, when: datetime) -> float:
        """1 inside the window, exp(-distance / scale) outside it."""
        if self.yearly:
            return max(
                TimeWindow(shifted.start, shifted.end, self.granularity).closeness(when)
                for shifted in (self._in_year(when.year + d) for d in (-1, 0, 1))
                if shifted is not None
            )
        if self.start <= when < self.end:
            return 1.0
        gap = (self.start - when) if when < self.start else (when - self.end)
        return math.exp(-(gap.total_seconds() / 86400.0) / SCALE_DAYS[self.granularity])

    def _in_year(self, year: int) -> TimeWindow | None:
        start = _utc(year, self.start.month, self.start.day)
        return None if start is None else TimeWindow(start, start + (self.end - self.start), self.granularity)


def _utc(year: int, month: int = 1, day: int = 1) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _month_after(year: int, month: int, months: int = 1) -> datetime:
    index = year * 12 + (month - 1) + months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def _window(kind: str, year: int, month: int = 1, day: int = 1, span: int = 1) -> TimeWindow | None:
    start = _utc(year, month, day)
    if start is None:
        return None
    if kind == "day":
        return TimeWindow(start, start + timedelta(days=1), "day")
    if kind in ("month", "season"):
        return TimeWindow(start, _month_after(year, month, span), kind)
    return TimeWindow(start, _utc(year + 1) or start, "year")


def _month_number(name: str | None) -> int:
    """1–12 from '5', '05', '五', '十二', 'May' or 'sept'; January when the pattern names no month."""
    if not name:
        return 1
    if name.isdigit():
        return int(name)
    return CHINESE_MONTHS.get(name) or MONTHS[name.lower()]


def _blank(text: str, match: re.Match[str]) -> str:
    return text[: match.start()] + " " * (match.end() - match.start()) + text[match.end() :]


def _absolute(text: str, now: datetime) -> list[TimeWindow]:
    windows: list[TimeWindow] = []
    years = [int(y) for y in re.findall(r"(?<!\d)((?:19|20)\d\d)(?!\d)", text)]
    # "August 11 and August 15 2023": one year for both; with no year anywhere, any year will do.
    default_year = years[0] if years else 2000
    for kind, pattern in _NUMERIC + _CHINESE + _ENGLISH:  # 2023年 must not be read as the English bare year first
        for match in list(pattern.finditer(text)):
            groups = match.groupdict()
            year = int(groups["y"]) if groups.get("y") else default_year
            if kind == "season":
                month, span = SEASONS[groups["s"].lower()]
                window = _window("season", year, month, span=span)
            else:
                # A bare month ("yearly") is a month window re-anchored in each row's own year.
                window = _window(
                    "month" if kind == "yearly" else kind,
                    year,
                    _month_number(groups.get("m")),
                    int(groups.get("d") or 1),
                )
                if window is not None and (kind == "yearly" or (not groups.get("y") and not years)):
                    window = replace(window, yearly=True)
            if window is not None:
                windows.append(window)
            text = _blank(text, match)
    for match in _HOLIDAY.finditer(text):
        month, day = HOLIDAYS[match.group(0).lower()]
        window = _window("day", default_year, month, day)
        if window is not None:
            windows.append(replace(window, yearly=not years))
    return windows


def _relative(text: str, now: datetime) -> list[TimeWindow]:
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    windows: list[TimeWindow] = []
    for match in _RELATIVE.finditer(text):
        phrase = re.sub(r"\s+", " ", (match.group("en") or match.group("zh")).lower())
        if phrase in _RELATIVE_DAYS:
            start = today - timedelta(days=_RELATIVE_DAYS[phrase])
            windows.append(TimeWindow(start, start + timedelta(days=1), "day"))
        elif phrase in ("last week", "上周", "上星期", "this week", "本周", "这周"):
            monday = today - timedelta(days=today.weekday())
            start = monday - timedelta(days=7) if phrase in ("last week", "上周", "上星期") else monday
            windows.append(TimeWindow(start, start + timedelta(days=7), "week"))
        elif phrase in ("last month", "上个月", "上個月", "this month", "这个月", "本月"):
            back = -1 if phrase in ("last month", "上个月", "上個月") else 0
            start = _month_after(today.year, today.month, back)
            windows.append(TimeWindow(start, _month_after(start.year, start.month), "month"))
        else:  # last year / this year / 去年 / 今年
            year = today.year - 1 if phrase in ("last year", "去年") else today.year
            windows.append(TimeWindow(_utc(year) or today, _utc(year + 1) or today, "year"))
    return windows


def mentioned_times(text: str, now: datetime) -> list[TimeWindow]:
    """Every time window the text names, absolute dates first, then phrases relative to `now`."""
    if not text:
        return []
    return _absolute(text, now) + _relative(text, now)


def closeness(windows: Sequence[TimeWindow], when: datetime) -> float:
    """How close `when` is to any of the windows, in [0, 1]; 0 when there are none."""
    return max((w.closeness(when) for w in windows), default=0.0)
