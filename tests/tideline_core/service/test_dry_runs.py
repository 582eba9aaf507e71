"""A dry run of every dream stage, with and without an LLM, writes nothing anywhere: every table is as it was."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from dream_helpers import CHINESE, ENGLISH, checksums, plausible_answer, record_day
from llm_server import ScriptedLLM
from service_helpers import FakeQueue
from words_embedder import WordsEmbedder

from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn
from tideline_core.dream import STAGES
from tideline_core.llm import HttpChatLLM
from tideline_core.service import Service
from tideline_core.settings import Settings
from tideline_core.text.dates import utcnow

AGENT = "alice"
LLM_STAGES = ("solidify", "comb", "drift", "symbolic")
CASES = [pytest.param(stage.name, False, id=f"{stage.name}-no-llm") for stage in STAGES]
CASES += [pytest.param(name, True, id=f"{name}-llm") for name in LLM_STAGES]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.default(plausible_answer)
        yield server


def lived_in(tmp_path: Path, store_url: str, llm: ScriptedLLM | None) -> Service:
    """A store as a day leaves it: conversation not yet solidified, memories with names and vectors, clusters and a
    graph built before the newest memories (so a rebuild now would change them), one memory that a turn explains."""
    settings = Settings(home=tmp_path, embedder="none", database_url=store_url)
    client = None if llm is None else HttpChatLLM(llm.url, "scripted", backoff_base=0.001, backoff_cap=0.01)
    queue = FakeQueue()
    service = compose(settings, jobs=queue, embedder=WordsEmbedder(), llm=client)
    queue.service = service
    start = utcnow() - timedelta(hours=2)
    record_day(service, AGENT, start=start)
    for i, (gesture, people) in enumerate(
        [
            ("Atlas launch moved to March after the payment audit", "Alice: decides; Bob: audits"),
            ("Bob sends the payment audit report by the end of February", "Bob: reports; Alice: waits"),
            ("Wang Xiaoming speaks on payment risk at the Beijing forum", "王小明: speaks"),
        ]
    ):
        service.write_narrative(
            AGENT,
            NarrativeIn(
                gesture=gesture,
                entities_role=people,
                tags=["payment", "audit"],
                importance=4,
                occurred_at=(start + timedelta(minutes=3 + i)).isoformat(),
            ),
        )
    service.embed_pending(AGENT, batch_size=64, max_batches=10)
    for stage in ("recluster", "graph"):
        service.run_stage(stage, AGENT, trigger="manual", task_id=f"built-{stage}")
    # Written after the rebuilds; the first is word for word a turn of the day, at its time, with no link.
    for offset, gesture in ((2, ENGLISH[2][2]), (35, CHINESE[2][2])):
        service.write_narrative(
            AGENT,
            NarrativeIn(
                gesture=gesture,
                entities_role="Carol: joins the audit",
                tags=["payment", "plan"],
                occurred_at=(start + timedelta(minutes=offset)).isoformat(),
            ),
        )
    service.embed_pending(AGENT, batch_size=64, max_batches=10)
    return service


@pytest.mark.parametrize(("stage", "with_llm"), CASES)
def test_a_dry_run_of_the_stage_writes_nothing_to_any_table_yet_says_what_it_would_change(
    tmp_path: Path, store_url: str, llm: ScriptedLLM, stage: str, with_llm: bool
) -> None:
    service = lived_in(tmp_path, store_url, llm if with_llm else None)
    try:
        before = checksums(service.db)
        dry = service.run_stage(stage, AGENT, trigger="manual", task_id="dry", dry_run=True)
        after = checksums(service.db)
        assert [name for name in before if after.get(name) != before[name]] == []
        assert after.keys() == before.keys()
        assert dry["dry_run"] and dry["run_id"] is None
        if stage in LLM_STAGES and not with_llm and stage != "solidify":
            assert "no LLM configured" in dry["skipped"]
        elif stage != "scan":
            assert dry["changes_total"] > 0, dry  # there was something to change, and none of it was written
    finally:
        service.close()
