"""The ``security`` evaluator and the scanners it is built from."""

from __future__ import annotations

from skillsight.evaluators.security._commands import destructive
from skillsight.evaluators.security._content import scan_untrusted
from skillsight.evaluators.security._evaluator import WEIGHTS, SecurityEvaluator
from skillsight.evaluators.security._secrets import find_secrets

__all__ = ["WEIGHTS", "SecurityEvaluator", "destructive", "find_secrets", "scan_untrusted"]
