"""Which words a text holds for a keyword lookup: whole words and runs of an identifier's parts, Chinese as written."""

from __future__ import annotations

from tideline_core.text.tokens import holds_word, identifier_parts


def test_an_identifier_splits_at_its_case_and_digit_changes() -> None:
    assert identifier_parts("HybridSearchIndex") == ["Hybrid", "Search", "Index"]
    assert identifier_parts("HTTPServer2") == ["HTTP", "Server", "2"]
    assert identifier_parts("goggles") == ["goggles"]


def test_a_latin_word_is_held_whole_never_as_the_start_of_a_longer_word() -> None:
    assert holds_word("We go swimming", "go")
    assert not holds_word("swimming goggles", "go")
    assert not holds_word("every Thursday", "thu")
    assert not holds_word("Remember the milk", "rem")


def test_a_run_of_an_identifiers_parts_is_held_but_not_a_piece_of_a_part() -> None:
    assert holds_word("Renamed HybridSearchIndex", "searchindex")
    assert holds_word("Renamed HybridSearchIndex", "hybrid")
    assert not holds_word("Renamed HybridSearchIndex", "archind")


def test_a_chinese_term_is_held_wherever_it_is_written() -> None:
    assert holds_word("周四晚上去游泳", "游泳")
    assert holds_word("周四晚上去游泳", "泳")
