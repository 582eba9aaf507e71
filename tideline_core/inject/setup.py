"""What injection is configured with: the tiers' rules, and where each agent's SOUL file lives."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tideline_core.inject.tiers import InjectRules

_PLAIN_AGENT = re.compile(r"^[A-Za-z0-9_.@:+-]+$")


@dataclass(frozen=True)
class InjectSetup:
    rules: InjectRules = field(default_factory=InjectRules)
    soul_path: str = "{home}/agents/{agent}/SOUL.md"  # `{home}` and `{agent}` are filled in
    home: Path = Path("~/.tideline")

    def soul_file(self, agent_id: str) -> Path | None:
        """The agent's SOUL file; None for an agent id that is not a plain file name (it could leave the folder)."""
        if not _PLAIN_AGENT.match(agent_id) or agent_id in (".", ".."):
            return None
        return Path(self.soul_path.format(home=self.home, agent=agent_id)).expanduser()
