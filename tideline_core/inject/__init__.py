"""Injection: the session-start block (T0, T2, T2b, T3) and the per-turn block (T1, T4) under token budgets.

Pure parts: `tokens` (the estimate, clipping), `budget` (what fits, by a stated rule), `tiers`
(each tier's selection rule), `render` (text and version). `sources` reads what the tiers select
from; `tideline_core.service.inject` puts them together for every edge.
"""

from tideline_core.inject.budget import Candidate, Item, fit, spent
from tideline_core.inject.render import Block
from tideline_core.inject.setup import InjectSetup
from tideline_core.inject.tiers import InjectRules
from tideline_core.text.cost import clip, estimate_tokens

__all__ = ["Block", "Candidate", "InjectRules", "InjectSetup", "Item", "clip", "estimate_tokens", "fit", "spent"]
