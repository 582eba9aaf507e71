"""Start-up cost: `tideline --help`, `tideline serve` to its tools list, and the no-server hook at 10k memories.

    .venv/bin/python bench/startup.py [--rounds 10] [--hook-size 10000] [--hook-rounds 20] [--no-hook]

Every figure is a whole process, spawn to exit (or to the answer), on a throwaway data dir:
  help        `tideline --help`
  serve       `tideline serve` on stdio: initialize, notifications/initialized, tools/list; timed to
              the tools list's answer (the server is then closed by closing its stdin)
  mcp import  `python -c "import mcp.server"`, the floor `serve` is held to (within 2×)
  hook        `tideline hook` for UserPromptSubmit with nothing listening on TIDELINE_HTTP_PORT, on a
              store of --hook-size narratives built as bench/hook.py builds it (not timed)
Prints median and p95 beside the targets; asserts nothing. Run it on main and on a branch, on the
same machine, to compare (the `tideline` beside this Python runs the code on PYTHONPATH first).

The project's bytecode is compiled first (`make bytecode`, as pip does when it installs a package), so
every process reads it rather than compiling the project's modules again: with PYTHONDONTWRITEBYTECODE
set, Python would otherwise compile them in every process and keep nothing.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from harness import Sandbox, free_port, pct, sandbox

TIDELINE = str(Path(sys.executable).parent / "tideline")
TARGET_HELP_S = 0.3
TARGET_HOOK_P95_S = 0.5
SERVE_OVER_IMPORT = 2.0
PROTOCOL = "2025-06-18"


def seconds(argv: list[str], env: dict[str, str], stdin: str = "") -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True, timeout=120)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr[-2000:]}")
    return took


def serve_to_tools_list(env: dict[str, str]) -> float:
    """Seconds from spawning `tideline serve` to the tools/list answer on its stdout."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    started = time.perf_counter()
    server = subprocess.Popen(
        [TIDELINE, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
        server.stdin.flush()
        while line := server.stdout.readline():
            answer = json.loads(line)
            if answer.get("id") == 2:
                took = time.perf_counter() - started
                if not answer.get("result", {}).get("tools"):
                    raise SystemExit(f"tools/list gave no tools: {line[:500]!r}")
                return took
        raise SystemExit("the server closed its stdout before answering tools/list")
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def hook_figures(box: Sandbox, size: int, rounds: int) -> list[float]:
    from hook import AGENT, build, prompt_event
    from inject import queries

    build(box, size)
    env = box.env(TIDELINE_AGENT=AGENT, TIDELINE_HTTP_PORT=str(free_port()))
    asked = queries(rounds + 2)
    seconds([TIDELINE, "hook"], env, prompt_event(asked[0]))  # untimed: the OS caches the files
    return [seconds([TIDELINE, "hook"], env, prompt_event(prompt)) for prompt in asked[1 : rounds + 1]]


def compile_project() -> list[Path]:
    """Compile the bytecode of the project's packages (pyproject.toml's list) where this Python imports them from."""
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    patterns = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    folders: list[Path] = []
    for name in (pattern.rstrip("*") for pattern in patterns):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"package {name} is not importable here")
        folders.extend(Path(folder) for folder in spec.submodule_search_locations)
    for folder in folders:
        if not compileall.compile_dir(folder, quiet=1):
            raise SystemExit(f"{folder} does not compile")
    return folders


def line(name: str, values: list[float]) -> str:
    return (
        f"  {name:<12} median {statistics.median(values):6.3f} s   p95 {pct(values, 95):6.3f} s   ({len(values)} runs)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10, help="runs of help, serve and the mcp import")
    parser.add_argument("--hook-size", type=int, default=10_000, help="narratives in the hook's store")
    parser.add_argument("--hook-rounds", type=int, default=20, help="timed hook processes")
    parser.add_argument("--no-hook", action="store_true", help="skip the hook (building its store takes a while)")
    args = parser.parse_args(argv)
    print(f"# start-up, whole processes — {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; {TIDELINE}")
    folders = compile_project()
    print(f"  bytecode compiled beforehand under {os.path.commonpath(folders)}")
    with sandbox("startup") as box:
        env = box.env(TIDELINE_HTTP_PORT=str(free_port()))  # the default embedder: the local model
        seconds([TIDELINE, "--help"], env)  # untimed: the OS caches the files
        helps = [seconds([TIDELINE, "--help"], env) for _ in range(args.rounds)]
        imports = [seconds([sys.executable, "-c", "import mcp.server"], env) for _ in range(args.rounds)]
        serve_to_tools_list(env)
        serves = [serve_to_tools_list(env) for _ in range(args.rounds)]
        print(line("help", helps))
        print(line("mcp import", imports))
        print(line("serve", serves))
        hooks: list[float] = []
        if not args.no_hook:
            hooks = hook_figures(box, args.hook_size, args.hook_rounds)
            print(line(f"hook {args.hook_size // 1000}k", hooks))
    ratio = statistics.median(serves) / statistics.median(imports)
    print("\n## Targets")
    print(f"  help median ≤ {TARGET_HELP_S} s: {'met' if statistics.median(helps) <= TARGET_HELP_S else 'NOT met'}")
    verdict = "met" if ratio <= SERVE_OVER_IMPORT else "NOT met"
    print(f"  serve ≤ {SERVE_OVER_IMPORT}× the mcp import: {ratio:.2f}× {verdict}")
    if hooks:
        verdict = "met" if pct(hooks, 95) <= TARGET_HOOK_P95_S else "NOT met"
        print(f"  hook p95 ≤ {TARGET_HOOK_P95_S} s at {args.hook_size:,} narratives: {verdict}")


if __name__ == "__main__":
    main()
