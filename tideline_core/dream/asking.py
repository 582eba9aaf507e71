"""The LLM as one stage run uses it: prompts rendered from `prompts/`, the run's token budget, the tokens it spent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

import prompts
from tideline_core.dream.answers import answer_schema
from tideline_core.llm import ChatLLM, ChatPrompt, TokenBudget

T = TypeVar("T", bound=BaseModel)


class StageLLM:
    """Asks the LLM for one stage run; counts what every answer cost, failed ones included."""

    def __init__(self, llm: ChatLLM, budget: TokenBudget) -> None:
        self.llm = llm
        self.budget = budget
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.questions = 0
        self.versions: dict[str, str] = {}  # template → version, recorded with the run

    def __call__(self, template: str, schema: type[T], data: Mapping[str, Any], **text: str) -> T:
        """The answer to `template` rendered with `data` (quoted as data) and `text`, valid for `schema`.

        Raises BudgetExhausted before sending when the run's or the day's budget cannot cover it,
        LLMOutputInvalid when the answer breaks the schema after the one repair, LLMUnavailable.
        """
        rendered = prompts.render(template, schema=answer_schema(schema), data=data, **text)
        self.versions[template] = rendered.version
        self.questions += 1
        answer = self.llm.ask(
            ChatPrompt(rendered.name, rendered.version, rendered.system, rendered.user), schema, self.budget
        )
        self.prompt_tokens += answer.usage.prompt_tokens
        self.completion_tokens += answer.usage.completion_tokens
        return answer.value

    @property
    def model(self) -> str:
        return self.llm.model

    def tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens this run spent; what failed answers cost counts as prompt tokens."""
        unaccounted = max(0, self.budget.spent - self.prompt_tokens - self.completion_tokens)
        return self.prompt_tokens + unaccounted, self.completion_tokens
