"""The in-memory BM25 index: incremental updates, weighted queries, Chinese words, stemmed forms."""

from __future__ import annotations

import random

from tideline_core.search.bm25 import BM25Index
from tideline_core.search.query import question_terms, word_groups
from tideline_core.text.terms import analyze, stem
from tideline_core.text.tokens import segment, segment_words


def build(docs: dict[int, str]) -> BM25Index:
    index = BM25Index(k1=0.9, b=0.4)
    for doc_id, text in docs.items():
        index.add(doc_id, analyze(text))
    return index


def test_added_documents_are_found_and_ranked_by_term_rarity() -> None:
    index = build({1: "the cat sat on the mat", 2: "the dog sat on the log", 3: "a cat and a dog"})
    assert len(index) == 3 and 1 in index
    ranked = [doc for doc, _ in index.score(analyze("cat mat"))]
    assert ranked[0] == 1 and set(ranked) == {1, 3}
    assert index.score(analyze("giraffe")) == []


def test_adding_an_existing_id_replaces_it_and_removing_forgets_it() -> None:
    index = build({1: "apples and pears", 2: "bananas"})
    index.add(1, analyze("cherries"))
    assert len(index) == 2
    assert index.score(analyze("apples")) == []
    assert [doc for doc, _ in index.score(analyze("cherries"))] == [1]
    assert index.remove(2) is True and index.remove(2) is False
    assert index.score(analyze("bananas")) == [] and len(index) == 1


def test_many_removals_compact_without_changing_answers() -> None:
    index = BM25Index()
    for i in range(3000):
        index.add(i, ["common", f"word{i % 7}"])
    for i in range(2500):
        index.remove(i)
    hits = index.score(["word3"])
    assert {doc for doc, _ in hits} == {i for i in range(2500, 3000) if i % 7 == 3}


def test_weighted_terms_change_the_order() -> None:
    index = build({1: "kite beach", 2: "tax report"})
    kite_first = index.score({stem("kite"): 2.0, "tax": 0.5})
    tax_first = index.score({stem("kite"): 0.5, "tax": 2.0})
    assert [d for d, _ in kite_first] == [1, 2] and [d for d, _ in tax_first] == [2, 1]
    assert abs(kite_first[0][1] - 4 * kite_first[1][1]) < 1e-9  # the score scales with the weight
    assert index.score({stem("kite"): 0.0}) == []  # a zero weight is no term at all


def test_top_k_keeps_the_best_and_the_order_is_deterministic() -> None:
    index = build(dict.fromkeys(range(10), "same words here"))
    hits = index.score(analyze("words"), top_k=3)
    assert [doc for doc, _ in hits] == [0, 1, 2]


def test_two_character_chinese_words_match() -> None:
    index = build({1: "今天下午我们去公园散步了", 2: "明天去服务中心办手续", 3: "中华人民共和国成立"})
    assert [doc for doc, _ in index.score(analyze("公园"))] == [1]
    assert [doc for doc, _ in index.score(analyze("服务"))] == [2]
    assert [doc for doc, _ in index.score(analyze("人民"))] == [3]  # a word inside a longer one


def test_a_stemmed_form_finds_the_others() -> None:
    index = build({1: "She painted a sunset", 2: "He went swimming"})
    assert [doc for doc, _ in index.score(analyze("paintings"))] == [1]


PHONE_BOOK = {
    1: "李明辉的联系电话是15504351297。",
    2: "赵宇轩的联系电话是15345254277。",
    3: "杜静怡的联系电话是18584117447。",
    4: "我同事的手机号是19842342126。",
    5: "王国庆的家里电话坏了。",
    **{
        10 + i: f"我{who}喜欢{what}。"
        for i, (who, what) in enumerate(
            (w, h) for w in ("表哥", "表妹", "叔叔", "舅妈", "上司") for h in ("钓鱼", "攀岩", "摄影", "阅读")
        )
    },
}
PHONE_QUESTION = "那个联系电话是19842342126的人叫什么名字？"


def test_a_long_word_and_the_words_inside_it_count_once_so_a_rare_number_outranks_a_common_compound() -> None:
    index = build(PHONE_BOOK)
    terms = question_terms(PHONE_QUESTION)
    assert {"联系", "电话", "联系电话"} <= set(terms)  # jieba's search mode gives the compound and its inner words
    assert index.score(terms)[0][0] != 4, "summed, 联系电话's three terms outweigh the number only row 4 holds"
    assert index.score(terms, groups=word_groups([PHONE_QUESTION]))[0][0] == 4


def test_grouped_a_row_holding_the_whole_compound_still_outranks_one_holding_a_piece_of_it() -> None:
    index = build(PHONE_BOOK)
    ranked = [doc for doc, _ in index.score(question_terms("联系电话"), groups=word_groups(["联系电话"]))]
    assert set(ranked[:3]) == {1, 2, 3} and ranked[3:] == [5]


def test_segment_words_holds_the_tokens_segment_gives_grouped_by_the_word_they_come_from() -> None:
    text = "金融科技精英论坛在中华人民共和国北京举行, and Rex's party"
    words = segment_words(text)
    assert [token for word in words for token in word] == segment(text)
    assert ("中华", "华人", "人民", "共和", "共和国", "中华人民共和国") in words
    assert ("rex's",) in words


def test_every_answer_holds_each_live_matching_row_once_best_first_ties_in_insertion_order() -> None:
    rng = random.Random(11)
    words = [f"w{i}" for i in range(40)]
    index, texts = BM25Index(), {}
    for doc in range(400):  # few words and short texts: many rows score alike
        texts[doc] = rng.choices(words, k=rng.randint(1, 4))
        index.add(doc, texts[doc])
    for doc in rng.sample(range(400), 60):
        index.remove(doc)
        del texts[doc]
    for _ in range(50):
        asked = rng.sample(words, rng.randint(1, 4))
        hits = index.score(asked)
        assert [doc for doc, _ in hits] == sorted(
            (doc for doc, held in texts.items() if set(held) & set(asked)),
            key=lambda doc: (-dict(hits)[doc], doc),  # ids were added in order: insertion order is id order
        )
        assert index.score(asked, top_k=7) == hits[:7]
