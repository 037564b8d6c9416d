"""Demo and test harness: drive the real Claude Code CLI against a scripted model.

:mod:`demo.scripted_anthropic` serves an Anthropic-compatible Messages API whose
answers are scripted (main agent and subagents); :mod:`demo.session` runs one
Claude Code session through ``claude_agent_sdk`` and reads its messages back;
:mod:`demo.workload` is the ``make demo`` session (one skill, native OpenTelemetry
export); :mod:`demo.scenarios` plays the scenario library (several skills, a
SKILL.md read, a subagent, errors, contract violations) with the facts each must produce;
:mod:`demo.third_party` runs sessions under published instrumentors.
"""
