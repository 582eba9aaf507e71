"""Arguments at the door: the tool descriptions and result schemas published to clients, and the names, nulls and
types every tool call and prompt request is checked for.

Every agent holds the tools list in its context for its whole session, so what is published says
each thing once: arguments as the core's `domain.schemas` publishes them, and a result's schema in
outline (each field and its type; what the fields mean is in the tools reference,
`docs/reference/mcp-tools.md`).

Pure: schemas and argument mappings in, a cleaned schema or a problem (argument, rule) out.
The SDK's own validation ignores arguments it does not know and turns an explicit null into the
default; a misspelled `importnace=5` would then store importance 3 without a word. Every call is
checked here first, whatever the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def one_paragraph(description: str | None) -> str | None:
    """A tool's description as clients see it: its docstring's words, without the source's line breaks."""
    return None if description is None else " ".join(description.split())


def outline(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A result's schema as clients see it: its fields, each with its JSON type (`null` where it may be none).

    Nested objects are `object` and lists `array`, without their own fields, and no field is listed as
    required: a result still conforms, and a client that validates it needs no more.
    """
    definitions: Mapping[str, Any] = schema.get("$defs", {})
    properties = {name: {"type": _types(prop, definitions)} for name, prop in schema.get("properties", {}).items()}
    return {"type": "object", "properties": properties}


def _types(prop: Mapping[str, Any], definitions: Mapping[str, Any]) -> str | list[str]:
    found: list[str] = []
    for variant in prop.get("anyOf", [prop]):
        ref = variant.get("$ref")
        if isinstance(ref, str):
            variant = definitions.get(ref.rsplit("/", 1)[-1], {})
        kinds = variant.get("type", "object" if "properties" in variant else None)
        for kind in kinds if isinstance(kinds, list) else [kinds]:
            if kind is None:  # a value of any type (an enum without a type, a free-form field)
                return ["string", "number", "integer", "boolean", "object", "array", "null"]
            if kind not in found:
                found.append(kind)
    return found[0] if len(found) == 1 else found


def problem(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first argument the call gets wrong, as (argument, rule), or None when the call can go on.

    Checked here: unknown names, nulls, missing required arguments and non-text values for text
    arguments (the SDK would answer those with a validation dump). Every other rule is the core
    input model's, which names the field and the rule itself.
    """
    properties: Mapping[str, Any] = schema.get("properties", {})
    known = list(properties)
    for name in sorted(arguments):
        if name not in properties:
            return name, f"is not an argument of {tool}; it takes {', '.join(known) or 'no arguments'}"
    required = set(schema.get("required", []))
    for name in sorted(arguments):
        if arguments[name] is None:
            if name in required:
                return name, "must not be null: it is required"
            return name, "must not be null: leave the argument out to use its default"
    for name in schema.get("required", []):
        if name not in arguments:
            return name, "is required"
    for name, value in sorted(arguments.items()):
        if properties[name].get("type") == "string" and not isinstance(value, str):
            return name, f"must be a string, got {type(value).__name__}"
    return None


def prompt_problem(prompt: str, declared: Mapping[str, bool], arguments: Mapping[str, str]) -> tuple[str, str] | None:
    """The first argument a prompt request gets wrong, as (argument, rule), or None; `declared` is {name: required}."""
    for name in sorted(arguments):
        if name not in declared:
            return name, f"is not an argument of {prompt}; it takes {', '.join(declared) or 'no arguments'}"
    for name, required in declared.items():
        if required and name not in arguments:
            return name, "is required"
    return None
