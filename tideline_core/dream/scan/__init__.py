"""The scan stage: source-link backfill, then the four-track report of what is not yet memory."""

__all__ = ["backfill", "scanner", "store"]
