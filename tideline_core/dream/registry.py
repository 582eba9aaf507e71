"""The dream stages, each named once: its summary, the function it runs, and its place in the nightly chain.

Everything else is derived from `STAGES`: the one dream task that runs a stage by name, the
nightly chain (the stages marked nightly, in the order listed here), the `tideline <stage>`
commands and the `memory_trigger` tool's allowed jobs and description. Adding a stage is a folder
named as the stage (its kernel, its store reads, and `stage.py` with its function; see
`contract`) plus one entry below.
"""

from __future__ import annotations

from tideline_core.dream.contract import Stage, StageContext, StageOutput
from tideline_core.errors import InvalidInput

# Each stage imports its implementation when it runs: the table is read by processes that only list
# the stages (the CLI's parser, the trigger tool), which should not load k-means or jieba for that.


def scan(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.scan.stage import scan as run

    return run(ctx, agent_id)


def solidify(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.solidify.stage import solidify as run

    return run(ctx, agent_id)


def refresh(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.refresh.stage import refresh as run

    return run(ctx, agent_id)


def recluster(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.recluster.stage import recluster as run

    return run(ctx, agent_id)


def graph(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.graph.stage import graph as run

    return run(ctx, agent_id)


def comb(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.comb.stage import comb as run

    return run(ctx, agent_id)


def drift(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.drift.stage import drift as run

    return run(ctx, agent_id)


def symbolic(ctx: StageContext, agent_id: str) -> StageOutput:
    from tideline_core.dream.symbolic.stage import symbolic as run

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
