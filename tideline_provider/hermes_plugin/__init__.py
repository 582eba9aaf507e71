"""Tideline as a Hermes plugin directory: `register(ctx)` and the shim `install_plugin_dir` writes.

Hermes finds memory providers in `$HERMES_HOME/plugins/<name>/__init__.py` (a `register(ctx)` that
calls `ctx.register_memory_provider`) as well as through the `hermes_agent.memory_providers` entry
point. The directory written here holds only a shim importing `register` from this package, so
upgrading the package upgrades the plugin; the package must be installed where Hermes runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tideline_provider.hermes import NAME, TidelineMemoryProvider

# Hermes tells a memory provider's directory from other plugins by its text naming
# `register_memory_provider` (without importing it): the shim's docstring does.
SHIM = '''"""Tideline long-term memory for Hermes Agent (written by tideline_provider.hermes_plugin.install_plugin_dir).

`register(ctx)` calls ctx.register_memory_provider(TidelineMemoryProvider()); the code lives in the installed
`tideline` package. Activate with `memory.provider: tideline` in config.yaml.
"""

from tideline_provider.hermes_plugin import register

__all__ = ["register"]
'''


def register(ctx: Any) -> None:
    """Hand Hermes a Tideline memory provider (Hermes initializes it for each session)."""
    ctx.register_memory_provider(TidelineMemoryProvider())


def install_plugin_dir(hermes_home: Path) -> Path:
    """Write `$HERMES_HOME/plugins/tideline/__init__.py` (the shim; rewritten if present) and return its path."""
    plugin = Path(hermes_home).expanduser() / "plugins" / NAME / "__init__.py"
    plugin.parent.mkdir(parents=True, exist_ok=True)
    plugin.write_text(SHIM, encoding="utf-8")
    return plugin


__all__ = ["install_plugin_dir", "register"]
