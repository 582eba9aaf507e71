"""Pages as HTML: the templates, their filters, and the responses every page returns."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.responses import HTMLResponse

TEMPLATES = Path(__file__).parent / "templates"


def _when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M")


def _weight(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _query(base: dict[str, Any], **changes: Any) -> str:
    """The page's query string with some parameters changed (None or '' drops one)."""
    merged = {**base, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "", ())}, doseq=True)


ENV = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.filters["when"] = _when
ENV.filters["weight"] = _weight
ENV.globals["query"] = _query


def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The template rendered with `context` (and the status, which the refusal page shows)."""
    return HTMLResponse(ENV.get_template(template).render(status=status, **context), status_code=status)
