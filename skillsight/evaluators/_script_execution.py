"""``script_execution``: the scripts the skill relies on were run, and succeeded."""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

from skillsight.evaluators._calls import call_view
from skillsight.evaluators._context import EvaluationContext
from skillsight.evaluators._evaluator import Evaluator
from skillsight.evaluators._model import Evaluation, Finding
from skillsight.evaluators._views import ActivationViews, views_of
from skillsight.store.records import Activation, ToolCall

# What may stand right before a script's relative path in a command: start, whitespace, a
# quote, '=' or '/' (an absolute or ./ prefix). Right after it: end, whitespace, a quote or ';'.
_BEFORE = r"(?:^|(?<=[\s'\"=/]))"
_AFTER = r"(?=$|[\s'\";|&)])"


def expected_scripts(activation: Activation, context: EvaluationContext) -> list[str]:
    """The golden case's script when it names one, else the scripts SKILL.md mentions."""
    if context.golden is not None and context.golden.expected_script:
        return [context.golden.expected_script]
    manifest = context.manifest
    if manifest is None:
        return []
    return list(_mentioned(tuple(manifest.scripts), manifest.body))


@lru_cache(maxsize=1024)
def _mentioned(scripts: tuple[str, ...], body: str) -> tuple[str, ...]:
    """The scripts the body names; per skill, not per activation (the body is long)."""
    return tuple(s for s in scripts if s in body or posixpath.basename(s) in body)


@lru_cache(maxsize=1024)
def _pattern(script: str) -> re.Pattern[str]:
    """Matches the script in a command line: by its skill-relative path when it has one
    (``scripts/x.py`` also matches ``/abs/skill/scripts/x.py``), else by its file name."""
    return re.compile(_BEFORE + re.escape(script.lstrip("./")) + _AFTER)


def runs_of(script: str, calls: list[ToolCall]) -> list[ToolCall]:
    """The calls whose shell command runs ``script``."""
    return runs_among(script, calls, [call_view(call).command for call in calls])


def runs_among(script: str, calls: list[ToolCall], commands: list[str | None]) -> list[ToolCall]:
    """:func:`runs_of`, given each call's shell command (None for other calls)."""
    search = _pattern(script).search
    return [
        call
        for call, command in zip(calls, commands, strict=True)
        if command is not None and search(command)
    ]


def runs_in(derived: ActivationViews, script: str) -> list[ToolCall]:
    """:func:`runs_among` over the activation's calls, kept with its views (do not change it)."""
    runs = derived.script_runs.get(script)
    if runs is None:
        runs = derived.script_runs[script] = runs_among(script, derived.calls, derived.commands)
    return runs


class ScriptExecutionEvaluator(Evaluator):
    """score = scripts run successfully / expected scripts. A script counts as run when a shell
    call's command names it, and as successful when one of those calls did not fail."""

    name = "script_execution"
    version = "1"
    threshold = 1.0
    summary = "the skill's scripts (or the golden case's expected script) ran and succeeded"

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        scripts = expected_scripts(activation, context)
        if not scripts:
            why = (
                "the skill's manifest is unknown"
                if context.manifest is None
                else "SKILL.md names no scripts"
            )
            return self.not_applicable(activation, why)
        findings: list[Finding] = []
        ok = 0
        ran_ok: list[str] = []
        calls = activation.tool_calls
        derived = views_of(activation)
        for script in scripts:
            runs = runs_in(derived, script)
            good = [r for r in runs if not r.is_error]
            if good:
                ok += 1
                ran_ok.append(good[0].tool_call_id)
            elif runs:
                for run in runs:
                    findings.append(
                        Finding(
                            kind="script_failed",
                            message=f"{script} ran and failed: {(run.result or '')[:200]}",
                            step_id=run.step_id,
                            tool_call_id=run.tool_call_id,
                            severity="medium",
                            detail={"script": script},
                        )
                    )
            else:
                # Nothing ran: cite the decision that loaded the skill.
                findings.append(
                    Finding(
                        kind="script_not_run",
                        message=f"{script} was never run while the skill was active",
                        step_id=activation.trigger_step_id,
                        tool_call_id=activation.trigger_call_id,
                        severity="medium",
                        detail={"script": script},
                    )
                )
        # A script not seen running may have run in a command that was not logged.
        hidden = derived.hidden_inputs
        if hidden and any(f.kind == "script_not_run" for f in findings):
            return self.not_applicable(
                activation,
                f"{len(hidden)} of {len(calls)} calls' commands were not logged: whether "
                + ", ".join(f.detail["script"] for f in findings if f.kind == "script_not_run")
                + " ran is unknown",
                ("tool_arguments",),
            )
        unseen = ("tool_arguments",) if hidden else ()
        score = ok / len(scripts)
        if not findings:
            label, reason = "ran", f"{ok} of {len(scripts)} scripts ran and succeeded"
        else:
            skipped = [f.detail["script"] for f in findings if f.kind == "script_not_run"]
            failed = sorted({f.detail["script"] for f in findings if f.kind == "script_failed"})
            label = "skipped" if skipped and not failed else "failed"
            parts = [f"{ok} of {len(scripts)} scripts succeeded"]
            if skipped:
                parts.append("not run: " + ", ".join(skipped))
            if failed:
                parts.append("failed: " + ", ".join(failed))
            reason = "; ".join(parts)
        return self.result(
            activation, score, label, reason, findings, tool_call_ids=ran_ok, unseen=unseen
        )
