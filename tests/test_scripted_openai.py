"""The scripted OpenAI-compatible server, read by the real ``openai`` client, raw HTTP and litellm.

The server is only useful if real clients cannot tell it from the API: every test here goes
through an unmodified client (or reads the raw wire) and checks what it parsed.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from pydantic import BaseModel

from demo.scripted_openai import (
    HttpError,
    Json,
    MalformedBody,
    Reply,
    ScriptedOpenAI,
    Text,
    ToolCall,
    Turn,
    Usage,
    call_id,
    last_tool_output,
)

MESSAGES: list[Any] = [{"role": "user", "content": "Is the CSV summary right?"}]
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"passed": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["passed", "reason"],
    "additionalProperties": False,
}


class Verdict(BaseModel):
    passed: bool
    reason: str


def client(base_url: str, retries: int = 0) -> OpenAI:
    return OpenAI(base_url=base_url, api_key="test", max_retries=retries)


# --- Chat Completions ------------------------------------------------------------------------


def test_chat_completion_text_with_usage() -> None:
    turns: list[Turn] = [Reply([Text("It is right.")], usage=Usage(42, 7, cached_tokens=5))]
    with ScriptedOpenAI(turns) as url, client(url) as api:
        completion = api.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)

    assert completion.choices[0].message.content == "It is right."
    assert completion.choices[0].message.tool_calls is None
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "gpt-4o-mini"
    assert completion.usage is not None
    assert (
        completion.usage.prompt_tokens,
        completion.usage.completion_tokens,
        completion.usage.total_tokens,
    ) == (42, 7, 49)
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 5


def test_chat_completion_tool_calls() -> None:
    turns: list[Turn] = [
        [Text("Checking."), ToolCall("load_skill", {"name": "csv-summary"}), ToolCall("f", "{}")]
    ]
    with ScriptedOpenAI(turns) as url, client(url) as api:
        completion = api.chat.completions.create(model="m", messages=MESSAGES)

    message = completion.choices[0].message
    assert message.content == "Checking."
    assert [
        (c.id, c.type, c.function.name, c.function.arguments) for c in message.tool_calls or []
    ] == [
        (call_id(0, 1), "function", "load_skill", '{"name":"csv-summary"}'),
        (call_id(0, 2), "function", "f", "{}"),
    ]
    assert completion.choices[0].finish_reason == "tool_calls"


def test_streamed_chat_completion_reassembles_text_tool_calls_and_usage() -> None:
    turns: list[Turn] = [
        Reply([Text("Let me look."), ToolCall("run_script", {"path": "s.py"})], usage=Usage(9, 3))
    ]
    with ScriptedOpenAI(turns) as url, client(url) as api:
        stream = api.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    arguments = "".join(
        call.function.arguments or ""
        for c in chunks
        if c.choices
        for call in c.choices[0].delta.tool_calls or []
        if call.function is not None
    )
    ids = [
        call.id
        for c in chunks
        if c.choices
        for call in c.choices[0].delta.tool_calls or []
        if call.id
    ]
    finishes = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert (text, arguments, ids, finishes) == (
        "Let me look.",
        '{"path":"s.py"}',
        [call_id(0, 1)],
        ["tool_calls"],
    )
    usage = chunks[-1].usage
    assert chunks[-1].choices == []
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (9, 3)


def test_streamed_chat_completion_wire_ends_with_done_and_no_usage_unless_asked() -> None:
    with ScriptedOpenAI([[Text("hi")]]) as url:
        response = httpx.post(
            f"{url}/chat/completions",
            json={"model": "m", "messages": MESSAGES, "stream": True},
            timeout=10,
        )

    assert response.headers["content-type"] == "text/event-stream"
    events = [line for line in response.text.split("\n\n") if line]
    assert events[-1] == "data: [DONE]"
    payloads = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert [p["choices"][0]["delta"] for p in payloads] == [
        {"role": "assistant", "content": ""},
        {"content": "h"},
        {"content": "i"},
        {},
    ]
    assert all("usage" not in p for p in payloads)


def test_json_schema_response_format_gets_the_scripted_json() -> None:
    turns: list[Turn] = [[Json({"passed": True, "reason": "step 3 shows the total"})]]
    scripted = ScriptedOpenAI(turns)
    with scripted as url, client(url) as api:
        parsed = api.chat.completions.parse(
            model="gpt-4o-mini", messages=MESSAGES, response_format=Verdict
        )

    assert parsed.choices[0].message.parsed == Verdict(passed=True, reason="step 3 shows the total")
    (request,) = scripted.requests
    assert request.body["response_format"]["type"] == "json_schema"
    assert request.body["response_format"]["json_schema"]["name"] == "Verdict"


def test_requests_are_recorded_with_the_turn_they_got() -> None:
    scripted = ScriptedOpenAI([[Text("one")], [Text("two")]])
    with scripted as url, client(url) as api:
        api.chat.completions.create(
            model="m",
            messages=MESSAGES,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True},
            },
        )
        api.responses.create(model="m", input="second")

    first, second = scripted.requests
    assert (first.method, first.path, first.api, first.turn, first.status) == (
        "POST",
        "/v1/chat/completions",
        "chat_completions",
        0,
        200,
    )
    assert first.body["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA
    assert first.headers["authorization"] == "Bearer test"
    assert (second.path, second.api, second.turn, second.body["input"]) == (
        "/v1/responses",
        "responses",
        1,
        "second",
    )
    assert scripted.model_requests == [first, second]


def test_a_turn_can_be_a_function_of_the_request() -> None:
    def echo(body: dict[str, Any]) -> list[Text]:
        return [Text(f"tool said: {last_tool_output(body)}")]

    messages = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "total=133"},
    ]
    with ScriptedOpenAI([echo]) as url, client(url) as api:
        completion = api.chat.completions.create(model="m", messages=messages)
        exhausted = api.chat.completions.create(model="m", messages=messages)

    assert completion.choices[0].message.content == "tool said: total=133"
    assert exhausted.choices[0].message.content == "Done."


def test_the_whole_script_can_be_one_function() -> None:
    def by_model(body: dict[str, Any]) -> list[Text]:
        return [Text(f"model {body['model']}")]

    with ScriptedOpenAI(by_model) as url, client(url) as api:
        answers = [
            api.chat.completions.create(model=m, messages=MESSAGES).choices[0].message.content
            for m in ("a", "b")
        ]
    assert answers == ["model a", "model b"]


# --- Responses API ----------------------------------------------------------------------------


def test_response_with_text_and_function_calls() -> None:
    turns: list[Turn] = [
        Reply(
            [Text("Loading the skill."), ToolCall("load_skill", {"name": "csv-summary"})],
            usage=Usage(50, 8, cached_tokens=20),
        )
    ]
    with ScriptedOpenAI(turns) as url, client(url) as api:
        response = api.responses.create(model="gpt-4o", input="sum it", instructions="Be brief.")

    assert response.status == "completed"
    assert response.output_text == "Loading the skill."
    assert response.instructions == "Be brief."
    calls = [item for item in response.output if item.type == "function_call"]
    assert [(c.call_id, c.name, c.arguments, c.status) for c in calls] == [
        (call_id(0, 1), "load_skill", '{"name":"csv-summary"}', "completed")
    ]
    assert response.usage is not None
    assert (
        response.usage.input_tokens,
        response.usage.output_tokens,
        response.usage.total_tokens,
        response.usage.input_tokens_details.cached_tokens,
    ) == (50, 8, 58, 20)


def test_streamed_response_events_in_order() -> None:
    turns: list[Turn] = [[Text("Hi!"), ToolCall("run_script", {"path": "s.py"})]]
    with (
        ScriptedOpenAI(turns) as url,
        client(url) as api,
        api.responses.stream(model="gpt-4o", input="go") as stream,
    ):
        events = list(stream)
        final = stream.get_final_response()

    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert "".join(deltas) == '{"path":"s.py"}'
    assert final.output_text == "Hi!"
    assert [(i.type, getattr(i, "call_id", None)) for i in final.output] == [
        ("message", None),
        ("function_call", call_id(0, 1)),
    ]


def test_streamed_response_wire_has_named_events_and_no_done() -> None:
    with ScriptedOpenAI([[Text("ok")]]) as url:
        response = httpx.post(
            f"{url}/responses", json={"model": "m", "input": "x", "stream": True}, timeout=10
        )

    blocks = [b for b in response.text.split("\n\n") if b]
    names = [b.split("\n")[0].removeprefix("event: ") for b in blocks]
    types = [json.loads(b.split("\n")[1].removeprefix("data: "))["type"] for b in blocks]
    assert names == types
    assert names[0] == "response.created" and names[-1] == "response.completed"
    assert "data: [DONE]" not in response.text


# --- errors -----------------------------------------------------------------------------------


def test_429_with_retry_after_then_success_through_the_clients_retry() -> None:
    scripted = ScriptedOpenAI([HttpError(429, "slow down", retry_after=0.01), [Text("ok")]])
    with scripted as url, client(url, retries=2) as api:
        completion = api.chat.completions.create(model="m", messages=MESSAGES)

    assert completion.choices[0].message.content == "ok"
    assert [(r.turn, r.status) for r in scripted.requests] == [(0, 429), (1, 200)]


def test_errors_reach_the_client_as_its_own_exceptions() -> None:
    turns: list[Turn] = [
        HttpError(429, "slow down", retry_after=2),
        HttpError(500, "boom"),
        HttpError(400, "bad schema"),
    ]
    with ScriptedOpenAI(turns) as url, client(url) as api:
        with pytest.raises(openai.RateLimitError) as limited:
            api.chat.completions.create(model="m", messages=MESSAGES)
        with pytest.raises(openai.InternalServerError) as failed:
            api.responses.create(model="m", input="x")
        with pytest.raises(openai.BadRequestError) as bad:
            api.chat.completions.create(model="m", messages=MESSAGES)

    assert limited.value.response.headers["retry-after"] == "2"
    assert limited.value.body == {
        "message": "slow down",
        "type": "rate_limit_error",
        "param": None,
        "code": None,
    }
    assert (failed.value.status_code, bad.value.status_code) == (500, 400)
    assert isinstance(bad.value.body, dict) and bad.value.body["type"] == "invalid_request_error"


def test_a_malformed_body_fails_the_clients_parse() -> None:
    with (
        ScriptedOpenAI([MalformedBody()]) as url,
        client(url) as api,
        pytest.raises(json.JSONDecodeError),
    ):
        api.chat.completions.create(model="m", messages=MESSAGES)


def test_unknown_paths_and_non_json_bodies_get_errors() -> None:
    scripted = ScriptedOpenAI([])
    with scripted as url:
        missing = httpx.post(f"{url}/embeddings", json={"input": "x"}, timeout=10)
        broken = httpx.post(f"{url}/chat/completions", content=b"not json", timeout=10)
        root = httpx.post(f"{scripted.root_url}/chat/completions", json={"model": "m"}, timeout=10)

    assert (missing.status_code, missing.json()["error"]["type"]) == (404, "not_found_error")
    assert (broken.status_code, broken.json()["error"]["type"]) == (400, "invalid_request_error")
    assert root.status_code == 200  # paths without the /v1 prefix are served too
    assert [(r.api, r.status) for r in scripted.requests] == [
        ("other", 404),
        ("chat_completions", 400),
        ("chat_completions", 200),
    ]


# --- litellm ----------------------------------------------------------------------------------


class _OffMainThread:
    """litellm with each ``completion`` (and a stream's consumption) on a worker thread.

    On the main thread litellm's timing hook installs an event loop that nobody closes, and a
    later ``asyncio.run`` drops it unclosed: a ResourceWarning in whichever test runs then. On
    other threads the hook closes its own loop (the judge runtime does the same).
    """

    def __init__(self, module: Any) -> None:
        self._module = module

    def completion(self, **request: Any) -> Any:
        def call() -> Any:
            response = self._module.completion(**request)
            return list(response) if request.get("stream") else response

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(call).result()


@pytest.fixture(scope="module")
def litellm() -> Any:
    with pytest.MonkeyPatch.context() as patch:
        # Without this litellm fetches its model price list from the network at import.
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        return _OffMainThread(pytest.importorskip("litellm"))


def test_litellm_json_schema_judgement_after_a_429(litellm: Any) -> None:
    turns: list[Turn] = [
        HttpError(429, "slow down", retry_after=0.01),
        Reply([Json({"passed": False, "reason": "no step cites the script"})], usage=Usage(30, 6)),
    ]
    scripted = ScriptedOpenAI(turns)
    with scripted as url:
        response = litellm.completion(
            model="openai/gpt-4o-mini",
            api_base=url,
            api_key="test",
            messages=MESSAGES,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True},
            },
            num_retries=2,
        )

    assert json.loads(response.choices[0].message.content) == {
        "passed": False,
        "reason": "no step cites the script",
    }
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (30, 6)
    assert [r.status for r in scripted.requests] == [429, 200]
    assert scripted.requests[-1].body["response_format"]["json_schema"]["name"] == "verdict"


def test_litellm_tool_call_and_stream(litellm: Any) -> None:
    turns: list[Turn] = [
        [ToolCall("record_verdict", {"passed": True, "reason": "ok"})],
        [Text("streamed answer")],
    ]
    with ScriptedOpenAI(turns) as url:
        called = litellm.completion(
            model="openai/gpt-4o-mini",
            api_base=url,
            api_key="test",
            messages=MESSAGES,
            tools=[
                {
                    "type": "function",
                    "function": {"name": "record_verdict", "parameters": VERDICT_SCHEMA},
                }
            ],
        )
        chunks = list(
            litellm.completion(
                model="openai/gpt-4o-mini",
                api_base=url,
                api_key="test",
                messages=MESSAGES,
                stream=True,
            )
        )

    (call,) = called.choices[0].message.tool_calls
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        call_id(0, 0),
        "record_verdict",
        {"passed": True, "reason": "ok"},
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "streamed answer"
