"""Injected context: the session-start block (T0, T2, T2b, T3) and the per-turn block (T1, T4), with what each
session was shown remembered so its turns do not repeat it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tideline_core.domain.inputs import InjectIn, PrefetchIn, SearchIn
from tideline_core.inject import render, sources, tiers
from tideline_core.inject.budget import Candidate, Item, fit, spent, unfitted
from tideline_core.service.base import ServiceParts
from tideline_core.text.cost import estimate_tokens
from tideline_core.text.dates import utcnow

SESSION_TITLE = "Tideline memory"
TURN_TITLE = "Tideline recall"
REMEMBERED_KINDS = ("narrative", "turn")
SEARCH_KIND = {"turn": "context"}  # what search calls an item kind


@dataclass(frozen=True)
class Tier:
    name: str
    candidates: Sequence[Candidate]
    budget: int
    subtitle: str = ""


def proposals_line(waiting: int) -> str:
    """The session-start block's last line while dream proposals wait, so none piles up unseen."""
    if not waiting:
        return ""
    many = "proposals wait" if waiting > 1 else "proposal waits"
    return f"{waiting} dream {many} for review with your human (memory_dream_review)."


class InjectOps(ServiceParts):
    def session_start(self, agent_id: str, request: InjectIn, *, now: datetime | None = None) -> render.Block:
        """Who the agent is and what matters now, within the budget; the same bytes until what it shows changes."""
        from tideline_core.dream.runner import review  # once a session, where a turn's block runs on every prompt

        rules = self.inject.rules
        now = now or utcnow()
        # By whole days, so the block does not change from one call to the next within a day.
        since = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=rules.t2_days)
        with self.db.snapshot() as conn:
            src = sources.session_sources(conn, agent_id, since, rules)
            waiting = review.count_waiting(conn, agent_id)
        path, soul = self.soul(agent_id)
        session, bridge = tiers.bridge(src.day_turns, src.linked_weight, rules, src.corrections)
        bridge_day = f", {tiers.day(max(t.created_at for t in src.day_turns))}" if src.day_turns else ""
        budget = request.budget or rules.session_budget
        scale = budget / rules.session_budget
        block = self._assemble(
            SESSION_TITLE,
            [
                Tier("T0", tiers.identity(soul, src.self_concept, src.snapshot, src.threads, rules), rules.t0_budget),
                Tier("T2", tiers.prefetch_pool(src.recent, since, rules), rules.t2_budget),
                Tier("T2b", bridge, rules.t2b_budget, f"session {session or '(none)'}{bridge_day}"),
                Tier("T3", tiers.memory_map(src.topics, src.profiles, agent_id, rules, src.own), rules.t3_budget),
            ],
            budget,
            scale,
            notes=[] if soul else [f"no SOUL file at {path}: identity comes from self-concept alone"] if path else [],
            footer=proposals_line(waiting),
        )
        self._remember(agent_id, request.session_id, block.items, now)
        return block

    def prefetch(
        self, agent_id: str, request: PrefetchIn, *, now: datetime | None = None, preview: bool = False
    ) -> render.Block:
        """The memories for this turn (T1, and T4 when T1 finds too few), none this session was already shown.

        The narratives shown are handed to attention logging (source t1 / t4) with their similarity, except in a
        `preview` (a person looking at what the agent would see is not the agent attending).
        """
        rules = self.inject.rules
        shown: set[tuple[str, int]] = set()
        if request.session_id:
            with self.db.read() as conn:
                shown = sources.shown(conn, agent_id, request.session_id)
        # Built from a request already validated: validating it again would build SearchIn's validator in a
        # process that answers one prompt (the hook), for nothing.
        search = SearchIn.model_construct(query=request.query, conversation=request.conversation, limit=rules.t1_limit)
        exclude = {(SEARCH_KIND.get(kind, kind), row) for kind, row in shown}
        outcome = self.searcher.search(agent_id, search, exclude=exclude)
        t1 = tiers.recall(outcome.hits, shown, "T1", rules)
        budget = request.budget or rules.turn_budget
        scale = budget / rules.turn_budget
        notes = [outcome.degraded] if outcome.degraded else []
        plan = [Tier("T1", t1, rules.t1_budget)]
        block = self._assemble(TURN_TITLE, plan, budget, scale, notes=notes)
        if len(block.items) < rules.t4_below:
            # T1 searched by keyword alone already (no model, or none in time): asking again finds the same rows.
            keyword = outcome
            if outcome.mode != "keyword":
                keyword = self.searcher.search(agent_id, search.model_copy(update={"mode": "keyword"}), exclude=exclude)
            taken = shown | {(item.kind, item.id) for item in block.items if item.id is not None}
            plan.append(Tier("T4", tiers.recall(keyword.hits, taken, "T4", rules), rules.t4_budget))
            block = self._assemble(TURN_TITLE, plan, budget, scale, notes=notes)
        similarity = {h.id: h.similarity for h in outcome.hits if h.kind == "narrative"}
        for tier in () if preview else ("T1", "T4"):
            memories = [i.id for i in block.items if i.tier == tier and i.kind == "narrative" and i.id is not None]
            if memories:
                self.jobs.log_attention(agent_id, [(n, similarity.get(n)) for n in memories], tier.lower())
        if not preview:
            self._remember(agent_id, request.session_id, block.items, now or utcnow())
        return block

    def _assemble(
        self, title: str, plan: Sequence[Tier], budget: int, scale: float, *, notes: Sequence[str], footer: str = ""
    ) -> render.Block:
        left = budget - render.title_tokens(title) - (estimate_tokens(footer) if footer else 0)
        sections: list[str] = []
        items: list[Item] = []
        left_out: list[Item] = []
        for tier in plan:
            heading = render.HEADINGS[tier.name] + (f" ({tier.subtitle})" if tier.subtitle else "")
            chosen = fit(tier.candidates, heading=heading, tier_budget=int(tier.budget * scale), block_left=left)
            left -= spent(heading, chosen)
            sections.append(render.section(tier.name, chosen, tier.subtitle))
            items.extend(chosen)
            left_out.extend(unfitted(tier.candidates, chosen))
        return render.block(title, [*sections, footer], items, budget, notes, left_out)

    def recent_sessions(self, agent_id: str, prefix: str = "", *, limit: int = 20) -> list[str]:
        """The agent's session ids starting with `prefix`, the latest used first (turns recorded, blocks shown)."""
        with self.db.read() as conn:
            return sources.recent_sessions(conn, agent_id, prefix, limit)

    def _remember(self, agent_id: str, session_id: str, items: Sequence[Item], now: datetime) -> None:
        if not session_id:
            return
        rows = [(i.tier, i.kind, i.id) for i in items if i.kind in REMEMBERED_KINDS and i.id is not None]
        if rows:
            with self.db.write() as conn:
                sources.remember_shown(conn, agent_id, session_id, rows, now)
