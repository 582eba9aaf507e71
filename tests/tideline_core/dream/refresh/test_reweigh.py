"""Recurrence refresh and weight normalization: what changes, what never changes, and idempotence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tideline_core.domain.scoring import recurrence_score, recurrence_scores, weight
from tideline_core.dream.refresh.reweigh import ScoredNarrative, WeightChange, reweigh, targets

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def recurrence_counts(tags_by_narrative: Mapping[int, Sequence[str]]) -> dict[int, int | None]:
    """The reference the fast scores are checked against: for each narrative, how many *other*
    narratives share at least one of its tags, counted the slow, obvious way (None: no tags)."""
    counts: dict[int, int | None] = {}
    for narrative_id, tags in tags_by_narrative.items():
        if not tags:
            counts[narrative_id] = None
            continue
        counts[narrative_id] = sum(
            1 for other, theirs in tags_by_narrative.items() if other != narrative_id and set(tags) & set(theirs)
        )
    return counts


def narrative(
    i: int,
    tags: tuple[str, ...] = (),
    score: int = 3,
    *,
    recurrence: int = 3,
    stored: float | None = None,
    minutes: int | None = None,
) -> ScoredNarrative:
    return ScoredNarrative(
        id=i,
        created_at=T0 + timedelta(minutes=i if minutes is None else minutes),
        tags=tags,
        importance=score,
        emotional=score,
        unresolved=score,
        recurrence=recurrence,
        weight=weight(score, score, recurrence, score) if stored is None else stored,
    )


def apply(records: list[ScoredNarrative], changes: list[WeightChange]) -> list[ScoredNarrative]:
    by_id = {c.id: c for c in changes}
    return [
        replace(r, recurrence=by_id[r.id].recurrence, weight=by_id[r.id].weight) if r.id in by_id else r
        for r in records
    ]


def test_narratives_already_at_their_targets_give_no_changes() -> None:
    records = [narrative(i) for i in range(5)]  # no tags → recurrence 3, all-threes weight 0.6
    assert reweigh(records) == []


def test_recurrence_is_refreshed_from_shared_tags_and_the_weight_follows() -> None:
    records = [narrative(1, ("tide",)), narrative(2, ("tide",)), narrative(3, ("moon",))]
    changes = {c.id: c for c in reweigh(records)}
    assert changes[1] == WeightChange(1, 2, weight(3, 3, 2, 3))
    assert changes[3] == WeightChange(3, 1, weight(3, 3, 1, 3))


def test_an_inflated_recent_window_is_scaled_to_a_mean_of_point_six() -> None:
    records = [narrative(i, score=5, recurrence=3) for i in range(20)]
    changes = reweigh(records)
    assert len(changes) == 20
    assert sum(c.weight for c in changes) / 20 == pytest.approx(0.6, abs=1e-5)


def test_only_the_twenty_newest_are_deflated() -> None:
    old = [narrative(i, score=5, minutes=i) for i in range(5)]
    new = [narrative(100 + i, score=5, minutes=1000 + i) for i in range(20)]
    changed = {c.id for c in reweigh(old + new)}
    assert changed == {n.id for n in new}


def test_a_narrative_leaving_the_window_returns_to_its_formula_weight() -> None:
    records = [narrative(i, score=5) for i in range(20)]
    records = apply(records, reweigh(records))
    newer = [narrative(100 + i, minutes=1000 + i) for i in range(20)]
    changes = {c.id: c for c in reweigh(records + newer)}
    assert all(changes[i].weight == weight(5, 5, 3, 5) for i in range(20))


def test_a_weight_written_outside_the_formula_is_put_back() -> None:
    assert reweigh([narrative(1, stored=0.95)]) == [WeightChange(1, 3, 0.6)]


def test_ties_in_created_at_are_broken_by_id() -> None:
    same_time = [narrative(i, score=5, minutes=0) for i in range(21)]
    first = [t.id for t in targets(same_time)]
    assert first[:3] == [20, 19, 18]


records_strategy = st.lists(
    st.builds(
        ScoredNarrative,
        id=st.integers(0, 10_000),
        created_at=st.integers(0, 500).map(lambda m: T0 + timedelta(minutes=m)),
        tags=st.lists(st.sampled_from(["a", "b", "c", "d", "潮", "月"]), max_size=3).map(tuple),
        importance=st.integers(1, 5),
        emotional=st.integers(1, 5),
        unresolved=st.integers(1, 5),
        recurrence=st.integers(1, 5),
        weight=st.floats(0.0, 1.0),
    ),
    max_size=45,
    unique_by=lambda r: r.id,
)


@settings(max_examples=150, deadline=None)
@given(records_strategy)
def test_normalization_never_raises_a_weight_above_its_formula_and_stays_in_range(
    records: list[ScoredNarrative],
) -> None:
    counts = recurrence_counts({r.id: r.tags for r in records})
    by_id = {r.id: r for r in records}
    for change in reweigh(records):
        r = by_id[change.id]
        assert change.recurrence == recurrence_score(counts[r.id])
        assert 0.0 <= change.weight <= weight(r.importance, r.emotional, change.recurrence, r.unresolved) + 1e-9
        assert change.weight <= 1.0


@settings(max_examples=150, deadline=None)
@given(records_strategy)
def test_reweighing_is_idempotent(records: list[ScoredNarrative]) -> None:
    once = apply(records, reweigh(records))
    assert reweigh(once) == []


@settings(max_examples=100, deadline=None)
@given(records_strategy)
def test_the_result_does_not_depend_on_input_order(records: list[ScoredNarrative]) -> None:
    assert reweigh(records) == reweigh(list(reversed(records)))


@settings(max_examples=100, deadline=None)
@given(records_strategy)
def test_after_reweighing_the_newest_window_is_never_inflated(records: list[ScoredNarrative]) -> None:
    window = [t.weight for t in targets(records)[:20]]
    if window:
        assert sum(window) / len(window) <= 0.7 + 1e-6


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.integers(0, 60), st.lists(st.sampled_from(["a", "b", "c", "d", "e", "潮"]), max_size=3), max_size=60
    )
)
def test_the_fast_recurrence_scores_agree_with_the_reference_counts(tags: dict[int, list[str]]) -> None:
    counts = recurrence_counts(tags)
    assert recurrence_scores(tags) == {i: recurrence_score(counts[i]) for i in tags}
