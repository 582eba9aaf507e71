"""`python -m mcp_server serve [--http]`: the MCP server process, as `tideline serve` starts it."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] != ["serve"] or not set(args[1:]) <= {"--http"}:
        print("usage: python -m mcp_server serve [--http] (settings come from TIDELINE_*)", file=sys.stderr)
        return 2
    # A search's products are matrix-vector (memory-bound) and run beside the model's own threads:
    # a BLAS thread per core only slows both.
    # Set before numpy is first imported, which is what reads it; an explicit setting wins.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # The collector waits while the server's modules load: their objects, none of them garbage, would
    # set it scanning the whole heap again and again while a client waits for tools/list. What they
    # left is then frozen out of later collections (it lives as long as the process anyway).
    gc.disable()
    try:
        from pydantic import ValidationError

        from tideline_core.settings import Settings

        try:
            settings = Settings()
        except ValidationError as exc:
            print(f"tideline: error: invalid settings: {exc}", file=sys.stderr)
            return 2
        # The model and jieba's dictionary load once the server is up (`app._warm_up`), not beside its
        # imports: loading them takes the interpreter from the imports, and a client waits for tools/list.
        from mcp_server.app import run
    finally:
        gc.freeze()
        gc.enable()

    run(settings, transport="http" if "--http" in args else "stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
