"""JSON as the CLI prints it: times in UTC ending in Z, as the MCP tools give them; anything else as text."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from tideline_core.text.dates import iso


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=_plain)


def _plain(value: Any) -> str:
    return iso(value) if isinstance(value, datetime) else str(value)
