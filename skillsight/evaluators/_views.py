"""What several evaluators derive from one activation, derived once per activation and run.

Every cheap evaluator reads the same calls' commands and argument texts, which outputs and
inputs were not exported, which calls ran the skill's scripts. Inside a run
(:func:`shared_views`: :func:`skillsight.evaluators.run_evaluators` and the scheduler open one)
they are derived the first time an evaluator asks and kept for the others until the run ends;
evaluators are pure, so nothing changes an activation while its run holds its views. Outside a
run each evaluation derives its own (a lone ``evaluate()`` may follow a change to the
activation), through the per-call cache of :func:`skillsight.evaluators._calls.call_view`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from skillsight.evaluators._calls import FILE_TOOLS, CallView, call_view, parse_call
from skillsight.store.records import Activation, ToolCall

__all__ = ["ActivationViews", "shared_views", "views_of"]


class ActivationViews:
    """One activation's derived views; each is computed on first use."""

    __slots__ = (
        "_arguments_text",
        "_commands",
        "_hidden_inputs",
        "_hidden_outputs",
        "_views",
        "activation",
        "calls",
        "in_run",
        "script_runs",
    )

    def __init__(self, activation: Activation, in_run: bool) -> None:
        self.activation = activation
        self.calls: list[ToolCall] = activation.tool_calls
        self.in_run = in_run
        self._views: list[CallView] | None = None
        self._commands: list[str | None] | None = None
        self._arguments_text: str | None = None
        self._hidden_outputs: list[ToolCall] | None = None
        self._hidden_inputs: list[ToolCall] | None = None
        self.script_runs: dict[str, list[ToolCall]] = {}
        """Per expected script, the calls that ran it (``script_execution`` and
        ``integration_heuristic`` both look); read-only once there."""

    @property
    def views(self) -> list[CallView]:
        """Each call's :class:`CallView`, in order."""
        views = self._views
        if views is None:
            if self.in_run:
                # held by the run: the per-call cache's weak references would cost more
                views = [parse_call(c.arguments, c.name) for c in self.calls]
            else:
                views = [call_view(c) for c in self.calls]
            self._views = views
        return views

    @property
    def commands(self) -> list[str | None]:
        """Each call's shell command (None for other calls)."""
        commands = self._commands
        if commands is None:
            commands = self._commands = [v.command for v in self.views]
        return commands

    @property
    def arguments_text(self) -> str:
        """Every call's argument text, joined by newlines."""
        text = self._arguments_text
        if text is None:
            text = self._arguments_text = "\n".join([v.text for v in self.views])
        return text

    @property
    def hidden_outputs(self) -> list[ToolCall]:
        """The calls whose output was not exported (``outputs_unseen``)."""
        hidden = self._hidden_outputs
        if hidden is None:
            hidden = self._hidden_outputs = [c for c in self.calls if c.result is None]
        return hidden

    @property
    def hidden_inputs(self) -> list[ToolCall]:
        """The calls whose input was not logged (``arguments_unseen``)."""
        hidden = self._hidden_inputs
        if hidden is None:
            hidden = self._hidden_inputs = [c for c in self.calls if c.arguments is None]
        return hidden

    # The joined outputs below are read by one evaluator each and are not kept: a run holds
    # the views of its whole batch while each evaluator walks it, and kilobytes of text per
    # activation held that long cost more in memory traffic than they save.

    def results(self) -> tuple[str, str]:
        """(every non-empty result joined by newlines, its lower case)."""
        joined = "\n".join([c.result for c in self.calls if c.result])
        return joined, joined.lower()

    def made(self) -> str:
        """The results of successful calls other than file tools', joined by newlines (``""``
        for an unexported one): what the skill produced."""
        return "\n".join(
            [c.result or "" for c in self.calls if not c.is_error and c.name not in FILE_TOOLS]
        )


class _Run(threading.local):
    held: dict[int, ActivationViews] | None = None


_RUN = _Run()


@contextmanager
def shared_views() -> Iterator[None]:
    """Within the block, evaluators of this thread share each activation's views; nested
    blocks share the outer one's."""
    if _RUN.held is not None:
        yield
        return
    _RUN.held = {}
    try:
        yield
    finally:
        _RUN.held = None


def views_of(activation: Activation) -> ActivationViews:
    """The activation's views: the run's when one is open, else derived now."""
    held = _RUN.held
    if held is None:
        return ActivationViews(activation, False)
    views = held.get(id(activation))
    # the run holds the activation, so its id cannot be reused while the entry lives
    if views is None or views.activation is not activation:
        views = held[id(activation)] = ActivationViews(activation, True)
    return views
