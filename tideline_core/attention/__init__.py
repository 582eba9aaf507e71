"""Attention: every retrieval hit logged (by the ingest worker), and the heatmap of where hits land."""

from tideline_core.attention.heatmap import Heatmap, Hit, heatmap, to_markdown
from tideline_core.attention.store import hits_since, log_hits

__all__ = ["Heatmap", "Hit", "heatmap", "hits_since", "log_hits", "to_markdown"]
