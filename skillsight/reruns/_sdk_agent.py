"""The agent ``skillsight rerun --sdk`` starts: the Claude Agent SDK under skillsight's
instrumentor, in a process of its own.

``python -m skillsight.reruns._sdk_agent --prompt-file F --workspace W`` reads the prompt, runs
one ``claude_agent_sdk.query()`` in the workspace (project skills from ``.claude/skills``),
exports the instrumentor's spans to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the rerun's resource
attributes ride on ``OTEL_RESOURCE_ATTRIBUTES``), prints the final answer and exits 0, or 1 when
the SDK reported an error. The CLI it drives is told not to export its own telemetry, so each
run is one session.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

TOOLS = ("Skill", "Read", "Write", "Edit", "Glob", "Grep", "Bash")


async def _run(prompt: str, workspace: Path, max_turns: int) -> tuple[str, bool]:
    import claude_agent_sdk

    options = claude_agent_sdk.ClaudeAgentOptions(
        cwd=str(workspace),
        setting_sources=["project"],
        allowed_tools=list(TOOLS),
        max_turns=max_turns,
    )
    answer, failed = "", False
    async for message in claude_agent_sdk.query(prompt=prompt, options=options):
        if isinstance(message, claude_agent_sdk.ResultMessage):
            answer, failed = message.result or "", bool(message.is_error)
    return answer, failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skillsight.reruns._sdk_agent")
    parser.add_argument("--prompt-file", type=Path, required=True)
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--max-turns", type=int, default=20)
    args = parser.parse_args(argv)
    # the instrumentor's spans are this run's telemetry; the CLI's own export would double it
    os.environ.pop("CLAUDE_CODE_ENABLE_TELEMETRY", None)
    from skillsight.instrumentation import ClaudeAgentSDKInstrumentor, configure, shutdown

    configure(service_name="skillsight-rerun-sdk")
    ClaudeAgentSDKInstrumentor().instrument()
    try:
        answer, failed = asyncio.run(
            _run(args.prompt_file.read_text(encoding="utf-8"), args.workspace, args.max_turns)
        )
    finally:
        shutdown()
    print(answer)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
