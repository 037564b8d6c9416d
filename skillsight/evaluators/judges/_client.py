"""One structured judge call through litellm, with retries, fallback and cost.

litellm is imported on first use: it takes seconds to import, and a service with no judge
configured should not pay that. Its price map is read from the copy inside the package
(``LITELLM_LOCAL_MODEL_COST_MAP``), never fetched over the network.

Retried, with exponential backoff (a ``retry-after`` header wins when the provider sends one):
rate limits (429), server errors (5xx, and 200s whose body is not a completion), timeouts and
connection errors, and answers that are not valid JSON for the schema. Anything else (bad key,
unknown model, a 400) fails at once. Either way the failure is a :class:`JudgeCallError`
carrying the tokens and cost already spent, never a made-up verdict.
"""

from __future__ import annotations

import inspect
import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ValidationError

from skillsight._json_text import loads
from skillsight.errors import EvaluatorError
from skillsight.evaluators.judges._settings import JudgeSettings, StructuredOutput

TOOL_NAME = "record_verdict"

_import_lock = threading.Lock()
_litellm: ModuleType | None = None


def litellm_module() -> ModuleType:
    """litellm, imported once, quiet and offline."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            # Its "Give Feedback / Get Help" banner on every exception is noise in a service log.
            litellm.suppress_debug_info = True
            _litellm = litellm
        return _litellm


def release_connections() -> None:
    """Close the HTTP clients litellm keeps between calls, with their pooled keep-alive
    connections (litellm opens new ones on the next call). For shutdown and tests: a call in
    flight on another thread would lose its connection."""
    if _litellm is None:
        return
    cache = _litellm.in_memory_llm_clients_cache
    for client in list(cache.cache_dict.values()):
        close = getattr(client, "close", None)
        if callable(close) and not inspect.iscoroutinefunction(close):
            close()
    cache.flush_cache()


class JudgeCallError(EvaluatorError):
    """A judge call failed for good; what it cost so far is kept for accounting."""

    def __init__(
        self, message: str, *, attempts: int, tokens: int = 0, cost_usd: float = 0.0
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.tokens = tokens
        self.cost_usd = cost_usd


class _Malformed(Exception):
    """The model answered, but not with JSON valid for the schema."""


@dataclass(frozen=True, slots=True)
class JudgeReply:
    verdict: dict[str, Any]
    """The validated verdict, JSON-ready."""
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    attempts: int
    mode: StructuredOutput

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def strict_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema as strict structured output wants it: every property required,
    no extra properties (the verdict models declare every field without a default)."""
    return schema.model_json_schema()


class JudgeClient:
    """Calls one model for structured verdicts; thread-safe, shared by a judge's workers."""

    def __init__(
        self, settings: JudgeSettings, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.settings = settings
        self._sleep = sleep
        self._mode: StructuredOutput = (
            "json_schema" if settings.structured_output == "auto" else settings.structured_output
        )
        self._may_fall_back = settings.structured_output == "auto"
        self._connected = threading.Event()
        self._connecting = threading.Lock()

    @property
    def mode(self) -> StructuredOutput:
        return self._mode

    def complete(
        self, messages: list[dict[str, str]], schema: type[BaseModel], *, name: str
    ) -> JudgeReply:
        """Ask for a verdict of ``schema``; :class:`JudgeCallError` when none could be had."""
        litellm = litellm_module()
        settings = self.settings
        prompt_tokens = completion_tokens = 0
        cost = 0.0
        attempt = 0
        last_error = ""
        while attempt < settings.max_attempts:
            attempt += 1
            mode = self._mode
            retry_after: float | None = None
            try:
                response = self._call(litellm, self._request(messages, schema, name, mode))
            except litellm.BadRequestError as exc:
                if self._may_fall_back and mode == "json_schema":
                    # The provider has no JSON-schema output: ask through a tool call instead,
                    # without spending an attempt on the switch.
                    self._mode, self._may_fall_back = "tool", False
                    attempt -= 1
                    continue
                raise self._failed(f"the provider refused the request: {exc}", attempt) from exc
            except (
                litellm.RateLimitError,
                litellm.InternalServerError,
                litellm.ServiceUnavailableError,
                litellm.BadGatewayError,
                litellm.APIConnectionError,
                litellm.Timeout,
            ) as exc:
                last_error = f"{type(exc).__name__}: {_first_line(exc)}"
                retry_after = _retry_after(exc)
            except litellm.APIError as exc:
                status = getattr(exc, "status_code", 0) or 0
                if status < 500:
                    raise self._failed(f"{type(exc).__name__}: {exc}", attempt) from exc
                last_error = f"{type(exc).__name__}: {_first_line(exc)}"
            except Exception as exc:  # auth, unknown model, unmapped provider: no retry helps
                raise JudgeCallError(
                    f"{type(exc).__name__}: {_first_line(exc)}",
                    attempts=attempt,
                    tokens=prompt_tokens + completion_tokens,
                    cost_usd=cost,
                ) from exc
            else:
                usage = getattr(response, "usage", None)
                p_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
                c_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
                prompt_tokens += p_tokens
                completion_tokens += c_tokens
                cost += self._cost(response, p_tokens, c_tokens)
                try:
                    verdict = _parse(response, schema, mode)
                except _Malformed as exc:
                    last_error = f"malformed verdict: {exc}"
                else:
                    return JudgeReply(
                        verdict, prompt_tokens, completion_tokens, round(cost, 8), attempt, mode
                    )
            if attempt < settings.max_attempts:
                self._sleep(self._backoff(attempt, retry_after))
        raise JudgeCallError(
            f"no valid verdict after {attempt} attempts; last: {last_error}"[:2000],
            attempts=attempt,
            tokens=prompt_tokens + completion_tokens,
            cost_usd=round(cost, 8),
        )

    def _call(self, litellm: ModuleType, request: dict[str, Any]) -> Any:
        if self._connected.is_set():
            return _off_main_thread(litellm.completion, request)
        # litellm caches one HTTP client per endpoint; concurrent first calls would each build
        # one and all but the cached one would leak their connections. The first call goes alone.
        with self._connecting:
            try:
                return _off_main_thread(litellm.completion, request)
            finally:
                self._connected.set()

    def _failed(self, message: str, attempt: int) -> JudgeCallError:
        return JudgeCallError(message[:2000], attempts=attempt)

    def _request(
        self,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        name: str,
        mode: StructuredOutput,
    ) -> dict[str, Any]:
        settings = self.settings
        request: dict[str, Any] = {
            "model": settings.model,
            "messages": messages,
            "temperature": settings.temperature,
            "timeout": settings.timeout_s,
            # Retries are ours (they see malformed output too); the client's own would hide them.
            "max_retries": 0,
            "num_retries": 0,
        }
        if settings.api_base:
            request["api_base"] = settings.api_base
        if settings.api_key is not None:
            request["api_key"] = settings.api_key
        parameters = strict_schema(schema)
        if mode == "tool":
            request["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": TOOL_NAME,
                        "description": f"Record the {name} verdict.",
                        "parameters": parameters,
                    },
                }
            ]
            request["tool_choice"] = {"type": "function", "function": {"name": TOOL_NAME}}
        else:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": parameters, "strict": True},
            }
        return request

    def _cost(self, response: Any, prompt_tokens: int, completion_tokens: int) -> float:
        litellm = litellm_module()
        try:
            return float(litellm.completion_cost(completion_response=response))
        except Exception:  # litellm has no price for this model: use the configured one
            settings = self.settings
            return (
                prompt_tokens * settings.input_usd_per_mtok
                + completion_tokens * settings.output_usd_per_mtok
            ) / 1e6

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        settings = self.settings
        if retry_after is not None:
            return min(retry_after, settings.max_backoff_s)
        return min(settings.backoff_s * 2.0 ** (attempt - 1), settings.max_backoff_s)


def _off_main_thread(call: Callable[..., Any], request: dict[str, Any]) -> Any:
    """``call(**request)``, from a worker thread when called on the main thread: after each call
    litellm's timing hook asks ``asyncio.get_event_loop()``, which on the main thread creates
    and installs an event loop nobody closes (and that a later ``asyncio.run`` then drops
    unclosed). On other threads the hook makes and closes a loop of its own."""
    if threading.current_thread() is not threading.main_thread():
        return call(**request)
    with ThreadPoolExecutor(1, thread_name_prefix="judge-call") as pool:
        return pool.submit(call, **request).result()


def _parse(response: Any, schema: type[BaseModel], mode: StructuredOutput) -> dict[str, Any]:
    try:
        message = response.choices[0].message
    except (AttributeError, IndexError) as exc:
        raise _Malformed("the answer has no message") from exc
    if mode == "tool":
        calls = getattr(message, "tool_calls", None) or []
        if not calls:
            raise _Malformed(f"no {TOOL_NAME} tool call in the answer")
        text = calls[0].function.arguments or ""
    else:
        text = message.content or ""
    try:
        data = loads(text)
    except ValueError as exc:
        raise _Malformed(f"not JSON ({exc}): {text[:200]!r}") from exc
    try:
        verdict: dict[str, Any] = schema.model_validate(data).model_dump(mode="json", by_alias=True)
        return verdict
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'verdict'}: {e['msg']}" for e in exc.errors()[:3]
        )
        partial = data.get("checks") if isinstance(data, dict) else None
        # what an incomplete answer did say is detail of the error, never a score
        shown = f"; partial answer: {json.dumps(partial)[:300]}" if partial else ""
        raise _Malformed(f"does not match the schema: {problems}{shown}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:500]


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw = headers.get("retry-after")
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except (TypeError, ValueError):
        return None
