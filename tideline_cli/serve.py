"""`tideline serve`: its options, and handing the process over to the MCP server (standard library only).

The server process imports the store, the model and the MCP SDK itself; the CLI importing them too
before its exec would only delay the server's start (by about a second), so `serve` is parsed here,
before `main` imports anything else, and its settings are checked by the server process.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

DESCRIPTION = (
    "Run the MCP server. stdio serves the local user; --http serves streamable HTTP "
    "(bearer tokens from TIDELINE_HTTP_TOKENS are required off loopback)."
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser(
        "serve", help="run the MCP server (stdio by default, --http for streamable HTTP)", description=DESCRIPTION
    )
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    serve.add_argument("--host", help="HTTP bind address (default: TIDELINE_HTTP_HOST, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default: TIDELINE_HTTP_PORT, 8765)")


def main(argv: Sequence[str]) -> int:
    """`tideline serve ARGS`: become the MCP server process (`python -m mcp_server`); returns only on a usage error."""
    parser = argparse.ArgumentParser(prog="tideline")
    add_parser(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    args = parser.parse_args(["serve", *argv])
    if args.host:
        os.environ["TIDELINE_HTTP_HOST"] = args.host
    if args.port:
        os.environ["TIDELINE_HTTP_PORT"] = str(args.port)
    # exec, not a child: the runtime's stdio pipes, the pid it watches and its signals stay the server's.
    os.execv(sys.executable, [sys.executable, "-m", "mcp_server", "serve", *(["--http"] if args.http else [])])
    return 0  # not reached: execv replaces this process
