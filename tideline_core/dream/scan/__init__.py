"""The scan stage: source links to infer (proposed as its plan), then the four-track report of what is not memory."""

__all__ = ["backfill", "scanner", "stage", "store"]
