"""Every page of the console over a small store in two languages: what a person reads, and each change a form makes."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from console_helpers import AGENT, csrf_of
from dream_helpers import dump, record_day
from service_helpers import FakeQueue
from starlette.testclient import TestClient

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.service import Service

Make = Callable[..., tuple[Service, TestClient]]
PAGES = ["/memories", "/conversations", "/dream", "/review", "/inject", "/map", "/pipeline"]


def seeded(service: Service) -> dict[str, int]:
    turns = service.record_turns(
        AGENT,
        [
            ContextTurnIn(role="user", content="我周四晚上去游泳，教练叫小林", session_id="swim"),
            ContextTurnIn(role="assistant", content="记住了：周四游泳，教练小林。", session_id="swim"),
            ContextTurnIn(role="user", content="The dentist moved my appointment to Friday", session_id="teeth"),
        ],
    ).ids
    swim = service.write_narrative(
        AGENT,
        NarrativeIn(
            gesture="周四晚上去游泳，教练叫小林", tags=["游泳"], related_entities=["小林"], source_links=[turns[0]]
        ),
    ).id
    dentist = service.write_narrative(
        AGENT, NarrativeIn(gesture="Dentist appointment moved to Friday", tags=["health"], source_links=[turns[2]])
    ).id
    return {"swim": swim, "dentist": dentist, "swim_turn": turns[0]}


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_for_an_empty_store_and_says_what_fills_it(
    console: tuple[Service, TestClient], path: str
) -> None:
    _, client = console
    shown = client.get(path)
    assert shown.status_code == 200, shown.text
    assert "<main" in shown.text and "Refused" not in shown.text


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_over_a_bilingual_store(console: tuple[Service, TestClient], path: str) -> None:
    service, client = console
    seeded(service)
    shown = client.get(path)
    assert shown.status_code == 200, shown.text
    assert "Refused" not in shown.text


def test_the_listing_filters_and_search_says_why_each_memory_was_found(console: tuple[Service, TestClient]) -> None:
    service, client = console
    ids = seeded(service)
    listing = client.get("/memories", params={"tag": "游泳"}).text
    assert f"/memories/{ids['swim']}?" in listing and f"/memories/{ids['dentist']}?" not in listing
    found = client.get("/memories", params={"q": "dentist", "mode": "keyword"}).text
    assert f"/memories/{ids['dentist']}?" in found and "found by" in found
    assert client.get("/memories", params={"origin": "robot"}).status_code == 400


@pytest.mark.parametrize("searched", [False, True])
def test_a_search_says_whether_it_leaves_the_dreams_extracts_out(console_for: Make, searched: bool) -> None:
    _, client = console_for(dream_extracts_in_search=searched)
    found = client.get("/memories", params={"q": "dentist", "mode": "keyword"}).text
    assert ('id="extracts-note"' in found) is not searched


def test_a_memory_shows_its_source_turn_and_the_link_leads_to_it_in_its_conversation(
    console: tuple[Service, TestClient],
) -> None:
    service, client = console
    ids = seeded(service)
    page = client.get(f"/memories/{ids['swim']}").text
    link = re.search(r'href="(/conversations/swim\?[^"]+)"', page)
    assert link and "linked when written" in page
    conversation = client.get(link.group(1).replace("&amp;", "&")).text
    assert f'id="turn-{ids["swim_turn"]}"' in conversation and f"/memories/{ids['swim']}?" in conversation
    assert "记住了" in conversation


def test_editing_through_the_form_keeps_a_new_version_and_undo_in_the_dream_record_restores_it(
    console: tuple[Service, TestClient],
) -> None:
    service, client = console
    ids = seeded(service)
    before = dump(service.db)
    page = client.get(f"/memories/{ids['dentist']}").text
    form = {"csrf": csrf_of(page), "agent": AGENT, "gesture": "Dentist appointment moved to Monday", "importance": "5"}
    edited = client.post(f"/memories/{ids['dentist']}/edit", data={**form, "tags": "health"})
    assert edited.status_code == 303
    new_page = client.get(edited.headers["location"]).text
    assert "Dentist appointment moved to Monday" in new_page and f"#{ids['dentist']}" in new_page
    (run,) = service.dream_log(AGENT)
    assert (run.stage, run.trigger) == ("edit", "person")
    dream = client.get(f"/dream/{run.id}").text
    assert "moved to Monday" in dream
    undone = client.post(f"/dream/{run.id}/undo", data={"csrf": csrf_of(dream), "agent": AGENT})
    assert undone.status_code == 303
    assert dump(service.db) == before


def test_a_bad_edit_is_refused_naming_the_field_and_stores_nothing(console: tuple[Service, TestClient]) -> None:
    service, client = console
    ids = seeded(service)
    before = dump(service.db)
    token = csrf_of(client.get(f"/memories/{ids['dentist']}").text)
    refused = client.post(f"/memories/{ids['dentist']}/edit", data={"csrf": token, "agent": AGENT, "importance": "9"})
    assert refused.status_code == 400 and "importance" in refused.text
    unchanged = client.post(f"/memories/{ids['dentist']}/edit", data={"csrf": token, "agent": AGENT})
    assert unchanged.status_code == 400 and "change nothing" in unchanged.text
    assert dump(service.db) == before


def test_supersede_and_restore_through_the_forms(console: tuple[Service, TestClient]) -> None:
    service, client = console
    ids = seeded(service)
    token = csrf_of(client.get(f"/memories/{ids['swim']}").text)
    done = client.post(f"/memories/{ids['swim']}/supersede", data={"csrf": token, "agent": AGENT, "by": ids["dentist"]})
    assert done.status_code == 303
    page = client.get(f"/memories/{ids['swim']}").text
    assert "Superseded by" in page and "Restore this version" in page
    assert client.post(f"/memories/{ids['swim']}/restore", data={"csrf": token, "agent": AGENT}).status_code == 303
    assert service.memories_by_id(AGENT, [ids["swim"]])[ids["swim"]].superseded_by is None


def test_the_review_inbox_approves_one_proposal_and_rejects_another(console_for: Make) -> None:
    service, client = console_for(dream_review="all")
    record_day(service, AGENT)
    proposed = service.run_stage("solidify", AGENT, trigger="manual", task_id="t-1")
    assert proposed.get("proposed")
    inbox = client.get("/review").text
    assert f"/review/{proposed['run_id']}/approve" in inbox
    before = dump(service.db)
    rejected = client.post(f"/review/{proposed['run_id']}/reject", data={"csrf": csrf_of(inbox), "agent": AGENT})
    assert rejected.status_code == 303
    assert service.dream_review(AGENT) == []
    assert dump(service.db)["narratives"] == before["narratives"], "a rejected proposal writes no memory"

    service.record_turns(AGENT, [ContextTurnIn(role="user", content="另一天：明天去爬山", session_id="hike")])
    second = service.run_stage("solidify", AGENT, trigger="manual", task_id="t-2")
    assert second.get("proposed")
    inbox = client.get("/review").text
    approved = client.post(f"/review/{second['run_id']}/approve", data={"csrf": csrf_of(inbox), "agent": AGENT})
    assert approved.status_code == 303
    assert service.dream_run(AGENT, second["run_id"]).run.status == "done"
    again = client.post(f"/review/{second['run_id']}/approve", data={"csrf": csrf_of(inbox), "agent": AGENT})
    assert again.status_code == 409 and "was approved" in again.text


def test_the_injection_preview_shows_the_block_and_what_the_budget_left_out_and_logs_nothing(
    console: tuple[Service, TestClient], queue: FakeQueue
) -> None:
    service, client = console
    seeded(service)
    for i in range(30):
        service.write_narrative(
            AGENT, NarrativeIn(gesture=f"游泳 training note number {i} " + "detail " * 40, tags=["游泳"])
        )
    shown = client.get("/inject", params={"query": "游泳", "budget": "300"})
    assert shown.status_code == 200
    per_turn = shown.text.split("The session-start block")[0]
    left_out = re.search(r"Left out for the budget \((\d+)\)", per_turn)
    assert left_out and int(left_out.group(1)) > 0
    assert queue.attention == [], "a person's preview is not the agent attending"
    again = client.get("/inject", params={"query": "游泳", "budget": "300"}).text
    assert again.count("training note") == shown.text.count("training note"), "a preview remembers nothing as sent"
