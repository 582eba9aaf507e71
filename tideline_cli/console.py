"""`tideline console`: its options, and handing the process over to the console server (standard library only)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

DESCRIPTION = (
    "Serve the console (browse, correct and review the agent's memory in a browser) over TIDELINE_HOME or "
    "TIDELINE_DATABASE_URL. Loopback without a login; off loopback only with TIDELINE_CONSOLE_PASSWORD or "
    "TIDELINE_HTTP_TOKENS (a token logs in as its own agent). `tideline up` starts it too."
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    console = sub.add_parser("console", help="serve the console (the memory in a browser)", description=DESCRIPTION)
    console.add_argument("--host", help="bind address (default: TIDELINE_CONSOLE_HOST, 127.0.0.1)")
    console.add_argument("--port", type=int, help="port (default: TIDELINE_CONSOLE_PORT, 8766)")


def main(argv: Sequence[str]) -> int:
    """`tideline console ARGS`: become the console process (`python -m tideline_console`); returns on a usage error."""
    parser = argparse.ArgumentParser(prog="tideline")
    add_parser(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    args = parser.parse_args(["console", *argv])
    if args.host:
        os.environ["TIDELINE_CONSOLE_HOST"] = args.host
    if args.port:
        os.environ["TIDELINE_CONSOLE_PORT"] = str(args.port)
    os.execv(sys.executable, [sys.executable, "-m", "tideline_console"])
    return 0  # not reached: execv replaces this process
