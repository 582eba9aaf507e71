"""Properties of score fusion: what a hybrid ranking may and may not depend on."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tideline_core.search.fusion import (
    METHODS,
    FusedHit,
    confidence,
    confidence_of,
    fuse,
    interleave,
    rank,
    spread_to_neighbours,
)

doc_ids = st.integers(min_value=0, max_value=40)
scores = st.floats(min_value=-5.0, max_value=5.0, allow_nan=False, allow_infinity=False)
one_signal = st.dictionaries(doc_ids, scores, max_size=25)
signal_sets = st.dictionaries(st.sampled_from(["keyword", "dense", "context", "sparse"]), one_signal, min_size=1)
weight_sets = st.fixed_dictionaries(
    {}, optional={name: st.floats(min_value=0.0, max_value=3.0) for name in ("keyword", "dense", "context", "sparse")}
)
methods = st.sampled_from(METHODS)


def ranking(hits: list[FusedHit]) -> list[object]:
    return [hit.doc_id for hit in hits]


def shuffled(signals: dict[str, dict[int, float]], seed: int) -> dict[str, dict[int, float]]:
    rng = random.Random(seed)
    names = list(signals)
    rng.shuffle(names)
    out = {}
    for name in names:
        items = list(signals[name].items())
        rng.shuffle(items)
        out[name] = dict(items)
    return out


@settings(max_examples=300, deadline=None)
@given(signal_sets, weight_sets, methods, st.integers())
def test_shuffling_the_candidates_or_the_signals_changes_nothing(signals, weights, method, seed):
    before = fuse(signals, weights=weights, method=method)
    after = fuse(shuffled(signals, seed), weights=weights, method=method)
    assert [(h.doc_id, h.score, h.contributions) for h in before] == [
        (h.doc_id, h.score, h.contributions) for h in after
    ]


@settings(max_examples=400, deadline=None)
@given(signal_sets, weight_sets, methods, st.data())
def test_raising_a_documents_score_in_one_signal_never_lowers_its_rank(signals, weights, method, data):
    name = data.draw(st.sampled_from(sorted(signals)))
    if not signals[name]:
        return
    doc = data.draw(st.sampled_from(sorted(signals[name])))
    raise_by = data.draw(st.floats(min_value=0.0, max_value=10.0))
    raised = {n: dict(s) for n, s in signals.items()}
    raised[name][doc] = signals[name][doc] + raise_by
    rank_before = ranking(fuse(signals, weights=weights, method=method)).index(doc)
    rank_after = ranking(fuse(raised, weights=weights, method=method)).index(doc)
    assert rank_after <= rank_before


@settings(max_examples=200, deadline=None)
@given(signal_sets, weight_sets, methods)
def test_equal_fused_scores_are_ordered_by_document_id(signals, weights, method):
    hits = fuse(signals, weights=weights, method=method)
    for first, second in itertools.pairwise(hits):
        assert first.score > second.score or (first.score == second.score and first.doc_id < second.doc_id)


@settings(max_examples=200, deadline=None)
@given(signal_sets, weight_sets, methods)
def test_every_candidate_appears_once_and_its_contributions_add_up_to_its_score(signals, weights, method):
    hits = fuse(signals, weights=weights, method=method)
    assert sorted(ranking(hits)) == sorted({d for s in signals.values() for d in s})
    for hit in hits:
        assert hit.score == pytest.approx(sum(hit.contributions.values()))
        assert set(hit.contributions) == {name for name, s in signals.items() if hit.doc_id in s}


def test_a_confident_keyword_hit_beats_a_flat_dense_list_under_score_fusion():
    keyword = {"a": 9.0, "b": 1.0}
    dense = {"a": 0.80, "b": 0.81, "c": 0.80}
    assert ranking(fuse({"keyword": keyword, "dense": dense}))[0] == "a"


def test_a_floor_keeps_a_single_keyword_match_from_counting_as_zero():
    hits = fuse({"keyword": {"a": 2.0, "b": 2.0}}, floors={"keyword": 0.0})
    assert [h.score for h in hits] == [1.0, 1.0]


def test_a_score_at_or_below_its_floor_counts_nothing_and_a_signal_with_nothing_above_it_adds_nothing():
    margins = {"near": 0.04, "at": 0.0, "below": -0.02}
    scored = {h.doc_id: h.score for h in fuse({"dense": margins}, floors={"dense": 0.0})}
    assert scored == {"near": 1.0, "at": 0.0, "below": 0.0}
    nothing_clears = {h.doc_id: h.score for h in fuse({"dense": {"a": -0.01, "b": -0.03}}, floors={"dense": 0.0})}
    assert nothing_clears == {"a": 0.0, "b": 0.0}
    without_a_floor = {h.doc_id: h.score for h in fuse({"dense": {"a": -0.01, "b": -0.03}})}
    assert without_a_floor == {"a": 1.0, "b": 0.0}, "min-max over the candidates alone"


def test_weights_scale_each_signals_contribution():
    hits = fuse({"keyword": {"a": 1.0, "b": 0.0}, "dense": {"a": 0.0, "b": 1.0}}, weights={"keyword": 2.0})
    assert ranking(hits) == ["a", "b"]
    assert hits[0].contributions == {"keyword": 2.0, "dense": 0.0}


def test_reciprocal_rank_fusion_gives_tied_scores_the_same_rank():
    hits = fuse({"dense": {"a": 0.5, "b": 0.5, "c": 0.1}}, method="rrf", rrf_k=60)
    assert [h.score for h in hits] == pytest.approx([1 / 61, 1 / 61, 1 / 63])


def test_top_k_cuts_the_ranking_and_an_empty_input_gives_nothing():
    assert len(fuse({"dense": {i: float(i) for i in range(10)}}, top_k=3)) == 3
    assert fuse({}) == []
    assert fuse({"dense": {}}) == []


def test_an_unknown_method_or_a_negative_weight_is_refused():
    with pytest.raises(ValueError):
        fuse({"dense": {"a": 1.0}}, method="borda")
    with pytest.raises(ValueError):
        fuse({"dense": {"a": 1.0}}, weights={"dense": -1.0})


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.integers(0, 12), st.floats(0.0, 5.0), min_size=1), st.floats(0.0, 1.0), st.data())
def test_spreading_to_neighbours_lifts_adjacent_turns_without_overtaking_the_raised_one(scores, gamma, data):
    # Stated on the scores, not the order: two docs tied before can trade places by one rounding step.
    neighbours = {d: [n for n in (d - 1, d + 1) if n in scores] for d in scores}
    doc = data.draw(st.sampled_from(sorted(scores)))
    lift = data.draw(st.floats(0.0, 5.0))
    raised = dict(scores)
    raised[doc] += lift
    before = spread_to_neighbours(scores, neighbours, gamma=gamma)
    after = spread_to_neighbours(raised, neighbours, gamma=gamma)
    assert after[doc] - before[doc] == pytest.approx(raised[doc] - scores[doc], abs=1e-9)
    for other in scores:
        if other != doc:
            assert after[other] - before[other] <= gamma * (raised[doc] - scores[doc]) + 1e-9


def test_a_strong_turn_lifts_the_turn_before_it_above_an_unrelated_equal():
    spread = spread_to_neighbours({1: 0.5, 2: 1.0, 7: 0.5}, {1: [2], 2: [1], 7: []}, gamma=0.2)
    assert [d for d, _ in rank(spread)] == [2, 1, 7]
    assert spread[1] == pytest.approx(0.7)


def _flat_dense_against_a_decisive_keyword() -> dict[str, dict[str, float]]:
    """Keyword knows the answer is 'a'; both dense views rank 'b' first by noise: their top ten lie within 0.002."""
    noise = {f"n{i}": 0.8000 + i * 0.0001 for i in range(12)}
    keyword = {"a": 12.0, "b": 3.0, **dict.fromkeys(noise, 2.0)}
    dense = {**noise, "a": 0.8000, "b": 0.8020}
    return {"kw": keyword, "dense": dense, "ctx": dict(dense)}


def test_a_dense_view_whose_top_ten_lie_within_the_flat_margin_does_not_outvote_a_decisive_keyword_signal():
    signals = _flat_dense_against_a_decisive_keyword()
    weights = {"kw": 1.0, "dense": 0.5, "ctx": 1.0}
    assert ranking(fuse(signals, weights=weights, floors={"kw": 0.0}))[0] == "b", "min-max stretches the noise"
    flat = {"dense": 0.005, "ctx": 0.005}
    assert ranking(fuse(signals, weights=weights, floors={"kw": 0.0}, flat=flat))[0] == "a"


def test_a_dense_view_that_tells_its_top_apart_keeps_its_full_weight():
    signals = _flat_dense_against_a_decisive_keyword()
    spread = {k: 0.5 + 0.02 * i for i, k in enumerate(sorted(signals["dense"]))}
    signals = {**signals, "dense": spread, "ctx": spread}
    flat = {"dense": 0.005, "ctx": 0.005}
    assert fuse(signals, flat=flat) == fuse(signals)


def test_a_signal_is_sure_of_its_lone_best_and_unsure_of_a_top_ten_alike():
    assert confidence({"a": 1.0}) == 1.0
    assert confidence({"a": 1.0, **dict.fromkeys(range(12), 0.0)}) == 1.0
    assert confidence(dict.fromkeys(range(12), 1.0)) == 0.0
    assert 0.0 < confidence({i: i / 11 for i in range(12)}) < 1.0


def test_with_trust_a_keyword_view_sure_of_one_row_outweighs_a_dense_view_that_ranks_its_top_alike():
    rows = [f"t{i}" for i in range(20)]
    keyword = {"rare": 9.0, **dict.fromkeys(rows, 0.5)}
    # the dense view puts another row first and its next nine close behind: it knows little
    dense = {"near": 0.90, **{r: 0.89 - 0.001 * i for i, r in enumerate(rows)}, "rare": 0.70}
    signals = {"kw": keyword, "dense": dense}
    weights = {"kw": 0.5, "dense": 1.0}
    assert ranking(fuse(signals, weights=weights, floors={"kw": 0.0}))[0] == "near"
    trusted = fuse(signals, weights=weights, floors={"kw": 0.0}, trust={"kw": 1.0, "dense": 1.0})
    assert ranking(trusted)[0] == "rare"


def test_trust_is_ignored_by_reciprocal_rank_fusion():
    signals = {"kw": {"a": 3.0, "b": 1.0}, "dense": {"a": 0.1, "b": 0.9}}
    assert fuse(signals, method="rrf", trust={"kw": 2.0}) == fuse(signals, method="rrf")


def test_a_signals_confidence_is_read_off_its_raw_scores_as_the_fusion_scales_them():
    keyword = {"rare": 9.0, **dict.fromkeys(range(12), 0.9)}
    assert confidence_of(keyword, floor=0.0) == pytest.approx(0.9)
    assert confidence_of(keyword) == 1.0, "without a floor the lowest candidate is the minimum"


def test_interleaving_takes_each_rankings_first_places_before_any_second_place() -> None:
    assert interleave([["a", "b", "c"], ["x", "a", "y"], ["z"]], limit=10) == ["a", "x", "z", "b", "c", "y"]


def test_interleaving_stops_at_the_limit_and_takes_each_id_once() -> None:
    assert interleave([["a", "b"], ["a", "b"]], limit=3) == ["a", "b"]
    assert interleave([["a", "b", "c"], ["x", "y"]], limit=3) == ["a", "x", "b"]
    assert interleave([], limit=3) == []


def test_among_equal_scores_the_rows_with_evidence_of_their_own_come_first_and_no_score_is_overruled() -> None:
    scores = {1: 1.5, 2: 1.5, 3: 2.0, 4: 0.5}
    assert [d for d, _ in rank(scores)] == [3, 1, 2, 4]
    assert [d for d, _ in rank(scores, first={2, 4})] == [3, 2, 1, 4]
    assert [d for d, _ in rank(scores, top_k=2, first={2, 4})] == [3, 2]
