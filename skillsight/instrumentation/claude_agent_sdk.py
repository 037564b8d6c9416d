"""``ClaudeAgentSDKInstrumentor``: skill-activation spans for ``claude-agent-sdk``.

``instrument()`` replaces ``claude_agent_sdk.query`` and four ``ClaudeSDKClient`` methods
(``connect``, ``query``, ``receive_messages`` — which ``receive_response`` reads — and
``disconnect``; ``async with`` goes through them) with wrappers that give each run its own
:class:`~skillsight.instrumentation._claude_session.ClaudeSession`. ``uninstrument()`` puts the
originals back. Code that did ``from claude_agent_sdk import query`` before ``instrument()``
holds the original function; import the module (or instrument first).

The agent span is current while the CLI is spawned, so the ``TRACEPARENT`` the SDK passes to the
CLI makes Claude Code's native telemetry (when switched on) join the same trace.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from skillsight.errors import ConfigError
from skillsight.instrumentation._claude_session import ClaudeSession
from skillsight.instrumentation._content import ContentPolicy
from skillsight.instrumentation._guard import guard
from skillsight.instrumentation._skillinfo import SkillCache
from skillsight.instrumentation._spans import SpanEmitter

__all__ = ["DEFAULT_AGENT_NAME", "ClaudeAgentSDKInstrumentor"]

DEFAULT_AGENT_NAME = "claude-code"
_CLIENT_METHODS = ("connect", "query", "receive_messages", "disconnect")


class ClaudeAgentSDKInstrumentor:
    """Emits agent, chat, tool and ``activate_skill`` spans for Claude Agent SDK runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._originals: dict[str, Any] = {}
        self._tracer_provider: trace.TracerProvider | None = None
        self._content: ContentPolicy | None = None
        self._agent_name = DEFAULT_AGENT_NAME
        self._skill_cache = SkillCache()
        # One session per connected client, dropped with the client.
        self._clients: weakref.WeakKeyDictionary[Any, ClaudeSession] = weakref.WeakKeyDictionary()

    @property
    def is_instrumented(self) -> bool:
        """Whether this instrumentor's wrappers are installed."""
        return bool(self._originals)

    def instrument(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        content: ContentPolicy | None = None,
        agent_name: str = DEFAULT_AGENT_NAME,
    ) -> None:
        """Install the wrappers (spans go to ``tracer_provider``, else the configured one)."""
        try:
            import claude_agent_sdk
        except ImportError as exc:
            raise ConfigError(
                "ClaudeAgentSDKInstrumentor needs claude-agent-sdk: "
                "pip install 'skillsight[claude]'"
            ) from exc

        with self._lock:
            if self._originals:
                raise RuntimeError("ClaudeAgentSDKInstrumentor is already instrumenting")
            for other in (claude_agent_sdk.query, claude_agent_sdk.ClaudeSDKClient.connect):
                if getattr(other, "__skillsight_wrapped__", False):
                    raise RuntimeError(
                        "claude_agent_sdk is already instrumented by another "
                        "ClaudeAgentSDKInstrumentor; uninstrument that one first"
                    )
            self._tracer_provider = tracer_provider
            self._content = content
            self._agent_name = agent_name
            client_cls = claude_agent_sdk.ClaudeSDKClient
            self._originals["query"] = claude_agent_sdk.query
            for name in _CLIENT_METHODS:
                self._originals[f"client.{name}"] = client_cls.__dict__[name]
            claude_agent_sdk.query = self._wrap_query(claude_agent_sdk.query)
            wrappers = {
                "connect": self._wrap_connect,
                "query": self._wrap_client_query,
                "receive_messages": self._wrap_receive,
                "disconnect": self._wrap_disconnect,
            }
            for name, wrap in wrappers.items():
                setattr(client_cls, name, wrap(self._originals[f"client.{name}"]))

    def uninstrument(self) -> None:
        """Restore the SDK's own functions and methods."""
        import claude_agent_sdk

        with self._lock:
            if not self._originals:
                return
            claude_agent_sdk.query = self._originals["query"]
            for name in _CLIENT_METHODS:
                setattr(claude_agent_sdk.ClaudeSDKClient, name, self._originals[f"client.{name}"])
            self._originals.clear()

    # --- sessions ----------------------------------------------------------------------------

    def _new_session(self, options: Any) -> ClaudeSession | None:
        with guard("starting a Claude Agent SDK session"):
            skill_dirs = [
                str(p.get("path"))
                for p in getattr(options, "plugins", None) or []
                if isinstance(p, dict) and p.get("path")
            ]
            # The CLI's user skills live under its config dir, which options.env may move.
            config_dir = (getattr(options, "env", None) or {}).get("CLAUDE_CONFIG_DIR")
            if config_dir:
                skill_dirs.append(str(Path(config_dir) / "skills"))
            cwd = getattr(options, "cwd", None)
            return ClaudeSession(
                SpanEmitter(self._tracer_provider, self._content),
                agent_name=self._agent_name,
                cwd=str(cwd) if cwd is not None else None,
                model=getattr(options, "model", None),
                skills_allowlist=(
                    options.skills if isinstance(getattr(options, "skills", None), list) else None
                ),
                plugin_dirs=skill_dirs,
                skill_cache=self._skill_cache,
            )
        return None

    @staticmethod
    def _with_hooks(session: ClaudeSession, options: Any) -> Any:
        with guard("adding hooks to ClaudeAgentOptions"):
            return session.with_hooks(options)
        return options

    # --- query() -------------------------------------------------------------------------------

    def _wrap_query(self, original: Callable[..., AsyncIterator[Any]]) -> Callable[..., Any]:
        instrumentor = self

        @functools.wraps(original)
        async def query(
            *, prompt: Any, options: Any = None, transport: Any = None
        ) -> AsyncIterator[Any]:
            from claude_agent_sdk import ClaudeAgentOptions

            options = options if options is not None else ClaudeAgentOptions()
            session = instrumentor._new_session(options)
            if session is None:
                async for message in original(prompt=prompt, options=options, transport=transport):
                    yield message
                return
            if isinstance(prompt, str):
                with guard("recording the prompt"):
                    session.note_prompt(prompt)
            inner = original(
                prompt=prompt,
                options=instrumentor._with_hooks(session, options),
                transport=transport,
            )
            error: BaseException | None = None
            try:
                while True:
                    # Current only while the SDK works (it spawns the CLI in the first step and
                    # puts TRACEPARENT in its environment), never while the caller holds a message.
                    token = otel_context.attach(session.context)
                    try:
                        message = await inner.__anext__()
                    except StopAsyncIteration:
                        break
                    finally:
                        otel_context.detach(token)
                    session.handle_message(message)
                    yield message
            except BaseException as exc:
                error = None if isinstance(exc, GeneratorExit) else exc
                raise
            finally:
                try:
                    await inner.aclose()  # type: ignore[attr-defined]
                finally:
                    session.end(error)

        query.__skillsight_wrapped__ = True  # type: ignore[attr-defined]
        return query

    # --- ClaudeSDKClient ----------------------------------------------------------------------

    def _wrap_connect(self, original: Callable[..., Any]) -> Callable[..., Any]:
        instrumentor = self

        @functools.wraps(original)
        async def connect(client: Any, prompt: Any = None) -> None:
            session = instrumentor._new_session(client.options)
            if session is None:
                await original(client, prompt)
                return
            previous = instrumentor._clients.pop(client, None)
            if previous is not None:
                previous.end()
            instrumentor._clients[client] = session
            if isinstance(prompt, str):
                with guard("recording the prompt"):
                    session.note_prompt(prompt)
            user_options = client.options
            # The SDK reads the options only while connecting; the caller keeps seeing theirs.
            client.options = instrumentor._with_hooks(session, user_options)
            token = otel_context.attach(session.context)
            try:
                await original(client, prompt)
            except BaseException as exc:
                instrumentor._clients.pop(client, None)
                session.end(exc)
                raise
            finally:
                otel_context.detach(token)
                client.options = user_options

        connect.__skillsight_wrapped__ = True  # type: ignore[attr-defined]
        return connect

    def _wrap_client_query(self, original: Callable[..., Any]) -> Callable[..., Any]:
        instrumentor = self

        @functools.wraps(original)
        async def query(client: Any, prompt: Any, *args: Any, **kwargs: Any) -> None:
            session = instrumentor._clients.get(client)
            if session is not None and isinstance(prompt, str):
                with guard("recording the prompt"):
                    session.note_prompt(prompt)
            await original(client, prompt, *args, **kwargs)

        return query

    def _wrap_receive(self, original: Callable[..., AsyncIterator[Any]]) -> Callable[..., Any]:
        instrumentor = self

        @functools.wraps(original)
        async def receive_messages(client: Any) -> AsyncIterator[Any]:
            async for message in original(client):
                session = instrumentor._clients.get(client)
                if session is not None:
                    session.handle_message(message)
                yield message

        return receive_messages

    def _wrap_disconnect(self, original: Callable[..., Any]) -> Callable[..., Any]:
        instrumentor = self

        @functools.wraps(original)
        async def disconnect(client: Any) -> None:
            try:
                await original(client)
            finally:
                session = instrumentor._clients.pop(client, None)
                if session is not None:
                    session.end()

        return disconnect
