"""The reference pages in docs/reference/ are what the code declares now."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
assert _spec is not None and _spec.loader is not None
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


def test_the_committed_reference_pages_are_current() -> None:
    out_of_date = [str(path.relative_to(ROOT)) for path in generate.stale(generate.pages())]
    assert not out_of_date, f"out of date: {out_of_date}; run `python docs/generate.py` to write them again"


def test_the_reference_names_every_command_tool_setting_and_stage() -> None:
    from tideline_core.dream.registry import STAGES
    from tideline_core.settings import Settings

    pages = {path.name: text for path, text in generate.pages().items()}
    assert all(
        f"`{field.validation_alias.choices[0]}`" in pages["settings.md"] for field in Settings.model_fields.values()
    )
    assert all(f"## `{stage.name}`" in pages["dream-stages.md"] for stage in STAGES)
    assert "## `tideline search`" in pages["cli.md"] and "--explain" in pages["cli.md"]
    assert "## `memory_write`" in pages["mcp-tools.md"] and "`gesture`" in pages["mcp-tools.md"]
