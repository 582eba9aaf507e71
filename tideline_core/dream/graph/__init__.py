"""The graph stage: who appears in the memories, in which roles, and with whom."""

__all__ = ["entities", "others", "stage", "store"]
