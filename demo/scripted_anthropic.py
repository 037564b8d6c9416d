"""A scripted Anthropic Messages API on 127.0.0.1, for driving the real Claude Code CLI.

Only the model is fake: the CLI (or any Anthropic client) talks HTTP to this server exactly as
it would to ``api.anthropic.com``. The server is scripted with a list of assistant turns; each
turn is a list of content blocks (:class:`Text`, :class:`ToolUse`).

Which request gets which turn: Claude Code sends the *main* agent-loop request (with the tool
list) plus side requests (session title generation, possibly ``count_tokens`` and others).
Only agent-loop requests are answered from the script, and the turn a request gets is the
number of assistant messages already in its conversation, not a counter. That makes retries
(the CLI retries on transport errors and can fall back to non-streaming) replay the same turn
instead of skipping one, and a stray extra request with the tools cannot shift the script.

Subagents (the ``Agent`` tool) talk to the same endpoint with a conversation of their own: the
CLI puts the agent definition's prompt into the system prompt (and ``cc_is_subagent=true`` into
its billing header block). An :class:`AgentScript` names a marker text from that prompt and
the subagent's own turns; a request whose system prompt contains the marker is answered from
that script, every other agent-loop request from the main one.

``request_ids=False`` gives the variant a gateway presents (Bedrock, Vertex, LLM proxies): no
``request-id`` response header, everything else identical. Claude Code copies that header into
its telemetry (``request_id`` on ``llm_request`` spans and on the ``api_request``,
``assistant_response``, ``tool_decision`` and ``tool_result`` events), so this variant shows
what skillsight receives from Claude Code behind such a gateway.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal
from urllib.parse import urlsplit

from demo._loopback import LoopbackServer

__all__ = [
    "MAIN_AGENT",
    "AgentScript",
    "Block",
    "RecordedRequest",
    "RequestKind",
    "ScriptedAnthropic",
    "Text",
    "ToolUse",
    "Turn",
    "classify_request",
    "last_tool_result_text",
    "tool_result_text",
    "tool_use_id",
]

MAIN_AGENT = "main"
"""The agent name recorded for requests of the main agent loop."""


@dataclass(frozen=True)
class Text:
    """A text content block of a scripted assistant turn."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """A tool_use content block; ``id`` defaults to a deterministic ``toolu_01…`` id."""

    name: str
    input: dict[str, Any]
    id: str | None = None


Block = Text | ToolUse
Turn = Sequence[Block] | Callable[[dict[str, Any]], Sequence[Block]]
"""A turn's blocks, or a function of the request body returning them (to echo tool output)."""
RequestKind = Literal["main", "side", "count_tokens", "other"]


@dataclass(frozen=True)
class AgentScript:
    """The scripted turns of one subagent, recognised by a marker in its system prompt."""

    marker: str
    """Text of the agent definition's prompt; the CLI copies that prompt into ``system``."""
    turns: Sequence[Turn]


@dataclass
class RecordedRequest:
    """One HTTP request the server received, kept for assertions."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    kind: RequestKind
    turn: int | None = None
    """Index of the scripted turn answered (agent-loop requests only)."""
    status: int = 200
    agent: str = MAIN_AGENT
    """Which script answered: :data:`MAIN_AGENT` or the name of an :class:`AgentScript`."""


def tool_use_id(turn: int, block: int, agent: str = MAIN_AGENT) -> str:
    """The deterministic tool_use id for block ``block`` of turn ``turn`` of ``agent``."""
    # The main agent keeps the seed of the first harness so its ids stay what captures hold.
    seed = f"{turn}:{block}" if agent == MAIN_AGENT else f"{agent}:{turn}:{block}"
    digest = hashlib.sha256(f"skillsight-demo:{seed}".encode()).hexdigest()
    return "toolu_01" + digest[:22]


def _tool_names(body: dict[str, Any]) -> set[str]:
    tools = body.get("tools") or []
    return {str(t.get("name")) for t in tools if isinstance(t, dict)}


def classify_request(body: dict[str, Any]) -> RequestKind:
    """Tell the agent-loop request from the CLI's side requests.

    The agent loop is the only request that offers the model the built-in tools; the session
    title request (the one side request Claude Code 2.1 sends here) has no tools, a dedicated
    system prompt and a JSON-schema ``output_config``.
    """
    names = _tool_names(body)
    if "Bash" in names or "Skill" in names:
        return "main"
    return "side"


def _tool_results(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The ``tool_result`` blocks of a Messages request, last first."""
    for message in reversed(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                yield block


def _result_text(block: dict[str, Any]) -> str:
    inner = block.get("content")
    if isinstance(inner, str):
        return inner
    if isinstance(inner, list):
        return "".join(str(part.get("text", "")) for part in inner if isinstance(part, dict))
    return ""


def last_tool_result_text(body: dict[str, Any]) -> str:
    """The text of the last ``tool_result`` block in a Messages request ("" if none)."""
    for block in _tool_results(body):
        return _result_text(block)
    return ""


def tool_result_text(body: dict[str, Any], call_id: str) -> str | None:
    """The text of the ``tool_result`` answering tool call ``call_id`` (None if absent)."""
    for block in _tool_results(body):
        if block.get("tool_use_id") == call_id:
            return _result_text(block)
    return None


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""


def _assistant_turns(body: dict[str, Any]) -> int:
    """How many assistant turns the conversation already holds (consecutive ones merge)."""
    count = 0
    previous = None
    for message in body.get("messages") or []:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "assistant" and previous != "assistant":
            count += 1
        previous = role
    return count


def _estimate_tokens(payload: Any) -> int:
    # About four characters per token, the usual rule of thumb for English and JSON.
    return max(1, len(json.dumps(payload, ensure_ascii=False)) // 4)


@dataclass
class _Reply:
    content: list[dict[str, Any]]
    stop_reason: str
    usage: dict[str, int]
    model: str
    message_id: str = field(default_factory=lambda: "msg_01" + uuid.uuid4().hex[:22])


class ScriptedAnthropic(LoopbackServer):
    """An Anthropic Messages API server answering from a script.

    Use as a context manager; it yields the base URL (``http://127.0.0.1:<port>``) to put in
    ``ANTHROPIC_BASE_URL``. Every request lands in :attr:`requests`.
    """

    thread_name = "scripted-anthropic"

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        side_reply: Callable[[dict[str, Any]], str] | None = None,
        exhausted_text: str = "Done.",
        classify: Callable[[dict[str, Any]], RequestKind] = classify_request,
        agents: Mapping[str, AgentScript] | None = None,
        request_ids: bool = True,
    ) -> None:
        self.turns: list[Turn] = list(turns)
        self.request_ids = request_ids
        """Send the ``request-id`` response header (False: as a gateway that drops it)."""
        self.agents: dict[str, AgentScript] = dict(agents or {})
        if MAIN_AGENT in self.agents:
            raise ValueError(f"{MAIN_AGENT!r} names the main script; pick another agent name")
        self.requests: list[RecordedRequest] = []
        self._side_reply = side_reply or _default_side_reply
        self._exhausted_text = exhausted_text
        self._classify = classify
        self._lock = threading.Lock()
        super().__init__()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    # --- views for assertions --------------------------------------------------------------

    def route(self, body: dict[str, Any]) -> str:
        """Which script answers ``body``: the subagent whose marker is in its system prompt."""
        system = _system_text(body)
        for name, script in self.agents.items():
            if script.marker in system:
                return name
        return MAIN_AGENT

    def classify(self, body: dict[str, Any]) -> tuple[RequestKind, str]:
        """The request's kind and the agent it belongs to.

        A subagent's loop offers only the tools of its definition (possibly neither ``Bash``
        nor ``Skill``), so any request with tools that routes to a subagent is its loop.
        """
        agent = self.route(body)
        if agent != MAIN_AGENT and body.get("tools"):
            return "main", agent
        kind = self._classify(body)
        return kind, MAIN_AGENT

    @property
    def main_requests(self) -> list[RecordedRequest]:
        """The agent-loop requests (main agent and subagents), in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.kind == "main"]

    def turns_served(self) -> set[int]:
        """Indexes of the scripted turns that were answered at least once."""
        with self._lock:
            return {r.turn for r in self.requests if r.turn is not None}

    # --- answering ---------------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _previous_prompt_tokens(self, kind: RequestKind) -> int:
        with self._lock:
            for r in reversed(self.requests):
                if r.kind == kind and isinstance(r.body, dict):
                    return _estimate_tokens(
                        {k: r.body.get(k) for k in ("system", "tools", "messages")}
                    )
        return 0

    def reply_for(
        self, body: dict[str, Any], kind: RequestKind, agent: str = MAIN_AGENT
    ) -> tuple[_Reply, int | None]:
        """Build the answer to a Messages request and the turn index it consumed."""
        model = str(body.get("model") or "claude-sonnet-4-5")
        turn: int | None = None
        if kind == "main":
            turn = _assistant_turns(body)
            content = self._turn_content(turn, body, agent)
        else:
            content = [{"type": "text", "text": self._side_reply(body)}]
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        prompt = _estimate_tokens({k: body.get(k) for k in ("system", "tools", "messages")})
        cached = min(self._previous_prompt_tokens(kind), prompt)
        # The CLI marks its system prompt and the conversation tail for caching, so a later
        # request reads what the previous one wrote and creates cache for the rest.
        uncached = min(prompt - cached, 8)
        usage = {
            "input_tokens": uncached,
            "cache_creation_input_tokens": prompt - cached - uncached,
            "cache_read_input_tokens": cached,
            "output_tokens": _estimate_tokens(content),
        }
        return _Reply(content=content, stop_reason=stop, usage=usage, model=model), turn

    def _turn_content(self, turn: int, body: dict[str, Any], agent: str) -> list[dict[str, Any]]:
        turns = self.turns if agent == MAIN_AGENT else self.agents[agent].turns
        if turn >= len(turns):
            return [{"type": "text", "text": self._exhausted_text}]
        scripted = turns[turn]
        blocks = scripted(body) if callable(scripted) else scripted
        content: list[dict[str, Any]] = []
        for index, block in enumerate(blocks):
            if isinstance(block, Text):
                content.append({"type": "text", "text": block.text})
            else:
                content.append(
                    {
                        "type": "tool_use",
                        "id": block.id or tool_use_id(turn, index, agent),
                        "name": block.name,
                        "input": block.input,
                    }
                )
        return content


def _default_side_reply(body: dict[str, Any]) -> str:
    """Answer a side request (session title, topic...) with something the CLI can parse.

    Claude Code asks for structured output through ``output_config.format`` (a JSON schema);
    an answer that fits the schema keeps it from retrying or logging parse errors.
    """
    output_format = (body.get("output_config") or {}).get("format") or {}
    if output_format.get("type") == "json_schema" and isinstance(output_format.get("schema"), dict):
        return json.dumps(_fill_schema(output_format["schema"]))
    return "Demo session"


def _fill_schema(schema: dict[str, Any]) -> Any:
    """A small value that satisfies a simple JSON schema."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _fill_schema(sub) for name, sub in properties.items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return 0
    if kind == "string":
        return "Demo session"
    return None


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _stream_events(reply: _Reply) -> Iterator[bytes]:
    usage = reply.usage
    yield _sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": reply.message_id,
                "type": "message",
                "role": "assistant",
                "model": reply.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": usage["input_tokens"],
                    "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
                    "cache_read_input_tokens": usage["cache_read_input_tokens"],
                    "output_tokens": 1,
                },
            },
        },
    )
    yield _sse("ping", {"type": "ping"})
    for index, block in enumerate(reply.content):
        start: dict[str, Any]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            text = block["text"]
            # Split the text so the client sees more than one delta, like a real stream.
            cut = len(text) // 2
            deltas = [{"type": "text_delta", "text": part} for part in (text[:cut], text[cut:])]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"], separators=(",", ":"))
            cut = len(raw) // 2
            deltas = [
                {"type": "input_json_delta", "partial_json": part}
                for part in (raw[:cut], raw[cut:])
            ]
        yield _sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        for delta in deltas:
            yield _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
            "usage": usage,
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


def _message_json(reply: _Reply) -> dict[str, Any]:
    return {
        "id": reply.message_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": reply.content,
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": reply.usage,
    }


def _make_handler(server: ScriptedAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            # Requests are recorded in ScriptedAnthropic.requests; stderr noise helps nobody.
            return

        def _read_body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return raw.decode("utf-8", "replace")

        def _request_id(self) -> None:
            if server.request_ids:
                self.send_header("request-id", "req_01" + uuid.uuid4().hex[:22])

        def _send_json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self._request_id()
            self.end_headers()
            self.wfile.write(data)

        def _not_found(self, method: str, path: str, body: Any) -> None:
            server._record(
                RecordedRequest(method, path, dict(self.headers), body, "other", status=404)
            )
            self._send_json(
                404,
                {
                    "type": "error",
                    "error": {"type": "not_found_error", "message": f"{method} {path}"},
                },
            )

        def do_GET(self) -> None:
            self._not_found("GET", urlsplit(self.path).path, None)

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            body = self._read_body()
            headers = dict(self.headers)
            if path == "/v1/messages/count_tokens" and isinstance(body, dict):
                server._record(RecordedRequest("POST", path, headers, body, "count_tokens"))
                self._send_json(200, {"input_tokens": _estimate_tokens(body)})
                return
            if path != "/v1/messages" or not isinstance(body, dict):
                self._not_found("POST", path, body)
                return
            kind, agent = server.classify(body)
            reply, turn = server.reply_for(body, kind, agent)
            server._record(RecordedRequest("POST", path, headers, body, kind, turn, agent=agent))
            if not body.get("stream"):
                self._send_json(200, _message_json(reply))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self._request_id()
            # No Content-Length: the stream ends when the connection closes.
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in _stream_events(reply):
                self.wfile.write(chunk)
                self.wfile.flush()
            self.close_connection = True

    return Handler
