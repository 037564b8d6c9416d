"""Reading the OpenAI Agents SDK's span data: times, model output, usage, tool calls, errors.

Everything here reads by attribute or key only, so :mod:`skillsight.instrumentation` never
imports ``agents`` outside :mod:`skillsight.instrumentation.openai_agents`. The SDK's data is
either its own span-data objects, OpenAI response models (read through ``model_dump``), or plain
dicts of Chat Completions messages.
"""

from __future__ import annotations

import calendar
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from skillsight.instrumentation._spans import Usage

__all__ = [
    "Call",
    "ModelOutput",
    "SdkSpan",
    "error_text",
    "iso_to_ns",
    "json_object",
    "model_output",
    "output_content",
    "plain",
    "plain_list",
    "user_text",
]

SdkSpan = Any
"""An ``agents.tracing.Span``; read by attribute only, so this module never imports ``agents``."""

# Output items of the Responses API that the agent runs locally (the turn goes on after them);
# hosted tools (web search, file search, code interpreter...) do not.
LOCAL_CALL_TYPES = frozenset(
    {
        "function_call",
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "custom_tool_call",
        "mcp_approval_request",
    }
)


def iso_to_ns(value: str | None) -> int | None:
    """Nanoseconds since the epoch of the SDK's ISO 8601 timestamps (None stays None)."""
    if not value:
        return None
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return calendar.timegm(moment.utctimetuple()) * 1_000_000_000 + moment.microsecond * 1_000


def plain(value: Any) -> Any:
    """Pydantic models (the SDK's responses) as plain data; everything else unchanged."""
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else value


def json_object(text: Any) -> dict[str, Any] | None:
    if isinstance(text, dict):
        return text
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def error_text(span: SdkSpan) -> str | None:
    error = getattr(span, "error", None)
    if not error:
        return None
    message = str(error.get("message") or "error")
    data = error.get("data")
    return f"{message}: {json.dumps(data, default=str)}" if data else message


@dataclass(frozen=True)
class Call:
    """A tool call the model asked for: matched to the function span that runs it."""

    name: str
    arguments: dict[str, Any] | None
    call_id: str


@dataclass(frozen=True)
class ModelOutput:
    """What one model call answered, read from the SDK's response or generation data."""

    model: str | None = None
    usage: Usage | None = None
    calls: tuple[Call, ...] = ()
    asks_for_tools: bool = False
    text: str | None = None
    known: bool = False
    """Whether the output was visible (the SDK hides it when sensitive data is off)."""


def read_usage(raw: Any) -> Usage | None:
    usage = plain(raw)
    if not isinstance(usage, Mapping):
        return None
    details = usage.get("input_tokens_details") or usage.get("prompt_tokens_details") or {}

    def count(*keys: str, source: Mapping[str, Any] = usage) -> int | None:
        for key in keys:
            value = source.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return int(value)
        return None

    return Usage(
        input_tokens=count("input_tokens", "prompt_tokens"),
        output_tokens=count("output_tokens", "completion_tokens"),
        cache_read_input_tokens=count("cached_tokens", source=details)
        if isinstance(details, Mapping)
        else None,
    )


def read_items(items: Iterable[Any]) -> tuple[list[Call], bool, list[str]]:
    """Tool calls, whether any asks the agent to act, and texts of output items or messages."""
    calls: list[Call] = []
    acts = False
    texts: list[str] = []
    for raw in items:
        item = plain(raw)
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "function_call":
            calls.append(
                Call(
                    str(item.get("name") or ""),
                    json_object(item.get("arguments")),
                    str(item.get("call_id") or item.get("id") or ""),
                )
            )
        if kind in LOCAL_CALL_TYPES:
            acts = True
        for call in item.get("tool_calls") or []:  # a Chat Completions message
            if not isinstance(call, Mapping):
                continue
            function = call.get("function") or {}
            calls.append(
                Call(
                    str(function.get("name") or ""),
                    json_object(function.get("arguments")),
                    str(call.get("id") or ""),
                )
            )
            acts = True
        if isinstance(item.get("output"), list):  # a whole Response dumped by the SDK
            inner_calls, inner_acts, inner_texts = read_items(item["output"])
            calls += inner_calls
            acts = acts or inner_acts
            texts += inner_texts
        content = item.get("content")
        if kind in (None, "message") and item.get("role", "assistant") == "assistant":
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [
                    str(part.get("text"))
                    for part in content
                    if isinstance(part, Mapping) and part.get("type") == "output_text"
                ]
    return calls, acts, texts


def model_output(data: Any) -> ModelOutput:
    """Read a ``ResponseSpanData`` or ``GenerationSpanData``."""
    usage = read_usage(getattr(data, "usage", None))
    response = plain(getattr(data, "response", None))
    if isinstance(response, Mapping):
        calls, acts, texts = read_items(response.get("output") or [])
        return ModelOutput(
            model=response.get("model"),
            usage=usage or read_usage(response.get("usage")),
            calls=tuple(calls),
            asks_for_tools=acts,
            text="".join(texts) or None,
            known=True,
        )
    output = getattr(data, "output", None)
    model = getattr(data, "model", None)
    if isinstance(output, Sequence) and not isinstance(output, str):
        calls, acts, texts = read_items(output)
        return ModelOutput(
            model=model,
            usage=usage,
            calls=tuple(calls),
            asks_for_tools=acts,
            text="".join(texts) or None,
            known=True,
        )
    return ModelOutput(model=model, usage=usage)


def user_text(model_input: Any) -> str | None:
    """The last user message of a model input (a string or a list of items/messages)."""
    if isinstance(model_input, str):
        return model_input
    if not isinstance(model_input, Sequence):
        return None
    for raw in reversed(model_input):
        item = plain(raw)
        if not isinstance(item, Mapping) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            texts = [str(p.get("text")) for p in content if isinstance(p, Mapping) and "text" in p]
            return "\n".join(texts) or None
    return None


def plain_list(value: Any) -> Any:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    return value


def output_content(data: Any) -> Any:
    """The model's answer to capture: the response's output items, or the generation output."""
    response = plain(getattr(data, "response", None))
    if isinstance(response, Mapping):
        return response.get("output")
    return plain_list(getattr(data, "output", None))
