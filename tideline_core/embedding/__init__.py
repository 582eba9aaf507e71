"""Embedders behind one interface: local e5 (the default), HTTP (bge-m3 style or OpenAI), or none.

Every embedder returns float32 rows normalized by `base.normalize`, the one normalization of the
code base; the store keeps vectors as they come.
"""

from __future__ import annotations

from tideline_core.embedding.base import Embedder, NoEmbedder, normalize
from tideline_core.embedding.http import HttpEmbedder
from tideline_core.embedding.local import LOCAL_MODEL, LocalE5Embedder

__all__ = ["LOCAL_MODEL", "Embedder", "HttpEmbedder", "LocalE5Embedder", "NoEmbedder", "normalize"]
