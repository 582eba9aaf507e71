"""The solidify stage: conversation chunks into narrative memories, by the LLM or, without one, extractively."""

__all__ = ["extractive", "stage", "statements", "store"]
