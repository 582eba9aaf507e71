"""The official MCP conformance suite's server scenarios against `tideline serve --http`.

    .venv/bin/python bench/conformance.py [--cache ~/.cache/tideline/conformance] [--scenario ping ...]

The suite (`@modelcontextprotocol/conformance`) needs Node 22. Node's binaries are a package on the
npm registry, so the first run installs `node@22` and the suite into the cache directory with npm
(any Node on PATH will do to run npm); later runs reuse them. The server runs on a throwaway data
dir with its own Redis, keyword-only (no model), on a free loopback port, and each scenario is run
against it. Only the scenarios that need none of the suite's own test tools, prompts or resources
are run; `logging-set-level` is left out on purpose: MCP's logging feature is deprecated, and
Tideline logs to stderr and files. Prints each scenario's output and a summary; exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from harness import free_port, sandbox, wait

SUITE = "@modelcontextprotocol/conformance@0.1.16"
NODE = "node@22"
SCENARIOS = (
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "completion-complete",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def installed(cache: Path) -> tuple[Path, Path]:
    """Node 22 and the suite's entry point in `cache`, installed there first if absent."""
    node = cache / "node_modules" / ".bin" / "node"
    suite = cache / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not (node.exists() and suite.exists() and _major(node) >= 22):
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is needed once, to install Node 22 and the suite: install Node.js (any version)")
        cache.mkdir(parents=True, exist_ok=True)
        if not (cache / "package.json").exists():
            (cache / "package.json").write_text('{"private": true}\n')
        print(f"installing {NODE} and {SUITE} into {cache} ...", flush=True)
        subprocess.run([npm, "install", "--no-audit", "--no-fund", NODE, SUITE], cwd=cache, check=True)
    return node, suite


def _major(node: Path) -> int:
    try:
        version = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return 0
    return int(version.strip().lstrip("v").split(".")[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "tideline" / "conformance")
    parser.add_argument("--scenario", action="append", help="one scenario (repeatable); default: all listed above")
    args = parser.parse_args()
    node, suite = installed(args.cache.expanduser())
    scenarios = args.scenario or list(SCENARIOS)
    results: dict[str, str] = {}
    with sandbox("conformance") as box:
        port = free_port()
        env = box.env(TIDELINE_EMBEDDER="none", TIDELINE_HTTP_HOST="127.0.0.1", TIDELINE_HTTP_PORT=str(port))
        log = (box.home / "serve.log").open("w")
        server = subprocess.Popen(
            [sys.executable, "-m", "tideline_cli.main", "serve", "--http"], env=env, stdout=log, stderr=log
        )
        try:
            wait(lambda: server.poll() is not None or _healthy(port), 60, "tideline serve --http")
            if server.poll() is not None:
                raise SystemExit(f"the server exited:\n{(box.home / 'serve.log').read_text()}")
            path = f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"
            for scenario in scenarios:
                run = subprocess.run(
                    [str(node), str(suite), "server", "--url", f"http://127.0.0.1:{port}/mcp", "--scenario", scenario],
                    env={**os.environ, "PATH": path},
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                output = COLOUR.sub("", run.stdout + run.stderr)
                print(output.rstrip(), flush=True)
                passed = re.search(r"Passed: (\d+/\d+)", output)
                results[scenario] = ("pass" if run.returncode == 0 else "FAIL") + (
                    f" ({passed.group(1)} checks)" if passed else ""
                )
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()
    print(f"\nMCP conformance ({SUITE}, server scenarios) against tideline serve --http:")
    for scenario, result in results.items():
        print(f"  {scenario:<30} {result}")
    return 0 if all(result.startswith("pass") for result in results.values()) else 1


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    sys.exit(main())
