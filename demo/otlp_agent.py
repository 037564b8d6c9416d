"""A small command-line agent for ``skillsight rerun`` (its tests and benchmark): it follows the
agent contract and exports its own telemetry over OTLP (skillsight's manual instrumentation API,
configured from the contract's OTEL_* variables).

With the ``csv-summary`` skill in its workspace it activates the skill and runs the skill's
script on ``data/sales.csv``, answering with the script's output. Without it (the baseline) it
reads the CSV and answers from it: correctly on the attempts listed in
``OTLP_AGENT_CORRECT_ATTEMPTS`` (comma-separated, default ``1``), with a wrong total otherwise.
``OTLP_AGENT_SLEEP_S`` makes each run sleep first; ``OTLP_AGENT_LOG`` names a folder where each
launch writes ``<case>.<condition>.<attempt>.<key>`` when it ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from skillsight.instrumentation import (
    agent_session,
    configure,
    record_llm_call,
    shutdown,
    skill_activation,
    tool_call,
)

SKILL = "csv-summary"


def main() -> int:
    prompt = os.environ["SKILLSIGHT_RERUN_PROMPT"]
    workspace = Path(os.environ["SKILLSIGHT_RERUN_WORKSPACE"])
    attempt = os.environ["SKILLSIGHT_RERUN_ATTEMPT"]
    time.sleep(float(os.environ.get("OTLP_AGENT_SLEEP_S", "0")))
    skills = workspace / ".claude" / "skills"
    visible = sorted(p.name for p in skills.iterdir()) if skills.is_dir() else []
    configure(service_name="otlp-test-agent")
    with agent_session(
        "otlp-test-agent",
        conversation_id=str(uuid.uuid4()),
        skills_available=visible,
        input=prompt,
        cwd=workspace,
    ) as run:
        record_llm_call("test-model", input_tokens=900, output_tokens=60)
        if SKILL in visible:
            script = skills / SKILL / "scripts" / "summarize_csv.py"
            command = f"python3 {script} data/sales.csv"
            with (
                skill_activation(SKILL, skill_dir=skills / SKILL, input=prompt, call_id="c-skill"),
                tool_call("Bash", "c-bash", {"command": command}) as call,
            ):
                output = subprocess.run(
                    command.split(), cwd=workspace, capture_output=True, text=True
                ).stdout.strip()
                call.set_result(output)
            record_llm_call("test-model", input_tokens=1400, output_tokens=120)
            answer = f"The {SKILL} skill summarised data/sales.csv:\n\n{output}"
        else:
            with tool_call("Read", "c-read", {"file_path": "data/sales.csv"}) as call:
                call.set_result((workspace / "data" / "sales.csv").read_text())
            correct = os.environ.get("OTLP_AGENT_CORRECT_ATTEMPTS", "1").split(",")
            total = "133.00" if attempt in correct else "120.00"
            answer = f"The total amount is {total}; north sold the most (57.00)."
        run.set_result(answer)
    shutdown()
    log = os.environ.get("OTLP_AGENT_LOG")
    if log:
        name = ".".join(
            os.environ[f"SKILLSIGHT_RERUN_{k}"] for k in ("CASE", "CONDITION", "ATTEMPT", "KEY")
        )
        Path(log, name).write_text(answer)
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
