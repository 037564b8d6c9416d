"""``tool_errors``: failed tool calls, retries of them, and repeated identical calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

from skillsight.evaluators._context import EvaluationContext
from skillsight.evaluators._evaluator import Evaluator
from skillsight.evaluators._model import Evaluation, Finding
from skillsight.evaluators._views import views_of
from skillsight.store.records import Activation, ToolCall

# What json.dumps(args, sort_keys=True, separators=(",", ":"), default=str) uses, built once:
# dumps with options builds a new encoder per call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
# ... and its C encoder, made once: ``encode`` makes one per call, which costs more than the
# encoding. No circular-reference markers (arguments come from JSON and cannot hold a cycle;
# a shared markers dict would also be shared between threads).
_C_CANONICAL: Callable[[Any, int], list[str]] | None = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, str, encode_basestring_ascii, None, ":", ",", True, False, True)
)


def call_key(call: ToolCall) -> tuple[str, str]:
    """(tool, canonical arguments): two calls with equal keys do the same thing."""
    args = call.arguments
    if isinstance(args, str):
        return call.name, args.strip()
    if _C_CANONICAL is None or not isinstance(args, dict):
        return call.name, _CANONICAL.encode(args)
    return call.name, "".join(_C_CANONICAL(args, 0))


class ToolErrorsEvaluator(Evaluator):
    """score = 1 - bad / calls, a bad call being one that failed or that repeats an earlier
    successful identical call. Retries (a call of the same tool right after one that failed)
    are findings that cost nothing by themselves: recovering is what a retry is for."""

    name = "tool_errors"
    version = "1"
    threshold = 1.0
    summary = "no failed tool calls and no repeated identical calls"

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        calls = activation.tool_calls
        if not calls:
            return self.result(activation, 1.0, "clean", "no tool calls")
        findings: list[Finding] = []
        bad: set[int] = set()
        succeeded: dict[tuple[str, str], ToolCall] = {}
        last_failed: dict[str, tuple[ToolCall, tuple[str, str]]] = {}
        # Keys are compared only between calls of one tool: a call whose tool occurs once needs
        # no canonical encoding of its arguments (the costly part), any stand-in key will do.
        seen: set[str] = set()
        repeated: set[str] = set()
        for call in calls:
            (repeated if call.name in seen else seen).add(call.name)
        for index, call in enumerate(calls):
            key = call_key(call) if call.name in repeated else (call.name, "")
            failed = last_failed.pop(call.name, None)
            if failed is not None:
                failed_before, failed_key = failed
                same = failed_key == key and call.arguments is not None
                findings.append(
                    Finding(
                        kind="retry",
                        message=(
                            f"{call.name} retried after call {failed_before.tool_call_id} failed"
                            + (" with identical arguments" if same else "")
                        ),
                        step_id=call.step_id,
                        tool_call_id=call.tool_call_id,
                        severity="info",
                        detail={"retry_of": failed_before.tool_call_id, "identical": same},
                    )
                )
            if call.is_error:
                bad.add(index)
                last_failed[call.name] = (call, key)
                findings.append(
                    Finding(
                        kind="tool_error",
                        message=f"{call.name} failed: {(call.result or '').strip()[:200]}",
                        step_id=call.step_id,
                        tool_call_id=call.tool_call_id,
                        severity="medium",
                        detail={"tool": call.name},
                    )
                )
                continue
            if call.arguments is None:
                continue  # input not logged: it cannot be told apart from another call's
            earlier = succeeded.get(key)
            if earlier is not None:
                bad.add(index)
                findings.append(
                    Finding(
                        kind="repeated_call",
                        message=(
                            f"{call.name} repeats call {earlier.tool_call_id} with identical "
                            "arguments"
                        ),
                        step_id=call.step_id,
                        tool_call_id=call.tool_call_id,
                        severity="low",
                        detail={"repeats": earlier.tool_call_id, "tool": call.name},
                    )
                )
            else:
                succeeded[key] = call
        score = 1.0 - len(bad) / len(calls)
        errors = sum(f.kind == "tool_error" for f in findings)
        repeats = sum(f.kind == "repeated_call" for f in findings)
        retries = sum(f.kind == "retry" for f in findings)
        reason = f"{errors} failed, {repeats} repeated, {retries} retries among {len(calls)} calls"
        unlogged = len(views_of(activation).hidden_inputs)
        if unlogged:
            reason += f" ({unlogged} calls' inputs not logged: not checked for repeats)"
        if errors:
            label = "errors"
        elif repeats:
            label = "repeats"
        else:
            label = "clean"
        unseen = ("tool_arguments",) if unlogged else ()
        return self.result(activation, score, label, reason, findings, unseen=unseen)
