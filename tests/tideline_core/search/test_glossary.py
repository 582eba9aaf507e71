"""The glossary gives a question's words in the other language, only the plain senses, only what the index holds."""

from __future__ import annotations

from tideline_core.search.glossary import Glossary, crossing_terms, glossary, glosses, parse

LINES = [
    "打印機 打印机 [da3 yin4 ji1] /printer/",
    "團隊 团队 [tuan2 dui4] /team/",
    "火車 火车 [huo3 che1] /train/CL:列[lie4],節|节[jie2]/",
    "牙醫 牙医 [ya2 yi1] /dentist/",
    "批 批 [pi1] /to ascertain/to act on/",
    "例會 例会 [li4 hui4] /regular meeting/",
    "八月 八月 [Ba1 yue4] /August/eighth month (of the lunar year)/",
    "老師 老师 [lao3 shi1] /teacher/CL:個|个[ge4],位[wei4]/",
    "張 张 [Zhang1] /surname Zhang/",
]


def test_plain_senses_are_kept_and_classifiers_variants_and_surnames_are_not() -> None:
    assert glosses("printer/CL:台[tai2]/see 印表機|印表机[yin4 biao3 ji1]/surname Li") == ["printer"]
    assert glosses("to dismantle/to take apart") == ["dismantle", "take apart"]
    assert glosses("eighth month (of the lunar year)") == ["eighth month"]
    assert glosses("a very long sense of many words indeed") == []


def test_chinese_words_of_two_characters_or_more_stand_for_their_english_words() -> None:
    table = parse(LINES)
    assert table.to_english["打印机"] == ("printer",)
    assert table.to_english["火车"] == ("train",)
    assert table.to_english["八月"] == ("august", "eighth", "month")
    assert "批" not in table.to_english  # one character: too many senses to stand for one word


def test_english_words_lead_to_chinese_only_through_one_word_senses() -> None:
    table = parse(LINES)
    assert table.to_chinese["dentist"] == ("牙医",)
    assert table.to_chinese["teacher"] == ("老师",)
    assert "meet" not in table.to_chinese  # "regular meeting" is two words


def test_only_the_crossing_terms_the_index_holds_are_asked_for() -> None:
    table = parse(LINES)
    index = {"printer", "team", "牙医"}
    assert crossing_terms(["哪台", "打印机", "卡纸"], index.__contains__, lambda: table) == ["printer"]
    assert crossing_terms(["dentist", "appointment"], index.__contains__, lambda: table) == ["牙医"]
    assert crossing_terms(["周四"], index.__contains__, lambda: table) == []


def test_terms_already_asked_for_are_not_added_again() -> None:
    table = Glossary(to_english={"团队": ("team",)}, to_chinese={"team": ("团队",)})
    assert crossing_terms(["团队", "team"], lambda _: True, lambda: table) == []


def test_the_installed_dictionary_knows_common_words_both_ways() -> None:
    table = glossary()
    assert "printer" in table.to_english["打印机"]
    assert "牙医" in table.to_chinese["dentist"]
