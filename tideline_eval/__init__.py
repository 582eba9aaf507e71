"""Retrieval evaluation on real benchmarks (LoCoMo, MADial) through the real write and search paths."""

__all__ = ["cache", "dream", "locomo", "madial", "metrics", "runner"]
