"""Retrieval evaluation on real benchmarks (LoCoMo, MADial, MemDaily) through the real write and search paths."""

__all__ = ["cache", "dream", "locomo", "madial", "memdaily", "metrics", "runner"]
