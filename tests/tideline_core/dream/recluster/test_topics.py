"""Topic clusters: which words become keywords, and which keywords survive as clusters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tideline_core.dream.recluster.topics import (
    TopicCluster,
    clusters_from_keywords,
    df_bounds,
    keywords,
    topic_clusters,
)


def test_chinese_nouns_verbs_and_adjectives_are_keywords() -> None:
    found = keywords("服务器部署失败，我们拒绝逃避，问题很复杂。")
    assert {"服务器", "部署", "拒绝", "逃避", "问题", "复杂"} <= found


def test_function_words_and_single_chinese_characters_are_not_keywords() -> None:
    found = keywords("我们的猫在公园里")
    assert "公园" in found
    assert not {"我们", "的", "在", "里", "猫"} & found


def test_english_words_are_lower_cased_and_need_three_letters_and_no_stopword() -> None:
    found = keywords("The Redis broker is OK, an ox and Whale-Listen's memory")
    assert {"redis", "broker", "whale-listen", "memory"} <= found
    assert not {"the", "is", "ok", "an", "ox", "and", "whale-listen's"} & found


def test_english_keywords_are_nouns_and_names_not_judgements_adverbs_or_past_tenses() -> None:
    found = keywords("It's amazing how the festival brings people together, regardless; Lisbon worked wonderfully.")
    assert {"festival", "people", "lisbon"} <= found
    assert not {"amazing", "regardless", "together", "worked", "wonderfully", "brings"} & found


def test_an_english_word_is_one_keyword_in_whatever_form_it_comes() -> None:
    assert keywords("Work, works and working: painting and paintings.") == frozenset({"work", "painting"})


def test_the_forms_of_one_word_across_narratives_make_one_cluster() -> None:
    texts = ["We sketch paintings.", "Her painting sold.", "A painting of sea.", "Paintings in the hall."]
    clusters = topic_clusters(list(enumerate(texts, 1)))
    assert [(c.keyword, c.narrative_ids) for c in clusters if "paint" in c.keyword] == [("painting", (1, 2, 3, 4))]


def test_identifier_like_tokens_longer_than_forty_characters_are_not_topics() -> None:
    assert keywords("deadbeef" * 6 + " commit") == frozenset({"commit"})


def test_contractions_are_not_topics() -> None:
    assert keywords("isn't we'll don't") == frozenset()


def test_the_df_bounds_are_three_and_the_larger_of_four_and_a_fifth() -> None:
    assert df_bounds(10) == (3, 4.0)
    assert df_bounds(100) == (3, 20.0)
    assert df_bounds(7, min_df=2, max_share=0.5, max_floor=1) == (2, 3.5)


def docs(word_sets: dict[int, set[str]]) -> list[tuple[int, str]]:
    return [(i, " ".join(sorted(words))) for i, words in word_sets.items()]


def test_a_keyword_in_more_than_a_fifth_of_narratives_is_dropped() -> None:
    # 30 narratives: the bound is max(4, 6) = 6.
    texts = {i: {"filler" + "x" * (i % 10)} for i in range(30)}
    for i in range(7):
        texts[i].add("common")
    for i in range(6):
        texts[i].add("frequent")
    kept = {c.keyword for c in topic_clusters(docs(texts))}
    assert "frequent" in kept
    assert "common" not in kept


def test_a_keyword_in_fewer_than_three_narratives_is_dropped() -> None:
    texts = {i: {"padding"} for i in range(20)}
    for i in range(2):
        texts[i].add("rare")
    for i in range(3):
        texts[i].add("seldom")
    kept = {c.keyword for c in topic_clusters(docs(texts))}
    assert "seldom" in kept
    assert "rare" not in kept


def test_with_few_narratives_a_keyword_in_four_survives() -> None:
    texts = [(i, "garden party") for i in range(4)] + [(9, "nothing")]
    clusters = topic_clusters(texts)
    assert [(c.keyword, c.narrative_ids) for c in clusters] == [("garden", (0, 1, 2, 3)), ("party", (0, 1, 2, 3))]


def test_clusters_come_largest_first_then_by_keyword() -> None:
    sets = {i: {"beta"} | ({"alpha"} if i < 3 else set()) | ({"gamma"} if i < 4 else set()) for i in range(20)}
    sets.update({i: {"delta"} for i in range(20, 23)})
    clusters = clusters_from_keywords(sets)
    assert [c.keyword for c in clusters] == ["gamma", "alpha", "delta"]
    assert [c.size for c in clusters] == [4, 3, 3]


def test_a_cluster_carries_its_size_and_label_as_fields() -> None:
    cluster = TopicCluster("memory", (3, 1))
    assert cluster.size == 2


def test_empty_input_gives_no_clusters() -> None:
    assert topic_clusters([]) == []


keyword_pool = st.sampled_from([f"w{i:02d}" for i in range(12)])
corpora = st.dictionaries(st.integers(0, 200), st.sets(keyword_pool, max_size=5), max_size=60)


@settings(max_examples=150, deadline=None)
@given(corpora, st.integers(1, 5), st.floats(0.05, 0.9), st.integers(1, 8))
def test_every_surviving_cluster_respects_the_df_bounds(
    sets: dict[int, set[str]], min_df: int, max_share: float, max_floor: int
) -> None:
    clusters = clusters_from_keywords(sets, min_df=min_df, max_share=max_share, max_floor=max_floor)
    low, high = df_bounds(len(sets), min_df=min_df, max_share=max_share, max_floor=max_floor)
    df = {w: sum(w in words for words in sets.values()) for w in {w for s in sets.values() for w in s}}
    assert {c.keyword for c in clusters} == {w for w, n in df.items() if low <= n <= high}
    for cluster in clusters:
        assert cluster.narrative_ids == tuple(sorted(i for i, words in sets.items() if cluster.keyword in words))
        assert cluster.size == len(cluster.narrative_ids)
