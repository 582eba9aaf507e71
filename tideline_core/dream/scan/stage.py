"""The scan stage over the store: source links proposed as its plan, then the four-track report (nothing written)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from tideline_core.dream.contract import StageContext, StageOutput
from tideline_core.dream.plan import AddSourceLink, Plan
from tideline_core.dream.scan import scanner
from tideline_core.dream.scan.store import infer_source_links, scan_agent


def scan(ctx: StageContext, agent_id: str) -> StageOutput:
    # The links are proposed, not written: the run applies them with its record (a dry run applies nothing).
    figures: dict[str, Any] = {}
    intents: list[AddSourceLink] = []
    if ctx.embedder is not None:
        considered, links = infer_source_links(ctx.db, agent_id, ctx.embedder.model)
        intents = [
            AddSourceLink(
                link.narrative_id,
                link.context_id,
                link.score,
                link.evidence.cosine,
                link.evidence.shared_words,
                link.evidence.speaker,
                link.evidence.runner_up,
                link.evidence.minutes_apart,
            )
            for link in links
        ]
        figures.update(links_considered=considered, links_inferred=len(intents))
    report = scan_agent(ctx.db, agent_id)
    # Track A lists only the narratives no conversation could be matched to.
    linked = {i.narrative_id for i in intents}
    report = dataclasses.replace(report, unlinked=tuple(u for u in report.unlinked if u.id not in linked))
    # The watermark is only proposed here: solidifying the chunks advances it once they are committed.
    figures.update(
        unlinked=len(report.unlinked),
        chunks=len(report.chunks),
        short_chunks=len(report.short_chunks),
        new_turns=report.new_turns,
        narratives_waiting=report.narratives_waiting.count,
        turns_waiting=report.turns_waiting.count,
        watermark=report.watermark_before,
        watermark_proposed=report.watermark,
    )
    return StageOutput(figures, scanner.to_markdown(report) + _links_markdown(intents), plan=Plan(tuple(intents)))


def _links_markdown(links: Sequence[AddSourceLink]) -> str:
    lines = [f"## Source links inferred ({len(links)})", ""]
    lines += [
        f"- #{link.narrative_id} → turn #{link.context_id}, inferred, score {link.score:.3f} ({link.describe()})"
        for link in links
    ]
    return "\n".join([*lines, ""]) if links else "\n".join([*lines, "None.", ""])
