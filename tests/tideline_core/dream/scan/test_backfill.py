"""Source-link backfill: nearby, similar turns become inferred links; explicit links are never touched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tideline_core.dream.scan.backfill import InferredLink, NarrativeAnchor, TurnAnchor, propose_links
from tideline_core.errors import InvalidInput

T0 = datetime(2026, 5, 8, 12, 0, tzinfo=UTC)


def vec(*values: float) -> list[float]:
    return list(values)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def propose(
    narratives: list[NarrativeAnchor],
    n_vectors: list[list[float]],
    turns: list[TurnAnchor],
    t_vectors: list[list[float]],
    **options: object,
) -> list[InferredLink]:
    return propose_links(
        narratives,
        np.array(n_vectors, np.float32).reshape(len(narratives), -1),
        turns,
        np.array(t_vectors, np.float32).reshape(len(turns), -1),
        **options,
    )  # type: ignore[arg-type]


def test_the_most_similar_turns_inside_the_window_are_linked_as_inferred() -> None:
    turns = [TurnAnchor(10, at(-1)), TurnAnchor(11, at(1)), TurnAnchor(12, at(2))]
    links = propose([NarrativeAnchor(1, T0)], [vec(1, 0)], turns, [vec(1, 0), vec(0.99, 0.14), vec(0, 1)])
    assert [(link.narrative_id, link.context_id, link.inferred) for link in links] == [(1, 10, True), (1, 11, True)]
    assert links[0].score == pytest.approx(1.0)


def test_turns_outside_the_window_are_never_candidates() -> None:
    turns = [TurnAnchor(10, at(-6.01)), TurnAnchor(11, at(6)), TurnAnchor(12, at(7))]
    links = propose([NarrativeAnchor(1, T0)], [vec(1, 0)], turns, [vec(1, 0)] * 3)
    assert [link.context_id for link in links] == [11]
    assert propose([NarrativeAnchor(1, T0)], [vec(1, 0)], turns, [vec(1, 0)] * 3, window=timedelta(hours=8)) != links


def test_a_narrative_with_explicit_links_gets_no_proposal() -> None:
    links = propose([NarrativeAnchor(1, T0, explicit_links=True)], [vec(1, 0)], [TurnAnchor(10, T0)], [vec(1, 0)])
    assert links == []


def test_candidates_below_the_threshold_are_not_linked() -> None:
    links = propose([NarrativeAnchor(1, T0)], [vec(1, 0)], [TurnAnchor(10, T0)], [vec(0.7, 0.71)], threshold=0.8)
    assert links == []


def test_candidates_far_below_the_best_are_not_linked() -> None:
    turns = [TurnAnchor(10, T0), TurnAnchor(11, T0)]
    # cos 1.0 and about 0.9: both above 0.8, but the second is 0.1 below the best.
    links = propose([NarrativeAnchor(1, T0)], [vec(1, 0)], turns, [vec(1, 0), vec(0.9, 0.436)], threshold=0.8)
    assert [link.context_id for link in links] == [10]
    wide = propose(
        [NarrativeAnchor(1, T0)], [vec(1, 0)], turns, [vec(1, 0), vec(0.9, 0.436)], threshold=0.8, margin=0.2
    )
    assert [link.context_id for link in wide] == [10, 11]


def test_at_most_top_k_links_best_first_ties_by_turn_id() -> None:
    turns = [TurnAnchor(i, T0) for i in (5, 3, 4, 1)]
    links = propose([NarrativeAnchor(1, T0)], [vec(1, 0)], turns, [vec(1, 0)] * 4, top_k=3)
    assert [link.context_id for link in links] == [1, 3, 4]


def test_links_already_inferred_are_not_proposed_again() -> None:
    turns = [TurnAnchor(10, T0), TurnAnchor(11, T0)]
    first = propose([NarrativeAnchor(1, T0)], [vec(1, 0)], turns, [vec(1, 0)] * 2)
    again = propose(
        [NarrativeAnchor(1, T0, inferred_context_ids=frozenset(link.context_id for link in first))],
        [vec(1, 0)],
        turns,
        [vec(1, 0)] * 2,
    )
    assert len(first) == 2 and again == []


def test_no_turns_or_no_narratives_give_no_links() -> None:
    assert propose_links([], np.zeros((0, 4), np.float32), [], np.zeros((0, 4), np.float32)) == []
    assert propose_links([NarrativeAnchor(1, T0)], np.ones((1, 2), np.float32), [], np.array([], np.float32)) == []


def test_vectors_must_match_their_records() -> None:
    with pytest.raises(InvalidInput, match="one row per record"):
        propose_links([NarrativeAnchor(1, T0)], np.zeros((2, 3), np.float32), [], np.zeros((0, 3), np.float32))
    with pytest.raises(InvalidInput, match="dimension"):
        propose_links(
            [NarrativeAnchor(1, T0)], np.ones((1, 3), np.float32), [TurnAnchor(1, T0)], np.ones((1, 4), np.float32)
        )


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-10, 10), st.booleans()), min_size=1, max_size=8),
    st.lists(st.floats(-10, 10), max_size=20),
    st.integers(0, 2**16),
    st.integers(1, 4),
)
def test_every_proposal_obeys_window_threshold_top_k_and_explicit_links(
    narrative_specs: list[tuple[float, bool]], turn_hours: list[float], seed: int, top_k: int
) -> None:
    rng = np.random.default_rng(seed)
    narratives = [NarrativeAnchor(i, at(h), explicit_links=e) for i, (h, e) in enumerate(narrative_specs)]
    turns = [TurnAnchor(100 + j, at(h)) for j, h in enumerate(turn_hours)]
    n_vectors = rng.standard_normal((len(narratives), 3)).astype(np.float32)
    t_vectors = rng.standard_normal((len(turns), 3)).astype(np.float32)
    links = propose_links(narratives, n_vectors, turns, t_vectors, threshold=0.5, top_k=top_k)
    turn_at = {t.id: t.created_at for t in turns}
    per_narrative: dict[int, int] = {}
    for link in links:
        narrative = narratives[link.narrative_id]
        assert not narrative.explicit_links and link.inferred
        assert abs(turn_at[link.context_id] - narrative.occurred_at) <= timedelta(hours=6)
        assert link.score >= 0.5
        per_narrative[link.narrative_id] = per_narrative.get(link.narrative_id, 0) + 1
    assert all(count <= top_k for count in per_narrative.values())
