"""A line's salient words weigh exactly what jieba's own TF-IDF extractor gives them, without loading its tables."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tideline_core.search.salience import salient_words

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import synthetic

LINES = [
    "我们昨天在公园里散步，聊起了她妹妹的婚礼和新的服务设计",
    "Caroline went to the LGBTQ support group on 7 May 2023 and it was the one thing that helped",
    "the of is and to in",  # nothing but skipped words
    "好的 好的 好的",
    "Melanie: I painted a sunrise over the lake last year — 湖边的日出",
    "",
    "数据库 部署 回滚 监控 告警 性能 数据库 部署",
    *(row["gesture"] for row in synthetic.narratives(60, seed=5)),
    *(row["content"] for row in synthetic.context_turns(60, seed=5)),
]


@pytest.mark.parametrize("top", [3, 10])
def test_salient_words_match_jiebas_extractor_weight_for_weight(top: int) -> None:
    import jieba.analyse

    for line in LINES:
        assert salient_words(line, top) == jieba.analyse.extract_tags(line, topK=top, withWeight=True), line
