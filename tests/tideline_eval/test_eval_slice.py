"""A slice of the LoCoMo benchmark through the real pipeline: write path, embedder, search, recall.

A sanity check, not the benchmark (that is `tideline eval locomo ... --mode all`): one conversation's
first sessions, hybrid mode, with the configured local embedder. Random ranking would give a turn
recall@10 of about 0.02-0.05 here; the measured recipe gives about 0.8.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tideline_core.compose import compose
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
from tideline_eval import locomo, runner

EVAL_DIR = Path(__file__).parents[2].parent / "shared" / "eval"
LOCOMO = EVAL_DIR / "locomo" / "locomo_dev.json"
MAX_TURNS = 200  # embedding dominates the run time: keep the test well under a minute


def first_sessions(conv: locomo.Conversation, max_turns: int) -> locomo.Conversation:
    """The conversation's first whole sessions (up to `max_turns` turns) and the questions they answer."""
    kept: list[locomo.Turn] = []
    for session in dict.fromkeys(locomo.session_of(t.dia_id) for t in conv.turns):
        block = [t for t in conv.turns if locomo.session_of(t.dia_id) == session]
        if kept and len(kept) + len(block) > max_turns:
            break
        kept.extend(block)
    known = {t.dia_id for t in kept}
    questions = tuple(q for q in conv.questions if q.evidence and set(q.evidence) <= known)
    return dataclasses.replace(conv, turns=tuple(kept), questions=questions)


def test_one_locomo_conversation_gets_sane_turn_recall(tmp_path: Path, store_url: str) -> None:
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo dev data not found at {LOCOMO} (see ../shared/eval/README.md); skipping the eval slice")
    conv = first_sessions(locomo.load(LOCOMO)[1], MAX_TURNS)
    assert len(conv.questions) >= 20, "the slice should hold enough questions to mean something"
    # The model cache comes from TIDELINE_MODEL_CACHE, which the test session points at its own directory.
    settings = Settings(home=tmp_path, embedder="local", database_url=store_url)
    service = compose(settings, jobs=NullJobQueue())
    try:
        dia_of = runner.load_locomo(service, [conv])
        results = runner.ask_locomo(service, [conv], dia_of, ["keyword", "hybrid"], [5, 10])
        injected = runner.inject_locomo(service, [conv], dia_of, budget=400)
    finally:
        service.close()
    # The per-turn block holds most of each question's evidence and keeps to its budget.
    assert injected.questions == len(conv.questions) and injected.budget == 400
    assert injected.evidence_recall >= 0.5 and injected.tokens_p95 <= 400, injected
    hybrid = results["hybrid"]
    assert hybrid.questions == len(conv.questions)
    assert hybrid.recall[10] >= 0.5, hybrid
    assert hybrid.session_recall[5] >= 0.7, hybrid
    # The latency splits into the model pass over the query and the rest; keyword search has no model pass.
    latency = hybrid.latency_ms
    assert 0 < latency["embed_p50"] <= latency["p95"] and 0 < latency["rest_p50"] <= latency["p95"]
    assert results["keyword"].latency_ms["embed_p95"] == 0
