"""An input model's fields as a call publishes them: plain JSON schema, each argument declared by its model field.

Every agent holds its tools' schemas in its context for a whole session, so what is published says
each thing once: no `title` repeating an argument's name, no default that only says "none given",
and no null: an optional argument is one left out of `required` (widely installed clients reject a
schema of `["integer", "null"]` or coerce an empty field to null). Nested models are written out
in place rather than referred to, since several clients do not follow `$ref`.

Pure: a model class and the choice of its fields in, a JSON schema out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from tideline_core.domain.inputs import MAX_ID

# Defaults that say only "none given": an argument left out of `required` already says that.
EMPTY_DEFAULTS: tuple[Any, ...] = (None, "", [], {})


def arguments(
    model: type[BaseModel],
    *,
    fields: Sequence[str] | None = None,
    names: Mapping[str, str] | None = None,
    required: Sequence[str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The schema of a call taking `model`'s `fields` (all by default), as `names` calls them.

    `required` replaces the model's own list (by published name); `overrides` adds to or replaces
    keys of a field's schema (an enum the model checks elsewhere, say).
    """
    full = model.model_json_schema()
    definitions: Mapping[str, Any] = full.get("$defs", {})
    rename = names or {}
    chosen = list(fields) if fields is not None else list(full["properties"])
    properties: dict[str, Any] = {}
    for field in chosen:
        prop = _inlined(full["properties"][field], definitions)
        properties[rename.get(field, field)] = published({**prop, **(overrides or {}).get(field, {})})
    needed = (
        list(required)
        if required is not None
        else [rename.get(field, field) for field in full.get("required", []) if field in chosen]
    )
    return {"type": "object", "properties": properties, **({"required": needed} if needed else {})}


def published(prop: Mapping[str, Any]) -> dict[str, Any]:
    """One schema as callers see it: no title, no null, no empty default; nested ones likewise."""
    cleaned = {
        k: v
        for k, v in prop.items()
        # An id's ceiling is the store's integer range, not a rule to read (a larger id is still refused).
        if k != "title" and not (k == "default" and v in EMPTY_DEFAULTS) and not (k == "maximum" and v == MAX_ID)
    }
    if "items" in cleaned:
        cleaned["items"] = published(cleaned["items"])
    if "properties" in cleaned:
        cleaned["properties"] = {name: published(inner) for name, inner in cleaned["properties"].items()}
    variants = cleaned.pop("anyOf", None)
    if variants is None:
        return cleaned
    kept = [v for v in variants if v != {"type": "null"}]
    if len(kept) == 1:
        # An optional argument whose own schema is optional nests one anyOf in another: unwrap both.
        return published({**kept[0], **cleaned})
    return {**cleaned, "anyOf": [published(v) for v in kept]}


def _inlined(schema: Any, definitions: Mapping[str, Any]) -> Any:
    if isinstance(schema, Mapping):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            # A nested model's docstring is for readers of the code; the field's own description is the caller's.
            target = {k: v for k, v in definitions[ref.rsplit("/", 1)[-1]].items() if k != "description"}
            return _inlined({**target, **{k: v for k, v in schema.items() if k != "$ref"}}, definitions)
        return {key: _inlined(value, definitions) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_inlined(item, definitions) for item in schema]
    return schema
