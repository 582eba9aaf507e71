"""Stdio for the MCP server as non-blocking pipes on the event loop: no thread hop per message.

The SDK's stdio transport reads each line and writes each reply through a worker thread (anyio's
file wrapper): three thread round trips per call, each a wake-up that waits for a free core when
the workers are busy embedding. Here the event loop reads and writes the pipes itself. As in the
SDK, the protocol gets private copies of fd 0 and 1 while fd 0 reads the null device and fd 1 goes
to stderr, so a stray print (ours or a library's) can never corrupt the wire; both are restored on
exit. Stdio that is not a pipe (a file, a terminal) is served by the SDK's own transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

# One JSON-RPC message per line; the HTTP transport accepts bodies up to 50 MB, stdio as much.
LINE_LIMIT = 64 * 1024 * 1024


def is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class Lines:
    """The messages arriving on stdin, one decoded line at a time (what the SDK reads from `stdin`)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while line := await self._reader.readline():
            yield line.decode("utf-8", errors="replace")


class _Outflow(asyncio.Protocol):
    """Flow control for the reply pipe: writes wait while the reader lags too far behind."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()
        self.lost: BaseException | None = None

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost = exc or BrokenPipeError("the client closed stdout")
        self.writable.set()


@dataclass
class Replies:
    """Where replies go (what the SDK writes to `stdout`): buffered by the loop's pipe transport."""

    transport: asyncio.WriteTransport
    outflow: _Outflow

    async def write(self, text: str) -> None:
        if self.outflow.lost is not None:
            raise self.outflow.lost
        self.transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.outflow.writable.wait()
        if self.outflow.lost is not None:
            raise self.outflow.lost


@contextlib.contextmanager
def _claimed(fd: int, diversion: int) -> Iterator[int]:
    """A private copy of `fd` (above the standard range) while `fd` itself points at `diversion`."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(diversion, fd)
        yield private
    finally:
        os.dup2(private, fd)
        os.close(private)


@contextlib.asynccontextmanager
async def loop_stdio() -> AsyncIterator[tuple[Lines, Replies]]:
    """Stdin and stdout as loop-driven pipes, for `mcp.server.stdio.stdio_server(stdin, stdout)`."""
    loop = asyncio.get_running_loop()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        with _claimed(0, null) as wire_in, _claimed(1, 2) as wire_out:
            reader = asyncio.StreamReader(limit=LINE_LIMIT)
            # closefd=False: the claim closes the private descriptors once the transports are gone.
            read_transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0, closefd=False)
            )
            write_transport, outflow = await loop.connect_write_pipe(
                _Outflow, os.fdopen(wire_out, "wb", buffering=0, closefd=False)
            )
            try:
                yield Lines(reader), Replies(write_transport, outflow)
            finally:
                read_transport.close()
                write_transport.close()
    finally:
        os.close(null)
