"""The injected blocks through the service: what each tier shows from the store, the same bytes until it changes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from service_helpers import FakeQueue

from tideline_core.compose import compose
from tideline_core.domain.inputs import (
    ContextTurnIn,
    InjectIn,
    NarrativeIn,
    PrefetchIn,
    ProfileIn,
    SelfConceptIn,
    SnapshotIn,
    ThreadIn,
)
from tideline_core.embedding.local import LocalE5Embedder
from tideline_core.service import Service
from tideline_core.settings import Settings
from tideline_core.text.dates import utcnow

NOW = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
HEAVY = {"importance": 5, "emotional": 5, "unresolved": 5}
LIGHT = {"importance": 1, "emotional": 1, "unresolved": 1}


def soul_of(tmp_path: Path, agent: str) -> Path:
    return tmp_path / "agents" / agent / "SOUL.md"


def ids_of(block: object, kind: str, tier: str | None = None) -> list[int]:
    return [i.id for i in block.items if i.kind == kind and (tier is None or i.tier == tier)]  # type: ignore[attr-defined]


def test_the_soul_file_opens_the_identity_tier_and_its_absence_is_reported(service: Service, tmp_path: Path) -> None:
    service.write_self_concept("alice", SelfConceptIn(kind="fact", content="I keep the family's calendar"))
    missing = service.session_start("alice", InjectIn(), now=NOW)
    assert [i.kind for i in missing.items] == ["self_concept"]
    assert any("no SOUL file at" in note for note in missing.notes)
    assert service.status("alice").soul_found is False

    soul_of(tmp_path, "alice").parent.mkdir(parents=True)
    soul_of(tmp_path, "alice").write_text("I am Alice's assistant. I speak plainly.\n", encoding="utf-8")
    present = service.session_start("alice", InjectIn(), now=NOW)
    assert [i.kind for i in present.items] == ["soul", "self_concept"]
    assert present.items[0].text == "I am Alice's assistant. I speak plainly."
    assert present.notes == () and service.status("alice").soul_found is True
    assert present.version != missing.version


def test_the_session_start_block_is_the_same_bytes_until_something_it_shows_changes(service: Service) -> None:
    service.write_self_concept("alice", SelfConceptIn(kind="fact", content="I help Alice plan her week"))
    service.write_narrative("alice", NarrativeIn(gesture="We booked the dentist for Friday", occurred_at=NOW, **HEAVY))
    first = service.session_start("alice", InjectIn(), now=NOW)
    later_that_day = service.session_start("alice", InjectIn(session_id="s2"), now=NOW + timedelta(hours=3))
    assert first.text == later_that_day.text and first.version == later_that_day.version

    light = service.write_narrative("alice", NarrativeIn(gesture="Checked the weather", occurred_at=NOW, **LIGHT))
    assert light.weight <= 0.6
    assert service.session_start("alice", InjectIn(), now=NOW).version == first.version

    heavy = service.write_narrative("alice", NarrativeIn(gesture="Alice got the new job", occurred_at=NOW, **HEAVY))
    assert heavy.weight > 0.6
    after_heavy = service.session_start("alice", InjectIn(), now=NOW)
    assert after_heavy.version != first.version and "Alice got the new job" in after_heavy.text

    service.write_profile("alice", ProfileIn(entity="Bob", kind="fact", content="Bob is Alice's brother", pinned=True))
    after_profile = service.session_start("alice", InjectIn(), now=NOW)
    assert after_profile.version != after_heavy.version and "Bob is Alice's brother" in after_profile.text
    assert f"v{after_profile.version}" in after_profile.text.splitlines()[0]


def test_the_prefetch_pool_holds_heavy_memories_of_the_last_week_and_nothing_older_or_lighter(service: Service) -> None:
    recent = service.write_narrative(
        "alice", NarrativeIn(gesture="Alice passed her driving test", occurred_at=NOW - timedelta(days=2), **HEAVY)
    )
    old = service.write_narrative(
        "alice", NarrativeIn(gesture="Alice moved to Lyon", occurred_at=NOW - timedelta(days=30), **HEAVY)
    )
    light = service.write_narrative(
        "alice", NarrativeIn(gesture="Alice bought bread", occurred_at=NOW - timedelta(days=1), **LIGHT)
    )
    block = service.session_start("alice", InjectIn(), now=NOW)
    pool = ids_of(block, "narrative", "T2")
    assert recent.id in pool and old.id not in pool and light.id not in pool
    why = next(i.reason for i in block.items if i.id == recent.id)
    assert why.startswith(f"weight {recent.weight:.2f}")


def test_the_bridge_shows_the_latest_turns_of_the_heaviest_linked_session_of_the_last_day_with_conversation(
    service: Service,
) -> None:
    yesterday = NOW - timedelta(days=1)
    earlier = service.record_turns(
        "alice",
        [
            ContextTurnIn(role="user", content=f"older day line {n}", session_id="monday", created_at=yesterday)
            for n in range(3)
        ],
    )
    service.record_turns(
        "alice",
        [
            ContextTurnIn(
                role="user", content=f"chat line {n}", session_id="chat", created_at=NOW + timedelta(minutes=n + 30)
            )
            for n in range(3)
        ],
    )
    plan = service.record_turns(
        "alice",
        [
            ContextTurnIn(
                role="user" if n % 2 else "assistant",
                content=f"plan line {n}",
                session_id="plan",
                created_at=NOW + timedelta(minutes=n),
            )
            for n in range(10)
        ],
    )
    service.write_narrative(
        "alice", NarrativeIn(gesture="We agreed on the trip plan", source_links=[plan.ids[2]], **HEAVY)
    )
    service.write_narrative("alice", NarrativeIn(gesture="An old note", source_links=[earlier.ids[0]], **HEAVY))
    block = service.session_start("alice", InjectIn(), now=NOW + timedelta(hours=2))
    bridge = [i for i in block.items if i.tier == "T2b"]
    assert [i.id for i in bridge] == list(plan.ids[-6:]), "the latest six, in the order spoken"
    assert "session plan" in bridge[0].reason and "linked memories weigh" in bridge[0].reason
    assert "(session plan, 2026-11-30)" in block.text


def test_each_turn_recalls_what_this_session_was_not_shown_yet(service: Service) -> None:
    ids = [
        service.write_narrative("alice", NarrativeIn(gesture=f"We talked about the garden shed, part {n}")).id
        for n in range(12)
    ]
    first = service.prefetch("alice", PrefetchIn(query="garden shed", session_id="s1", budget=100))
    again = service.prefetch("alice", PrefetchIn(query="garden shed", session_id="s1", budget=100))
    other_session = service.prefetch("alice", PrefetchIn(query="garden shed", session_id="s2", budget=100))
    shown_first, shown_again = set(ids_of(first, "narrative")), set(ids_of(again, "narrative"))
    assert shown_first and shown_again and not shown_first & shown_again
    assert shown_first | shown_again <= set(ids)
    assert set(ids_of(other_session, "narrative")) == shown_first, "another session starts afresh"
    no_session = service.prefetch("alice", PrefetchIn(query="garden shed"))
    assert set(ids_of(no_session, "narrative")) == set(ids), "without a session nothing is remembered"


def test_what_the_session_start_block_showed_is_not_recalled_again_in_that_session(service: Service) -> None:
    heavy = service.write_narrative(
        "alice", NarrativeIn(gesture="Alice got the new job at the bakery", occurred_at=NOW, **HEAVY)
    )
    service.session_start("alice", InjectIn(session_id="s1"), now=NOW)
    assert heavy.id not in ids_of(
        service.prefetch("alice", PrefetchIn(query="bakery job", session_id="s1")), "narrative"
    )
    assert heavy.id in ids_of(service.prefetch("alice", PrefetchIn(query="bakery job", session_id="s2")), "narrative")


def test_recalled_memories_go_to_attention_logging_with_their_tier_and_turns_do_not(
    service: Service, queue: FakeQueue
) -> None:
    memory = service.write_narrative("alice", NarrativeIn(gesture="The violin lesson moved to Tuesday"))
    service.record_turns("alice", [ContextTurnIn(role="user", content="my violin teacher is ill")])
    block = service.prefetch("alice", PrefetchIn(query="violin"))
    assert {i.kind for i in block.items} == {"narrative", "turn"}
    assert [(agent, [n for n, _ in hits], source) for agent, hits, source in queue.attention] == [
        ("alice", [memory.id], "t1")
    ]


def test_the_per_turn_block_keeps_to_its_budget_and_says_what_each_item_costs(service: Service) -> None:
    for n in range(30):
        service.write_narrative(
            "alice", NarrativeIn(gesture=f"Notes on the harbour festival, day {n}. " + "The boats came in. " * 20)
        )
    for budget in (100, 300, 800):
        block = service.prefetch("alice", PrefetchIn(query="harbour festival", budget=budget))
        assert block.items and block.tokens <= budget and block.budget == budget
        assert all(i.tokens > 0 and i.reason for i in block.items)
        assert sum(i.tokens for i in block.items) < block.tokens
        assert any(i.clipped and i.text.endswith("…") for i in block.items), "the last one is cut, and marked"


def test_what_the_budget_left_out_is_listed_beside_the_block_and_never_in_it(service: Service) -> None:
    ids = [
        service.write_narrative("alice", NarrativeIn(gesture=f"Harbour festival notes, day {n}. " + "Boats. " * 30)).id
        for n in range(20)
    ]
    block = service.prefetch("alice", PrefetchIn(query="harbour festival", budget=200))
    shown, left = set(ids_of(block, "narrative")), {i.id for i in block.left_out if i.kind == "narrative"}
    assert shown and left and not shown & left and shown | left <= set(ids)
    assert all(i.tokens > 0 and i.reason for i in block.left_out)
    assert not any(i.id in left for i in block.items)


def test_a_preview_of_the_turns_block_logs_no_attention_and_marks_nothing_shown(
    service: Service, queue: FakeQueue
) -> None:
    for n in range(12):
        service.write_narrative("alice", NarrativeIn(gesture=f"We talked about the garden shed, part {n}"))
    previewed = service.prefetch("alice", PrefetchIn(query="garden shed", session_id="s1", budget=100), preview=True)
    real = service.prefetch("alice", PrefetchIn(query="garden shed", session_id="s1", budget=100))
    assert ids_of(previewed, "narrative") == ids_of(real, "narrative"), "the preview is what the agent then gets"
    assert [source for _, _, source in queue.attention] == ["t1"], "only the real turn counts as attention"


def test_no_tier_ever_shows_another_agents_rows(service: Service, tmp_path: Path) -> None:
    for agent in ("alice", "bob"):
        secret = f"{agent}-secret"
        soul_of(tmp_path, agent).parent.mkdir(parents=True)
        soul_of(tmp_path, agent).write_text(f"I am {secret} soul", encoding="utf-8")
        service.write_self_concept(agent, SelfConceptIn(kind="fact", content=f"{secret} fact"))
        service.write_snapshot(agent, SnapshotIn(content=f"{secret} snapshot"))
        service.write_thread(agent, ThreadIn(title=f"{secret} thread", status="open", priority=5))
        service.write_profile(agent, ProfileIn(entity=f"{secret} friend", kind="fact", content=f"{secret} profile"))
        service.write_profile(
            agent, ProfileIn(entity=f"{secret} pin", kind="fact", content=f"{secret} pinned", pinned=True)
        )
        turns = service.record_turns(
            agent,
            [ContextTurnIn(role="user", content=f"{secret} harbour turn {n}", session_id=secret) for n in range(3)],
        )
        for n in range(4):
            service.write_narrative(
                agent,
                NarrativeIn(
                    gesture=f"{secret} harbour memory {n}",
                    tags=["harbour", f"{secret}-{n}"],
                    source_links=[turns.ids[0]],
                    **HEAVY,
                ),
            )
        service.run_stage("recluster", agent, trigger="manual", task_id=f"t-{agent}")
    assert "topic" in {i.kind for i in service.session_start("bob", InjectIn()).items}, "bob's topics exist"
    start = service.session_start("alice", InjectIn())
    turn = service.prefetch("alice", PrefetchIn(query="bob-secret harbour memory turn"))
    kinds = {i.kind for i in start.items}
    assert {"soul", "self_concept", "snapshot", "thread", "narrative", "turn", "profile", "topic"} <= kinds
    assert {"T2", "T2b", "T3"} <= {i.tier for i in start.items}
    assert "bob-secret" not in start.text and "bob-secret" not in turn.text
    assert turn.items and all("alice-secret" in i.text for i in turn.items)


@pytest.fixture
def embedding_service(model_cache: Path) -> Iterator[str]:
    """An OpenAI-compatible /v1/embeddings endpoint on loopback, answering with the local model's vectors."""
    model = LocalE5Embedder(model_cache)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
            vectors = model.passages(texts)
            body = json.dumps({"data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/embeddings"
    server.shutdown()
    server.server_close()


def test_each_turns_recall_finds_by_meaning_through_a_remote_embedding_service(
    tmp_path: Path, store_url: str, queue: FakeQueue, embedding_service: str
) -> None:
    settings = Settings(
        home=tmp_path,
        embedder="http",
        embedding_url=embedding_service,
        query_embedding_timeout=300.0,
        database_url=store_url,
    )
    service = compose(settings, jobs=queue)
    queue.service = service
    try:
        wedding = service.write_narrative("alice", NarrativeIn(gesture="My sister Lena is getting married in Porto"))
        service.write_narrative("alice", NarrativeIn(gesture="The printer on the third floor jams every morning"))
        service.record_turns("alice", [ContextTurnIn(role="user", content="Lena chose a dress for the ceremony")])
        while service.embed_pending(None, batch_size=16, max_batches=1).embedded:
            pass
        block = service.prefetch("alice", PrefetchIn(query="a family celebration abroad"))
    finally:
        service.close()
    assert block.notes == () and block.items[0].id == wedding.id
    assert "dense" in block.items[0].reason
    assert [source for _agent, _hits, source in queue.attention] == ["t1"]
    ((_, similarity),) = [hit for hit in queue.attention[0][1] if hit[0] == wedding.id]
    assert similarity is not None and 0.0 < similarity < 1.0


def test_what_a_session_was_shown_a_month_ago_is_forgotten_by_the_reconcile_sweep(service: Service) -> None:
    memory = service.write_narrative("alice", NarrativeIn(gesture="We repainted the garden fence green"))
    long_ago = utcnow() - timedelta(days=31)
    shown = service.prefetch("alice", PrefetchIn(query="garden fence", session_id="s1"), now=long_ago)
    assert ids_of(shown, "narrative") == [memory.id]
    assert service.prefetch("alice", PrefetchIn(query="garden fence", session_id="s1")).items == ()
    service.reconcile(pending_before=long_ago, stale_stages_before=long_ago)
    again = service.prefetch("alice", PrefetchIn(query="garden fence", session_id="s1"))
    assert ids_of(again, "narrative") == [memory.id]


def test_the_memory_map_lists_the_people_talked_about_not_the_agent_its_user_or_a_pronoun(service: Service) -> None:
    service.record_turns(
        "alice",
        [
            ContextTurnIn(role="user", speaker="Bob", content="hi", session_id="chat", created_at=NOW),
            ContextTurnIn(role="assistant", speaker="Aria", content="hello", session_id="chat", created_at=NOW),
        ],
    )
    for entity in ("Bob", "Aria", "me", "我", "I'll", "小林"):
        service.write_profile("alice", ProfileIn(entity=entity, kind="fact", content=f"about {entity}"))

    start = service.session_start("alice", InjectIn(), now=NOW)

    listed = [i.text.split(" — ")[0] for i in start.items if i.tier == "T3" and i.kind == "profile"]
    assert listed == ["小林"]
