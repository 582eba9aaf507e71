"""The comb stage: the day's memories re-weighed, profiles and threads updated, conflicts and duplicates settled."""

__all__ = ["kernel", "stage", "store"]
