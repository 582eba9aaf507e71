"""The README is a short front page whose commands and links hold; the guides in docs/ name every CLI command
and MCP tool that exists, and every setting says what it does (the generated reference lists them all)."""

from __future__ import annotations

import argparse
import asyncio
import re
from pathlib import Path

from tideline_cli.main import build_parser
from tideline_core.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLI_GUIDE = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
MCP_GUIDE = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
README_MAX_BYTES = 15 * 1024
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def test_the_readme_is_a_front_page_under_15_kb() -> None:
    assert len(README.encode()) < README_MAX_BYTES


def test_the_quick_start_is_make_run_and_make_test_and_both_are_targets() -> None:
    quick_start = README[README.index("## Quick start") : README.index("\n## ", README.index("## Quick start") + 1)]
    block = quick_start[quick_start.index("```sh") : quick_start.index("```", quick_start.index("```sh") + 5)]
    commands = [line.split("#")[0].strip() for line in block.splitlines()[1:] if line.strip()]
    assert commands == ["make run", "make test"]
    targets = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"(?m)^run:", targets) and re.search(r"(?m)^test:", targets)


def test_every_file_the_readme_links_to_exists() -> None:
    targets = [link for link in LINK.findall(README) if "://" not in link]
    assert targets, "the README links to the docs"
    assert [link for link in targets if not (ROOT / link).exists()] == []


def _subcommands(parser: argparse.ArgumentParser, prefix: str = "tideline") -> list[str]:
    names: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                names.append(f"{prefix} {name}")
                names.extend(_subcommands(sub, f"{prefix} {name}"))
    return names


def test_every_cli_command_is_in_the_cli_guide() -> None:
    missing = [name for name in _subcommands(build_parser()) if f"`{name}" not in CLI_GUIDE]
    assert not missing, f"docs/cli.md lacks CLI commands: {missing}"


def test_every_cli_option_is_in_the_cli_guide() -> None:
    missing = []
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for option in sub._actions:
                    for flag in option.option_strings:
                        if flag.startswith("--") and flag != "--help" and flag not in CLI_GUIDE:
                            missing.append(f"{name} {flag}")
    assert not missing, f"docs/cli.md lacks CLI options: {missing}"


def test_every_mcp_tool_is_in_the_mcp_guide(settings: Settings) -> None:
    from mcp_server.app import create_server

    server = create_server(settings)
    tools = asyncio.run(server.list_tools())
    missing = [tool.name for tool in tools if f"`{tool.name}`" not in MCP_GUIDE]
    assert not missing, f"docs/mcp.md lacks MCP tools: {missing}"


def test_every_setting_says_what_it_does_for_the_generated_reference() -> None:
    assert [name for name, field in Settings.model_fields.items() if not (field.description or "").strip()] == []


def test_the_example_environment_file_lists_every_setting() -> None:
    example = (ROOT / "deploy" / "env.example").read_text(encoding="utf-8")
    missing = [
        name
        for name, field in Settings.model_fields.items()
        if not any(alias in example for alias in getattr(field.validation_alias, "choices", [name]))
    ]
    assert not missing, f"deploy/env.example lacks settings: {missing}"
