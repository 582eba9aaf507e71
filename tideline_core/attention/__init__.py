"""Attention: every retrieval hit logged (by the ingest worker), and the heatmap of where hits land.

`store` logs the hits and reads them back, `heatmap` (pure) attributes them to clusters. Each is
imported by name: this package re-exports nothing, so what only logs a hit (a hook showing a block)
does not load the heatmap.
"""

__all__ = ["heatmap", "store"]
