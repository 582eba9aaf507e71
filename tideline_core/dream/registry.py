"""The dream stages, each named once: its summary, the function it runs, and its place in the nightly chain.

Everything else is derived from `STAGES`: the one dream task that runs a stage by name, the
nightly chain (the stages marked nightly, in the order listed here), the `tideline <stage>`
commands and the `memory_trigger` tool's allowed jobs and description. Adding a stage is one
entry below plus its function.

A stage function takes a `StageContext` and an agent id, loads that agent's fresh state and runs
the stage's pure kernel; it writes nothing itself. It returns the figures recorded in `dream_runs`,
the `Plan` of what to change (applied by the runner with the run's record, or in a rolled-back
transaction for a dry run) and, optionally, a Markdown report for people. Stages that rebuild
derived tables (recluster, graph) plan the rebuild whole: such a run is recorded, but cannot be undone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tideline_core.dream.plan import AddSourceLink, Plan
from tideline_core.errors import InvalidInput

if TYPE_CHECKING:
    from tideline_core.dream.asking import StageLLM
    from tideline_core.embedding import Embedder
    from tideline_core.llm import ChatLLM
    from tideline_core.store.database import Database

MAX_PROBLEMS = 20  # entity-parse problems listed in a result; the count covers all of them


@dataclass(frozen=True)
class StageContext:
    """What a stage may use: the store, the embedder (None when the deployment is keyword-only), the
    known persons ({alias or name, lower-cased: canonical name}) and the LLM (None: none configured).

    The runner fills the per-run part: the day the run is filed under, and `ask`, the LLM with this
    run's token budget (None without an LLM).
    """

    db: Database
    embedder: Embedder | None
    known_persons: Mapping[str, str] = field(default_factory=dict)
    llm: ChatLLM | None = None
    llm_run_tokens: int = 60_000
    llm_day_tokens: int = 300_000
    day: str = ""
    ask: StageLLM | None = None
    dry_run: bool = False


@dataclass(frozen=True)
class StageOutput:
    figures: dict[str, Any]  # JSON values: recorded in dream_runs and returned to whoever started the stage
    report: str = ""  # Markdown for people, returned but not recorded
    plan: Plan = field(default_factory=Plan)  # what to change in memory: applied with the run's record
    skipped: str = ""  # why the stage did nothing (no LLM configured, the token budget spent)


@dataclass(frozen=True)
class Stage:
    name: str
    summary: str  # one line: the CLI's help and the trigger tool's description
    run: Callable[[StageContext, str], StageOutput]
    nightly: bool = True  # part of the nightly chain, in the order of STAGES
    details: str = ""  # more for `tideline <name> --help`


# Each stage imports its implementation when it runs: the table is read by processes that only list
# the stages (the CLI's parser, the trigger tool), which should not load k-means or jieba for that.


def scan(ctx: StageContext, agent_id: str) -> StageOutput:
    import dataclasses

    from tideline_core.dream.scan import scanner
    from tideline_core.dream.scan.store import infer_source_links, scan_agent

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


def solidify(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.solidify.stage import solidify as run

    return run(ctx, agent_id)


def refresh(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.weights.store import refresh_plan

    narratives, plan = refresh_plan(ctx.db, agent_id)
    return StageOutput({"narratives": narratives, "changed": len(plan)}, plan=plan)


def recluster(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.clusters.store import plan_soft_clusters, plan_topics

    topics, narratives = plan_topics(ctx.db, agent_id)
    figures: dict[str, Any] = {"narratives": narratives, "topic_clusters": len(topics.clusters)}
    if ctx.embedder is None:
        figures.update(soft_clusters=0, soft_clusters_skipped="no embedder configured")
        return StageOutput(figures, plan=Plan((topics,)))
    soft, embedded = plan_soft_clusters(ctx.db, agent_id, ctx.embedder.model)
    figures.update(soft_clusters=0 if soft.clusters is None else soft.clusters.k, embedded_narratives=embedded)
    return StageOutput(figures, plan=Plan((topics, soft)))


def graph(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.entities.store import plan_entity_graph

    rebuild = plan_entity_graph(ctx.db, agent_id, ctx.known_persons)
    built = rebuild.graph
    figures = {
        "nodes": len(built.nodes),
        "edges": len(built.edges),
        "problems": len(built.problems),
        "problem_samples": [
            {"narrative_id": p.narrative_id, "fragment": p.fragment, "reason": p.reason}
            for p in built.problems[:MAX_PROBLEMS]
        ],
    }
    return StageOutput(figures, plan=Plan((rebuild,)))


def comb(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.comb import comb as run

    return run(ctx, agent_id)


def drift(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.drift import drift as run

    return run(ctx, agent_id)


def symbolic(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.symbolic import symbolic as run

    return run(ctx, agent_id)


STAGES: tuple[Stage, ...] = (
    Stage(
        "scan",
        "report conversation not yet turned into memories (unindexed-context scan, tracks A-D)",
        scan,
        details="Propose source links for narratives that have none (only where the words, speaker, time and meaning "
        "of one turn all point at it; marked inferred, with their score), then scan tracks A-D: unlinked narratives, "
        "new conversation chunks after the watermark, rows waiting for embeddings. The watermark is not moved.",
    ),
    Stage(
        "solidify",
        "turn new conversation into narrative memories and session digests (LLM, or extractive without one)",
        solidify,
        details="Take the scanner's new conversation chunks in order: with an LLM each chunk gives 0-3 narratives "
        "(prompts/solidify.md) and each touched session a digest (prompts/digest.md); without one the extractive "
        "solidifier picks them from the text. Every memory links to its turns; the scan watermark moves past the "
        "turns handled.",
    ),
    Stage(
        "refresh",
        "recompute recurrence from tags and weights (with anti-inflation)",
        refresh,
        details="Refresh every narrative's recurrence from its tags and recompute weights with anti-inflation.",
    ),
    Stage(
        "recluster",
        "rebuild topic clusters and soft clusters",
        recluster,
        details="Rebuild the agent's topic clusters (jieba keywords, document-frequency filter) and soft clusters "
        "(k-means over the narrative embeddings). The clusters are replaced whole: a run cannot be undone (run it "
        "again instead).",
    ),
    Stage(
        "graph",
        "rebuild the entity graph",
        graph,
        details="Rebuild the agent's entity graph from every narrative's entities_role and the known persons. The "
        "graph is replaced whole: a run cannot be undone (run it again instead).",
    ),
    Stage(
        "comb",
        "re-weigh the day's memories, update profiles, self-concept and threads, settle conflicts and duplicates (LLM)",
        comb,
        details="Show the LLM the day's memories, profiles, self-concept, open threads, candidate conflict and "
        "duplicate pairs and attention deserts (prompts/comb.md); apply its re-weighing, profile and self-concept "
        "updates, conflict notes, merges (the older narrative is superseded, never deleted) and thread changes. "
        "Skipped without an LLM.",
    ),
    Stage(
        "drift",
        "look for an unseen connection between a heavy memory and distant connected ones (LLM)",
        drift,
        details="Pick one heavy memory, walk to distant memories connected through soft clusters, tags and names, "
        "and ask the LLM whether they share more (prompts/drift.md); it may write an insight or open a thread. "
        "Skipped without an LLM.",
    ),
    Stage(
        "symbolic",
        "weave 3-5 symbols of the day into a short dream and a self-reflection (LLM)",
        symbolic,
        details="Ask the LLM for 3-5 symbols of the day's memories, a short dream and a reflection (prompts/dream.md); "
        "the dream is kept as a narrative of type dream, importance 1, tag dream. Skipped without an LLM.",
    ),
)


def stage_named(name: str, field: str = "job", *, also: tuple[str, ...] = ()) -> Stage:
    """The stage called `name`; anything else is an InvalidInput on the caller's `field`, naming the stages there
    are (and `also`, the other values the caller's field takes)."""
    for stage in STAGES:
        if stage.name == name:
            return stage
    raise InvalidInput(field, f"must be one of {', '.join([*also, *(s.name for s in STAGES)])}, got {name!r}")


def nightly_stages() -> tuple[Stage, ...]:
    """The stages of the nightly chain, in the order they run."""
    return tuple(stage for stage in STAGES if stage.nightly)
