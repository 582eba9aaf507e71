"""What the console's tests share beside their fixtures: the agent, the loopback address, a page's CSRF token."""

from __future__ import annotations

import re

AGENT = "default"
LOOPBACK = "http://127.0.0.1:8766"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "the page carries its session's CSRF token in its forms"
    return found.group(1)
