"""Loopback ports for the servers tests start, and for "nothing listens here": `free_port()`, the suite's one helper.

Binding port 0, reading the port and closing the socket leaves a gap before the server binds it, in which
another process may take it: the other pass of `make test`, run beside this one, or any outgoing
connection, whose local port the kernel picks from the same ephemeral range
(/proc/sys/net/ipv4/ip_local_port_range). So each pytest process takes a block of ports outside that range,
which the kernel never hands out by itself, and which no other process takes: the first block whose lock
file (under the system temp dir) it can lock exclusively; the lock goes with the process, whichever pass
it runs, however it ends. Within its block a process hands out one port after another, each probed by a
bind (another program may listen there), so no two tests of one run get the same port either.
"""

from __future__ import annotations

import fcntl
import functools
import itertools
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

BLOCK = 1000  # ports per pytest process: a whole run asks for a few dozen
LOWEST = 10000  # above the well-known ports and Tideline's defaults (8765, 5555), on which tests never serve


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


@functools.cache
def _block() -> tuple[IO[bytes], Iterator[int]]:
    """This process's block (its lock file, held open, and its ports in turn); claimed on first use."""
    low, high = _ephemeral_range()
    starts = [*range(LOWEST, low - BLOCK + 1, BLOCK), *range(high + 1, 65536 - BLOCK + 1, BLOCK)]
    folder = Path(tempfile.gettempdir()) / "tideline-test-ports"
    folder.mkdir(exist_ok=True)
    for start in starts:
        lock = (folder / f"{start}.lock").open("ab")
        try:
            # flock, not lockf: it also keeps apart two imports of this module in one process.
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        return lock, itertools.cycle(range(start, start + BLOCK))
    raise RuntimeError(f"every block of {BLOCK} test ports outside the ephemeral range {low}-{high} is taken")


def free_port() -> int:
    """A port nothing listens on, for a server the test starts on it later, that no other test process is given."""
    _, ports = _block()
    for port in itertools.islice(ports, BLOCK):
        with socket.socket() as probe:
            try:
                probe.bind(("", port))  # every interface: some servers under test listen on 0.0.0.0
            except OSError:
                continue
        return port
    raise RuntimeError(f"none of the {BLOCK} ports of this process's block is free")
