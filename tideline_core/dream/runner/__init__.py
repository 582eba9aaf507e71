"""The runner: a stage run on the record (`runs`, the dream_runs table) and its plan applied and undone (`changes`)."""

__all__ = ["changes", "runs"]
