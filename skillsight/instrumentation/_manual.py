"""The manual API: skill activations, tool calls and model calls for any agent.

Spans opened here become the current OpenTelemetry span for the code inside them (through
``contextvars``, so concurrent asyncio tasks and threads each see their own), which is what
makes the tool spans recorded inside ``with skill_activation(...)`` its children. Nothing is
kept in module globals: each ``with`` owns its span and context token.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, ParamSpec, TypeVar, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from skillsight import semconv as sc
from skillsight.instrumentation._content import ContentPolicy
from skillsight.instrumentation._skillinfo import SkillResolver
from skillsight.instrumentation._spans import SkillInfo, SpanEmitter, Usage

__all__ = [
    "AgentSession",
    "SkillActivation",
    "ToolCall",
    "agent_session",
    "record_llm_call",
    "record_tool_call",
    "skill_activation",
    "tool_call",
]

P = ParamSpec("P")
R = TypeVar("R")


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _CurrentSpan:
    """Makes a span current for a block and ends it after, recording an escaping exception."""

    span: Span | None = None
    _token: object | None = None

    def _enter(self, span: Span) -> None:
        self.span = span
        self._token = otel_context.attach(trace.set_span_in_context(span))

    def _exit(self, exc: BaseException | None) -> None:
        if self.span is None:
            return
        if exc is not None:
            self.span.record_exception(exc)
            self.span.set_status(Status(StatusCode.ERROR, _error_text(exc)))
        if self._token is not None:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            self._token = None
        self.span.end()


class SkillActivation(_CurrentSpan):
    """An ``activate_skill {name}`` span; use ``with``, ``async with`` or as a decorator."""

    def __init__(
        self,
        name: str,
        *,
        skill_dir: str | os.PathLike[str] | None = None,
        trigger: str = sc.TRIGGER_MANUAL,
        input: Any = None,
        call_id: str | None = None,
        description: str | None = None,
        allowed_tools: Sequence[str] | None = None,
        composes: bool = False,
        cwd: str | os.PathLike[str] | None = None,
        tracer_provider: trace.TracerProvider | None = None,
        content: ContentPolicy | None = None,
    ) -> None:
        if not name:
            raise ValueError("skill_activation needs the skill's name")
        self.name = name
        self._skill_dir = skill_dir
        self._trigger = trigger
        self._input = input
        self._call_id = call_id
        self._description = description
        self._allowed_tools = allowed_tools
        self._composes = composes
        self._cwd = cwd
        self._tracer_provider = tracer_provider
        self._content = content
        self.skill: SkillInfo = SkillInfo(name)

    def _resolve(self) -> SkillInfo:
        resolver = SkillResolver(self._cwd or Path.cwd())
        found = (
            resolver.by_dir(self._skill_dir, self.name)
            if self._skill_dir is not None
            else resolver.by_name(self.name)
        )
        return SkillInfo(
            name=self.name,
            description=self._description if self._description is not None else found.description,
            version=found.version,
            source_uri=found.source_uri,
            allowed_tools=(
                list(self._allowed_tools)
                if self._allowed_tools is not None
                else found.allowed_tools
            ),
        )

    def __enter__(self) -> SkillActivation:
        emitter = SpanEmitter(self._tracer_provider, self._content)
        self.skill = self._resolve()
        self._enter(
            emitter.start_activation(
                self.skill,
                trigger=self._trigger,
                input=self._input,
                call_id=self._call_id,
                composes=self._composes,
            )
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._exit(exc)

    async def __aenter__(self) -> SkillActivation:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._exit(exc)

    def _fresh(self) -> SkillActivation:
        return SkillActivation(
            self.name,
            skill_dir=self._skill_dir,
            trigger=self._trigger,
            input=self._input,
            call_id=self._call_id,
            description=self._description,
            allowed_tools=self._allowed_tools,
            composes=self._composes,
            cwd=self._cwd,
            tracer_provider=self._tracer_provider,
            content=self._content,
        )

    def __call__(self, func: Callable[P, R]) -> Callable[P, R]:
        """Decorate a function (sync or async): each call runs inside its own activation."""
        if inspect.iscoroutinefunction(func):
            async_func = cast(Callable[P, Awaitable[Any]], func)

            @functools.wraps(func)
            async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                async with self._fresh():
                    return await async_func(*args, **kwargs)

            return cast(Callable[P, R], run_async)

        @functools.wraps(func)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            with self._fresh():
                return func(*args, **kwargs)

        return run


def skill_activation(
    name: str,
    *,
    skill_dir: str | os.PathLike[str] | None = None,
    trigger: str = sc.TRIGGER_MANUAL,
    input: Any = None,
    call_id: str | None = None,
    description: str | None = None,
    allowed_tools: Sequence[str] | None = None,
    composes: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    tracer_provider: trace.TracerProvider | None = None,
    content: ContentPolicy | None = None,
) -> SkillActivation:
    """Open an ``activate_skill {name}`` span around the skill's work.

    The skill's description, version (content hash), allowed-tools and source come from its
    SKILL.md: in ``skill_dir`` when given, else found by name from ``cwd`` (default: the working
    directory) the way Claude Code finds skills. ``description`` / ``allowed_tools`` override.
    ``call_id`` names the tool call that started the activation, when one did.
    Tool and model calls recorded inside become its children::

        with skill_activation("csv-summary", input=request) as act:
            record_tool_call("Bash", "call-1", {"command": cmd}, output)

        @skill_activation("csv-summary")
        async def summarise(path: str) -> str: ...
    """
    return SkillActivation(
        name,
        skill_dir=skill_dir,
        trigger=trigger,
        input=input,
        call_id=call_id,
        description=description,
        allowed_tools=allowed_tools,
        composes=composes,
        cwd=cwd,
        tracer_provider=tracer_provider,
        content=content,
    )


class ToolCall(_CurrentSpan):
    """A tool call in progress (see :func:`tool_call`); set its result before the block ends."""

    def __init__(self, emitter: SpanEmitter) -> None:
        self._emitter = emitter
        self._result: Any = None
        self._error: str | None = None

    def set_result(self, result: Any) -> None:
        """The tool's output, captured on the span under the content policy."""
        self._result = result

    def set_error(self, error: str) -> None:
        """Mark the call failed with ``error`` (an exception escaping the block does too)."""
        self._error = error

    def _finish(self, exc: BaseException | None) -> None:
        if self.span is None:
            return
        if exc is not None:
            self.span.record_exception(exc)
            self._error = self._error or _error_text(exc)
        if self._token is not None:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            self._token = None
        self._emitter.finish_tool(self.span, result=self._result, error=self._error)


@contextmanager
def tool_call(
    name: str,
    call_id: str | None = None,
    arguments: Any = None,
    *,
    tracer_provider: trace.TracerProvider | None = None,
    content: ContentPolicy | None = None,
) -> Iterator[ToolCall]:
    """An ``execute_tool {name}`` span around running the tool::

    with tool_call("Bash", "call-1", {"command": cmd}) as call:
        call.set_result(run(cmd))
    """
    emitter = SpanEmitter(tracer_provider, content)
    call = ToolCall(emitter)
    call._enter(emitter.start_tool(name, call_id=call_id, arguments=arguments))
    try:
        yield call
    except BaseException as exc:
        call._finish(exc)
        raise
    call._finish(None)


def record_tool_call(
    name: str,
    call_id: str | None = None,
    arguments: Any = None,
    result: Any = None,
    error: str | None = None,
    *,
    start_time: int | None = None,
    end_time: int | None = None,
    tracer_provider: trace.TracerProvider | None = None,
    content: ContentPolicy | None = None,
) -> None:
    """Record a tool call that already happened (times in ns since the epoch, default now)."""
    emitter = SpanEmitter(tracer_provider, content)
    span = emitter.start_tool(name, call_id=call_id, arguments=arguments, start_time=start_time)
    emitter.finish_tool(span, result=result, error=error, end_time=end_time)


def record_llm_call(
    model: str | None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    *,
    cache_read_input_tokens: int | None = None,
    cache_creation_input_tokens: int | None = None,
    finish_reason: str | None = None,
    provider: str | None = None,
    input: Any = None,
    output: Any = None,
    start_time: int | None = None,
    end_time: int | None = None,
    tracer_provider: trace.TracerProvider | None = None,
    content: ContentPolicy | None = None,
) -> None:
    """Record a model call (a ``chat {model}`` span with usage) that already happened.

    ``input_tokens`` counts the whole prompt, cached tokens included (the GenAI convention);
    the cache counts say how much of it was read from or written to the cache.
    """
    emitter = SpanEmitter(tracer_provider, content)
    span = emitter.start_chat(model, provider=provider, start_time=start_time)
    emitter.set_chat_result(
        span,
        usage=Usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_input_tokens=cache_read_input_tokens,
            cache_creation_input_tokens=cache_creation_input_tokens,
        ),
        finish_reason=finish_reason,
        input=input,
        output=output,
    )
    span.end(end_time=end_time)


class AgentSession(_CurrentSpan):
    """An agent run in progress (see :func:`agent_session`)."""

    def __init__(self, emitter: SpanEmitter) -> None:
        self._emitter = emitter

    def set_result(
        self,
        output: Any = None,
        *,
        usage: Usage | None = None,
        cost_usd: float | None = None,
        error: str | None = None,
    ) -> None:
        """The run's final answer, total usage and cost."""
        if self.span is not None:
            self._emitter.set_run_result(
                self.span, usage=usage, cost_usd=cost_usd, output=output, error=error
            )


@contextmanager
def agent_session(
    name: str,
    *,
    conversation_id: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    skills_available: Iterable[str | tuple[str, str | None]] | None = None,
    input: Any = None,
    cwd: str | os.PathLike[str] | None = None,
    tracer_provider: trace.TracerProvider | None = None,
    content: ContentPolicy | None = None,
) -> Iterator[AgentSession]:
    """An ``invoke_agent {name}`` span around one agent run.

    ``skills_available`` lists the skills the agent could see, as names (descriptions are read
    from their SKILL.md, found from ``cwd``) or ``(name, description)`` pairs.
    """
    emitter = SpanEmitter(tracer_provider, content)
    session = AgentSession(emitter)
    span = emitter.start_agent(
        name, conversation_id=conversation_id, provider=provider, model=model, input=input
    )
    if skills_available is not None:
        resolver = SkillResolver(cwd or Path.cwd())
        pairs = [
            (item, resolver.description(item)) if isinstance(item, str) else item
            for item in skills_available
        ]
        emitter.set_skills_available(span, pairs)
    session._enter(span)
    try:
        yield session
    except BaseException as exc:
        session._exit(exc)
        raise
    session._exit(None)
