"""docker-compose.yml and deploy/ are checked, not trusted: no Docker engine runs here, so each claim is read back.

Every service's command and healthcheck parse as real `tideline` commands, every variable the file reads is
documented in deploy/env.example, every TIDELINE_* it sets is a real setting, the Dockerfile copies every
package pyproject installs and its entry point is the console script. tests/test_deploy_stack.py runs the
same commands as local processes.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import io
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tideline_cli.main import build_parser
from tideline_core.settings import Settings
from workers.app import INGEST_HARD_LIMIT

yaml = pytest.importorskip("yaml", reason="pyyaml reads docker-compose.yml (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
ENV_EXAMPLE = (ROOT / "deploy" / "env.example").read_text(encoding="utf-8")
DOCKERFILE = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# `${NAME}`, `${NAME:?message}`, `${NAME:-default}` and `$NAME`; `$$` is a literal dollar.
VARIABLE = re.compile(r"(?<!\$)\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))")


def tideline_services() -> dict[str, dict[str, Any]]:
    """The services that run the Tideline image (the others are Redis and PostgreSQL)."""
    return {name: s for name, s in SERVICES.items() if s.get("image", "").startswith("tideline:")}


def one_shot(service: dict[str, Any]) -> bool:
    """A service that runs to its end and is not restarted (the migration)."""
    return str(service.get("restart", "no")) == "no"


def long_running() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in tideline_services().items() if not one_shot(s)}


def parse(argv: list[str]) -> argparse.Namespace:
    """`tideline ARGV` as the CLI parses it; an unknown command or option fails the test with argparse's words."""
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            return build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"`tideline {' '.join(argv)}` is not a valid command: {errors.getvalue().strip()}")


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def setting_names() -> set[str]:
    names: set[str] = set()
    for name, field in Settings.model_fields.items():
        names.update(getattr(field.validation_alias, "choices", [name]))
    return names


def seconds(span: str) -> float:
    """A compose duration (`330s`, `5m`, `1m30s`) in seconds."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", span)
    assert parts and "".join(n + u for n, u in parts) == span, f"not a compose duration: {span!r}"
    return sum(float(n) * units[u] for n, u in parts)


def dockerfile_json(instruction: str) -> list[str]:
    match = re.search(rf"^{instruction}\s+(\[.*\])\s*$", DOCKERFILE, re.M)
    assert match, f"the Dockerfile has no exec-form {instruction}"
    return list(json.loads(match[1]))


def test_every_service_runs_a_real_tideline_command_with_valid_options() -> None:
    services = tideline_services()
    commands = {name: parse(service["command"]).command for name, service in services.items()}
    assert commands == {
        "migrate": "db",
        "mcp": "serve",
        "ingest-worker": "worker",
        "dream-worker": "worker",
        "beat": "beat",
        "flower": "flower",
    }
    assert parse(SERVICES["migrate"]["command"]).db_command == "upgrade"
    assert parse(SERVICES["ingest-worker"]["command"]).queue == "ingest"
    assert parse(SERVICES["dream-worker"]["command"]).queue == "dream"


def test_every_variable_the_compose_file_reads_is_documented_in_the_example_environment() -> None:
    read = {a or b for text in strings(COMPOSE) for a, b in VARIABLE.findall(text)}
    assert "POSTGRES_PASSWORD" in read  # the check reads what it should
    undocumented = sorted(name for name in read if not re.search(rf"^#?\s*{name}=", ENV_EXAMPLE, re.M))
    assert undocumented == [], f"deploy/env.example lacks {undocumented}"


def test_every_tideline_variable_the_compose_file_sets_is_a_real_setting() -> None:
    known = setting_names()
    set_here = {key for service in tideline_services().values() for key in service.get("environment", {})}
    assert "TIDELINE_DATABASE_URL" in set_here
    unknown = sorted(name for name in set_here if name.startswith("TIDELINE_") and name not in known)
    assert unknown == [], f"docker-compose.yml sets variables no setting reads: {unknown}"


def test_the_migration_runs_once_and_every_other_tideline_service_starts_only_after_it_succeeded() -> None:
    assert [name for name, service in tideline_services().items() if one_shot(service)] == ["migrate"]
    for name, service in long_running().items():
        assert service["depends_on"].get("migrate") == {"condition": "service_completed_successfully"}, name
        assert {"redis", "postgres"} <= set(service["depends_on"]), name


def test_every_long_running_service_has_a_healthcheck_that_probes_what_the_service_runs() -> None:
    expected = {"serve": ("mcp", None), "beat": ("beat", None), "flower": ("flower", None)}
    for name, service in SERVICES.items():
        if one_shot(service):
            continue
        test = service.get("healthcheck", {}).get("test")
        assert test, f"service {name} has no healthcheck"
        if name not in tideline_services():
            continue
        assert test[:2] == ["CMD", "tideline"], f"{name}: the healthcheck is not a tideline command: {test}"
        probe = parse(test[2:])
        command = parse(service["command"])
        part, queue = ("worker", command.queue) if command.command == "worker" else expected[command.command]
        assert (probe.command, probe.part, probe.queue) == ("health", part, queue), f"{name} probes {test[2:]}"


def test_services_bound_beyond_loopback_cannot_start_without_their_credentials() -> None:
    # `${NAME:?...}` stops `docker compose up` with the message, before a container starts and refuses.
    needs = {"serve": ("host", "TIDELINE_HTTP_TOKENS"), "flower": ("address", "TIDELINE_FLOWER_BASIC_AUTH")}
    checked = 0
    for name, service in tideline_services().items():
        command = parse(service["command"])
        if command.command not in needs:
            continue
        option, variable = needs[command.command]
        if (getattr(command, option) or "127.0.0.1") in LOOPBACK:
            continue
        checked += 1
        value = str(service.get("environment", {}).get(variable, ""))
        assert value.startswith(f"${{{variable}:?"), f"{name} binds {getattr(command, option)} without {variable}"
    assert checked == 2


def test_published_ports_are_the_ports_the_commands_bind() -> None:
    defaults = Settings(home=Path("/data"))
    for name, service in tideline_services().items():
        command = parse(service["command"])
        bound = {"serve": defaults.http_port, "flower": defaults.flower_port}.get(command.command)
        for mapping in service.get("ports", []):
            host_ip, _host_port, container_port = str(mapping).split(":")
            assert host_ip == "127.0.0.1", f"{name} publishes on {host_ip}, not the host's loopback"
            assert int(container_port) == (getattr(command, "port", None) or bound), f"{name}: {mapping}"


def test_an_ingest_workers_grace_period_outlasts_its_longest_task() -> None:
    # Shorter, and `docker stop` would kill a running task every time instead of letting the warm shutdown end it.
    grace = seconds(str(SERVICES["ingest-worker"]["stop_grace_period"]))
    assert grace > INGEST_HARD_LIMIT


def test_the_dockerfile_installs_every_package_and_runs_the_console_script() -> None:
    packages = [p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]
    missing = [p for p in packages if not re.search(rf"^COPY {p} \./{p}\s*$", DOCKERFILE, re.M)]
    assert missing == [], f"the Dockerfile does not copy {missing}: the image would lack them"
    extras = re.findall(r'pip install [^\n]*"\.\[([a-z,]+)\]"', DOCKERFILE)
    assert extras and set(extras[0].split(",")) <= set(PYPROJECT["project"]["optional-dependencies"])
    entrypoint = dockerfile_json("ENTRYPOINT")
    script = PYPROJECT["project"]["scripts"][entrypoint[0]]
    module, _, function = script.partition(":")
    assert callable(getattr(importlib.import_module(module), function))
    assert parse([*entrypoint[1:], *dockerfile_json("CMD")]).command == "serve"


def test_the_model_building_step_of_the_dockerfile_calls_what_exists() -> None:
    source = re.search(r'RUN python -c "(.*?)"', DOCKERFILE, re.S)
    assert source, "the Dockerfile no longer builds the model into the image"
    tree = ast.parse(source[1].replace("\\\n", ""))
    imported: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found = importlib.import_module(node.module)
            for alias in node.names:
                imported[alias.asname or alias.name] = getattr(found, alias.name)
    calls = [
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call)
    ]
    assert "LocalE5Embedder" in imported and calls == ["passages"]
    assert callable(getattr(imported["LocalE5Embedder"], calls[0]))
    assert "TIDELINE_MODEL_CACHE" in source[1] and re.search(r"^ENV .*TIDELINE_MODEL_CACHE=", DOCKERFILE, re.M)
