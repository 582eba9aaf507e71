"""The fusion's weights, floors and depths: one declaration for the hybrid searcher and the hook's keyword one."""

from __future__ import annotations

KINDS = {"all": ("narrative", "context"), "narratives": ("narrative",), "context": ("context",)}
# Weights measured on LoCoMo (questions) and MADial (dialogues); a dialogue's words are noisier
# than a question's, so keyword signals weigh less there.
# Beside the dense context view, the keyword one (the previous turn + the turn) weighs half (measured on
# LoCoMo and MemDaily); without it, in keyword mode, it is the only context signal and weighs in full.
QUESTION_WEIGHTS = {"kw": 1.0, "kw_ctx": 0.5, "dense": 0.5, "ctx": 1.0, "speaker": 0.7, "time": 1.0}
KEYWORD_QUESTION_WEIGHTS = {**QUESTION_WEIGHTS, "kw_ctx": 1.0}
CONVERSATION_WEIGHTS = {"kw": 0.25, "kw_ctx": 0.25, "dense": 0.5, "ctx": 0.6, "speaker": 0.7, "time": 1.0}
# The lowest possible score of a signal (BM25 0, closeness 0), so a lone weak match stays weak.
FLOORS = {"kw": 0.0, "kw_ctx": 0.0, "time": 0.0}
# A dense view whose ten best cosines lie within this of each other tells nothing apart (fusion.py).
FLAT = {"dense": 0.005, "ctx": 0.005}
# How much each view's weight follows its confidence in the query (fusion.py). None: no setting that
# bench/fusion_fit.py tried held on the evaluation set it was not chosen on (docs/retrieval.md).
TRUST: dict[str, float] = {}
DENSE_DEPTH = 100  # dense candidates per view: min-max over a deeper list flattens the top
# Keyword candidates per view: past it a row's share of the view's best score adds little, and every
# candidate costs the database and the fusion their time (docs/retrieval.md, keyword depth).
KEYWORD_DEPTH = 500
GAMMA = 0.2  # neighbour spreading
HIDDEN_MARGIN = 10  # rows ranked past the limit, standing in for superseded narratives dropped on loading
TIME_LINES = 2  # the latest dialogue lines whose dates count
