"""The DREAM prompt templates (one Markdown file per stage) and their loader; depends on nothing in Tideline.

A template file reads:

    # Solidify: what one conversation chunk leaves behind

    version: 1

    ## System
    …instructions, ending with the answer's $schema…

    ## User
    …$data and any other $names…

`render` fills the placeholders with `string.Template`: `$schema` is the answer's JSON schema,
`$data` the memory content, quoted as data in a memory-data block, and any other `$name` a text
the caller passes by keyword. Every placeholder must be filled and every keyword used, so a
template and its caller cannot drift apart unnoticed.

The memory-data block is the only place memory content enters a prompt. It is the JSON text
between one `<memory-data>` line and one `</memory-data>` line, with every `<` inside the JSON
written as the escape `\\u003c` — the same string to a JSON reader, but no stored text can spell
the closing tag and step outside the block.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template
from typing import Any

__all__ = ["DATA_CLOSE", "DATA_OPEN", "PromptTemplate", "RenderedPrompt", "load", "placeholders", "render", "stages"]

DATA_OPEN = "<memory-data>"
DATA_CLOSE = "</memory-data>"
_REQUIRED = ("schema", "data")  # placeholders every template has, each exactly once
_VERSION = re.compile(r"^version:[ \t]*(\S+)[ \t]*$", re.MULTILINE)
_SECTION = re.compile(r"^## (.+?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class PromptTemplate:
    stage: str  # the file's stem
    version: str  # from the template's version line; recorded with each run so an answer can be traced to it
    system: str  # the "## System" section
    user: str  # the "## User" section


@dataclass(frozen=True)
class RenderedPrompt:
    name: str  # the stage
    version: str
    system: str
    user: str


@cache
def stages() -> tuple[str, ...]:
    """The stages that have a template, sorted."""
    root = resources.files(__name__)
    return tuple(sorted(item.name[:-3] for item in root.iterdir() if item.name.endswith(".md") and item.is_file()))


@cache
def load(stage: str) -> PromptTemplate:
    """The template of `stage`, parsed and checked; ValueError for an unknown stage or a malformed file."""
    if stage not in stages():
        raise ValueError(f"no prompt template for stage {stage!r}; there are: {', '.join(stages())}")
    text = resources.files(__name__).joinpath(f"{stage}.md").read_text(encoding="utf-8")
    return _parse(stage, text)


def _parse(stage: str, text: str) -> PromptTemplate:
    def malformed(rule: str) -> ValueError:
        return ValueError(f"prompt template {stage}.md: {rule}")

    if not text.startswith("# "):
        raise malformed("must start with a '# ' title line")
    headings = list(_SECTION.finditer(text))
    if [h.group(1) for h in headings] != ["System", "User"]:
        raise malformed("needs exactly the sections '## System' then '## User'")
    system_heading, user_heading = headings
    version = _VERSION.search(text, 0, system_heading.start())
    if version is None:
        raise malformed("needs a 'version: …' line before '## System'")
    system = text[system_heading.end() : user_heading.start()].strip()
    user = text[user_heading.end() :].strip()
    if not system or not user:
        raise malformed("the System and User sections must not be empty")
    whole = f"{system}\n{user}"
    if DATA_OPEN in whole or DATA_CLOSE in whole:
        raise malformed(f"must not spell {DATA_OPEN} or {DATA_CLOSE} itself: only $data may open the data block")
    for section in (system, user):
        if not Template(section).is_valid():
            raise malformed("has a '$' that is not a placeholder (write '$$' for a dollar sign)")
    for name in _REQUIRED:
        count = sum(Template(section).get_identifiers().count(name) for section in (system, user))
        if count != 1:
            raise malformed(f"must use ${name} exactly once, not {count} times")
    return PromptTemplate(stage=stage, version=version.group(1), system=system, user=user)


def placeholders(template: PromptTemplate) -> frozenset[str]:
    """Every `$name` the template uses, `schema` and `data` included."""
    return frozenset(Template(template.system).get_identifiers() + Template(template.user).get_identifiers())


def _quote_data(data: Mapping[str, Any]) -> str:
    """`data` as JSON in a memory-data block it cannot leave (no `<` inside: see the module docstring)."""
    encoded = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
    # "<" only ever occurs inside JSON strings, where the escape reads back as the same character.
    encoded = encoded.replace("<", "\\u003c")
    return f"{DATA_OPEN}\n{encoded}\n{DATA_CLOSE}"


def render(stage: str, *, schema: Mapping[str, Any], data: Mapping[str, Any], **text: str) -> RenderedPrompt:
    """The prompt of `stage` with the answer's JSON `schema`, the memory content `data` and the other placeholders.

    ValueError when a placeholder is left unfilled, a keyword fills none, or a text tries to spell the
    data block's tags. Deterministic: the same arguments give the same bytes (key order is kept as given).
    """
    template = load(stage)
    wanted = placeholders(template) - set(_REQUIRED)
    given = set(text)
    if wanted != given:
        problems = [f"needs ${name}, not given" for name in sorted(wanted - given)]
        problems += [f"has no ${name} for the keyword given" for name in sorted(given - wanted)]
        raise ValueError(f"prompt {stage!r}: {'; '.join(problems)}")
    for name, value in text.items():
        if DATA_OPEN in value or DATA_CLOSE in value:
            raise ValueError(f"prompt {stage!r}: ${name} must not contain {DATA_OPEN} or {DATA_CLOSE}")
    values = {
        **text,
        "schema": json.dumps(schema, ensure_ascii=False, indent=2, allow_nan=False),
        "data": _quote_data(data),
    }
    return RenderedPrompt(
        name=template.stage,
        version=template.version,
        system=Template(template.system).substitute(values),
        user=Template(template.user).substitute(values),
    )
