"""Flower's basic auth is `user:password`: anything else is refused at start, naming the variable."""

from __future__ import annotations

import argparse

import pytest
from cli_helpers import tideline

from tideline_core.settings import Settings


def test_a_basic_auth_without_a_password_is_refused_before_flower_starts(env: dict[str, str]) -> None:
    for wrong in ("admin", "admin:", ":secret", "admin:secret,bob"):
        env["TIDELINE_FLOWER_BASIC_AUTH"] = wrong
        refused = tideline(env, "flower", "--address", "0.0.0.0", "--port", "1", timeout=60)
        assert refused.returncode == 2, (wrong, refused.stderr)
        assert "TIDELINE_FLOWER_BASIC_AUTH" in refused.stderr and "must be user:password" in refused.stderr
        assert "Traceback" not in refused.stderr


def test_flower_on_another_loopback_address_needs_no_password(monkeypatch: pytest.MonkeyPatch) -> None:
    from tideline_cli import processes

    started: list[list[str]] = []

    class App:
        def start(self, argv: list[str]) -> int:
            started.append(argv)
            return 0

    monkeypatch.setattr("workers.app.create_app", lambda settings: App())
    args = argparse.Namespace(port=5599, address="127.0.0.2")
    assert processes.cmd_flower(Settings(flower_basic_auth=None), args) == 0
    assert started and "--address=127.0.0.2" in started[0]
