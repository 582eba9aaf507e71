"""`tideline serve` hands its process to the MCP server at once; the server itself rejects bad settings by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Stops the exec and says what the CLI had imported by then.
PROBE = """
import os, sys
def stop(path, args):
    print(" ".join(args[1:]))
    heavy = {"tideline_core", "mcp", "sqlalchemy", "numpy", "pydantic"}
    print(" ".join(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
    sys.exit(0)
os.execv = stop
from tideline_cli.main import main
main(sys.argv[1:])
"""


def _tideline(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "TIDELINE_HOME": str(tmp_path), **env}
    return subprocess.run(
        [sys.executable, "-m", "tideline_cli", *args], capture_output=True, text=True, timeout=120, env=environment
    )


def test_serve_execs_the_server_before_importing_the_store_the_model_or_the_sdk(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "serve", "--http", "--port", "9999"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TIDELINE_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    command, imported = [*done.stdout.splitlines(), ""][:2]
    assert command == "-m mcp_server serve --http"
    assert imported == ""


def test_serve_names_the_setting_that_is_wrong_and_exits_with_a_usage_error(tmp_path: Path) -> None:
    done = _tideline(tmp_path, "serve", "--http", TIDELINE_HTTP_PORT="eighty")
    assert done.returncode == 2
    assert "tideline: error: invalid settings" in done.stderr and "TIDELINE_HTTP_PORT" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_rejects_an_option_it_does_not_have(tmp_path: Path) -> None:
    done = _tideline(tmp_path, "serve", "--htp")
    assert done.returncode == 2
    assert "unrecognized arguments: --htp" in done.stderr
