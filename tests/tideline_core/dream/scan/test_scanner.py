"""DREAM layer-0 scanner: unlinked narratives, chunks of new turns, embedding backlog, watermark, markdown."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from tideline_core.dream.scan.scanner import Chunk, NarrativeRow, TurnRow, chunk_turns, scan, to_markdown

T0 = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)
LONG = "x" * 150


def turn(i: int, minutes: float, session: str = "s1", content: str = LONG, state: str = "done") -> TurnRow:
    return TurnRow(
        i,
        session,
        "user" if i % 2 else "assistant",
        "Alice" if i % 2 else "",
        content,
        T0 + timedelta(minutes=minutes),
        state,
    )


def test_narratives_without_source_links_are_track_a_oldest_first() -> None:
    rows = [
        NarrativeRow(3, "later", T0 + timedelta(hours=1), linked=False),
        NarrativeRow(1, "linked", T0, linked=True),
        NarrativeRow(2, "earlier", T0, linked=False),
    ]
    report = scan(rows, [], 0)
    assert [(u.id, u.gesture) for u in report.unlinked] == [(2, "earlier"), (3, "later")]


def test_only_turns_after_the_watermark_are_chunked() -> None:
    report = scan([], [turn(i, i) for i in range(1, 7)], watermark=3)
    assert [c.turn_ids for c in report.chunks] == [(4, 5, 6)]
    assert (report.watermark_before, report.watermark) == (3, 6)


def test_a_gap_of_exactly_ten_minutes_stays_in_one_chunk_and_more_splits() -> None:
    chunks = chunk_turns([turn(1, 0), turn(2, 10), turn(3, 20.01), turn(4, 21)])
    assert [c.turn_ids for c in chunks] == [(1, 2), (3, 4)]


def test_chunks_are_built_per_session_even_when_sessions_interleave() -> None:
    turns = [turn(1, 0, "a"), turn(2, 1, "b"), turn(3, 2, "a"), turn(4, 3, "b")]
    chunks = chunk_turns(turns)
    assert [(c.session_id, c.turn_ids) for c in chunks] == [("a", (1, 3)), ("b", (2, 4))]


def test_turns_are_ordered_by_time_then_id_whatever_the_input_order() -> None:
    chunks = chunk_turns([turn(9, 1), turn(2, 0), turn(5, 1)])
    assert chunks[0].turn_ids == (2, 5, 9)


def test_short_chunks_are_reported_separately_not_dropped() -> None:
    turns = [turn(1, 0), turn(2, 1), turn(3, 60), turn(4, 120, content="hi"), turn(5, 121, content="ok")]
    report = scan([], turns, 0)
    assert [c.turn_ids for c in report.chunks] == [(1, 2)]
    assert [c.turn_ids for c in report.short_chunks] == [(3,), (4, 5)]
    assert report.new_turns == 5


def test_a_chunk_knows_its_time_range_speakers_and_size() -> None:
    chunk = chunk_turns([turn(1, 0), turn(2, 3), turn(3, 5)])[0]
    assert (chunk.start, chunk.end) == (T0, T0 + timedelta(minutes=5))
    assert chunk.speakers == ("Alice", "assistant")
    assert chunk.chars == 450


def test_rows_waiting_for_embeddings_are_counted_with_the_oldest() -> None:
    narratives = [NarrativeRow(i, "g", T0 + timedelta(minutes=10 - i), True, "pending") for i in range(1, 4)]
    turns = [turn(7, 5, state="pending"), turn(8, 1, state="done")]
    report = scan(narratives, turns, watermark=100)
    assert (report.narratives_waiting.count, report.narratives_waiting.oldest_id) == (3, 3)
    assert report.narratives_waiting.oldest == T0 + timedelta(minutes=7)
    assert (report.turns_waiting.count, report.turns_waiting.oldest_id) == (1, 7)
    assert report.chunks == () and report.watermark == 100


def test_nothing_to_scan_gives_an_empty_report_and_keeps_the_watermark() -> None:
    report = scan([], [], 12)
    assert (report.unlinked, report.chunks, report.short_chunks, report.watermark) == ((), (), (), 12)
    assert report.narratives_waiting.oldest is None


def test_the_markdown_has_a_section_per_track_with_utc_ranges_speakers_and_excerpts() -> None:
    turns = [turn(1, 0, content="第一句\n# not a heading " + "很长" * 200), turn(2, 4)]
    report = scan([NarrativeRow(5, "未链接的叙事", T0, False)], turns, 0)
    text = to_markdown(report)
    for heading in ("## Track A", "## Track B", "## Short chunks", "## Track C", "## Track D"):
        assert heading in text
    assert "2026-05-08 13:00 UTC → 2026-05-08 13:04 UTC" in text
    assert "Speakers: Alice, assistant" in text
    assert "- [#1 13:00 Alice] 第一句 # not a heading" in text
    line = next(line for line in text.splitlines() if line.startswith("- [#1 "))
    assert line.endswith("…") and len(line) < 240
    assert "\n# not a heading" not in text
    assert "#5" in text and "未链接的叙事" in text


def test_long_lists_are_cut_with_a_count() -> None:
    report = scan([NarrativeRow(i, "g", T0, False) for i in range(5)], [], 0)
    assert "… and 3 more" in to_markdown(report, max_listed=2)


turn_lists = st.lists(
    st.builds(
        lambda i, minutes, session, size: turn(i, minutes, session, "y" * size),
        st.integers(1, 500),
        st.floats(0, 600, allow_nan=False),
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 300),
    ),
    max_size=40,
    unique_by=lambda t: t.id,
)


@settings(max_examples=150, deadline=None)
@given(turn_lists, st.integers(0, 500), st.integers(1, 30))
def test_chunks_respect_the_gap_and_cover_every_new_turn_once(turns: list[TurnRow], watermark: int, gap: int) -> None:
    report = scan([], turns, watermark, max_gap=timedelta(minutes=gap))
    chunks = report.chunks + report.short_chunks
    covered = sorted(i for c in chunks for i in c.turn_ids)
    assert covered == sorted(t.id for t in turns if t.id > watermark)
    for chunk in chunks:
        assert len({t.session_id for t in chunk.turns}) == 1
        for before, after in itertools.pairwise(chunk.turns):
            assert timedelta(0) <= after.created_at - before.created_at <= timedelta(minutes=gap)
    by_session: dict[str, list[Chunk]] = {}
    for chunk in sorted(chunks, key=lambda c: c.start):
        by_session.setdefault(chunk.session_id, []).append(chunk)
    for session_chunks in by_session.values():
        for first, second in itertools.pairwise(session_chunks):
            assert second.start - first.end > timedelta(minutes=gap)


@settings(max_examples=100, deadline=None)
@given(st.lists(turn_lists, min_size=1, max_size=4), st.integers(0, 50))
def test_the_watermark_never_goes_back(batches: list[list[TurnRow]], start: int) -> None:
    watermark = start
    for batch in batches:
        report = scan([], batch, watermark)
        assert report.watermark >= watermark
        assert report.watermark == max([watermark, *(t.id for t in batch)])
        watermark = report.watermark
