"""The drift stage: an unseen connection between a heavy memory and distant connected ones (LLM)."""

__all__ = ["kernel", "stage", "store"]
