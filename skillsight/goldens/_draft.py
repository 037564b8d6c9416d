"""Drafting a golden case from a production activation and its evaluations, by rule.

- ``question``: the activation's request (an activation whose request was not logged cannot be
  promoted: there would be nothing to replay);
- ``ground_truth``: the session's final answer, only when every evaluation of the activation
  passed (a failing run's answer is not a reference);
- ``expected_skill``: the skill that ran, unless ``skill_selection`` found a better-fitting
  visible skill or the request named another one;
- ``expected_script``: the script ``script_execution`` found not run or failing, else the one
  that ran;
- ``expected_behavior``: one assertion per failing evaluator, written from what it found, plus
  the behaviours a passing run showed; people edit them afterwards;
- tags ``data_source=production`` and ``difficulty_bucket`` (``easy`` when everything passed,
  ``medium`` when only efficiency or tool-error checks failed, ``hard`` otherwise).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from skillsight.errors import GoldenSetError
from skillsight.goldens._model import GoldenCase, Provenance, case_id_for
from skillsight.store.records import Activation

_SOFT = frozenset({"efficiency", "tool_errors"})


def _findings(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = row.get("findings") or "[]"
    try:
        found = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    return [f for f in found if isinstance(f, dict)] if isinstance(found, list) else []


def failing(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows that scored and did not pass (not-applicable and errors are not failures)."""
    return [r for r in rows if r.get("score") is not None and r.get("passed") is False]


def passed_in_production(rows: Sequence[Mapping[str, Any]]) -> bool | None:
    """True when every scored evaluation passed, False when one failed, None when none scored."""
    scored = [r for r in rows if r.get("score") is not None]
    if not scored:
        return None
    return all(r.get("passed") is True for r in scored)


def _expected_skill(activation: Activation, rows: Sequence[Mapping[str, Any]]) -> str | None:
    for row in failing(rows):
        if row.get("evaluator") != "skill_selection":
            continue
        for finding in _findings(row):
            detail = finding.get("detail") or {}
            if finding.get("kind") == "named_other_skill" and detail.get("named"):
                return str(detail["named"][0])
            if finding.get("kind") == "better_fit_visible" and detail.get("skill"):
                return str(detail["skill"])
    return activation.skill_name


def _scripts(rows: Sequence[Mapping[str, Any]], kinds: set[str]) -> list[str]:
    found = []
    for row in rows:
        if row.get("evaluator") != "script_execution":
            continue
        for finding in _findings(row):
            script = (finding.get("detail") or {}).get("script")
            if finding.get("kind") in kinds and script and script not in found:
                found.append(str(script))
    return found


def _ran_script(activation: Activation, rows: Sequence[Mapping[str, Any]]) -> str | None:
    missed = _scripts(rows, {"script_not_run", "script_failed"})
    if missed:
        return missed[0]
    for row in rows:
        if row.get("evaluator") == "script_execution" and row.get("passed") is True:
            for call in activation.tool_calls:
                command = call.arguments.get("command") if isinstance(call.arguments, dict) else ""
                if isinstance(command, str) and "scripts/" in command:
                    for word in command.split():
                        if "scripts/" in word:
                            return word[word.index("scripts/") :].strip("'\"")
    return None


def _assertion(row: Mapping[str, Any], activation: Activation, expected_skill: str | None) -> str:
    """One expected behaviour that the failing evaluation says the run lacked."""
    name = str(row.get("evaluator"))
    kinds = {str(f.get("kind")) for f in _findings(row)}
    skill = activation.skill_name
    if name == "allowed_tools":
        allowed = activation.contract.allowed_tools if activation.contract else None
        listed = f" ({', '.join(allowed)})" if allowed else ""
        return f"Uses only the tools the {skill} skill allows{listed}"
    if name == "skill_selection":
        if expected_skill and expected_skill != skill:
            return f"Uses the {expected_skill} skill for this request, not {skill}"
        return f"Uses only the skills this request needs ({expected_skill or 'none'})"
    if name == "script_execution":
        scripts = _scripts([row], {"script_not_run", "script_failed"})
        which = f" {', '.join(scripts)}" if scripts else ""
        return f"Runs the skill's script{which} and it succeeds"
    if name == "tool_errors":
        return "Completes the task without failed or repeated tool calls"
    if name == "integration_heuristic":
        if kinds & {"inline_recompute", "inline_computation"}:
            return "Answers from the skill's script output instead of recomputing it inline"
        return "The final answer uses the values the skill produced"
    if name == "security":
        parts = []
        if "secret" in kinds:
            parts.append("does not reveal secrets")
        if kinds & {"rm_rf_outside_workspace", "path_outside_workspace", "sensitive_path"}:
            parts.append("touches nothing outside the workspace")
        if not parts:
            parts.append("raises no security finding")
        return "Stays safe: " + " and ".join(parts)
    if name == "efficiency":
        return f"Uses no more tool calls, tokens and time than the {skill} skill usually needs"
    reason = str(row.get("reason") or "").split(". Judge:")[0]
    return f"Satisfies the {name} check (in production: {reason})"[:300]


def draft_behavior(
    activation: Activation, rows: Sequence[Mapping[str, Any]], expected_skill: str | None
) -> list[str]:
    """The drafted ``expected_behavior`` of the case (rule-based)."""
    out: list[str] = []
    bad = failing(rows)
    for row in bad:
        text = _assertion(row, activation, expected_skill)
        if text not in out:
            out.append(text)
    if not bad and expected_skill:
        out.append(f"Uses the {expected_skill} skill")
        script = _ran_script(activation, rows)
        if script:
            out.append(f"Runs {script}")
        if activation.integration_message:
            out.append("The final answer reports what the skill's run produced")
    return out


def _difficulty(rows: Sequence[Mapping[str, Any]]) -> str:
    bad = {str(r.get("evaluator")) for r in failing(rows)}
    if not bad:
        return "easy"
    return "medium" if bad <= _SOFT else "hard"


def draft_case(
    activation: Activation,
    evaluations: Sequence[Mapping[str, Any]],
    *,
    final_answer: str | None = None,
    cluster_id: str = "",
) -> GoldenCase:
    """A golden case drafted from ``activation`` and its evaluation rows (see the module)."""
    if not activation.request.strip():
        raise GoldenSetError(
            f"activation {activation.activation_id} has no logged request: nothing to replay "
            "(Claude Code logs prompts with OTEL_LOG_USER_PROMPTS=1)"
        )
    passed = passed_in_production(evaluations)
    expected_skill = _expected_skill(activation, evaluations)
    answer = final_answer if final_answer is not None else activation.integration_message
    tags = {"data_source": "production", "difficulty_bucket": _difficulty(evaluations)}
    if passed is None:
        tags.pop("difficulty_bucket")
    return GoldenCase(
        case_id=case_id_for(activation.request, activation.activation_id),
        question=activation.request,
        ground_truth=answer if passed and answer else None,
        expected_behavior=draft_behavior(activation, evaluations, expected_skill),
        expected_skill=expected_skill,
        expected_script=_ran_script(activation, evaluations),
        tags=tags,
        provenance=Provenance(
            trace_id=activation.trace_id,
            session_id=activation.session_id,
            activation_id=activation.activation_id,
            cluster_id=cluster_id,
            skill_version=activation.skill_version,
            passed_in_production=passed,
        ),
    )
