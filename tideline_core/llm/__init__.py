"""The LLM that dream stages ask for structured JSON: an OpenAI-compatible HTTP client and the token budget.

A stage builds a `ChatPrompt`, asks a `ChatLLM` for an answer validated against a pydantic schema,
and spends from a `TokenBudget`; `HttpChatLLM` is the one implementation, built by composition
with `llm_from_settings`.
"""

from tideline_core.llm.budget import TokenBudget
from tideline_core.llm.client import Answer, ChatLLM, ChatPrompt, HttpChatLLM, LLMSettings, Usage, llm_from_settings

__all__ = ["Answer", "ChatLLM", "ChatPrompt", "HttpChatLLM", "LLMSettings", "TokenBudget", "Usage", "llm_from_settings"]
