"""The recluster stage: topic clusters (jieba keywords) and soft clusters (k-means over the embeddings)."""

__all__ = ["soft", "stage", "store", "topics"]
