"""Search: the in-memory keyword (BM25) and vector indexes, fusion, and the hybrid searcher over them.

Pure parts: `bm25` (the index structure and text analysis), `fusion`, `query` (terms and
embedding texts of a question or a dialogue), `when` (dates a query names). `keyword_index` and
`vector_index` keep them fresh from the store; `hybrid` ranks with all of them.
"""

from tideline_core.search.hybrid import HybridSearch, SearchHit, SearchOutcome
from tideline_core.search.keyword_index import KeywordIndex
from tideline_core.search.vector_index import VectorIndex

__all__ = ["HybridSearch", "KeywordIndex", "SearchHit", "SearchOutcome", "VectorIndex"]
