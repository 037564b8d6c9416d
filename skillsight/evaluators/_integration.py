"""``integration_heuristic``: the agent used what the skill produced instead of redoing it.

Two checks, each applicable or not:

- *reference*: the integration message (the first agent message after the skill's run), or a
  later agent message the context supplies, states at least one value the skill's tool calls
  produced. Values are numbers of two or more digits and
  file names, taken from the results of successful calls other than file reads (Read, Glob,
  Grep, LS return inputs), minus those already in the request or in the calls' own arguments.
- *no recompute*: when the skill has scripts, the agent neither ran an inline interpreter or
  calculator (``python -c``, ``node -e``, ``bc``, ``awk``, ``expr``, ``$((…))``, a heredoc into an
  interpreter) instead of a script, nor — when no script ran successfully — answered with
  numbers that no tool result, the request or the skill's content contains.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from skillsight.evaluators._calls import FILE_TOOLS
from skillsight.evaluators._context import EvaluationContext
from skillsight.evaluators._evaluator import Evaluator
from skillsight.evaluators._model import Evaluation, Finding
from skillsight.evaluators._script_execution import expected_scripts, runs_in
from skillsight.evaluators._seen import message_unseen, outputs_unseen
from skillsight.evaluators._views import ActivationViews, views_of
from skillsight.store.records import Activation

# Two or more digits in all: 12, 1,234, 4.5 (a lone digit is too common to mean anything).
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d[\d,]*\d(?:\.\d+)?|\d\.\d+)(?![\w])")
_FILE = re.compile(r"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:[A-Za-z][A-Za-z0-9]{0,5})(?![\w])")
_INLINE = re.compile(
    r"(?:^|[\s;&|(])(?:"
    r"python[0-9.]*\s+(?:-\w*c|-\s*<<)|node\s+(?:-e|-p|--eval)|perl\s+-\w*e|ruby\s+-e"
    r"|bc(?:\s|$)|awk\s|expr\s|echo\s+\$\(\(|printf\s[^|]*\$\(\()"
)


# Every file name has a dot followed by a letter: a text without one (a table of figures)
# skips the file pattern, which is slow on digit-dense text.
_DOT_LETTER = re.compile(r"\.[A-Za-z]")
_NONE: frozenset[str] = frozenset()

# A literal every alternative of _INLINE contains (it is case-sensitive): commands with none,
# most of them, skip a pattern that has no literal prefix to search for.
_INLINE_WORDS = ("python", "node", "perl", "ruby", "bc", "awk", "expr", "echo", "printf")


def _inline(command: str) -> bool:
    """Whether ``command`` computes inline (``_INLINE`` matches it)."""
    for word in _INLINE_WORDS:
        if word in command:
            return _INLINE.search(command) is not None
    return False


def _numbers(text: str) -> set[str]:
    found: set[str] = set()
    for raw in _NUMBER.findall(text):
        if "." in raw:
            if "," in raw:
                raw = raw.replace(",", "")
            found.add(raw.rstrip("0").rstrip("."))
        elif "," in raw:
            found.add(raw.replace(",", ""))
        else:
            found.add(raw)
    return found


@lru_cache(maxsize=8192)
def numbers(text: str) -> frozenset[str]:
    """Numbers of at least two digits, written without thousands separators or trailing
    zeros after the point (``1,234.50`` -> ``1234.5``)."""
    return frozenset(_numbers(text))


def files(text: str) -> frozenset[str]:
    if _DOT_LETTER.search(text) is None:
        return _NONE
    return frozenset(m for m in _FILE.findall(text) if not m[0].isdigit())


@lru_cache(maxsize=8192)
def values(text: str) -> frozenset[str]:
    if not text:
        return _NONE
    return numbers(text) | files(text)


def _files(text: str) -> set[str]:
    if _DOT_LETTER.search(text) is None:
        return set()
    return {m for m in _FILE.findall(text) if not m[0].isdigit()}


def _union(texts: Iterable[str]) -> set[str]:
    """The values of several texts: one scan of them joined by newlines, which no number or
    file name spans and which bounds them as the start and end of a text do."""
    joined = "\n".join(texts)
    out = _numbers(joined)
    if _DOT_LETTER.search(joined) is not None:
        out.update(m for m in _FILE.findall(joined) if not m[0].isdigit())
    return out


class IntegrationEvaluator(Evaluator):
    """score = mean of the applicable checks (reference, no recompute), each 1 or 0."""

    name = "integration_heuristic"
    version = "1"
    threshold = 1.0
    summary = "the next message uses the skill's results and nothing is recomputed inline"
    reads_later_messages = True

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        calls = activation.tool_calls
        message = activation.integration_message
        unseen: list[str] = []
        if message_unseen(activation):
            unseen.append("messages")
        # What the skill produced is known only when every output it could come from was seen.
        producers = [c for c in calls if not c.is_error and c.name not in FILE_TOOLS]
        outputs_seen = not outputs_unseen(producers)
        if not outputs_seen:
            unseen.append("tool_outputs")
        # What a file read returns is the input's content, not something the skill produced.
        # Numbers and file names are kept apart (a file name holds a letter, a number none):
        # texts compared with the produced values are then scanned only for the kinds there are.
        derived = views_of(activation)
        made = derived.made()
        made_numbers = frozenset(_numbers(made))
        produced_numbers, produced_files = set(made_numbers), _files(made)
        views = derived.views
        if message is not None and (produced_numbers or produced_files):
            # The inputs matter only to what is produced, which only a message can use; the
            # request and the arguments are scanned together (the union of their values).
            inputs = "\n".join([activation.request, *(v.text for v in views)])
            if produced_numbers:
                produced_numbers -= _numbers(inputs)
            if produced_files:
                produced_files -= _files(inputs)
        produced = produced_numbers | produced_files
        checks: list[tuple[str, bool]] = []
        findings: list[Finding] = []
        used: set[str] = set()
        if message is not None and produced and outputs_seen:
            said = "\n".join((message, *context.later_messages))
            if produced_numbers:
                used = _numbers(said) & produced_numbers
            if produced_files:
                used |= _files(said) & produced_files
            checks.append(("reference", bool(used)))
            if not used:
                findings.append(
                    Finding(
                        kind="output_not_referenced",
                        message=(
                            "the integration message uses none of the values the skill produced "
                            f"({', '.join(sorted(produced)[:8])})"
                        ),
                        step_id=activation.integration_step_id,
                        tool_call_id=None
                        if activation.integration_step_id is not None
                        else (activation.trigger_call_id),
                        severity="medium",
                        detail={"produced": sorted(produced)[:50]},
                    )
                )
        scripts = expected_scripts(activation, context)
        if scripts:
            recomputed, missing = self._recompute(
                activation, context, scripts, derived, message, made_numbers
            )
            if missing is None:
                checks.append(("no_recompute", not recomputed))
                findings.extend(recomputed)
            else:
                unseen.extend(m for m in missing if m not in unseen)
        if not checks:
            if unseen:
                return self.not_applicable(
                    activation,
                    "what the skill produced and what the agent said are unknown",
                    unseen,
                )
            why = (
                "no integration message and no skill scripts to check"
                if message is None
                else "the skill produced no values to look for and has no scripts"
            )
            return self.not_applicable(activation, why)
        score = sum(ok for _, ok in checks) / len(checks)
        reason = "; ".join(f"{name}: {'ok' if ok else 'failed'}" for name, ok in checks)
        if used:
            reason += f" (uses {', '.join(sorted(used)[:8])})"
        label = (
            "integrated"
            if score == 1.0
            else ("recomputed" if any(f.kind.startswith("inline") for f in findings) else "ignored")
        )
        return self.result(
            activation,
            score,
            label,
            reason,
            findings,
            step_ids=[activation.integration_step_id],
            unseen=unseen,
        )

    def _recompute(
        self,
        activation: Activation,
        context: EvaluationContext,
        scripts: list[str],
        derived: ActivationViews,
        message: str | None,
        made_numbers: frozenset[str],
    ) -> tuple[list[Finding], tuple[str, ...] | None]:
        """The recompute findings, and what kept the check from being made (None: it was):
        inline computation needs the commands, an answer "found in no tool result" needs
        every result and the answer's text."""
        calls = activation.tool_calls
        views, commands = derived.views, derived.commands
        hidden_commands = bool(derived.hidden_inputs)
        runs = [c for s in scripts for c in runs_in(derived, s)]
        script_calls = {c.tool_call_id for c in runs}
        findings = []
        for call, command in zip(calls, commands, strict=True):
            if command is None or call.tool_call_id in script_calls:
                continue
            if _inline(command):
                findings.append(
                    Finding(
                        kind="inline_computation",
                        message=f"computed inline instead of with the skill's script: "
                        f"{command[:160]!r}",
                        step_id=call.step_id,
                        tool_call_id=call.tool_call_id,
                        severity="medium",
                        detail={"scripts": scripts},
                    )
                )
        ran_ok = any(not c.is_error for c in runs)
        # what the answer said, every result and every input must be seen to call a number
        # in it "found in no tool result"
        blind = tuple(
            code
            for code, hidden in (
                ("messages", message_unseen(activation)),
                ("tool_outputs", bool(derived.hidden_outputs)),
                ("tool_arguments", hidden_commands),
            )
            if hidden
        )
        missing: tuple[str, ...] | None = None
        if hidden_commands and not findings:
            missing = ("tool_arguments",)
        if not ran_ok and blind and not findings:
            missing = blind  # an answer worked out without the script cannot be told apart
        if (
            not ran_ok
            and not blind
            and message is not None
            and activation.integration_step_id is not None
        ):
            # The message's numbers minus every known one, source by source: most messages
            # run out of unexplained numbers after the first few sources. The numbers the
            # successful calls produced (known already, and among the sources) go first.
            unexplained = numbers(message) - made_numbers
            sources = [
                activation.request,
                activation.skill_output or "",
                context.manifest.body if context.manifest else "",
            ]
            for call, view in zip(calls, views, strict=True):
                sources += (view.text, call.result or "")
            for text in sources:
                if not unexplained:
                    break
                unexplained -= numbers(text)
            invented = sorted(unexplained)
            if invented:
                # The input the agent worked from instead: its last successful call, if any.
                source = next((c for c in reversed(calls) if not c.is_error), None)
                findings.append(
                    Finding(
                        kind="inline_recompute",
                        message=(
                            "no skill script ran, yet the answer states values no tool produced: "
                            + ", ".join(invented[:8])
                            + (
                                f" (worked out from {source.name} {source.tool_call_id})"
                                if source
                                else ""
                            )
                        ),
                        step_id=activation.integration_step_id,
                        tool_call_id=source.tool_call_id if source else None,
                        severity="medium",
                        detail={"values": invented[:50], "scripts": scripts},
                    )
                )
        return findings, missing
