"""OpenAI Agents SDK instrumentation: a tracing processor that emits skillsight's spans.

::

    from skillsight.instrumentation import configure
    from skillsight.instrumentation.openai_agents import instrument_openai_agents

    configure(endpoint="http://127.0.0.1:4318")  # or pass tracer_provider= below
    instrument_openai_agents(skills_dirs=["skills"])

The SDK's agent, model, tool, handoff and custom spans become OpenTelemetry spans with the GenAI
names of :mod:`skillsight.semconv`, and each ``load_skill`` call (or read of a ``SKILL.md``)
opens an ``activate_skill {name}`` span with the tool calls the skill drives as its children.
The mapping itself is :mod:`skillsight.instrumentation._openai_agents_trace`.

Importing this module imports ``agents`` (``pip install 'skillsight[openai-agents]'``); the rest
of :mod:`skillsight.instrumentation` never does.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from opentelemetry import trace

from skillsight.instrumentation._config import resolve_tracer_provider
from skillsight.instrumentation._content import ContentPolicy
from skillsight.instrumentation._guard import guard
from skillsight.instrumentation._openai_agents_data import SdkSpan
from skillsight.instrumentation._openai_agents_trace import SkillSettings, TraceMapper
from skillsight.instrumentation._spans import SpanEmitter

try:
    from agents.tracing import Trace, TracingProcessor, add_trace_processor
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "skillsight.instrumentation.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'skillsight[openai-agents]'"
    ) from exc

__all__ = ["SkillsightTracingProcessor", "instrument_openai_agents"]

_KEPT_ERRORS = 100


class SkillsightTracingProcessor(TracingProcessor):
    """An ``agents.tracing.TracingProcessor`` that turns the SDK's traces into skillsight spans.

    ``skills_dirs`` are folders of skill folders (``<dir>/<name>/SKILL.md``): the agent spans
    list what is there as ``skillsight.skills.available``, and activations take their
    description, version, source and allowed-tools from there (project ``.claude/skills`` under
    ``cwd`` and the user's skills are searched too). ``load_skill_tools`` names the function
    tools whose call activates the skill named by their ``skill_name``/``name``/``skill``
    argument. Content (prompts, arguments, results) follows ``content`` or the configured policy.

    Errors inside the processor never reach the agent: they are logged (raised under
    ``SKILLSIGHT_INSTRUMENTATION_STRICT=1``, where the SDK itself then logs them) and the last
    ones are kept in :attr:`internal_errors`.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        *,
        skills_dirs: Iterable[str | os.PathLike[str]] = (),
        cwd: str | os.PathLike[str] | None = None,
        load_skill_tools: Iterable[str] = ("load_skill",),
        content: ContentPolicy | None = None,
    ) -> None:
        self._tracer_provider = tracer_provider
        self._emitter = SpanEmitter(tracer_provider, content)
        self._settings = SkillSettings(
            load_skill_tools=frozenset(load_skill_tools),
            skills_dirs=tuple(Path(d).expanduser().absolute() for d in skills_dirs),
            cwd=Path(cwd) if cwd is not None else None,
        )
        self._lock = threading.Lock()
        self._traces: dict[str, TraceMapper] = {}
        self._closed = False
        self.internal_errors: deque[BaseException] = deque(maxlen=_KEPT_ERRORS)
        """The last errors raised inside the processor (an empty deque when all is well)."""

    # --- TracingProcessor -------------------------------------------------------------------

    def on_trace_start(self, trace: Trace) -> None:
        with self._guard("on_trace_start"), self._lock:
            if not self._closed:
                self._mapper(trace.trace_id, _conversation_id(trace))

    def on_trace_end(self, trace: Trace) -> None:
        with self._guard("on_trace_end"), self._lock:
            mapper = self._traces.pop(trace.trace_id, None)
            if mapper is not None:
                mapper.close()

    def on_span_start(self, span: SdkSpan) -> None:
        with self._guard("on_span_start"), self._lock:
            if not self._closed:
                self._mapper(span.trace_id, None).span_started(span)

    def on_span_end(self, span: SdkSpan) -> None:
        with self._guard("on_span_end"), self._lock:
            mapper = self._traces.get(span.trace_id)
            if mapper is not None:
                mapper.span_ended(span)

    def shutdown(self) -> None:
        """End the spans of unfinished traces and stop mapping new ones."""
        with self._guard("shutdown"), self._lock:
            self._closed = True
            for mapper in self._traces.values():
                mapper.close()
            self._traces.clear()

    def force_flush(self) -> None:
        with self._guard("force_flush"):
            provider = resolve_tracer_provider(self._tracer_provider)
            flush = getattr(provider, "force_flush", None)
            if callable(flush):
                flush()

    # --- internals --------------------------------------------------------------------------

    def _mapper(self, trace_id: str, conversation_id: str | None) -> TraceMapper:
        mapper = self._traces.get(trace_id)
        if mapper is None:
            mapper = TraceMapper(
                self._emitter, self._settings, conversation_id or trace_id, time.time_ns
            )
            self._traces[trace_id] = mapper
        return mapper

    def _guard(self, what: str) -> _Recorded:
        return _Recorded(self.internal_errors, f"the OpenAI Agents SDK processor ({what})")


class _Recorded:
    """:func:`guard` that also remembers the error, since the SDK swallows what processors raise."""

    def __init__(self, errors: deque[BaseException], what: str) -> None:
        self._errors = errors
        self._inner = guard(what)

    def __enter__(self) -> None:
        self._inner.__enter__()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        if isinstance(exc, Exception):
            self._errors.append(exc)
        return bool(self._inner.__exit__(exc_type, exc, tb))


def _conversation_id(sdk_trace: Trace) -> str | None:
    group = getattr(sdk_trace, "group_id", None)
    return group if isinstance(group, str) and group else None


def instrument_openai_agents(
    tracer_provider: trace.TracerProvider | None = None,
    *,
    skills_dirs: Iterable[str | os.PathLike[str]] = (),
    cwd: str | os.PathLike[str] | None = None,
    load_skill_tools: Iterable[str] = ("load_skill",),
    content: ContentPolicy | None = None,
) -> SkillsightTracingProcessor:
    """Register a :class:`SkillsightTracingProcessor` beside the SDK's own processors.

    The SDK keeps exporting to OpenAI as well unless told otherwise; to send traces to
    skillsight only, use ``agents.set_trace_processors([SkillsightTracingProcessor(...)])``.
    Returns the processor (``processor.shutdown()`` stops it).
    """
    processor = SkillsightTracingProcessor(
        tracer_provider,
        skills_dirs=skills_dirs,
        cwd=cwd,
        load_skill_tools=load_skill_tools,
        content=content,
    )
    add_trace_processor(processor)
    return processor
