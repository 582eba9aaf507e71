"""The product search recipe end to end on a real store: context views, speaker, neighbours, dialogues.

A deterministic bag-of-words embedder stands in for e5 so each case is exact and fast; what is
tested is how the service combines the views, not the model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select, update

from tests import words_embedder
from tideline_core.domain.inputs import AmendmentIn, ContextTurnIn, ConversationLine, NarrativeIn, SearchIn, parse
from tideline_core.ingest import embed_pending
from tideline_core.search import memory_source, vector_index
from tideline_core.search.hybrid import GAMMA, HybridSearch
from tideline_core.store.database import Database
from tideline_core.store.narratives import amend, insert_narrative
from tideline_core.store.schema import Embedding, Narrative
from tideline_core.store.turns import insert_turns

DIM = 256
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class WordsEmbedder(words_embedder.WordsEmbedder):
    """Hashed bag of analyzed words (not pgvector's size: the in-memory index); records what it was asked."""

    dim = DIM

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.query_calls: list[list[str]] = []

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().passages(texts)

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        self.query_calls.append(list(texts))
        return np.stack([self._one(t) for t in texts])


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    database = Database.open(store_url)
    yield database
    database.close()


def record(
    db: Database, agent: str, session: str, lines: Sequence[tuple[str, str]], start: datetime = START
) -> list[int]:
    turns = [
        ContextTurnIn(
            role="user", speaker=who, content=text, session_id=session, created_at=start + timedelta(minutes=i)
        )
        for i, (who, text) in enumerate(lines)
    ]
    with db.write() as conn:
        return insert_turns(conn, agent, turns)


def service(db: Database, embedder: WordsEmbedder) -> HybridSearch:
    embed_pending(db, embedder)
    return memory_source.searcher(db, embedder)  # type: ignore[arg-type]


def search(svc: HybridSearch, **params: Any) -> list[Any]:
    return svc.search("alice", parse(SearchIn, params)).hits


def test_each_turn_is_embedded_alone_and_with_the_two_turns_before_it(db: Database) -> None:
    embedder = WordsEmbedder()
    record(db, "alice", "s1", [("Ann", "one"), ("Bob", "two"), ("Ann", "three"), ("Bob", "four")])
    record(db, "alice", "s2", [("Ann", "elsewhere")])
    embed_pending(db, embedder)
    assert "Bob: two\nAnn: three\nBob: four" in embedder.seen  # at most two before, in conversation order
    assert "Ann: one\nBob: two" in embedder.seen and "Ann: elsewhere" in embedder.seen  # sessions do not mix
    with db.read() as conn:
        views = dict(conn.execute(select(Embedding.view, func.count()).group_by(Embedding.view)).all())
    assert views == {"base": 5, "ctx": 5}


def test_a_question_answered_only_by_the_context_of_a_turn_finds_that_turn(db: Database) -> None:
    ids = record(
        db,
        "alice",
        "trip",
        [
            ("Ann", "Where did you spend your vacation last summer?"),
            ("Bob", "We rented a little flat in Lisbon, right by the river."),
            ("Ann", "Sounds lovely."),
        ],
    )
    record(
        db,
        "alice",
        "work",
        [
            ("Ann", "The flat tyre on my bike cost me an hour."),
            ("Bob", "Lisbon traffic is worse than ours."),
            ("Ann", "The quarterly report is late."),
        ],
        start=START + timedelta(days=3),
    )
    svc = service(db, WordsEmbedder())
    hits = search(svc, query="Which city was the summer vacation in?", kinds="context", limit=3)
    answer = next(h for h in hits if h.id == ids[1])
    assert hits.index(answer) <= 1  # with the question itself, ahead of every other Lisbon or flat turn
    assert "kw" not in answer.signals and "kw_ctx" in answer.signals and "ctx" in answer.signals


def test_a_named_speaker_lifts_their_turns_unless_every_speaker_is_named(db: Database) -> None:
    ids = record(
        db,
        "alice",
        "s1",
        [("Bob", "I really love hiking in the mountains."), ("Caroline", "I really love hiking in the mountains.")],
    )
    svc = service(db, WordsEmbedder())
    named = search(svc, query="Does Caroline love hiking?", kinds="context")
    assert named[0].id == ids[1] and "speaker" in named[0].signals and "speaker" not in named[1].signals
    both = search(svc, query="Do Bob and Caroline love hiking?", kinds="context")
    assert all("speaker" not in h.signals for h in both)
    assert search(svc, query="Does Caroline love hiking?", kinds="context", mode="dense")[0].signals.keys() <= {
        "dense",
        "ctx",
        "neighbour",
    }


def test_among_turns_a_question_is_embedded_without_the_speakers_names_which_the_speaker_signal_carries(
    db: Database,
) -> None:
    ids = record(
        db,
        "alice",
        "s1",
        [("Bob", "I made a clay bowl in pottery class."), ("Caroline", "I made a clay bowl in pottery class.")],
    )
    embedder = WordsEmbedder()
    svc = service(db, embedder)
    hits = search(svc, query="What did Caroline make in pottery class?", kinds="context")
    assert embedder.query_calls[-1] == ["What did make in pottery class?"]
    assert hits[0].id == ids[1] and "speaker" in hits[0].signals  # who is still found, by the speaker signal
    search(svc, query="What did Caroline make in pottery class?", kinds="all")
    assert embedder.query_calls[-1] == ["What did Caroline make in pottery class?"]  # memories have no speakers


def test_a_strong_hit_lifts_the_turns_beside_it_in_its_session(db: Database) -> None:
    ids = record(
        db,
        "alice",
        "pets",
        [
            ("Ann", "We adopted a puppy named Rex!"),
            ("Bob", "What breed is he?"),
            ("Ann", "A golden retriever, eight weeks old."),
        ],
    )
    svc = service(db, WordsEmbedder())
    hits = {h.id: h for h in search(svc, query="puppy adopted Rex", kinds="context", mode="keyword")}
    top, beside = hits[ids[0]], hits[ids[1]]
    before_spread = sum(v for k, v in top.signals.items() if k != "neighbour")
    assert beside.signals["neighbour"] == pytest.approx(GAMMA * before_spread, abs=1e-3)
    assert beside.score == pytest.approx(sum(beside.signals.values()), abs=1e-3)
    assert ids[2] not in hits  # spreading re-ranks candidates, it does not invent them


def test_a_conversation_finds_the_memory_it_is_about_and_the_agents_own_lines_count_less(db: Database) -> None:
    memories = {}
    for gesture in (
        "Flew a kite with my daughter on the windy beach",
        "Fixed the leaking kitchen sink",
        "Finished the quarterly tax report for the accountant",
    ):
        with db.write() as conn:
            memories[gesture.split()[2]] = insert_narrative(conn, "alice", NarrativeIn(gesture=gesture)).id
    svc = service(db, WordsEmbedder())
    lines = [
        ConversationLine(speaker="Assistant", text="Did you finish the tax report for the accountant?", is_self=True),
        ConversationLine(speaker="Mia", text="My daughter keeps asking about the beach."),
        ConversationLine(speaker="Mia", text="She loves it when it is windy and we bring the kite."),
    ]
    outcome = svc.search("alice", SearchIn(conversation=lines, kinds="narratives", limit=3))
    assert outcome.hits[0].id == memories["kite"]
    assert outcome.terms and "kit" in outcome.terms  # keyword terms come from the lines
    # the same lines through the MCP-shaped input (role 'assistant' = the agent's own line)
    given = parse(
        SearchIn,
        {
            "kinds": "narratives",
            "conversation": [
                {"speaker": "Assistant", "text": lines[0].text, "role": "assistant"},
                {"speaker": "Mia", "text": lines[1].text, "role": "user"},
                {"speaker": "Mia", "text": lines[2].text},
            ],
        },
    )
    assert given.conversation[0].is_self and not given.conversation[2].is_self
    assert svc.search("alice", given).hits[0].id == memories["kite"]


def test_time_bounds_and_other_agents_filter_every_signal(db: Database) -> None:
    early = record(db, "alice", "a", [("Ann", "The garden roses are blooming.")])
    late = record(db, "alice", "b", [("Ann", "The garden roses died in the frost.")], start=START + timedelta(days=30))
    record(db, "bob", "c", [("Ann", "Bob's garden roses.")])
    svc = service(db, WordsEmbedder())
    for mode in ("keyword", "dense", "hybrid"):
        hits = search(
            svc, query="garden roses", kinds="context", mode=mode, since=(START + timedelta(days=1)).isoformat()
        )
        assert [h.id for h in hits] == late, mode
        hits = search(
            svc, query="garden roses", kinds="context", mode=mode, until=(START + timedelta(days=1)).isoformat()
        )
        assert [h.id for h in hits] == early, mode


def test_a_new_turn_is_keyword_visible_on_the_next_search_and_single_characters_fall_back_to_fts(db: Database) -> None:
    svc = service(db, WordsEmbedder())
    assert search(svc, query="lighthouse", mode="keyword") == []
    (new,) = record(db, "alice", "s", [("Ann", "我们去公园看灯塔 lighthouse")])
    assert [h.id for h in search(svc, query="lighthouse", mode="keyword")] == [new]
    assert [h.id for h in search(svc, query="园", mode="keyword")] == [new]  # not a word: FTS/LIKE fallback


def test_a_date_the_question_names_lifts_what_was_said_around_that_date(db: Database) -> None:
    june = record(
        db, "alice", "june", [("Ann", "We went camping by the lake.")], start=datetime(2023, 6, 3, tzinfo=UTC)
    )
    august = record(
        db, "alice", "august", [("Ann", "We went camping by the lake.")], start=datetime(2023, 8, 20, tzinfo=UTC)
    )
    svc = service(db, WordsEmbedder())
    on_day_outcome = svc.search(
        "alice", parse(SearchIn, {"query": "Where did Ann go camping on 3 June, 2023?", "kinds": "context"})
    )
    assert on_day_outcome.dates == ("2023-06-03",)
    on_day = on_day_outcome.hits
    assert on_day[0].id == june[0] and on_day[0].signals["time"] > 0 and "time" not in on_day[1].signals
    in_month = search(svc, query="Where did Ann go camping in August 2023?", kinds="context")
    assert in_month[0].id == august[0]
    undated = search(svc, query="Where did Ann go camping?", kinds="context")
    assert all("time" not in h.signals for h in undated)
    memory = NarrativeIn(gesture="camping by the lake", occurred_at=datetime(2021, 7, 4, tzinfo=UTC))
    with db.write() as conn:
        remembered = insert_narrative(conn, "alice", memory).id
    svc = service(db, WordsEmbedder())
    assert search(svc, query="camping by the lake in summer 2021", kinds="all")[0].id == remembered


def test_a_dialogue_is_embedded_in_one_call_and_a_repeated_query_costs_no_model_pass(db: Database) -> None:
    record(db, "alice", "s1", [("Ann", "We adopted a puppy named Rex!")])
    embedder = WordsEmbedder()
    svc = service(db, embedder)
    lines = [
        {"speaker": "Ann", "text": "guess what happened"},
        {"speaker": "Me", "text": "tell me!", "is_self": True},
        {"speaker": "Ann", "text": "we got a puppy"},
    ]
    first = svc.search("alice", parse(SearchIn, {"conversation": lines, "kinds": "context"}))
    assert len(embedder.query_calls) == 1 and len(embedder.query_calls[0]) == 2
    again = svc.search("alice", parse(SearchIn, {"conversation": lines, "kinds": "context"}))
    assert again.hits == first.hits
    assert first.embed_ms > 0 and again.embed_ms == 0  # the outcome says what the model pass cost
    search(svc, query="puppy named Rex", kinds="context")
    search(svc, query="puppy named Rex", kinds="context")
    assert embedder.query_calls[1:] == [["puppy named Rex"]]


def test_the_indexes_reload_only_when_something_was_written_and_then_see_it_at_once(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(db, "alice", "s1", [("Ann", "We adopted a puppy named Rex!")])
    embedder = WordsEmbedder()
    svc = service(db, embedder)
    loads: list[str] = []
    real_load = vector_index.vectors_after
    monkeypatch.setattr(vector_index, "vectors_after", lambda *a, **k: loads.append(a[2]) or real_load(*a, **k))
    search(svc, query="puppy", kinds="context")
    first = len(loads)
    search(svc, query="puppy Rex", kinds="context")
    assert len(loads) == first  # nothing written in between: no reload
    later = record(db, "alice", "s2", [("Bob", "Our kitten Miso sleeps all day")])
    assert [h.id for h in search(svc, query="kitten Miso", kinds="context", mode="keyword")] == later
    embed_pending(db, embedder)
    assert [h.id for h in search(svc, query="kitten Miso", kinds="context", mode="dense")][:1] == later
    assert len(loads) > first


def test_a_large_store_ranks_the_same_with_its_dense_half_beside_the_keyword_half(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(db, "alice", "s1", [("Ann", f"We walked the dog past the {w} by the river") for w in ("mill", "bridge")])
    record(db, "alice", "s2", [("Bob", "The river flooded the mill road"), ("Ann", "Dogs love the bridge")])
    with db.write() as conn:
        insert_narrative(conn, "alice", NarrativeIn(gesture="A long walk with the dog along the river"))
    svc = service(db, WordsEmbedder())
    questions = [
        {"query": "dog walk by the river"},
        {"query": "mill", "kinds": "context"},
        {"conversation": [{"speaker": "Ann", "text": "the bridge over the river"}]},
    ]
    one_after_the_other = [svc.search("alice", parse(SearchIn, q)) for q in questions]
    monkeypatch.setattr(memory_source, "OVERLAP_ROWS", 0)  # every store counts as large
    side_by_side = [svc.search("alice", parse(SearchIn, q)) for q in questions]
    for sequential, overlapped in zip(one_after_the_other, side_by_side, strict=True):
        assert overlapped.mode == sequential.mode == "hybrid"
        assert [(h.kind, h.id, h.score, h.signals) for h in overlapped.hits] == [
            (h.kind, h.id, h.score, h.signals) for h in sequential.hits
        ]

    def fails(texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        raise RuntimeError("the model crashed")

    monkeypatch.setattr(svc.embedder, "queries", fails)
    svc.forget_queries()
    with pytest.raises(RuntimeError, match="the model crashed"):
        svc.search("alice", parse(SearchIn, {"query": "a question nobody asked"}))


def test_a_question_that_identifies_someone_by_a_number_finds_their_name_in_another_turn_of_the_conversation(
    db: Database,
) -> None:
    relatives = ("表姐", "叔叔", "舅妈", "上司", "下属", "表弟", "婶婶", "姑姑")
    for n, who in enumerate(relatives):
        record(
            db,
            "alice",
            f"other{n}",
            [("me", f"我{who}的名字叫张{n}号。"), ("me", f"我{who}的手机号是1380000{n:04d}。")],
        )
    number, name, cousin = record(
        db,
        "alice",
        "colleague",
        [("me", "我同事的手机号是19842342126。"), ("me", "我同事的名字叫陈雪梅。"), ("me", "我表哥的名字叫王建国。")],
    )
    svc = service(db, WordsEmbedder())
    hits = search(svc, query="那个手机号是19842342126的人叫什么名字？", kinds="context", limit=3)
    assert [h.id for h in hits[:2]] == [number, name]
    assert "join" in hits[1].signals, "linked through 同事, a word the question does not use"
    assert cousin not in [h.id for h in hits[:2]]


def test_the_dreams_extracts_left_out_of_search_change_no_score_not_even_through_the_full_text_fallback(
    db: Database,
) -> None:
    record(db, "alice", "trip", [("me", "We hiked the ridge at dawn."), ("me", "The ridge was windy, the hike long.")])
    embedder = WordsEmbedder()
    embed_pending(db, embedder)
    before = [
        (h.id, h.score)
        for h in search(memory_source.searcher(db, embedder, extracts=False), query="ridge hike", limit=1)
    ]  # type: ignore[arg-type]
    with db.write() as conn:
        for day in range(45):
            said = "ridge hike, ridge hike" if day % 3 == 0 else "a swim in the lake"
            written = insert_narrative(
                conn, "alice", NarrativeIn(gesture=f"digest {day}: {said}", narrative_type="digest")
            )
            # Written by the dream (its LLM, as `dream.changes` marks the rows): an extract, not the agent's own digest.
            conn.execute(update(Narrative).where(Narrative.id == written.id).values(origin="llm"))
    embed_pending(db, embedder)
    after = [
        (h.id, h.score)
        for h in search(memory_source.searcher(db, embedder, extracts=False), query="ridge hike", limit=1)
    ]  # type: ignore[arg-type]
    assert after == before, "the memories' index holds none of the digests, so the full-text fallback must not either"


def test_an_amended_memory_waits_for_a_new_vector_that_reads_its_note_and_is_then_found_by_its_meaning(
    db: Database,
) -> None:
    embedder = WordsEmbedder()
    with db.write() as conn:
        swim = insert_narrative(conn, "alice", NarrativeIn(gesture="Swimming on Thursday evening")).id
        insert_narrative(conn, "alice", NarrativeIn(gesture="Dentist appointment next week"))
    svc = service(db, embedder)
    before = search(svc, query="coach Friday", mode="dense", kinds="narratives")
    with db.write() as conn:
        amend(conn, "alice", AmendmentIn(narrative_id=swim, note="The coach moves it to Friday"))
        state = conn.execute(select(Narrative.embedding_state).where(Narrative.id == swim)).scalar_one()
    embed_pending(db, embedder)
    after = search(svc, query="coach Friday", mode="dense", kinds="narratives")
    assert state == "pending"
    assert embedder.seen[-1].startswith("Swimming on Thursday evening\nThe coach moves it to Friday")
    assert (before[0].similarity or 0.0) == 0.0
    assert after[0].id == swim and (after[0].similarity or 0.0) > 0.5


def test_a_keyword_view_hands_over_no_more_candidates_than_the_searchers_keyword_depth(db: Database) -> None:
    with db.write() as conn:
        for i in range(6):
            insert_narrative(
                conn, "alice", parse(NarrativeIn, {"gesture": f"{'garden ' * (i + 1)}plot {i}", "occurred_at": START})
            )
    svc = service(db, WordsEmbedder())
    every = search(svc, query="garden", mode="keyword", limit=10)
    assert len(every) == 6
    svc.keyword_depth = 3
    assert [h.id for h in search(svc, query="garden", mode="keyword", limit=10)] == [h.id for h in every[:3]]
