"""The scan's inferred source links through the service, with the real embedder, on a small bilingual store.

Memories in Chinese and English written without links, some of their conversations recorded, all
in one evening (so every turn is in every memory's time window): a memory is linked to its own
conversation or to nothing, the links are the scan's plan (a dry run writes none, `dream undo`
removes them), and they are shown marked inferred with their score.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from links_helpers import AGENT, MEMORIES, inferred_links, load

from tideline_core.compose import compose
from tideline_core.domain.inputs import NarrativeIn, RecallQuery
from tideline_core.domain.records import NarrativeRecord
from tideline_core.service import NullJobQueue, Service
from tideline_core.settings import Settings


@pytest.fixture
def service(tmp_path: Path, store_url: str) -> Iterator[Service]:
    built = compose(Settings(home=tmp_path, embedder="local", database_url=store_url), jobs=NullJobQueue())
    yield built
    built.close()


def recalled(service: Service, narrative_id: int) -> NarrativeRecord:
    return next(r for r in service.recall(AGENT, RecallQuery(limit=100)) if r.id == narrative_id)


def scan(service: Service, task: str, *, dry_run: bool = False) -> dict[str, object]:
    return service.run_stage("scan", AGENT, trigger="manual", task_id=task, dry_run=dry_run)


def test_a_memory_is_linked_to_its_own_conversation_or_to_nothing(service: Service) -> None:
    turns_of, ids = load(service)
    scan(service, "scan-1")
    links = inferred_links(service)
    for text, session in MEMORIES.items():
        got = links.get(ids[text], set())
        if session is None:
            assert not got, f"{text!r} has no recorded conversation of its own, yet was linked to {got}"
        else:
            assert got <= turns_of[session], f"{text!r} was linked outside its conversation: {got}"
    # Each memory said in the language of its recorded conversation is linked to it.
    unlinked = [text for text, session in MEMORIES.items() if session and not links.get(ids[text])]
    assert not unlinked, f"{unlinked} were not linked to their own conversation"


def test_a_dry_run_of_the_scan_lists_the_links_it_would_add_and_writes_none(service: Service) -> None:
    load(service)
    dry = scan(service, "dry", dry_run=True)
    assert inferred_links(service) == {}
    listed = [c for c in dry["changes"] if c["target"] == "narrative_sources"]  # type: ignore[union-attr]
    assert listed and all("inferred source link" in c["summary"] and "score" in c["summary"] for c in listed)
    assert len(listed) == dry["links_inferred"]


def test_the_scans_links_are_its_runs_changes_and_undoing_the_run_removes_exactly_them(service: Service) -> None:
    turns_of, _ = load(service)
    explicit = service.write_narrative(
        AGENT, NarrativeIn(gesture="Atlas moves to March", source_links=sorted(turns_of["atlas"])[:1])
    )
    result = scan(service, "scan-1")
    links = inferred_links(service)
    changes = service.dream_run(AGENT, int(result["run_id"])).changes  # type: ignore[call-overload]
    assert {(c.key["narrative_id"], c.key["context_id"]) for c in changes} == {
        (n, c) for n, cs in links.items() for c in cs
    }
    # Shown marked inferred, with its score, wherever the memory is read.
    first = next(iter(links))
    record = recalled(service, first)
    assert [s.context_id for s in record.inferred_links] == sorted(links[first]) and record.source_links == ()
    assert all(s.score is not None and s.score > 0 for s in record.inferred_links)

    assert service.dream_undo(AGENT, int(result["run_id"])).restored == len(changes)  # type: ignore[call-overload]
    assert inferred_links(service) == {}
    kept = recalled(service, explicit.id)
    assert kept.source_links == tuple(sorted(turns_of["atlas"])[:1])


def test_scanning_again_adds_no_link_twice(service: Service) -> None:
    load(service)
    first = scan(service, "scan-1")
    links = inferred_links(service)
    again = scan(service, "scan-2")
    assert first["links_inferred"] and again["links_inferred"] == 0 and again["changes_total"] == 0
    assert inferred_links(service) == links
