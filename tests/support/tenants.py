"""Two projects' data for tenancy tests: A's marker session and a poster with a key."""

from __future__ import annotations

import json

import httpx

from tests.support.otlp_builders import export_request, span
from tests.support.serve import RunningServer

KEY = "x-skillsight-key"
MARK = "alpha-only-7f3a9c"
SKILL = "alpha-only-skill"


def post_as(server: RunningServer, key: str, signal: str, body: bytes, content_type: str) -> None:
    response = httpx.post(
        f"{server.otlp_http}/v1/{signal}",
        content=body,
        headers={"content-type": content_type, KEY: key},
        timeout=30,
    )
    assert response.status_code == 200, response.text


def marker_session() -> bytes:
    """A session of a skill only A has; its spans carry the marker."""
    root = span(
        f"invoke_agent {MARK}",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": f"session-{MARK}"},
        trace=0xA1A1,
        span_id=1,
    )
    activation = span(
        f"activate_skill {SKILL}",
        {
            "skillsight.span.kind": "skill_activation",
            "gen_ai.skill.name": SKILL,
            "gen_ai.conversation.id": f"session-{MARK}",
            "skillsight.activation.input": f"please {MARK}",
        },
        trace=0xA1A1,
        span_id=2,
        parent=1,
    )
    tool = span(
        "execute_tool Bash",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "Bash",
            "gen_ai.tool.call.id": f"call-{MARK}",
            "gen_ai.tool.call.arguments": json.dumps({"command": f"echo {MARK}"}),
            "gen_ai.conversation.id": f"session-{MARK}",
        },
        trace=0xA1A1,
        span_id=3,
        parent=2,
    )
    return export_request([root, activation, tool])
