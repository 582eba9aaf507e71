"""What fits in a block: candidates taken in their tier's order until the tier's and the block's tokens run out.

The rule, the same for every tier: a tier lists its candidates most valuable first (each tier's
module says by what). A candidate is taken whole if it fits in what is left of the tier's budget
and of the block's; if it does not, it is cut at a sentence end (marked `…`) when a useful part
of it fits; otherwise it is left out and the next, smaller one is tried. A candidate's `tail` (a memory's
amendment mark) is what a cut keeps: the text before it is shortened first, the mark only when
even a few words of that text leave it no room. So the lowest-value items
are the first to go. Tiers spend the block's budget in a fixed order: T0, T2, T2b, T3 at session
start; T1, T4 per turn. A tier's heading is paid for out of its budget once it holds an item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tideline_core.text.cost import clip, estimate_tokens

LINE = 1  # the bullet and newline around each item
MIN_CLIPPED = 6  # a cut item must keep at least this many tokens (with its mark) to be worth showing


@dataclass(frozen=True)
class Candidate:
    """Something a tier could show: what it is, the line it would be, its rank value and why it was chosen."""

    tier: str
    kind: str  # soul, self_concept, snapshot, thread, narrative, turn, topic, profile
    id: int | None
    text: str
    score: float
    reason: str
    tail: str = ""  # the end of `text` a cut keeps whole while it can (`memory_text.amendment_mark`)


@dataclass(frozen=True)
class Item:
    """A candidate that made it into the block, with its estimated tokens and whether it was cut."""

    tier: str
    kind: str
    id: int | None
    text: str
    score: float
    reason: str
    tokens: int
    clipped: bool


def fit(candidates: Sequence[Candidate], *, heading: str, tier_budget: int, block_left: int) -> list[Item]:
    """The candidates that fit (see the module docstring), in the order given."""
    room = min(tier_budget, block_left) - estimate_tokens(heading) - LINE
    taken: list[Item] = []
    for candidate in candidates:
        if room <= LINE:
            break
        cost = estimate_tokens(candidate.text) + LINE
        if cost <= room:
            taken.append(_item(candidate, candidate.text, cost - LINE, clipped=False))
            room -= cost
            continue
        if room - LINE < MIN_CLIPPED:
            continue
        cut = _cut(candidate.text, candidate.tail, room - LINE)
        tokens = estimate_tokens(cut) if cut is not None else 0
        if cut is not None and tokens >= MIN_CLIPPED:
            taken.append(_item(candidate, cut, tokens, clipped=True))
            room -= tokens + LINE
    return taken


def unfitted(candidates: Sequence[Candidate], chosen: Sequence[Item]) -> list[Item]:
    """The candidates `fit` left out, as items costing what their whole line would (none of it is shown).

    `fit` keeps the candidates' order, so the chosen items are matched to them as a subsequence."""
    left: list[Item] = []
    taken = iter(chosen)
    pending = next(taken, None)
    for c in candidates:
        if pending is not None and (pending.kind, pending.id, pending.reason) == (c.kind, c.id, c.reason):
            pending = next(taken, None)
        else:
            left.append(_item(c, c.text, estimate_tokens(c.text), clipped=False))
    return left


def _cut(text: str, tail: str, tokens: int) -> str | None:
    """`text` within `tokens`, its `tail` kept: the text before the tail cut first (to no less than a few words)."""
    if not tail or not text.endswith(tail):
        return clip(text, tokens)
    head = clip(text[: -len(tail)], max(MIN_CLIPPED, tokens - estimate_tokens(tail)))
    if head is None:
        return clip(text, tokens)
    # An estimate of two texts joined is at most the two estimates summed: the joined text fits.
    mark = clip(tail, tokens - estimate_tokens(head))
    return head + mark if mark is not None else clip(text, tokens)


def spent(heading: str, items: Sequence[Item]) -> int:
    """Tokens a tier costs the block: its heading and its items (nothing when it holds none)."""
    if not items:
        return 0
    return estimate_tokens(heading) + LINE + sum(item.tokens + LINE for item in items)


def _item(candidate: Candidate, text: str, tokens: int, *, clipped: bool) -> Item:
    return Item(candidate.tier, candidate.kind, candidate.id, text, candidate.score, candidate.reason, tokens, clipped)
