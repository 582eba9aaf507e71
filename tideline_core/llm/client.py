"""Asking an OpenAI-compatible chat endpoint for JSON that fits a pydantic schema: retries, one repair, token budget.

What goes wrong, and what the caller sees:

- the endpoint answers 429 or 5xx, times out or cannot be reached: retried with exponential backoff
  (honouring Retry-After) up to `max_attempts` times, then LLMUnavailable (a TransientError);
- it answers another 4xx (a wrong key, model or URL): ConfigurationError at once, since retrying
  cannot fix it; a 400 about `response_format` is the exception, retried once with plain JSON mode;
- the answer is not JSON for the schema: one repair request listing the errors, then LLMOutputInvalid;
- the run's or the day's token budget cannot cover the next request: BudgetExhausted, nothing sent.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import pydantic

from tideline_core.errors import ConfigurationError, LLMOutputInvalid, LLMUnavailable
from tideline_core.llm.budget import TokenBudget
from tideline_core.text.cost import estimate_tokens

if TYPE_CHECKING:
    import httpx

T = TypeVar("T", bound=pydantic.BaseModel)

logger = logging.getLogger(__name__)

REPAIR_ERRORS_LIMIT = 2_000  # characters of validation errors sent back in the repair request
BODY_EXCERPT = 300  # characters of an error answer quoted in exceptions
_TRANSIENT_STATUS = frozenset({408, 429})
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_ABOUT_RESPONSE_FORMAT = re.compile(r"response_format|json_schema", re.IGNORECASE)


@dataclass(frozen=True)
class ChatPrompt:
    """What a stage sends; built elsewhere from the prompts/ templates."""

    name: str  # e.g. "solidify": the json_schema name, and how errors and logs name the request
    version: str  # template version, recorded by callers
    system: str
    user: str


@dataclass(frozen=True)
class Usage:
    """Tokens as the endpoint reports them (or as estimated when it does not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


@dataclass(frozen=True)
class Answer(Generic[T]):
    """A validated answer and what it cost."""

    value: T
    usage: Usage  # summed over every request this answer took (a repair included)
    requests: int  # HTTP requests that got a 200 answer (1, or 2 after a repair)
    repaired: bool


class ChatLLM(Protocol):
    """What a stage asks of an LLM: one prompt in, one answer validated against `schema` out."""

    model: str

    def ask(self, prompt: ChatPrompt, schema: type[T], budget: TokenBudget) -> Answer[T]: ...


class LLMSettings(Protocol):
    """The part of the settings `llm_from_settings` reads (the core names no settings class below compose)."""

    @property
    def llm_url(self) -> str | None: ...
    @property
    def llm_model(self) -> str | None: ...
    @property
    def llm_api_key(self) -> str | None: ...
    @property
    def llm_timeout(self) -> float: ...
    @property
    def llm_max_attempts(self) -> int: ...
    @property
    def llm_temperature(self) -> float: ...


@dataclass(frozen=True)
class _Reply:
    content: str
    usage: Usage
    truncated: bool  # the endpoint stopped at max_tokens


def chat_completions_url(url: str) -> str:
    """`http://host:8000`, `.../v1` or `.../v1/chat/completions` → the chat completions endpoint."""
    base = url.strip().rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if base.endswith("/v1"):
        return f"{base}/chat/completions"
    return f"{base}/v1/chat/completions"


def json_text(content: str) -> str:
    """The JSON object in an answer: inside a ```json fence if there is one, from its first `{` to its last `}`."""
    fenced = _FENCE.search(content)
    text = fenced.group(1) if fenced else content
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end < start:
        return text.strip()  # no object at all: validation says so
    return text[start : end + 1]


def describe_errors(error: pydantic.ValidationError, limit: int = REPAIR_ERRORS_LIMIT) -> str:
    """Validation errors as short `- field.path: message` lines, cut to about `limit` characters."""
    lines = []
    for item in error.errors(include_url=False):
        path = ".".join(str(part) for part in item["loc"]) or "(root)"
        lines.append(f"- {path}: {item['msg']}")
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class HttpChatLLM:
    """An OpenAI-compatible `/v1/chat/completions` endpoint asked for structured JSON output."""

    # Between attempts; a test replaces it on the instance to see the waits without waiting.
    _sleep: Callable[[float], None] = staticmethod(time.sleep)

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_attempts: int = 4,
        temperature: float = 0.2,
        max_output_tokens: int = 2_000,
        backoff_base: float = 0.5,
        backoff_cap: float = 20.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ConfigurationError(f"LLM max_attempts must be at least 1, got {max_attempts}")
        self.url = chat_completions_url(url)
        self.model = model
        self.max_attempts = max_attempts
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        # Some servers reject json_schema output; after the first such 400 this client asks for json_object.
        self.structured_output = True
        import httpx  # here, not above: every process builds its LLM, few of them ask it anything

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def __enter__(self) -> HttpChatLLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def ask(self, prompt: ChatPrompt, schema: type[T], budget: TokenBudget) -> Answer[T]:
        """The answer to `prompt`, validated against `schema`; one repair request when the first does not fit."""
        messages = [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}]
        first = self._complete(prompt, schema, messages, budget)
        try:
            return Answer(self._parse(first, schema), first.usage, requests=1, repaired=False)
        except pydantic.ValidationError as error:
            problems = describe_errors(error)
        logger.info("llm %s: answer did not fit its schema, asking once for a repair", prompt.name)
        repair = [
            *messages,
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": _repair_request(problems, first.truncated, self.max_output_tokens)},
        ]
        second = self._complete(prompt, schema, repair, budget)
        usage = first.usage + second.usage
        try:
            return Answer(self._parse(second, schema), usage, requests=2, repaired=True)
        except pydantic.ValidationError as error:
            raise LLMOutputInvalid(
                f"LLM answer to prompt {prompt.name!r} (version {prompt.version}) did not fit its schema "
                f"{schema.__name__} after one repair request:\n{describe_errors(error, 500)}"
            ) from error

    @staticmethod
    def _parse(reply: _Reply, schema: type[T]) -> T:
        return schema.model_validate_json(json_text(reply.content))

    def _body(
        self, prompt: ChatPrompt, schema: type[pydantic.BaseModel], messages: list[dict[str, str]]
    ) -> dict[str, Any]:
        if self.structured_output:
            response_format: dict[str, Any] = {
                "type": "json_schema",
                "json_schema": {"name": prompt.name, "schema": schema.model_json_schema(), "strict": True},
            }
        else:
            response_format = {"type": "json_object"}
        return {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_output_tokens,
            "response_format": response_format,
        }

    def _complete(
        self, prompt: ChatPrompt, schema: type[pydantic.BaseModel], messages: list[dict[str, str]], budget: TokenBudget
    ) -> _Reply:
        """One answered request (retries included), charged to `budget`."""
        prompt_text = "\n".join(message["content"] for message in messages)
        budget.check(estimate_tokens(prompt_text) + self.max_output_tokens)
        while True:
            structured = self.structured_output
            response, payload = self._post(prompt, self._body(prompt, schema, messages))
            if payload is not None:
                reply = _reply(payload, prompt_text)
                budget.charge(reply.usage.total)
                return reply
            if response.status_code == 400 and structured and _ABOUT_RESPONSE_FORMAT.search(response.text):
                logger.warning(
                    "llm endpoint %s rejected response_format json_schema; using json_object from now on", self.url
                )
                self.structured_output = False
                continue
            raise ConfigurationError(
                f"LLM endpoint {self.url} answered HTTP {response.status_code} to prompt {prompt.name!r} "
                f"(check the LLM URL, model and API key): {response.text[:BODY_EXCERPT]}"
            )

    def _post(self, prompt: ChatPrompt, body: dict[str, Any]) -> tuple[httpx.Response, dict[str, Any] | None]:
        """The first answer that is neither 429, 5xx nor a transport failure, with its chat completion if it is one.

        LLMUnavailable after the last attempt. The attempts are tenacity's loop; what is transient, and
        how long to wait (Retry-After first), is decided here.
        """
        import tenacity

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_attempts),
            retry=tenacity.retry_if_exception_type(_Transient),
            wait=lambda state: self._delay(state.attempt_number - 1, _retry_after(state)),
            sleep=self._sleep,
            reraise=True,
        )
        try:
            return retrying(self._attempt, prompt, body)
        except _Transient as last:
            raise LLMUnavailable(
                f"LLM endpoint {self.url} failed {self.max_attempts} attempt(s) at prompt {prompt.name!r}; last: {last}"
            ) from None

    def _attempt(self, prompt: ChatPrompt, body: dict[str, Any]) -> tuple[httpx.Response, dict[str, Any] | None]:
        """One request: its answer, or _Transient saying why it is worth another try."""
        import httpx

        started = time.monotonic()
        try:
            response = self._client.post(self.url, json=body)
        except httpx.UnsupportedProtocol as error:
            raise ConfigurationError(f"LLM URL {self.url} is not an http(s) URL: {error}") from error
        except httpx.TransportError as error:
            self._log(prompt, type(error).__name__, None, started)
            raise _Transient(f"{type(error).__name__}: {error}") from error
        status = response.status_code
        payload = _completion(response) if 200 <= status < 300 else None
        self._log(prompt, str(status), payload, started)
        if 200 <= status < 300 and payload is not None:
            return response, payload
        if status < 300:
            # A success without a chat completion in it is a proxy or server hiccup, retried like a 5xx.
            raise _Transient(f"HTTP {status} without choices[0].message: {response.text[:BODY_EXCERPT]}")
        if status in _TRANSIENT_STATUS or status >= 500:
            raise _Transient(
                f"HTTP {status}: {response.text[:BODY_EXCERPT]}", _seconds(response.headers.get("Retry-After"))
            )
        return response, None

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(self.backoff_cap, retry_after)
        delay = min(self.backoff_cap, self.backoff_base * 2**attempt)
        # A little jitter, so workers that failed together do not all come back together.
        return min(self.backoff_cap, delay * random.uniform(1.0, 1.1))

    def _log(self, prompt: ChatPrompt, status: str, payload: dict[str, Any] | None, started: float) -> None:
        usage = payload.get("usage") if payload is not None else None
        tokens = "-"
        if isinstance(usage, dict):
            tokens = f"{usage.get('prompt_tokens', '?')}+{usage.get('completion_tokens', '?')}"
        logger.info(
            "llm request prompt=%s status=%s tokens=%s duration=%.2fs",
            prompt.name,
            status,
            tokens,
            time.monotonic() - started,
        )


class _Transient(Exception):
    """An attempt worth repeating (429, 5xx, no answer), with the wait the endpoint asked for, if it did."""

    def __init__(self, why: str, retry_after: float | None = None) -> None:
        super().__init__(why)
        self.retry_after = retry_after


def _retry_after(state: Any) -> float | None:
    failed = state.outcome.exception() if state.outcome is not None else None
    return failed.retry_after if isinstance(failed, _Transient) else None


def _repair_request(problems: str, truncated: bool, max_tokens: int) -> str:
    cut = f"\nYour answer was cut off at {max_tokens} tokens: answer more briefly." if truncated else ""
    return (
        "Your answer could not be used: it is not valid JSON for the required schema.\n"
        f"Errors:\n{problems}{cut}\n\n"
        "Reply with only the corrected JSON object, following the schema, and nothing else."
    )


def _seconds(header: str | None) -> float | None:
    """A Retry-After header in seconds; None for an absent one or an HTTP date (the backoff applies then)."""
    if header is None:
        return None
    try:
        value = float(header)
    except ValueError:
        return None
    return max(0.0, value)


def _completion(response: httpx.Response) -> dict[str, Any] | None:
    """The answer's body when it holds a chat completion (`choices[0].message`), else None."""
    try:
        body = response.json()
        message = body["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return body if isinstance(body, dict) and isinstance(message, dict) else None


def _reply(payload: dict[str, Any], prompt_text: str) -> _Reply:
    choice = payload["choices"][0]
    content = choice["message"].get("content")
    content = content if isinstance(content, str) else ""
    reported = payload.get("usage")
    reported = reported if isinstance(reported, dict) else {}
    prompt_tokens = reported.get("prompt_tokens")
    completion_tokens = reported.get("completion_tokens")
    # Without a reported count, estimate: the budget must still see what the request cost.
    usage = Usage(
        prompt_tokens if isinstance(prompt_tokens, int) else estimate_tokens(prompt_text),
        completion_tokens if isinstance(completion_tokens, int) else estimate_tokens(content),
    )
    return _Reply(content=content, usage=usage, truncated=choice.get("finish_reason") == "length")


def llm_from_settings(settings: LLMSettings) -> HttpChatLLM | None:
    """The LLM the settings name (`tideline_core.settings.Settings` fits), or None without a URL and a model."""
    if not settings.llm_url or not settings.llm_model:
        return None
    return HttpChatLLM(
        settings.llm_url,
        settings.llm_model,
        api_key=settings.llm_api_key,
        timeout=settings.llm_timeout,
        max_attempts=settings.llm_max_attempts,
        temperature=settings.llm_temperature,
    )
