"""Running `tideline` as a real subprocess, as a user would."""

from __future__ import annotations

import subprocess
import sys


def tideline(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tideline_cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )
