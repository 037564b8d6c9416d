"""A scripted OpenAI-compatible API on 127.0.0.1: Chat Completions and the Responses API.

Only the model is fake: the ``openai`` client, the OpenAI Agents SDK and litellm talk HTTP to
this server as they would to ``api.openai.com``. Served:

- ``POST /v1/chat/completions``: non-streaming, or ``stream: true`` as ``chat.completion.chunk``
  server-sent events closed by ``data: [DONE]`` (a usage chunk when
  ``stream_options.include_usage`` asks for it); text, ``tool_calls``, usage.
- ``POST /v1/responses``: non-streaming, or streamed as the Responses API's semantic events
  (``response.created``, ``response.in_progress``, ``response.output_item.added``,
  ``response.content_part.added``, ``response.output_text.delta``/``.done``,
  ``response.function_call_arguments.delta``/``.done``, ``response.output_item.done``,
  ``response.completed``; no ``[DONE]``); tool calls are ``function_call`` output items.

The script is a list of turns, consumed one per model request in arrival order (a counter, not
the conversation length: an error answer is a turn of its own, so ``[HttpError(429), [...]]``
answers the first request with a 429 and the client's retry with the second turn). A turn is a
list of blocks (:class:`Text`, :class:`Json`, :class:`ToolCall`), a :class:`Reply` (blocks with a
fixed usage or finish reason), an error answer (:class:`HttpError`, :class:`MalformedBody`), or a
function of the request body returning one of those. Instead of a list, the whole script may be
one such function, called for every request. Every request lands in :attr:`ScriptedOpenAI.requests`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal
from urllib.parse import urlsplit

from demo._loopback import LoopbackServer

__all__ = [
    "Answer",
    "Api",
    "Block",
    "HttpError",
    "Json",
    "MalformedBody",
    "RecordedRequest",
    "Reply",
    "ScriptedOpenAI",
    "Text",
    "ToolCall",
    "Turn",
    "Usage",
    "call_id",
    "last_tool_output",
]


@dataclass(frozen=True)
class Text:
    """Assistant text."""

    text: str


@dataclass(frozen=True)
class Json:
    """Assistant text that is ``value`` serialized as JSON (a structured-output answer)."""

    value: Any


@dataclass(frozen=True)
class ToolCall:
    """A function tool call; ``arguments`` as an object or as raw (possibly broken) JSON text.

    ``id`` defaults to the deterministic :func:`call_id` of its turn and position.
    """

    name: str
    arguments: dict[str, Any] | str
    id: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, separators=(",", ":"))


Block = Text | Json | ToolCall


@dataclass(frozen=True)
class Usage:
    """Token usage to report instead of the server's estimate."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    """A turn's blocks with an optional fixed usage and finish reason."""

    blocks: Sequence[Block]
    usage: Usage | None = None
    finish_reason: str | None = None
    """Chat Completions ``finish_reason``; default ``tool_calls`` if any call, else ``stop``."""


@dataclass(frozen=True)
class HttpError:
    """An HTTP error answer in OpenAI's error shape, e.g. a 429 with ``retry-after``."""

    status: int
    message: str = "scripted error"
    retry_after: float | None = None
    """Seconds, sent as the ``retry-after`` header when set (the client honours fractions)."""
    type: str | None = None
    """The error ``type``; defaults from the status (``rate_limit_error``, ``server_error``...)."""


@dataclass(frozen=True)
class MalformedBody:
    """A ``200`` whose body is not the JSON the client expects (a broken gateway or proxy)."""

    body: str = '{"id": "chatcmpl-broken", "choices": ['


Answer = Sequence[Block] | Reply | HttpError | MalformedBody
Turn = Answer | Callable[[dict[str, Any]], Answer]
Api = Literal["chat_completions", "responses", "other"]


@dataclass
class RecordedRequest:
    """One HTTP request the server received, kept for assertions."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    api: Api
    turn: int | None = None
    """Index of the scripted turn answered (model requests only)."""
    status: int = 200

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


def call_id(turn: int, block: int) -> str:
    """The deterministic tool-call id of block ``block`` of turn ``turn``."""
    return "call_" + _digest("call", turn, block)


def last_tool_output(body: dict[str, Any]) -> str:
    """The last tool result in a request ("" if none), to script answers that use it.

    Reads Responses API input (``function_call_output`` items) and Chat Completions messages
    (``role: tool``).
    """
    entries = body.get("input") if isinstance(body.get("input"), list) else body.get("messages")
    for entry in reversed(entries or []):
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "function_call_output" or entry.get("role") == "tool":
            output = entry.get("output", entry.get("content"))
            if isinstance(output, list):
                return "".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
            return str(output or "")
    return ""


def _digest(*parts: object) -> str:
    text = ":".join(str(p) for p in ("skillsight-openai", *parts))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _estimate_tokens(payload: Any) -> int:
    # About four characters per token, the usual rule of thumb for English and JSON.
    return max(1, len(json.dumps(payload, ensure_ascii=False, default=str)) // 4)


@dataclass(frozen=True)
class _Item:
    """One resolved output block: text or a tool call with its ids fixed."""

    kind: Literal["text", "tool_call"]
    text: str = ""
    name: str = ""
    arguments: str = ""
    call_id: str = ""
    item_id: str = ""


@dataclass(frozen=True)
class _Resolved:
    items: list[_Item]
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    finish_reason: str
    model: str
    turn: int
    created: int

    @property
    def text(self) -> str | None:
        texts = [i.text for i in self.items if i.kind == "text"]
        return "".join(texts) if texts else None

    @property
    def tool_calls(self) -> list[_Item]:
        return [i for i in self.items if i.kind == "tool_call"]


class ScriptedOpenAI(LoopbackServer):
    """An OpenAI-compatible server answering from a script.

    Use as a context manager; it yields the base URL including ``/v1``
    (``http://127.0.0.1:<port>/v1``), the form ``OpenAI(base_url=…)`` and litellm's
    ``api_base`` expect. Paths without the ``/v1`` prefix are served too.
    """

    thread_name = "scripted-openai"

    def __init__(
        self,
        turns: Sequence[Turn] | Callable[[dict[str, Any]], Answer],
        *,
        exhausted_text: str = "Done.",
        model: str | None = None,
    ) -> None:
        self.turns = turns
        self.requests: list[RecordedRequest] = []
        self._exhausted_text = exhausted_text
        self._model = model
        self._counter = 0
        self._lock = threading.Lock()
        super().__init__()

    # --- lifecycle -----------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: what an OpenAI client takes as ``base_url``."""
        return self.root_url + "/v1"

    # --- views for assertions --------------------------------------------------------------

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """The Chat Completions and Responses requests, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.api != "other"]

    # --- answering ---------------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_answer(self, body: dict[str, Any]) -> tuple[Answer, int]:
        with self._lock:
            turn = self._counter
            self._counter += 1
        if callable(self.turns):
            return self.turns(body), turn
        if turn >= len(self.turns):
            return [Text(self._exhausted_text)], turn
        scripted = self.turns[turn]
        return (scripted(body) if callable(scripted) else scripted), turn

    def _resolve(
        self, answer: Sequence[Block] | Reply, body: dict[str, Any], turn: int
    ) -> _Resolved:
        reply = answer if isinstance(answer, Reply) else Reply(blocks=answer)
        items: list[_Item] = []
        for index, block in enumerate(reply.blocks):
            if isinstance(block, ToolCall):
                items.append(
                    _Item(
                        kind="tool_call",
                        name=block.name,
                        arguments=block.arguments_json(),
                        call_id=block.id or call_id(turn, index),
                        item_id="fc_" + _digest("fc", turn, index),
                    )
                )
            else:
                text = block.text if isinstance(block, Text) else json.dumps(block.value)
                items.append(
                    _Item(kind="text", text=text, item_id="msg_" + _digest("msg", turn, index))
                )
        if reply.usage is not None:
            input_tokens = reply.usage.input_tokens
            output_tokens = reply.usage.output_tokens
            cached = reply.usage.cached_tokens
        else:
            prompt = {k: body.get(k) for k in ("messages", "input", "instructions", "tools")}
            input_tokens = _estimate_tokens(prompt)
            output_tokens = _estimate_tokens([i.text or i.arguments for i in items])
            cached = 0
        has_calls = any(i.kind == "tool_call" for i in items)
        return _Resolved(
            items=items,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_tokens=cached,
            finish_reason=reply.finish_reason or ("tool_calls" if has_calls else "stop"),
            model=self._model or str(body.get("model") or "gpt-4o-mini"),
            turn=turn,
            created=int(time.time()),
        )


# --- Chat Completions -------------------------------------------------------------------------


def _chat_usage(reply: _Resolved) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _chat_id(reply: _Resolved) -> str:
    return "chatcmpl-" + _digest("chat", reply.turn)


def _chat_completion(reply: _Resolved) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ]
    return {
        "id": _chat_id(reply),
        "object": "chat.completion",
        "created": reply.created,
        "model": reply.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": _chat_usage(reply),
    }


def _halves(text: str) -> list[str]:
    # Two deltas per piece, so a client really reassembles a stream.
    cut = len(text) // 2
    return [part for part in (text[:cut], text[cut:]) if part] or [""]


def _chat_chunks(reply: _Resolved, include_usage: bool) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": _chat_id(reply),
            "object": "chat.completion.chunk",
            "created": reply.created,
            "model": reply.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    yield chunk({"role": "assistant", "content": ""})
    if reply.text is not None:
        for part in _halves(reply.text):
            yield chunk({"content": part})
    for index, call in enumerate(reply.tool_calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for part in _halves(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, reply.finish_reason)
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = _chat_usage(reply)
        yield last


# --- Responses API ----------------------------------------------------------------------------


def _response_usage(reply: _Resolved) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": reply.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def _output_item(item: _Item, *, done: bool) -> dict[str, Any]:
    status = "completed" if done else "in_progress"
    if item.kind == "tool_call":
        return {
            "type": "function_call",
            "id": item.item_id,
            "call_id": item.call_id,
            "name": item.name,
            "arguments": item.arguments if done else "",
            "status": status,
        }
    content = [_output_text(item.text)] if done else []
    return {
        "type": "message",
        "id": item.item_id,
        "role": "assistant",
        "status": status,
        "content": content,
    }


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _response(reply: _Resolved, body: dict[str, Any], *, done: bool) -> dict[str, Any]:
    return {
        "id": "resp_" + _digest("resp", reply.turn),
        "object": "response",
        "created_at": reply.created,
        "status": "completed" if done else "in_progress",
        "model": reply.model,
        "output": [_output_item(i, done=True) for i in reply.items] if done else [],
        "usage": _response_usage(reply) if done else None,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
        "previous_response_id": body.get("previous_response_id"),
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": body.get("tools") or [],
        "text": body.get("text") or {"format": {"type": "text"}},
    }


def _response_events(reply: _Resolved, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The semantic events of a streamed response, without sequence numbers."""
    yield {"type": "response.created", "response": _response(reply, body, done=False)}
    yield {"type": "response.in_progress", "response": _response(reply, body, done=False)}
    for index, item in enumerate(reply.items):
        at = {"output_index": index}
        yield {"type": "response.output_item.added", **at, "item": _output_item(item, done=False)}
        if item.kind == "text":
            part = {"item_id": item.item_id, **at, "content_index": 0}
            yield {"type": "response.content_part.added", **part, "part": _output_text("")}
            for delta in _halves(item.text):
                yield {"type": "response.output_text.delta", **part, "delta": delta, "logprobs": []}
            yield {"type": "response.output_text.done", **part, "text": item.text, "logprobs": []}
            yield {"type": "response.content_part.done", **part, "part": _output_text(item.text)}
        else:
            ids = {"item_id": item.item_id, **at}
            for delta in _halves(item.arguments):
                yield {"type": "response.function_call_arguments.delta", **ids, "delta": delta}
            yield {
                "type": "response.function_call_arguments.done",
                **ids,
                "name": item.name,
                "arguments": item.arguments,
            }
        yield {"type": "response.output_item.done", **at, "item": _output_item(item, done=True)}
    yield {"type": "response.completed", "response": _response(reply, body, done=True)}


# --- HTTP -------------------------------------------------------------------------------------

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


def _api_for(path: str) -> Api:
    trimmed = path.removeprefix("/v1")
    if trimmed == "/chat/completions":
        return "chat_completions"
    if trimmed == "/responses":
        return "responses"
    return "other"


def _make_handler(server: ScriptedOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            # Requests are recorded in ScriptedOpenAI.requests; stderr noise helps nobody.
            return

        def _headers(self) -> dict[str, str]:
            # Header names are case-insensitive: recorded in lower case, as HTTP/2 sends them.
            return {name.lower(): value for name, value in self.headers.items()}

        def _read_body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return raw.decode("utf-8", "replace")

        def _send(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", "req_" + _digest("req", time.monotonic_ns()))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _send_error(self, error: HttpError) -> None:
            kind = error.type or _ERROR_TYPES.get(error.status, "server_error")
            payload = {
                "error": {"message": error.message, "type": kind, "param": None, "code": None}
            }
            headers = {}
            if error.retry_after is not None:
                headers["retry-after"] = f"{error.retry_after:g}"
            self._send(error.status, json.dumps(payload).encode(), headers)

        def _stream(self, events: Iterator[bytes]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            # No Content-Length: the stream ends when the connection closes.
            self.send_header("Connection", "close")
            self.end_headers()
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()
            self.close_connection = True

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            server._record(RecordedRequest("GET", path, self._headers(), None, "other", status=404))
            self._send_error(HttpError(404, f"GET {path}"))

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            body = self._read_body()
            headers = self._headers()
            api = _api_for(path)
            if api == "other" or not isinstance(body, dict):
                status = 404 if api == "other" else 400
                server._record(RecordedRequest("POST", path, headers, body, api, status=status))
                message = f"POST {path}" if api == "other" else "request body is not a JSON object"
                self._send_error(HttpError(status, message))
                return
            answer, turn = server._next_answer(body)
            if isinstance(answer, HttpError):
                server._record(
                    RecordedRequest("POST", path, headers, body, api, turn, answer.status)
                )
                self._send_error(answer)
                return
            server._record(RecordedRequest("POST", path, headers, body, api, turn))
            if isinstance(answer, MalformedBody):
                self._send(200, answer.body.encode())
                return
            reply = server._resolve(answer, body, turn)
            if api == "chat_completions":
                if not body.get("stream"):
                    self._send(200, json.dumps(_chat_completion(reply)).encode())
                    return
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                chunks = (_data(c) for c in _chat_chunks(reply, include_usage))
                self._stream(_chain(chunks, [b"data: [DONE]\n\n"]))
                return
            if not body.get("stream"):
                self._send(200, json.dumps(_response(reply, body, done=True)).encode())
                return
            self._stream(
                _event(e["type"], {**e, "sequence_number": n})
                for n, e in enumerate(_response_events(reply, body))
            )

    return Handler


def _data(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


def _chain(first: Iterator[bytes], rest: Sequence[bytes]) -> Iterator[bytes]:
    yield from first
    yield from rest
