"""``allowed_tools``: every tool call inside the skill's declared ``allowed-tools``."""

from __future__ import annotations

from skillsight.evaluators._context import EvaluationContext
from skillsight.evaluators._evaluator import Evaluator
from skillsight.evaluators._model import Evaluation, Finding
from skillsight.evaluators._views import views_of
from skillsight.evaluators._workspace import place_of
from skillsight.skills import AllowedTools
from skillsight.store.records import Activation


class AllowedToolsEvaluator(Evaluator):
    """score = 1 - violations / calls (1.0 without calls or when undeclared)."""

    name = "allowed_tools"
    version = "1"
    threshold = 1.0
    summary = "tool calls stay inside the skill's declared allowed-tools"

    def __init__(self) -> None:
        # Per declaration (skills repeat across activations): the parsed rules, the declaration
        # as the reason shows it, the note on invalid patterns, and whether a rule names paths.
        self._parsed: dict[tuple[str, ...], tuple[AllowedTools, str, str, bool]] = {}

    def _permissions(self, declared: list[str]) -> tuple[AllowedTools, str, str, bool]:
        key = tuple(declared)
        parsed = self._parsed.get(key)
        if parsed is None:
            permissions = AllowedTools.parse(declared)
            if permissions.problems:
                shown = "; ".join(f"{p.pattern!r}: {p.message}" for p in permissions.problems)
                problems = f" (invalid patterns allow nothing: {shown})"
            else:
                problems = ""
            parsed = (permissions, " ".join(declared), problems, self._paths(permissions))
            if len(self._parsed) < 10_000:
                self._parsed[key] = parsed
        return parsed

    @staticmethod
    def _paths(permissions: AllowedTools) -> bool:
        """Whether some rule's specifier is a path (anything but Bash's and the unrestricted)."""
        return any(
            rule.tool != "Bash" and not rule.unrestricted and not rule.tool.startswith("mcp__")
            for rule in permissions.rules
        )

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        declared: list[str] | None
        contract = activation.contract
        if context.manifest is not None:
            declared = context.manifest.allowed_tools
        elif contract is not None:
            declared = contract.allowed_tools
            if declared is None and not contract.allowed_tools_known:
                version = f" {contract.version[:12]}" if contract.version else ""
                return self.not_applicable(
                    activation,
                    f"allowed-tools not reported: the telemetry names version{version} of "
                    f"{activation.skill_name}, which the catalogue does not hold (register it: "
                    "skillsight skills scan DIR --api URL)",
                )
        else:
            return self.not_applicable(
                activation,
                f"the contract of {activation.skill_name} is unknown: the skill is not in the "
                "catalogue (register it: skillsight skills scan DIR --api URL)",
            )
        calls = activation.tool_calls
        if declared is None:
            return self.result(
                activation,
                1.0,
                "unconstrained",
                f"the skill declares no allowed-tools; {len(calls)} calls unconstrained",
            )
        permissions, shown, problems, paths = self._permissions(declared)
        if not calls:
            return self.result(activation, 1.0, "conformant", "no tool calls" + problems)
        allows = permissions.allows
        findings = []
        undecided: list[str] = []
        # only path patterns (Read(./docs/**), Edit(/src/**)) resolve against the working
        # directory; a declaration of tools and Bash prefixes never needs it looked up
        cwd = place_of(activation, context).workspace if paths else None
        for call, view in zip(calls, views_of(activation).views, strict=True):
            args = view.arguments
            if allows(call.name, args, cwd=cwd):
                continue
            if args is None and any(rule.covers(call.name) for rule in permissions.rules):
                # a rule names the tool with a specifier, and the input was not logged
                undecided.append(call.tool_call_id)
                continue
            # Only a violation needs the verdict's explanation.
            verdict = permissions.check(call.name, args, cwd=cwd)
            findings.append(
                Finding(
                    kind="tool_not_allowed",
                    message=verdict.reason,
                    step_id=call.step_id,
                    tool_call_id=call.tool_call_id,
                    severity="high",
                    detail={"tool": call.name, "declared": list(declared)},
                )
            )
        unseen = ("tool_arguments",) if undecided else ()
        judged = len(calls) - len(undecided)
        if not judged:
            return self.not_applicable(
                activation,
                f"none of the {len(calls)} calls can be checked against allowed-tools {shown}",
                unseen,
            )
        skipped = f" ({len(undecided)} calls not checked)" if undecided else ""
        if not findings:
            reason = f"all {judged} calls inside allowed-tools {shown}{skipped}"
            return self.result(activation, 1.0, "conformant", reason + problems, unseen=unseen)
        score = 1.0 - len(findings) / judged
        tools = sorted({f.detail["tool"] for f in findings})
        reason = (
            f"{len(findings)} of {judged} calls outside allowed-tools "
            f"{shown}: {', '.join(tools)}{skipped}" + problems
        )
        return self.result(activation, score, "violation", reason, findings, unseen=unseen)
