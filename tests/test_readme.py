"""The README documents every CLI command, every MCP tool and every setting that exists."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from tideline_cli.main import build_parser
from tideline_core.settings import Settings

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _subcommands(parser: argparse.ArgumentParser, prefix: str = "tideline") -> list[str]:
    names: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                names.append(f"{prefix} {name}")
                names.extend(_subcommands(sub, f"{prefix} {name}"))
    return names


def test_every_cli_command_is_in_the_readme() -> None:
    missing = [name for name in _subcommands(build_parser()) if f"`{name}" not in README]
    assert not missing, f"README lacks CLI commands: {missing}"


def test_every_cli_option_is_in_the_readme() -> None:
    missing = []
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for option in sub._actions:
                    for flag in option.option_strings:
                        if flag.startswith("--") and flag != "--help" and flag not in README:
                            missing.append(f"{name} {flag}")
    assert not missing, f"README lacks CLI options: {missing}"


def test_every_mcp_tool_is_in_the_readme(settings: Settings) -> None:
    from mcp_server.app import create_server

    server = create_server(settings)
    tools = asyncio.run(server.list_tools())
    missing = [tool.name for tool in tools if f"`{tool.name}`" not in README]
    assert not missing, f"README lacks MCP tools: {missing}"


def test_every_setting_is_in_the_readme() -> None:
    missing = []
    for name, field in Settings.model_fields.items():
        aliases = getattr(field.validation_alias, "choices", [name])
        if not any(f"`{alias}`" in README or f"`{alias}`," in README or alias in README for alias in aliases):
            missing.append(name)
    assert not missing, f"README lacks settings: {missing}"


def test_the_example_environment_file_lists_every_setting() -> None:
    example = (Path(__file__).resolve().parent.parent / "deploy" / "env.example").read_text(encoding="utf-8")
    missing = [
        name
        for name, field in Settings.model_fields.items()
        if not any(alias in example for alias in getattr(field.validation_alias, "choices", [name]))
    ]
    assert not missing, f"deploy/env.example lacks settings: {missing}"
