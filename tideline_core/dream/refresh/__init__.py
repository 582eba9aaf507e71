"""The refresh stage: recurrence from tags and weights from the formula, with anti-inflation, for a whole agent."""

__all__ = ["reweigh", "stage", "store"]
