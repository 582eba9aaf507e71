"""A server process loads only what serving needs: nothing the dream worker alone uses (tens of MiB each)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DREAM_ONLY = ("sklearn", "scipy", "jieba.posseg", "jieba.analyse", "threadpoolctl")

PROBE = """
import sys
from tideline_core.compose import compose
from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn, SearchIn, ConversationLine
from tideline_core.service import NullJobQueue
from tideline_core.settings import Settings
import mcp_server.app

service = compose(Settings(home=sys.argv[1], embedder="none", database_url=sys.argv[2]), jobs=NullJobQueue())
service.write_narrative("a", NarrativeIn(gesture="我们在公园里散步 and talked about the wedding"))
service.record_turns("a", [ContextTurnIn(role="user", content="明天去公园吗？")])
service.search("a", SearchIn(query="公园"))
service.search("a", SearchIn(conversation=[ConversationLine(speaker="Bob", text="还记得公园吗")]))
print(" ".join(sorted(m for m in sys.modules if m.split(".")[0] in {"sklearn", "scipy", "jieba", "threadpoolctl"})))
"""


def test_writing_and_searching_load_nothing_only_the_dream_worker_needs(tmp_path: Path, store_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), store_url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split()
    assert "jieba" in loaded, "the probe did segment Chinese"
    assert [m for m in loaded if m.startswith(DREAM_ONLY)] == []
