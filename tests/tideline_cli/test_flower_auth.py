"""Flower's basic auth is `user:password`: anything else is refused at start, naming the variable."""

from __future__ import annotations

from cli_helpers import tideline


def test_a_basic_auth_without_a_password_is_refused_before_flower_starts(env: dict[str, str]) -> None:
    for wrong in ("admin", "admin:", ":secret", "admin:secret,bob"):
        env["TIDELINE_FLOWER_BASIC_AUTH"] = wrong
        refused = tideline(env, "flower", "--address", "0.0.0.0", "--port", "1", timeout=60)
        assert refused.returncode == 2, (wrong, refused.stderr)
        assert "TIDELINE_FLOWER_BASIC_AUTH" in refused.stderr and "must be user:password" in refused.stderr
        assert "Traceback" not in refused.stderr
