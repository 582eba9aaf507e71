"""Retrieval evaluation on real conversation-memory benchmarks (LoCoMo, MADial) through the real write and search paths."""
