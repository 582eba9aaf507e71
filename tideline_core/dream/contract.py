"""The stage contract: what a stage function is given (`StageContext`), what it returns (`StageOutput`), and a `Stage`.

A stage function takes a `StageContext` and an agent id, loads that agent's fresh state and runs
the stage's pure kernel; it writes nothing itself. It returns the figures recorded in `dream_runs`,
the `Plan` of what to change (applied by the runner with the run's record, or in a rolled-back
transaction for a dry run) and, optionally, a Markdown report for people. Stages that rebuild
derived tables (recluster, graph) plan the rebuild whole: such a run is recorded, but cannot be undone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tideline_core.dream.asking import StageLLM
    from tideline_core.dream.plan import Plan
    from tideline_core.embedding import Embedder
    from tideline_core.llm import ChatLLM
    from tideline_core.store.database import Database


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
    review: str = "off"  # which plans are kept as proposals instead of applied: off, llm or all (`runner.review`)


def _no_plan() -> Plan:
    # The plan's types load with the first stage that plans, not with the contract every service holds.
    from tideline_core.dream.plan import Plan

    return Plan()


@dataclass(frozen=True)
class StageOutput:
    figures: dict[str, Any]  # JSON values: recorded in dream_runs and returned to whoever started the stage
    report: str = ""  # Markdown for people, returned but not recorded
    plan: Plan = field(default_factory=_no_plan)  # what to change in memory: applied with the run's record
    skipped: str = ""  # why the stage did nothing (no LLM configured, the token budget spent)


@dataclass(frozen=True)
class Stage:
    name: str
    summary: str  # one line: the CLI's help and the trigger tool's description
    run: Callable[[StageContext, str], StageOutput]
    nightly: bool = True  # part of the nightly chain, in the order of STAGES
    details: str = ""  # more for `tideline <name> --help`
