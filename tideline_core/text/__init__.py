"""Text as Tideline reads it: segmentation into search tokens (Chinese and English), the index and query terms made
of them, a text's token cost, and dates.

Plain functions over strings and instants, with no store and no pydantic: the search, the
injection, the dream and the LLM client all take them from here.
"""

__all__ = ["cost", "dates", "jieba_dictionary", "terms", "tokens"]
