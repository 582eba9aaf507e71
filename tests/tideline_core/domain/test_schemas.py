"""An input model's fields are published as a caller can read them: written out, described, no null, no noise."""

from __future__ import annotations

from pydantic import Field

from tideline_core.domain.inputs import NarrativeIn, SearchIn, ThreadIn, _Input
from tideline_core.domain.schemas import arguments


def test_an_optional_argument_is_left_out_of_required_and_admits_no_null() -> None:
    schema = arguments(ThreadIn)
    assert "required" not in schema  # a thread id or a title, each optional on its own
    title = schema["properties"]["title"]
    assert title == {
        "type": "string",
        "minLength": 1,
        "maxLength": 2000,
        "description": "The question or line of thought; required to open a thread.",
    }
    assert not [name for name, prop in schema["properties"].items() if "anyOf" in prop or "title" in prop], schema


def test_a_default_that_says_only_none_given_is_dropped_and_a_real_one_kept() -> None:
    properties = arguments(NarrativeIn)["properties"]
    assert properties["importance"]["default"] == 3 and properties["narrative_type"]["default"] == "event"
    assert "default" not in properties["context"] and "default" not in properties["tags"]
    assert "maximum" not in properties["source_links"]["items"]  # an id's ceiling is the store's, not a rule to read


def test_a_nested_model_is_written_out_in_place_under_the_name_the_caller_uses() -> None:
    schema = arguments(SearchIn, fields=("query", "conversation"), names={"conversation": "recent_turns"})
    lines = schema["properties"]["recent_turns"]
    assert "$defs" not in str(schema) and "$ref" not in str(schema)
    assert set(lines["items"]["properties"]) == {"speaker", "text", "role"}  # `is_self` is what the role becomes
    assert lines["items"]["required"] == ["text"] and "description" in lines


def test_required_and_overrides_are_the_callers_to_choose() -> None:
    schema = arguments(SearchIn, fields=("query", "limit"), required=("query",), overrides={"query": {"minLength": 1}})
    assert schema["required"] == ["query"] and schema["properties"]["query"]["minLength"] == 1
    assert list(schema["properties"]) == ["query", "limit"]


class _Throwaway(_Input):
    mood: str = Field(default="calm", max_length=20, description="How it felt.")


def test_a_new_field_is_published_with_its_limits_default_and_description() -> None:
    assert arguments(_Throwaway)["properties"]["mood"] == {
        "type": "string",
        "maxLength": 20,
        "default": "calm",
        "description": "How it felt.",
    }
