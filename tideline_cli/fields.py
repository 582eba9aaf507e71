"""Command-line options derived from a core input model's fields: one `--flag` per field, read back as its values.

An option's help is the field's description, its choices the field's enum and its type the field's;
lists are given comma-separated and objects as JSON. Every option defaults to "not given", so the
model's own default applies and the model checks every rule once, naming the field.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from tideline_core.domain.schemas import arguments
from tideline_core.errors import InvalidInput


def add_fields(
    group: argparse._ActionsContainer,
    model: type[BaseModel],
    fields: Sequence[str],
    *,
    flags: Mapping[str, str] | None = None,
) -> None:
    """One option per field (`--field-name`, or the flag `flags` gives it), its value kept under the field's name."""
    schema = arguments(model, fields=fields)
    properties, needed = schema["properties"], set(schema.get("required", ()))
    for field in fields:
        prop = properties[field]
        option: dict[str, Any] = {"dest": field, "default": None, "help": _help(prop, field in needed)}
        kind = prop.get("type")
        if "enum" in prop:
            option["choices"] = prop["enum"]
        elif kind == "integer":
            option["type"] = int
        elif kind == "number":
            option["type"] = float
        elif kind == "boolean":
            option["action"] = argparse.BooleanOptionalAction
        elif kind in ("array", "object"):
            option["metavar"] = "A,B,..." if kind == "array" else "JSON"
        group.add_argument((flags or {}).get(field, "--" + field.replace("_", "-")), **option)


def given_fields(args: argparse.Namespace, model: type[BaseModel], fields: Sequence[str]) -> dict[str, Any]:
    """The fields given on the command line, as the model takes them (lists split, JSON objects read)."""
    properties = arguments(model, fields=fields)["properties"]
    values: dict[str, Any] = {}
    for field in fields:
        value = getattr(args, field, None)
        if value is None:
            continue
        kind = properties[field].get("type")
        if kind == "array" and isinstance(value, str):
            value = _items(field, value, properties[field].get("items", {}).get("type"))
        elif kind == "object" and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise InvalidInput(field, f"is not valid JSON ({exc.msg})") from None
        values[field] = value
    return values


def _items(field: str, value: str, kind: str | None) -> list[Any]:
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if kind != "integer":
        return parts
    try:
        return [int(part) for part in parts]
    except ValueError:
        raise InvalidInput(field, "must be comma-separated integers (ids)") from None


def _help(prop: Mapping[str, Any], required: bool) -> str:
    said = str(prop.get("description", "")).rstrip(".")
    if prop.get("type") == "array":
        said += " (comma-separated)"
    if "minimum" in prop and "maximum" in prop:
        said += f" ({prop['minimum']}-{prop['maximum']})"
    if required:
        return f"{said} (required)"
    default = prop.get("default")
    return f"{said} (default: {default})" if default is not None and "default" not in said else said
