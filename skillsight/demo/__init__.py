"""Demo and test harness: drive the real Claude Code CLI against a scripted model.

:mod:`skillsight.demo.scripted_anthropic` serves an Anthropic-compatible Messages API whose
answers are scripted; :mod:`skillsight.demo.workload` builds a project with a skill and runs one
Claude Code session through ``claude_agent_sdk`` with native OpenTelemetry export switched on;
:mod:`skillsight.demo.third_party` runs the same session under published instrumentors.
"""
