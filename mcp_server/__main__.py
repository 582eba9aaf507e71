"""`python -m mcp_server serve [--http]`: the MCP server process, as `tideline serve` starts it."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tideline_core.embedding import Embedder
    from tideline_core.settings import Settings


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] != ["serve"] or not set(args[1:]) <= {"--http"}:
        print("usage: python -m mcp_server serve [--http] (settings come from TIDELINE_*)", file=sys.stderr)
        return 2
    # A search's products are matrix-vector (memory-bound) and run beside the model's own threads:
    # a BLAS thread per core only slows both (per-turn p95 at 100k: 55 ms against 45-50 on one).
    # Set before numpy is first imported, which is what reads it; an explicit setting wins.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from pydantic import ValidationError

    from tideline_core.settings import Settings

    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"tideline: error: invalid settings: {exc}", file=sys.stderr)
        return 2
    embedder = _early_embedder(settings)
    from mcp_server.app import run

    run(settings, transport="http" if "--http" in args else "stdio", embedder=embedder)
    return 0


def _early_embedder(settings: Settings) -> Embedder | None:
    """The local model, already loading (and jieba's dictionary) while the server's own imports run.

    Both are mostly native work that leaves the interpreter free, and together they take about as
    long as importing the server (about 2 s each): started here rather than once the server is up,
    the first search finds them ready about 1.5 s sooner. Other embedders load nothing (None: the
    server builds the one the settings name).
    """
    if settings.embedder != "local":
        return None
    from tideline_core.embedding.local import LocalE5Embedder
    from tideline_core.tokens import initialize

    embedder = LocalE5Embedder(settings.model_cache, threads=settings.embed_threads)
    embedder.warm_up()
    threading.Thread(target=initialize, name="tideline-jieba-load", daemon=True).start()
    return embedder


if __name__ == "__main__":
    sys.exit(main())
