"""The LLM client against a real OpenAI-compatible server on loopback (tests/llm_server.py), over real httpx."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llm_server import ScriptedLLM
from pydantic import BaseModel, Field

from tideline_core.errors import BudgetExhausted, ConfigurationError, LLMOutputInvalid, LLMUnavailable
from tideline_core.llm import ChatLLM, ChatPrompt, HttpChatLLM, TokenBudget, llm_from_settings
from tideline_core.settings import Settings
from tideline_core.text.cost import estimate_tokens


class Verdict(BaseModel):
    summary: str
    score: int = Field(ge=1, le=5)


PROMPT = ChatPrompt(name="judge", version="1", system="judge\nYou rate notes.", user="Rate: the sea is blue.")
GOOD = {"summary": "a fact about the sea", "score": 4}
BAD_SCORE = {"summary": "a fact about the sea", "score": 9}


class WaitlessLLM(HttpChatLLM):
    """The client with its waits between attempts recorded in `waits` instead of slept."""

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, "test-model", **options)
        self.waits: list[float] = []
        self._sleep = self.waits.append


MakeClient = Callable[..., WaitlessLLM]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def make_client() -> Iterator[MakeClient]:
    clients: list[WaitlessLLM] = []

    def make(url: str, **options: Any) -> WaitlessLLM:
        client = WaitlessLLM(url, **{"max_attempts": 3, "backoff_base": 0.001, "backoff_cap": 5.0, **options})
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def budget(run_limit: int = 60_000, day_limit: int = 300_000, day_spent_before: int = 0) -> TokenBudget:
    return TokenBudget(run_limit=run_limit, day_limit=day_limit, day_spent_before=day_spent_before)


def test_a_valid_answer_is_parsed_and_its_usage_charged(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.reply(GOOD, usage=(120, 30))
    spend = budget()

    answer = make_client(llm.url).ask(PROMPT, Verdict, spend)

    assert answer.value == Verdict(summary="a fact about the sea", score=4)
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens, answer.usage.total) == (120, 30, 150)
    assert (answer.requests, answer.repaired) == (1, False)
    assert spend.spent == 150


def test_the_request_carries_model_messages_settings_and_the_json_schema(
    llm: ScriptedLLM, make_client: MakeClient
) -> None:
    llm.reply(GOOD)
    make_client(llm.url, temperature=0.3, max_output_tokens=800).ask(PROMPT, Verdict, budget())

    (body,) = llm.requests
    assert body["model"] == "test-model"
    assert body["messages"] == [{"role": "system", "content": PROMPT.system}, {"role": "user", "content": PROMPT.user}]
    assert (body["temperature"], body["max_tokens"]) == (0.3, 800)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "judge", "schema": Verdict.model_json_schema(), "strict": True},
    }


def test_an_http_chat_llm_is_a_chat_llm(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.reply(GOOD)
    client: ChatLLM = make_client(llm.url)
    assert client.ask(PROMPT, Verdict, budget()).value.score == 4
    assert client.model == "test-model"


@pytest.mark.parametrize(
    "content",
    [
        '```json\n{"summary": "a fact about the sea", "score": 4}\n```',
        'Here is my rating:\n```\n{"summary": "a fact about the sea", "score": 4}\n```\nHope it helps.',
        'Sure! {"summary": "a fact about the sea", "score": 4} That is all.',
    ],
    ids=["fenced", "fenced-with-prose", "prose-around-an-object"],
)
def test_json_wrapped_in_a_fence_or_prose_is_accepted_without_a_repair(
    llm: ScriptedLLM, make_client: MakeClient, content: str
) -> None:
    llm.reply(content)
    answer = make_client(llm.url).ask(PROMPT, Verdict, budget())
    assert answer.value.score == 4
    assert not answer.repaired


def test_invalid_json_gets_one_repair_request_that_names_the_errors(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.reply('{"summary": "a fact about', usage=(100, 10))
    llm.reply(GOOD, usage=(180, 20))
    spend = budget()

    answer = make_client(llm.url).ask(PROMPT, Verdict, spend)

    assert answer.value.score == 4
    assert (answer.requests, answer.repaired, answer.usage.total) == (2, True, 310)
    assert spend.spent == 310
    repair = llm.requests[1]["messages"]
    assert repair[:2] == llm.requests[0]["messages"]
    assert repair[2] == {"role": "assistant", "content": '{"summary": "a fact about'}
    assert repair[3]["role"] == "user"
    assert "Invalid JSON" in repair[3]["content"]
    assert "only the corrected JSON" in repair[3]["content"]


def test_a_schema_violation_triggers_a_repair_naming_the_field(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.reply(BAD_SCORE)
    llm.reply(GOOD)

    answer = make_client(llm.url).ask(PROMPT, Verdict, budget())

    assert (answer.value.score, answer.repaired) == (4, True)
    errors = llm.requests[1]["messages"][-1]["content"]
    assert "- score: Input should be less than or equal to 5" in errors


def test_an_answer_still_invalid_after_the_repair_raises_after_exactly_two_requests(
    llm: ScriptedLLM, make_client: MakeClient
) -> None:
    llm.default("I would rather not answer in JSON.")
    spend = budget()

    with pytest.raises(LLMOutputInvalid, match=r"prompt 'judge' .* after one repair request"):
        make_client(llm.url).ask(PROMPT, Verdict, spend)

    assert len(llm.requests) == 2
    assert spend.spent == 300  # both answers cost tokens, even though neither was usable


def test_a_repair_the_budget_cannot_cover_is_not_sent(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.reply(BAD_SCORE, usage=(1_500, 500))
    llm.reply(GOOD)
    spend = budget(run_limit=3_000)

    with pytest.raises(BudgetExhausted, match="run token budget"):
        make_client(llm.url, max_output_tokens=1_000).ask(PROMPT, Verdict, spend)

    assert len(llm.requests) == 1
    assert spend.spent == 2_000


def test_429_with_retry_after_waits_that_long_then_succeeds(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.fail(429, '{"error": {"message": "slow down"}}', headers={"Retry-After": "2"})
    llm.reply(GOOD)
    client = make_client(llm.url)

    answer = client.ask(PROMPT, Verdict, budget())

    assert answer.value.score == 4
    assert answer.requests == 1  # only answered requests count
    assert len(llm.requests) == 2
    assert client.waits == [2.0]


def test_a_retry_after_longer_than_the_cap_waits_only_the_cap(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.fail(429, headers={"Retry-After": "3600"})
    llm.reply(GOOD)
    client = make_client(llm.url, backoff_cap=1.5)

    client.ask(PROMPT, Verdict, budget())

    assert client.waits == [1.5]


def test_a_503_every_time_gives_up_after_max_attempts_with_backoff(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.default(GOOD)
    for _ in range(4):
        llm.fail(503, "upstream overloaded")
    client = make_client(llm.url, max_attempts=4, backoff_base=0.01, backoff_cap=0.025)
    spend = budget()

    with pytest.raises(LLMUnavailable, match=r"failed 4 attempt\(s\) at prompt 'judge'; last: HTTP 503: upstream"):
        client.ask(PROMPT, Verdict, spend)

    assert len(llm.requests) == 4
    waits = client.waits
    assert len(waits) == 3  # none after the last attempt
    assert 0.01 <= waits[0] <= 0.011 and 0.02 <= waits[1] <= 0.022 and waits[2] == 0.025
    assert spend.spent == 0


def test_an_endpoint_nobody_listens_on_is_unavailable(make_client: MakeClient) -> None:
    with ScriptedLLM() as gone:
        url = gone.url
    client = make_client(url, max_attempts=2)

    with pytest.raises(LLMUnavailable, match="ConnectError"):
        client.ask(PROMPT, Verdict, budget())

    assert len(client.waits) == 1


def test_a_success_without_a_completion_in_it_is_retried(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.fail(200, '{"detail": "ok"}')  # a 200 holding no choices, as a misbehaving proxy might send
    llm.reply(GOOD)

    answer = make_client(llm.url).ask(PROMPT, Verdict, budget())

    assert answer.value.score == 4
    assert len(llm.requests) == 2


def test_401_is_a_configuration_error_and_not_retried(make_client: MakeClient) -> None:
    with ScriptedLLM(api_key="right-key") as llm:
        llm.default(GOOD)
        client = make_client(llm.url, api_key="wrong-key")
        with pytest.raises(ConfigurationError, match=r"HTTP 401 to prompt 'judge'.*invalid api key"):
            client.ask(PROMPT, Verdict, budget())
        assert len(llm.requests) == 1
        assert client.waits == []


def test_the_api_key_is_sent_as_a_bearer_token(make_client: MakeClient) -> None:
    with ScriptedLLM(api_key="sk-secret") as llm:
        llm.default(GOOD)
        assert make_client(llm.url, api_key="sk-secret").ask(PROMPT, Verdict, budget()).value.score == 4
        with pytest.raises(ConfigurationError, match="401"):
            make_client(llm.url).ask(PROMPT, Verdict, budget())


def test_the_api_key_never_reaches_the_log(
    llm: ScriptedLLM, make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    llm.reply(BAD_SCORE)
    llm.reply(GOOD)
    with caplog.at_level(logging.DEBUG):
        make_client(llm.url, api_key="sk-do-not-log").ask(PROMPT, Verdict, budget())
    assert "prompt=judge status=200 tokens=100+50" in caplog.text
    assert "sk-do-not-log" not in caplog.text


def test_a_404_for_an_unknown_model_is_a_configuration_error_quoting_the_body(
    llm: ScriptedLLM, make_client: MakeClient
) -> None:
    llm.fail(404, '{"error": {"message": "model test-model does not exist"}}')
    with pytest.raises(ConfigurationError, match=r"HTTP 404.*model test-model does not exist"):
        make_client(llm.url).ask(PROMPT, Verdict, budget())
    assert len(llm.requests) == 1


def test_a_400_about_response_format_falls_back_to_json_object_for_good(
    llm: ScriptedLLM, make_client: MakeClient
) -> None:
    llm.fail(400, '{"error": {"message": "response_format type json_schema is not supported"}}')
    llm.reply(GOOD)
    llm.reply(GOOD)
    client = make_client(llm.url)

    first = client.ask(PROMPT, Verdict, budget())
    second = client.ask(PROMPT, Verdict, budget())

    assert (first.value.score, first.requests, second.value.score) == (4, 1, 4)
    formats = [body["response_format"] for body in llm.requests]
    assert formats[0]["type"] == "json_schema"
    assert formats[1:] == [{"type": "json_object"}, {"type": "json_object"}]
    assert llm.requests[1]["messages"] == llm.requests[0]["messages"]


def test_a_400_about_something_else_is_a_configuration_error(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.fail(400, '{"error": {"message": "messages must not be empty"}}')
    with pytest.raises(ConfigurationError, match="HTTP 400"):
        make_client(llm.url).ask(PROMPT, Verdict, budget())
    assert len(llm.requests) == 1


def test_a_budget_too_small_for_the_request_sends_nothing(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.default(GOOD)
    spend = budget(run_limit=1_500)

    with pytest.raises(BudgetExhausted, match="run token budget"):
        make_client(llm.url, max_output_tokens=2_000).ask(PROMPT, Verdict, spend)

    assert llm.requests == []
    assert spend.spent == 0


def test_the_day_budget_counts_what_earlier_runs_spent_today(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.default(GOOD)
    client = make_client(llm.url, max_output_tokens=500)

    with pytest.raises(BudgetExhausted, match="day token budget"):
        client.ask(PROMPT, Verdict, budget(day_limit=10_000, day_spent_before=9_600))
    assert llm.requests == []

    assert client.ask(PROMPT, Verdict, budget(day_limit=10_000, day_spent_before=9_000)).value.score == 4


def test_usage_missing_from_the_answer_is_estimated_and_charged(llm: ScriptedLLM, make_client: MakeClient) -> None:
    content = json.dumps(GOOD)
    llm.reply(content, usage=None)
    spend = budget()

    answer = make_client(llm.url).ask(PROMPT, Verdict, spend)

    # A rough count by size, near the calibrated estimate.
    assert 0.75 * estimate_tokens(content) <= answer.usage.completion_tokens <= 1.5 * estimate_tokens(content)
    prompt_text = f"{PROMPT.system}\n{PROMPT.user}"
    assert 0.75 * estimate_tokens(prompt_text) <= answer.usage.prompt_tokens <= 1.5 * estimate_tokens(prompt_text)
    assert spend.spent == answer.usage.total


@pytest.mark.parametrize(
    "suffix", ["", "/", "/v1", "/v1/", "/v1/chat/completions"], ids=["host", "host-slash", "v1", "v1-slash", "full"]
)
def test_every_spelling_of_the_url_reaches_the_chat_completions_endpoint(
    llm: ScriptedLLM, make_client: MakeClient, suffix: str
) -> None:
    llm.default(GOOD)
    host = llm.url.removesuffix("/v1")
    make_client(host + suffix).ask(PROMPT, Verdict, budget())
    assert llm.paths == ["/v1/chat/completions"]


def test_by_prompt_answers_ahead_of_the_queue(llm: ScriptedLLM, make_client: MakeClient) -> None:
    llm.reply(BAD_SCORE)
    llm.by_prompt("judge", lambda body: {"summary": body["messages"][1]["content"], "score": 2})
    answer = make_client(llm.url).ask(PROMPT, Verdict, budget())
    assert answer.value == Verdict(summary=PROMPT.user, score=2)


def test_settings_without_a_url_or_a_model_give_no_llm() -> None:
    assert llm_from_settings(Settings(llm_url=None, llm_model="m")) is None
    assert llm_from_settings(Settings(llm_url="http://127.0.0.1:9/v1", llm_model=None)) is None


def test_settings_with_a_url_and_a_model_give_a_client_that_uses_them(llm: ScriptedLLM) -> None:
    llm.default(GOOD)
    settings = Settings(llm_url=llm.url, llm_model="qwen", llm_api_key="k", llm_max_attempts=2, llm_temperature=0.0)
    client = llm_from_settings(settings)
    assert client is not None
    with client:
        client.ask(PROMPT, Verdict, budget())
    assert (client.url, client.max_attempts) == (llm.url + "/chat/completions", 2)
    assert (llm.requests[0]["model"], llm.requests[0]["temperature"]) == ("qwen", 0.0)
