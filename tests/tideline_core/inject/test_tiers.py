"""Each tier's selection rule on constructed records: what it picks, in what order, and the reason it gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tideline_core.domain.records import (
    ContextTurnRecord,
    NarrativeRecord,
    ProfileRecord,
    SelfConceptRecord,
    SnapshotRecord,
    ThreadRecord,
)
from tideline_core.dream.recluster.store import TopicSummary
from tideline_core.inject.tiers import InjectRules, bridge, bridge_session, identity, memory_map, prefetch_pool, recall
from tideline_core.search.hits import SearchHit
from tideline_core.text.cost import MARK

NOW = datetime(2024, 5, 20, 18, 0, tzinfo=UTC)
SINCE = datetime(2024, 5, 13, tzinfo=UTC)
RULES = InjectRules()


def concept(id: int, kind: str, key: str = "main", content: str = "") -> SelfConceptRecord:
    return SelfConceptRecord(id, kind, key, content or f"{kind} {id}", 1, NOW)


def thread(id: int, priority: int, status: str = "open", updated_hours_ago: int = 1) -> ThreadRecord:
    updated = NOW - timedelta(hours=updated_hours_ago)
    return ThreadRecord(id, f"thread {id}", "", status, priority, "agent", NOW - timedelta(days=3), updated)


def narrative(
    id: int, weight: float = 0.8, *, at: datetime = NOW - timedelta(days=1), tags: tuple[str, ...] = ()
) -> NarrativeRecord:
    return NarrativeRecord(
        id=id,
        agent_id="aria",
        narrative_type="event",
        gesture=f"gesture {id}",
        context="",
        moment=f"moment {id}",
        cognition_direction="",
        importance=3,
        emotional=3,
        recurrence=1,
        unresolved=0,
        weight=weight,
        tags=tags,
        entities_role="",
        related_entities=(),
        source_links=(),
        occurred_at=at,
        created_at=at,
        embedding_state="done",
    )


def turn(id: int, session: str, minute: int, content: str = "", speaker: str = "Ana") -> ContextTurnRecord:
    at = NOW.replace(hour=9) + timedelta(minutes=minute)
    return ContextTurnRecord(id, "aria", session, "user", speaker, content or f"line {id}", {}, at, "done")


def profile(id: int, entity: str, kind: str, *, pinned: bool = False, content: str = "") -> ProfileRecord:
    return ProfileRecord(id, entity, kind, content or f"{entity} {kind} notes", pinned, 1, NOW)


def topic(label: str, size: int) -> TopicSummary:
    return TopicSummary(label, label, size, ())


def hit(kind: str, id: int, score: float = 0.5, evidence: tuple[str, ...] = ("kw",), **signals: float) -> SearchHit:
    return SearchHit(
        kind, id, score, f"text {id}", NOW - timedelta(days=1), "s1", "Ana", signals=signals, evidence=evidence
    )


def test_identity_puts_the_soul_first_then_facts_snapshot_open_threads_terrain_and_reflections() -> None:
    candidates = identity(
        "  I am Aria.  ",
        [concept(1, "reflection"), concept(2, "terrain"), concept(3, "fact"), concept(4, "fact", "name")],
        SnapshotRecord(9, "tired but hopeful", "calm", NOW),
        [thread(20, 2), thread(21, 5)],
        RULES,
    )
    assert [(c.kind, c.id) for c in candidates] == [
        ("soul", None),
        ("self_concept", 3),
        ("self_concept", 4),
        ("snapshot", 9),
        ("thread", 21),
        ("thread", 20),
        ("self_concept", 2),
        ("self_concept", 1),
    ]
    assert candidates[0].text == "I am Aria." and all(c.tier == "T0" for c in candidates)


def test_identity_gives_each_candidate_the_reason_it_was_chosen() -> None:
    candidates = identity(
        "I am Aria.",
        [concept(3, "fact", "name")],
        SnapshotRecord(9, "tired", "", NOW),
        [thread(21, 5, "exploring")],
        RULES,
    )
    assert [c.reason for c in candidates] == [
        "SOUL file",
        "self-concept fact/name",
        "latest snapshot",
        "exploring thread",
    ]
    assert candidates[2].text == "last state (2024-05-20): tired"


def test_a_blank_soul_file_is_left_out_of_identity() -> None:
    assert identity("  \n ", [concept(1, "fact")], None, [], RULES)[0].kind == "self_concept"
    assert identity(None, [], None, [], RULES) == []


def test_only_the_thread_limit_of_open_threads_are_shown_highest_priority_first() -> None:
    threads = [thread(1, 1), thread(2, 5), thread(3, 3), thread(4, 4)]
    candidates = identity(None, [], None, threads, InjectRules(thread_limit=3))
    assert [c.id for c in candidates] == [2, 4, 3]
    assert candidates[0].text == "open thread (priority 5): thread 2"


def test_of_two_threads_of_one_priority_the_more_recently_updated_comes_first() -> None:
    candidates = identity(None, [], None, [thread(1, 3, updated_hours_ago=5), thread(2, 3, updated_hours_ago=1)], RULES)
    assert [c.id for c in candidates] == [2, 1]


def test_closed_threads_stay_out_of_identity_and_exploring_ones_count_as_open() -> None:
    threads = [thread(1, 5, "closed"), thread(2, 5, "done"), thread(3, 1, "exploring"), thread(4, 2)]
    assert [c.id for c in identity(None, [], None, threads, RULES)] == [4, 3]


def test_a_memory_at_or_below_the_weight_threshold_stays_out_of_the_prefetch_pool() -> None:
    pool = prefetch_pool([narrative(1, 0.6), narrative(2, 0.59), narrative(3, 0.61)], SINCE, RULES)
    assert [c.id for c in pool] == [3]


def test_a_memory_from_before_the_window_stays_out_of_the_prefetch_pool_and_one_at_its_start_is_in() -> None:
    given = [narrative(1, 0.9, at=SINCE - timedelta(seconds=1)), narrative(2, 0.7, at=SINCE)]
    assert [c.id for c in prefetch_pool(given, SINCE, RULES)] == [2]


def test_the_prefetch_pool_keeps_the_heaviest_first_up_to_t2_keep() -> None:
    given = [narrative(1, 0.7), narrative(2, 0.95), narrative(3, 0.8), narrative(4, 0.9)]
    assert [c.id for c in prefetch_pool(given, SINCE, RULES)] == [2, 4, 3]
    assert [c.id for c in prefetch_pool(given, SINCE, InjectRules(t2_keep=1))] == [2]


def test_a_memory_sharing_a_tag_with_a_heavier_kept_one_is_skipped_for_the_next() -> None:
    given = [
        narrative(1, 0.95, tags=("travel",)),
        narrative(2, 0.9, tags=("food", "travel")),
        narrative(3, 0.85, tags=("food",)),
        narrative(4, 0.8, tags=("work",)),
    ]
    assert [c.id for c in prefetch_pool(given, SINCE, RULES)] == [1, 3, 4]


def test_the_tag_rule_applies_within_the_t2_pool_heaviest_only() -> None:
    given = [narrative(1, 0.95, tags=("a",)), narrative(2, 0.9, tags=("a",)), narrative(3, 0.8, tags=("b",))]
    assert [c.id for c in prefetch_pool(given, SINCE, InjectRules(t2_pool=2))] == [1]


def test_a_prefetched_memory_says_its_weight_and_day_and_reads_as_one_line() -> None:
    (chosen,) = prefetch_pool([narrative(5, 0.875, at=datetime(2024, 5, 18, 7, tzinfo=UTC))], SINCE, RULES)
    assert (chosen.tier, chosen.kind, chosen.score) == ("T2", "narrative", 0.875)
    assert chosen.reason == "weight 0.88, happened 2024-05-18"
    assert chosen.text == "2024-05-18 gesture 5 — moment 5"


def test_the_bridge_session_is_the_one_whose_linked_memories_weigh_most_even_if_spoken_earlier() -> None:
    turns = [turn(1, "morning", 0), turn(2, "evening", 300)]
    assert bridge_session(turns, {"morning": 1.4, "evening": 0.7}) == "morning"


def test_of_sessions_whose_memories_weigh_the_same_the_bridge_takes_the_one_spoken_in_last() -> None:
    turns = [turn(1, "a", 0), turn(2, "b", 10), turn(3, "a", 20), turn(4, "c", 15)]
    assert bridge_session(turns, {}) == "a"
    assert bridge_session(turns, {"b": 0.5, "c": 0.5}) == "c"


def test_a_day_without_turns_has_no_bridge() -> None:
    assert bridge_session([], {}) is None
    assert bridge([], {}, RULES) == (None, [])


def test_the_bridge_takes_the_latest_turns_of_its_session_in_spoken_order() -> None:
    turns = [turn(id, "s1", minute=id) for id in (8, 3, 1, 7, 5, 2, 6, 4)] + [turn(99, "other", 0)]
    session, candidates = bridge(turns, {"s1": 1.0}, InjectRules(t2b_turns=3))
    assert session == "s1"
    assert [c.id for c in candidates] == [6, 7, 8]
    assert [c.text for c in candidates] == ["Ana: line 6", "Ana: line 7", "Ana: line 8"]


def test_a_long_turn_in_the_bridge_is_cut_to_the_character_limit_with_the_mark() -> None:
    long = "We talked about the move to Lisbon and " * 10
    turns = [turn(1, "s1", 0, long), turn(2, "s1", 1, "Sounds good.", speaker="")]
    _, (cut, short) = bridge(turns, {}, InjectRules(t2b_chars=50))
    said = cut.text.removeprefix("Ana: ")
    assert said.endswith(MARK) and len(said) <= 50 + len(MARK)
    assert long.startswith(said.removesuffix(MARK))
    assert short.text == "user: Sounds good."


def test_the_bridge_says_which_session_and_day_and_why() -> None:
    turns = [turn(1, "s1", 0), turn(2, "s2", 5)]
    assert bridge(turns, {"s1": 1.5}, RULES)[1][0].reason == "session s1 of 2024-05-20, linked memories weigh 1.50"
    assert bridge(turns, {}, RULES)[1][0].reason == "session s2 of 2024-05-20, spoken in last"


def test_the_memory_map_shows_pinned_and_own_profiles_in_full_then_topics_then_others_one_line_each() -> None:
    profiles = [
        profile(1, "bob", "work", content="Engineer at Acme.\nLikes trains."),
        profile(2, "aria", "self", content="Curious; talks a lot."),
        profile(3, "carol", "family", pinned=True, content="Sister. Lives in Porto."),
        profile(4, "bob", "family", content="Two kids.\nMarried."),
    ]
    candidates = memory_map([topic("travel", 9), topic("cooking", 4)], profiles, "aria", RULES)
    assert [c.text for c in candidates] == [
        "aria (self): Curious; talks a lot.",
        "carol (family): Sister. Lives in Porto.",
        "topic travel (9 memories)",
        "topic cooking (4 memories)",
        "bob — known: family, work; Two kids.",
    ]
    assert [c.reason for c in candidates] == [
        "own profile",
        "pinned profile",
        "recurring topic",
        "recurring topic",
        "profile summary",
    ]
    assert [(c.kind, c.id) for c in candidates] == [
        ("profile", 2),
        ("profile", 3),
        ("topic", None),
        ("topic", None),
        ("profile", 4),
    ]


def test_the_memory_map_shows_the_largest_topics_up_to_t3_topics() -> None:
    topics = [topic("work", 4), topic("travel", 9), topic("music", 2), topic("cooking", 7)]
    candidates = memory_map(topics, [], "aria", InjectRules(t3_topics=2))
    assert [c.text for c in candidates] == ["topic travel (9 memories)", "topic cooking (7 memories)"]
    assert [c.score for c in candidates] == [9.0, 7.0]


def test_recall_keeps_the_search_ranking_and_leaves_out_what_the_session_was_already_shown() -> None:
    hits = [hit("narrative", 1, 0.9), hit("context", 2, 0.8), hit("narrative", 2, 0.85), hit("context", 1, 0.7)]
    candidates = recall(hits, {("narrative", 1), ("turn", 2)}, "T1", RULES)
    assert [(c.kind, c.id) for c in candidates] == [("narrative", 2), ("turn", 1)]
    assert [c.score for c in candidates] == [0.85, 0.7]


def test_recall_stops_at_the_t1_limit() -> None:
    hits = [hit("narrative", id) for id in range(1, 9)]
    assert [c.id for c in recall(hits, set(), "T1", InjectRules(t1_limit=3))] == [1, 2, 3]


def test_recall_serves_the_keyword_fallback_under_its_own_tier() -> None:
    assert [c.tier for c in recall([hit("context", 1), hit("narrative", 1)], (), "T4", RULES)] == ["T4", "T4"]


def test_a_recalled_line_says_where_and_when_it_comes_from() -> None:
    turn_line, memory_line = (c.text for c in recall([hit("context", 4), hit("narrative", 5)], (), "T1", RULES))
    assert turn_line == "[s1 2024-05-19 Ana] text 4"
    assert memory_line == "[memory 2024-05-19] text 5"


def test_the_reason_for_a_recalled_hit_names_its_three_strongest_signals_strongest_first() -> None:
    strong = hit("narrative", 1, kw=0.22, dense=0.41, time=0.0, ctx=0.05, speaker=0.1)
    (chosen,) = recall([strong], (), "T1", RULES)
    assert chosen.reason == "dense 0.41 + kw 0.22 + speaker 0.10"


def test_a_hit_with_evidence_but_no_positive_contribution_is_recalled_for_its_evidence() -> None:
    (chosen,) = recall([hit("narrative", 1, evidence=("speaker", "time"), time=0.0)], (), "T1", RULES)
    assert chosen.reason == "speaker + time"


def test_a_hit_there_by_rank_alone_is_not_recalled_in_either_per_turn_tier() -> None:
    hits = [hit("narrative", 1, 0.9, evidence=()), hit("context", 2, 0.1, evidence=("dense",))]
    assert [(c.kind, c.id) for c in recall(hits, (), "T1", RULES)] == [("turn", 2)]
    assert recall([hit("context", 3, 0.8, evidence=())], (), "T4", RULES) == []


def test_a_prefetch_pool_set_to_keep_nothing_keeps_nothing() -> None:
    pool = [narrative(1, 0.9, tags=("a",)), narrative(2, 0.8, tags=("b",))]
    assert prefetch_pool(pool, SINCE, InjectRules(t2_keep=0)) == []


def test_a_bridge_set_to_show_no_turns_shows_none() -> None:
    assert bridge([turn(n, "s1", n) for n in range(1, 9)], {}, InjectRules(t2b_turns=0))[1] == []


def test_a_session_with_fewer_turns_than_the_bridge_holds_is_shown_whole() -> None:
    assert [c.id for c in bridge([turn(n, "s1", n) for n in (1, 2, 3)], {}, InjectRules(t2b_turns=6))[1]] == [1, 2, 3]


def test_the_memory_map_lists_no_speaker_pronoun_or_contraction_as_another_entity() -> None:
    profiles = [profile(i, entity, "fact") for i, entity in enumerate(["user", "me", "我", "I'll", "Bob", "Dana"], 1)]
    candidates = memory_map([], profiles, "aria", RULES, own={"bob"})
    assert [c.text.split(" — ")[0] for c in candidates] == ["Dana"]
