"""The symbolic stage: symbols of the day woven into a short dream and a self-reflection (LLM)."""

__all__ = ["stage"]
