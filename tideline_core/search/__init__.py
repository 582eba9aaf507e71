"""Search: keyword index, vector index, fusion, and the hybrid search service."""
