"""`tideline eval locomo --links` on a slice of LoCoMo: the scan's links to the benchmark's facts are mostly right.

A sanity check of the measurement, not the figure itself (that is the whole dev file, see docs/retrieval.md):
one conversation's first sessions with the real embedder, through the service.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tideline_core.compose import compose
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
from tideline_eval import links, locomo

LOCOMO = Path(__file__).parents[2].parent / "shared" / "eval" / "locomo" / "locomo_dev.json"
SESSIONS = 4


def test_the_scan_links_most_locomo_facts_and_those_it_links_point_at_their_own_turns(
    tmp_path: Path, store_url: str
) -> None:
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo dev data not found at {LOCOMO}; skipping the link eval slice")
    whole = locomo.load(LOCOMO)[3]
    kept = {f"D{n}" for n in range(1, SESSIONS + 1)}
    conv = dataclasses.replace(whole, turns=tuple(t for t in whole.turns if locomo.session_of(t.dia_id) in kept))
    service = compose(Settings(home=tmp_path, embedder="local", database_url=store_url), jobs=NullJobQueue())
    try:
        result = links.measure_links(service, LOCOMO, [conv])
    finally:
        service.close()
    score = result.per_conversation[conv.sample_id]
    assert score.facts >= 30 and score == result.overall
    assert score.links == score.linked, "at most one link per fact"
    assert score.precision >= 0.8 and score.coverage >= 0.5, score


def test_a_fact_naming_no_turn_of_the_conversation_is_left_out() -> None:
    turns = [locomo.Turn("D1:1", "Ann", "I adopted a cat.", locomo.parse_session_time("1:00 pm on 8 May, 2023"))]
    sample = {"observation": {"session_1_observation": {"Ann": [["Ann adopted a cat.", "D1:1"], ["Lost.", "D9:9"]]}}}
    assert links.facts_of(sample, turns) == [links.Fact("Ann adopted a cat.", "Ann", "D1", ("D1:1",))]
