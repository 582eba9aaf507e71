"""Every page of the console, as (path, methods, page function, whether it changes anything)."""

from __future__ import annotations

from tideline_console.pages import conversations, dream, inject, maps, memories, memory, pipeline, review
from tideline_console.visit import PageFunction

PAGES: list[tuple[str, list[str], PageFunction, bool]] = [
    *memories.ROUTES,
    *memory.ROUTES,
    *conversations.ROUTES,
    *dream.ROUTES,
    *review.ROUTES,
    *inject.ROUTES,
    *maps.ROUTES,
    *pipeline.ROUTES,
]

__all__ = ["PAGES"]
