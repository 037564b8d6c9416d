"""The OpenAI Agents SDK processor: a real SDK agent, its model scripted on 127.0.0.1.

Only the model is fake (:class:`ScriptedOpenAI` speaks the Responses and Chat Completions wire
protocols); the SDK's agent loop, its tool execution, its tracing and the skill's script are
real. Span trees are compared whole; timestamps come from the SDK, so they are checked as
relations (an activation starts with its trigger call and ends with the final answer).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from openai import AsyncOpenAI
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from demo.scripted_openai import (
    Reply,
    ScriptedOpenAI,
    Text,
    ToolCall,
    Turn,
    Usage,
    call_id,
    last_tool_output,
)
from skillsight import semconv as sc
from skillsight.ingest import otlp
from skillsight.instrumentation import ContentPolicy, configure, shutdown
from skillsight.instrumentation._guard import STRICT_ENV
from skillsight.rebuild.session import rebuild_session
from skillsight.skills import skill_version
from skillsight.store import EmbeddedStore
from skillsight.store.rows import SPAN_SCHEMA
from tests.harness.otlp_capture import OtlpCapture, iter_spans

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402  (after the importorskip above)
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    custom_span,
    function_tool,
    set_trace_processors,
)
from agents import trace as sdk_trace  # noqa: E402

from skillsight.instrumentation.openai_agents import (  # noqa: E402
    SkillsightTracingProcessor,
    instrument_openai_agents,
)

ModelKind = Literal["responses", "chat_completions"]
PROMPT = "What is the total amount in data/sales.csv, and which region sold the most?"
MODEL = "gpt-4o-mini"
CONVERSATION = "conv-42"
SKILL = "csv-summary"
DESCRIPTION = "Summarise a CSV file (row count, total amount and the top region)."
SKILL_MD = textwrap.dedent(
    f"""\
    ---
    name: {SKILL}
    description: {DESCRIPTION}
    allowed-tools: run_script
    ---
    # CSV summary

    Run `scripts/summarize.py <file>` with run_script and report its totals.
    """
)
SUMMARIZE = textwrap.dedent(
    """\
    import csv, sys
    from collections import defaultdict

    rows = list(csv.DictReader(open(sys.argv[1], newline="")))
    by_region = defaultdict(float)
    for row in rows:
        by_region[row["region"]] += float(row["amount"])
    top = max(by_region, key=by_region.__getitem__)
    print(f"rows={len(rows)} total={sum(by_region.values()):.2f} top_region={top}")
    """
)
SALES = "region,amount\nnorth,30.00\nsouth,17.50\nnorth,27.00\neast,45.00\nsouth,13.50\n"
SCRIPT_OUTPUT = "rows=5 total=133.00 top_region=north\n"
CONTENT_KEYS = (sc.GEN_AI_INPUT_MESSAGES, sc.GEN_AI_OUTPUT_MESSAGES)


# --- the agent under test -------------------------------------------------------------------


def make_workspace(root: Path) -> Path:
    """A workspace with ``skills/csv-summary`` (SKILL.md and a script) and ``data/sales.csv``."""
    skill = root / "skills" / SKILL
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "scripts" / "summarize.py").write_text(SUMMARIZE)
    (root / "data").mkdir()
    (root / "data" / "sales.csv").write_text(SALES)
    return root


def make_tools(workspace: Path) -> list[Any]:
    skills = workspace / "skills"

    @function_tool
    def load_skill(name: str) -> str:
        """Load the instructions of a skill by name."""
        return (skills / name / "SKILL.md").read_text()

    @function_tool
    def read_file(path: str) -> str:
        """Read a text file."""
        return Path(path).read_text()

    @function_tool
    def run_script(script: str, args: list[str]) -> str:
        """Run a skill's Python script (path relative to the skills folder) in the workspace."""
        done = subprocess.run(
            [sys.executable, str(skills / script), *args],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout

    return [load_skill, read_file, run_script]


def make_agent(kind: ModelKind, client: AsyncOpenAI, workspace: Path, name: str = "analyst") -> Any:
    model: Any = (
        OpenAIResponsesModel(MODEL, client)
        if kind == "responses"
        else OpenAIChatCompletionsModel(MODEL, client)
    )
    return Agent(
        name=name,
        instructions="Answer questions about data files. Use skills when they fit.",
        tools=make_tools(workspace),
        model=model,
        # Usage in streamed Chat Completions only when asked for (as with OpenAI itself).
        model_settings=ModelSettings(include_usage=True),
    )


def run_agent(
    base_url: str,
    build: Callable[[AsyncOpenAI], Any],
    prompt: str = PROMPT,
    *,
    stream: bool = False,
    run_config: Any = None,
) -> str:
    """Run the agent ``build`` makes around a client of ``base_url``; its final output."""

    async def go() -> str:
        async with AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
            agent = build(client)
            with sdk_trace("csv question", group_id=CONVERSATION):
                if stream:
                    streamed = Runner.run_streamed(agent, prompt, run_config=run_config)
                    async for _ in streamed.stream_events():
                        pass
                    return str(streamed.final_output)
                result = await Runner.run(agent, prompt, run_config=run_config)
                return str(result.final_output)

    return asyncio.run(go())


def usage(n: int) -> Usage:
    return Usage(input_tokens=100 * n, output_tokens=10 * n, cached_tokens=n)


def answer_with_tool_output(body: dict[str, Any]) -> Reply:
    return Reply([Text(f"Summary: {last_tool_output(body).strip()}")], usage=usage(3))


SKILL_RUN: list[Turn] = [
    Reply([ToolCall("load_skill", {"name": SKILL})], usage=usage(1)),
    Reply(
        [
            ToolCall(
                "run_script",
                {"script": f"{SKILL}/scripts/summarize.py", "args": ["data/sales.csv"]},
            )
        ],
        usage=usage(2),
    ),
    answer_with_tool_output,
]
FINAL = f"Summary: {SCRIPT_OUTPUT.strip()}"


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def processor(
    provider: TracerProvider, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SkillsightTracingProcessor]:
    """Our processor as the SDK's only one: nothing is exported to OpenAI."""
    monkeypatch.setenv(STRICT_ENV, "1")
    processor = SkillsightTracingProcessor(
        provider, skills_dirs=[workspace / "skills"], cwd=workspace
    )
    set_trace_processors([processor])
    yield processor
    set_trace_processors([])
    # The SDK swallows what processors raise; the processor keeps it for us.
    assert list(processor.internal_errors) == []


# --- reading spans back ---------------------------------------------------------------------


def tree(spans: Sequence[ReadableSpan], *, content: bool = False) -> list[dict[str, Any]]:
    """Spans as nested ``{name, attributes, children}`` in start order.

    Without ``content``, the captured messages of chat spans (the SDK's own serialization of
    the conversation) are left out; tool arguments and results stay.
    """
    ids = {s.context.span_id for s in spans}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)

    def node(span: ReadableSpan) -> dict[str, Any]:
        attributes = dict(span.attributes or {})
        if not content and attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT:
            for key in CONTENT_KEYS:
                attributes.pop(key, None)
        kids = sorted(children.get(span.context.span_id, []), key=lambda s: s.start_time or 0)
        return {
            "name": span.name,
            "status": span.status.status_code.name,
            "attributes": attributes,
            "children": [node(k) for k in kids],
        }

    return [node(s) for s in sorted(children.get(None, []), key=lambda s: s.start_time or 0)]


def chat(n: int, finish: str) -> dict[str, Any]:
    return {
        "name": f"chat {MODEL}",
        "status": "UNSET",
        "attributes": {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_PROVIDER_NAME: "openai",
            sc.GEN_AI_REQUEST_MODEL: MODEL,
            sc.GEN_AI_RESPONSE_MODEL: MODEL,
            sc.GEN_AI_USAGE_INPUT_TOKENS: 100 * n,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: 10 * n,
            sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: n,
            sc.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
        },
        "children": [],
    }


def tool(name: str, call: str, arguments: Any, result: str, status: str = "UNSET") -> Any:
    return {
        "name": f"execute_tool {name}",
        "status": status,
        "attributes": {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: name,
            sc.GEN_AI_TOOL_CALL_ID: call,
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(arguments, separators=(",", ":")),
            sc.GEN_AI_TOOL_CALL_RESULT: result,
        },
        "children": [],
    }


def activation(
    workspace: Path, trigger: str, children: list[Any], call: str = call_id(0, 0)
) -> dict[str, Any]:
    folder = workspace / "skills" / SKILL
    return {
        "name": f"activate_skill {SKILL}",
        "status": "UNSET",
        "attributes": {
            sc.GEN_AI_OPERATION_NAME: sc.OP_ACTIVATE_SKILL,
            sc.SKILLSIGHT_SPAN_KIND: sc.SPAN_KIND_SKILL_ACTIVATION,
            sc.SKILLSIGHT_ACTIVATION_TRIGGER: trigger,
            sc.SKILLSIGHT_ACTIVATION_CALL_ID: call,
            sc.OPENINFERENCE_SPAN_KIND: "AGENT",
            sc.GEN_AI_SKILL_NAME: SKILL,
            sc.GEN_AI_SKILL_DESCRIPTION: DESCRIPTION,
            sc.GEN_AI_SKILL_VERSION: skill_version(folder),
            sc.GEN_AI_SKILL_SOURCE_URI: folder.as_uri(),
            sc.SKILLSIGHT_SKILL_ALLOWED_TOOLS: '["run_script"]',
            sc.SKILLSIGHT_ACTIVATION_INPUT: PROMPT,
        },
        "children": children,
    }


def agent_span(children: list[Any], *, turns: int, output: str, name: str = "analyst") -> Any:
    n = sum(range(1, turns + 1))
    return {
        "name": f"invoke_agent {name}",
        "status": "UNSET",
        "attributes": {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: name,
            sc.GEN_AI_PROVIDER_NAME: "openai",
            sc.GEN_AI_CONVERSATION_ID: CONVERSATION,
            sc.SKILLSIGHT_SKILLS_AVAILABLE: json.dumps(
                [{"name": SKILL, "description": DESCRIPTION}]
            ),
            sc.GEN_AI_INPUT_MESSAGES: PROMPT,
            sc.SKILLSIGHT_AGENT_TOOLS: '["load_skill", "read_file", "run_script"]',
            sc.GEN_AI_USAGE_INPUT_TOKENS: 100 * n,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: 10 * n,
            sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: n,
            sc.GEN_AI_OUTPUT_MESSAGES: output,
        },
        "children": children,
    }


def by_name(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


# --- tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("kind", ["responses", "chat_completions"])
def test_load_skill_opens_an_activation_with_the_tool_calls_nested(
    kind: ModelKind,
    stream: bool,
    workspace: Path,
    processor: SkillsightTracingProcessor,
    exporter: InMemorySpanExporter,
) -> None:
    with ScriptedOpenAI(SKILL_RUN) as base_url:
        answer = run_agent(base_url, lambda c: make_agent(kind, c, workspace), stream=stream)

    assert answer == FINAL
    spans = exporter.get_finished_spans()
    load_args = {"name": SKILL}
    run_args = {"script": f"{SKILL}/scripts/summarize.py", "args": ["data/sales.csv"]}
    assert tree(spans) == [
        agent_span(
            [
                chat(1, "tool_calls"),
                activation(
                    workspace,
                    sc.TRIGGER_LOAD_SKILL_TOOL,
                    [
                        tool("load_skill", call_id(0, 0), load_args, SKILL_MD),
                        tool("run_script", call_id(1, 0), run_args, SCRIPT_OUTPUT),
                    ],
                ),
                chat(2, "tool_calls"),
                chat(3, "stop"),
            ],
            turns=3,
            output=FINAL,
        )
    ]
    # The activation starts with its trigger call and ends with the agent's final answer.
    active = by_name(spans, f"activate_skill {SKILL}")
    final_chat = max((s for s in spans if s.name.startswith("chat")), key=lambda s: s.end_time or 0)
    assert active.start_time == by_name(spans, "execute_tool load_skill").start_time
    assert active.end_time == final_chat.end_time
    assert len({s.context.trace_id for s in spans}) == 1


def test_chat_spans_capture_the_conversation_and_the_calls(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    with ScriptedOpenAI(SKILL_RUN) as base_url:
        run_agent(base_url, lambda c: make_agent("responses", c, workspace))

    chats = sorted(
        (s for s in exporter.get_finished_spans() if s.name.startswith("chat")),
        key=lambda s: s.start_time or 0,
    )
    attributes = [dict(s.attributes or {}) for s in chats]
    outputs = [json.loads(str(a[sc.GEN_AI_OUTPUT_MESSAGES])) for a in attributes]
    assert [
        [(o["type"], o.get("name"), o.get("call_id")) for o in output] for output in outputs
    ] == [
        [("function_call", "load_skill", call_id(0, 0))],
        [("function_call", "run_script", call_id(1, 0))],
        [("message", None, None)],
    ]
    assert outputs[2][0]["content"][0]["text"] == FINAL
    first_input = json.loads(str(attributes[0][sc.GEN_AI_INPUT_MESSAGES]))
    assert first_input == [{"role": "user", "content": PROMPT}]


@pytest.mark.parametrize("kind", ["responses", "chat_completions"])
def test_a_run_without_load_skill_has_no_activation(
    kind: ModelKind,
    workspace: Path,
    processor: SkillsightTracingProcessor,
    exporter: InMemorySpanExporter,
) -> None:
    run_args = {"script": f"{SKILL}/scripts/summarize.py", "args": ["data/sales.csv"]}
    turns: list[Turn] = [
        Reply([ToolCall("run_script", run_args)], usage=usage(1)),
        Reply([Text("rows=5")], usage=usage(2)),
    ]
    with ScriptedOpenAI(turns) as base_url:
        answer = run_agent(base_url, lambda c: make_agent(kind, c, workspace))

    assert answer == "rows=5"
    assert tree(exporter.get_finished_spans()) == [
        agent_span(
            [
                chat(1, "tool_calls"),
                tool("run_script", call_id(0, 0), run_args, SCRIPT_OUTPUT),
                chat(2, "stop"),
            ],
            turns=2,
            output="rows=5",
        )
    ]


def test_reading_skill_md_through_a_file_tool_is_an_activation(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    skill_md = str(workspace / "skills" / SKILL / "SKILL.md")
    run_args = {"script": f"{SKILL}/scripts/summarize.py", "args": ["data/sales.csv"]}
    turns: list[Turn] = [
        Reply([ToolCall("read_file", {"path": skill_md})], usage=usage(1)),
        Reply([ToolCall("run_script", run_args)], usage=usage(2)),
        answer_with_tool_output,
    ]
    with ScriptedOpenAI(turns) as base_url:
        run_agent(base_url, lambda c: make_agent("responses", c, workspace))

    assert tree(exporter.get_finished_spans()) == [
        agent_span(
            [
                chat(1, "tool_calls"),
                activation(
                    workspace,
                    sc.TRIGGER_READ_SKILL_MD,
                    [
                        tool("read_file", call_id(0, 0), {"path": skill_md}, SKILL_MD),
                        tool("run_script", call_id(1, 0), run_args, SCRIPT_OUTPUT),
                    ],
                ),
                chat(2, "tool_calls"),
                chat(3, "stop"),
            ],
            turns=3,
            output=FINAL,
        )
    ]


def test_load_skill_then_reading_its_skill_md_is_one_activation(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    # The SDK's sandbox Skills capability: load_skill stages the skill, then the model opens
    # its SKILL.md. Both calls belong to the one activation.
    skill_md = str(workspace / "skills" / SKILL / "SKILL.md")
    turns: list[Turn] = [
        Reply(
            [ToolCall("load_skill", {"name": SKILL}), ToolCall("read_file", {"path": skill_md})],
            usage=usage(1),
        ),
        Reply([Text("Loaded.")], usage=usage(2)),
    ]
    with ScriptedOpenAI(turns) as base_url:
        run_agent(base_url, lambda c: make_agent("responses", c, workspace))

    (agent,) = tree(exporter.get_finished_spans())
    assert [c["name"] for c in agent["children"]] == [
        f"chat {MODEL}",
        f"activate_skill {SKILL}",
        f"chat {MODEL}",
    ]
    assert [c["name"] for c in agent["children"][1]["children"]] == [
        "execute_tool load_skill",
        "execute_tool read_file",
    ]


def test_a_second_activation_ends_the_first(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    other = workspace / "skills" / "notes"
    other.mkdir()
    (other / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\nWrite.\n")
    turns: list[Turn] = [
        Reply([ToolCall("load_skill", {"name": SKILL})], usage=usage(1)),
        Reply([ToolCall("load_skill", {"name": "notes"})], usage=usage(2)),
        Reply([ToolCall("read_file", {"path": str(workspace / "data" / "sales.csv")})]),
        Reply([Text("Noted.")], usage=usage(3)),
    ]
    with ScriptedOpenAI(turns) as base_url:
        run_agent(base_url, lambda c: make_agent("responses", c, workspace))

    spans = exporter.get_finished_spans()
    (agent,) = tree(spans)
    activations = [c for c in agent["children"] if c["name"].startswith("activate_skill")]
    assert [(a["name"], [c["name"] for c in a["children"]]) for a in activations] == [
        (f"activate_skill {SKILL}", ["execute_tool load_skill"]),
        ("activate_skill notes", ["execute_tool load_skill", "execute_tool read_file"]),
    ]
    first = by_name(spans, f"activate_skill {SKILL}")
    second = by_name(spans, "activate_skill notes")
    assert first.end_time == second.start_time
    skill_names = [json.loads(a["attributes"][sc.SKILLSIGHT_SKILLS_AVAILABLE]) for a in [agent]]
    assert skill_names == [
        [
            {"name": SKILL, "description": DESCRIPTION},
            {"name": "notes", "description": "Take notes."},
        ]
    ]


def test_a_handoff_ends_the_activation_and_nests_the_next_agent(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    turns: list[Turn] = [
        Reply([ToolCall("load_skill", {"name": SKILL})], usage=usage(1)),
        Reply([ToolCall("transfer_to_reporter", {})], usage=usage(2)),
        Reply([ToolCall("read_file", {"path": str(workspace / "data" / "sales.csv")})]),
        Reply([Text("Reported.")], usage=usage(3)),
    ]
    with ScriptedOpenAI(turns) as base_url:

        def build(client: AsyncOpenAI) -> Any:
            analyst = make_agent("responses", client, workspace)
            analyst.handoffs = [make_agent("responses", client, workspace, name="reporter")]
            return analyst

        answer = run_agent(base_url, build)

    assert answer == "Reported."
    spans = exporter.get_finished_spans()
    (analyst_span,) = tree(spans)
    assert [c["name"] for c in analyst_span["children"]] == [
        f"chat {MODEL}",
        f"activate_skill {SKILL}",
        f"chat {MODEL}",
        "handoff reporter",
        "invoke_agent reporter",
    ]
    activation_span = analyst_span["children"][1]
    assert [c["name"] for c in activation_span["children"]] == ["execute_tool load_skill"]
    reporter_span = analyst_span["children"][4]
    assert [c["name"] for c in reporter_span["children"]] == [
        f"chat {MODEL}",
        "execute_tool read_file",
        f"chat {MODEL}",
    ]
    assert analyst_span["attributes"][sc.SKILLSIGHT_AGENT_HANDOFFS] == '["reporter"]'
    assert by_name(spans, f"activate_skill {SKILL}").end_time == (
        by_name(spans, "handoff reporter").start_time
    )


def test_a_failing_tool_is_an_error_span_inside_the_activation(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    missing = {"script": f"{SKILL}/scripts/missing.py", "args": []}
    turns: list[Turn] = [
        Reply([ToolCall("load_skill", {"name": SKILL})], usage=usage(1)),
        Reply([ToolCall("run_script", missing)], usage=usage(2)),
        Reply([Text("The script is missing.")], usage=usage(3)),
    ]
    with ScriptedOpenAI(turns) as base_url:
        answer = run_agent(base_url, lambda c: make_agent("responses", c, workspace))

    assert answer == "The script is missing."
    failed = by_name(exporter.get_finished_spans(), "execute_tool run_script")
    assert failed.status.status_code.name == "ERROR"
    # The SDK reports a failed tool without its details unless sensitive data is traced.
    assert failed.status.description == (
        'Error running tool (non-fatal): {"tool_name": "run_script", '
        '"error": "Tool execution failed. Error details are redacted."}'
    )
    assert (failed.attributes or {})[sc.ERROR_TYPE] == "tool_error"
    (agent,) = tree(exporter.get_finished_spans())
    assert [c["name"] for c in agent["children"][1]["children"]] == [
        "execute_tool load_skill",
        "execute_tool run_script",
    ]


def test_without_sensitive_data_traced_spans_keep_structure_and_usage(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    # The SDK then traces no arguments and no model output: nothing names the skill loaded.
    with ScriptedOpenAI(SKILL_RUN) as base_url:
        answer = run_agent(
            base_url,
            lambda c: make_agent("responses", c, workspace),
            run_config=RunConfig(trace_include_sensitive_data=False),
        )

    assert answer == FINAL
    (agent,) = tree(exporter.get_finished_spans())
    assert [(c["name"], c["attributes"]) for c in agent["children"]] == [
        (
            "chat",
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                sc.GEN_AI_PROVIDER_NAME: "openai",
                sc.GEN_AI_USAGE_INPUT_TOKENS: 100,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: 10,
                sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 1,
            },
        ),
        (
            "execute_tool load_skill",
            {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "load_skill"},
        ),
        (
            "chat",
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                sc.GEN_AI_PROVIDER_NAME: "openai",
                sc.GEN_AI_USAGE_INPUT_TOKENS: 200,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: 20,
                sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 2,
            },
        ),
        (
            "execute_tool run_script",
            {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "run_script"},
        ),
        (
            "chat",
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                sc.GEN_AI_PROVIDER_NAME: "openai",
                sc.GEN_AI_USAGE_INPUT_TOKENS: 300,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: 30,
                sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 3,
            },
        ),
    ]
    assert agent["attributes"][sc.GEN_AI_USAGE_INPUT_TOKENS] == 600


def test_content_capture_off_keeps_structure_and_usage_only(
    provider: TracerProvider,
    workspace: Path,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(STRICT_ENV, "1")
    processor = SkillsightTracingProcessor(
        provider, skills_dirs=[workspace / "skills"], content=ContentPolicy(capture=False)
    )
    set_trace_processors([processor])
    try:
        with ScriptedOpenAI(SKILL_RUN) as base_url:
            run_agent(base_url, lambda c: make_agent("responses", c, workspace))
    finally:
        set_trace_processors([])

    assert list(processor.internal_errors) == []
    spans = exporter.get_finished_spans()
    captured = {
        key
        for span in spans
        for key in (span.attributes or {})
        if key
        in (
            *CONTENT_KEYS,
            sc.GEN_AI_TOOL_CALL_ARGUMENTS,
            sc.GEN_AI_TOOL_CALL_RESULT,
            sc.SKILLSIGHT_ACTIVATION_INPUT,
        )
    }
    assert captured == set()
    assert [c["name"] for c in tree(spans)[0]["children"]] == [
        f"chat {MODEL}",
        f"activate_skill {SKILL}",
        f"chat {MODEL}",
        f"chat {MODEL}",
    ]


def test_instrumentation_errors_never_change_the_agents_answer(
    provider: TracerProvider,
    workspace: Path,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(STRICT_ENV, raising=False)

    def broken_redactor(text: str) -> str:
        raise RuntimeError("redaction hook is down")

    set_trace_processors([])
    processor = instrument_openai_agents(
        provider, skills_dirs=[workspace / "skills"], content=ContentPolicy(redact=broken_redactor)
    )
    try:
        with ScriptedOpenAI(SKILL_RUN) as base_url:
            answer = run_agent(base_url, lambda c: make_agent("responses", c, workspace))
    finally:
        set_trace_processors([])

    assert answer == FINAL
    assert processor.internal_errors
    assert {type(e) for e in processor.internal_errors} == {RuntimeError}


def _doc_example(heading: str) -> str:
    text = (Path(__file__).parents[1] / "docs" / "instrumentation.md").read_text()
    section = text.split(f"## {heading}\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_documented_example_runs_and_exports_over_otlp(
    provider: TracerProvider,
    workspace: Path,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(STRICT_ENV, "1")
    monkeypatch.chdir(workspace)
    set_trace_processors([])
    turns: list[Turn] = [[ToolCall("load_skill", {"name": SKILL})], [Text("Loaded.")]]
    with OtlpCapture() as receiver, ScriptedOpenAI(turns) as base_url:
        configure(receiver.http_endpoint, tracer_provider=provider, set_global=False)
        # No kept-alive connections: the example's asyncio.run closes its loop, not the client.
        http = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))
        client = AsyncOpenAI(base_url=base_url, api_key="test", http_client=http)
        namespace: dict[str, Any] = {
            "model": OpenAIResponsesModel(MODEL, client),
            "request": PROMPT,
        }
        try:
            exec(_doc_example("OpenAI Agents SDK"), namespace)
        finally:
            set_trace_processors([])
            shutdown()
        exported = sorted(s["name"] for s in iter_spans(receiver.captures))

    assert namespace["result"].final_output == "Loaded."
    (agent,) = tree(exporter.get_finished_spans())
    assert [(c["name"], [g["name"] for g in c["children"]]) for c in agent["children"]] == [
        (f"chat {MODEL}", []),
        (f"activate_skill {SKILL}", ["execute_tool load_skill"]),
        (f"chat {MODEL}", []),
    ]
    assert exported == sorted(s.name for s in exporter.get_finished_spans())


def test_concurrent_runs_in_one_event_loop_keep_their_own_activations(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    notes = workspace / "skills" / "notes"
    notes.mkdir()
    (notes / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\nWrite.\n")
    sales = str(workspace / "data" / "sales.csv")

    def script(body: dict[str, Any]) -> Reply:
        # Requests of the two runs interleave, so each answer depends on its own conversation.
        skill = "notes" if "notes" in str(body["input"][0]["content"]) else SKILL
        done = sum(1 for item in body["input"] if item.get("type") == "function_call_output")
        if done == 0:
            return Reply([ToolCall("load_skill", {"name": skill}, id=f"call-{skill}-0")])
        if done == 1:
            return Reply([ToolCall("read_file", {"path": sales}, id=f"call-{skill}-1")])
        return Reply([Text(f"{skill} done")])

    async def both(base_url: str) -> list[str]:
        async with AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client:

            async def one(prompt: str, conversation: str) -> str:
                with sdk_trace("concurrent", group_id=conversation):
                    agent = make_agent("responses", client, workspace)
                    return str((await Runner.run(agent, prompt)).final_output)

            return list(
                await asyncio.gather(
                    one("Summarise the CSV.", "conv-csv"), one("Take notes.", "conv-notes")
                )
            )

    with ScriptedOpenAI(script) as base_url:
        answers = asyncio.run(both(base_url))

    assert answers == [f"{SKILL} done", "notes done"]
    spans = exporter.get_finished_spans()
    roots = tree(spans)
    summary = {
        root["attributes"][sc.GEN_AI_CONVERSATION_ID]: [
            (
                child["name"],
                [(g["name"], g["attributes"][sc.GEN_AI_TOOL_CALL_ID]) for g in child["children"]],
            )
            for child in root["children"]
            if child["name"].startswith("activate_skill")
        ]
        for root in roots
    }
    assert summary == {
        "conv-csv": [
            (
                f"activate_skill {SKILL}",
                [
                    ("execute_tool load_skill", f"call-{SKILL}-0"),
                    ("execute_tool read_file", f"call-{SKILL}-1"),
                ],
            )
        ],
        "conv-notes": [
            (
                "activate_skill notes",
                [
                    ("execute_tool load_skill", "call-notes-0"),
                    ("execute_tool read_file", "call-notes-1"),
                ],
            )
        ],
    }
    assert len({s.context.trace_id for s in spans}) == 2


def test_an_agent_used_as_a_tool_nests_under_its_call_with_custom_spans_kept(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    @function_tool
    def count_rows(path: str) -> str:
        """Count the data rows of a CSV file."""
        with custom_span("csv.count", {"path": path}) as span:
            rows = len(Path(path).read_text().splitlines()) - 1
            span.span_data.data["rows"] = rows
        return str(rows)

    sales = str(workspace / "data" / "sales.csv")
    turns: list[Turn] = [
        [ToolCall("load_skill", {"name": SKILL})],
        [ToolCall("ask_counter", {"input": "How many rows?"})],
        [ToolCall("count_rows", {"path": sales})],  # the nested agent's model calls
        [Text("5 rows")],
        [Text("There are 5 rows.")],
    ]

    def build(client: AsyncOpenAI) -> Any:
        counter = Agent(
            name="counter",
            instructions="Count rows.",
            tools=[count_rows],
            model=OpenAIResponsesModel(MODEL, client),
        )
        analyst = make_agent("responses", client, workspace)
        analyst.tools.append(counter.as_tool(tool_name="ask_counter", tool_description="Count."))
        return analyst

    with ScriptedOpenAI(turns) as base_url:
        answer = run_agent(base_url, build)

    assert answer == "There are 5 rows."

    def names(node: dict[str, Any]) -> list[Any]:
        return [node["name"], [names(c) for c in node["children"]]]

    (analyst,) = tree(exporter.get_finished_spans())
    chat_span = [f"chat {MODEL}", []]
    assert names(analyst) == [
        "invoke_agent analyst",
        [
            chat_span,
            [
                f"activate_skill {SKILL}",
                [
                    ["execute_tool load_skill", []],
                    [
                        "execute_tool ask_counter",
                        [
                            [
                                "invoke_agent counter",
                                [
                                    chat_span,
                                    ["execute_tool count_rows", [["csv.count", []]]],
                                    chat_span,
                                ],
                            ]
                        ],
                    ],
                ],
            ],
            chat_span,
            chat_span,
        ],
    ]
    (custom,) = [s for s in exporter.get_finished_spans() if s.name == "csv.count"]
    assert dict(custom.attributes or {}) == {
        sc.SKILLSIGHT_SOURCE_SPAN_TYPE: "custom",
        sc.SKILLSIGHT_SOURCE_SPAN_DATA: json.dumps(
            {"type": "custom", "name": "csv.count", "data": {"path": sales, "rows": 5}},
            separators=(",", ":"),
        ),
    }


def test_the_collector_rebuilds_the_same_activation_from_the_exported_spans(
    workspace: Path,
    processor: SkillsightTracingProcessor,
    exporter: InMemorySpanExporter,
    embedded_store: EmbeddedStore,
) -> None:
    with ScriptedOpenAI(SKILL_RUN) as base_url:
        run_agent(base_url, lambda c: make_agent("responses", c, workspace))
    spans = exporter.get_finished_spans()
    body = encode_spans(spans).SerializeToString()
    decoded = otlp.decode(otlp.TRACES, body, otlp.PROTOBUF, "default", otlp.Limits())
    assert decoded.rejected == 0
    embedded_store.spans.insert(decoded.columns.to_arrow(SPAN_SCHEMA))

    rebuilt = rebuild_session(
        embedded_store.spans.find("default", limit=1000),
        embedded_store.events.find("default", limit=1000),
    )

    (activation,) = rebuilt.activations
    folder = workspace / "skills" / SKILL
    activation_span = by_name(spans, f"activate_skill {SKILL}")
    assert activation.model_dump(
        include={
            "session_id",
            "skill_name",
            "skill_version",
            "trigger",
            "trigger_call_id",
            "load_call_id",
            "activation_span_id",
            "agent",
            "source_convention",
            "request",
            "skill_output",
            "integration_message",
            "outcome",
            "visible_skills",
            "contract",
        }
    ) == {
        "session_id": CONVERSATION,
        "skill_name": SKILL,
        "skill_version": skill_version(folder),
        "trigger": "load_skill_tool",
        "trigger_call_id": call_id(0, 0),
        "load_call_id": call_id(0, 0),
        "activation_span_id": format(activation_span.context.span_id, "016x"),
        "agent": "analyst",
        "source_convention": "gen_ai",
        "request": PROMPT,
        "skill_output": SKILL_MD,
        "integration_message": FINAL,
        "outcome": "completed",
        "visible_skills": [{"name": SKILL, "description": DESCRIPTION}],
        "contract": {
            "name": SKILL,
            "description": DESCRIPTION,
            "allowed_tools": ["run_script"],
            "version": skill_version(folder),
            "source_uri": folder.as_uri(),
            # no catalogue here: every field of the contract is what the span reported
            "catalogued": False,
            "reported": ["allowed_tools", "description", "source_uri", "version"],
        },
    }
    assert [
        (c.tool_call_id, c.name, c.arguments, c.result, c.is_error) for c in activation.tool_calls
    ] == [
        (
            call_id(1, 0),
            "run_script",
            {"script": f"{SKILL}/scripts/summarize.py", "args": ["data/sales.csv"]},
            SCRIPT_OUTPUT,
            False,
        )
    ]


def test_runs_of_one_conversation_are_traces_of_their_own(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    turns: list[Turn] = [
        [ToolCall("load_skill", {"name": SKILL})],
        [Text("Loaded.")],
        [Text("Second turn.")],
    ]

    async def conversation(base_url: str) -> list[str]:
        async with AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
            agent = make_agent("responses", client, workspace)
            with sdk_trace("chat thread", group_id=CONVERSATION):
                first = await Runner.run(agent, PROMPT)
                second = await Runner.run(
                    agent, [*first.to_input_list(), {"role": "user", "content": "And now?"}]
                )
            return [str(first.final_output), str(second.final_output)]

    with ScriptedOpenAI(turns) as base_url:
        answers = asyncio.run(conversation(base_url))

    assert answers == ["Loaded.", "Second turn."]
    spans = exporter.get_finished_spans()
    roots = tree(spans)
    assert [
        (r["name"], r["attributes"][sc.GEN_AI_CONVERSATION_ID], [c["name"] for c in r["children"]])
        for r in roots
    ] == [
        (
            "invoke_agent analyst",
            CONVERSATION,
            [f"chat {MODEL}", f"activate_skill {SKILL}", f"chat {MODEL}"],
        ),
        ("invoke_agent analyst", CONVERSATION, [f"chat {MODEL}"]),
    ]
    assert len({s.context.trace_id for s in spans}) == 2


def test_cat_of_a_skill_md_in_a_shell_command_is_an_activation(
    workspace: Path, processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    @function_tool
    def exec_command(cmd: str) -> str:
        """Run a shell command in the workspace."""
        done = subprocess.run(
            cmd, shell=True, cwd=workspace, capture_output=True, text=True, timeout=60
        )
        return done.stdout

    read = f"cat skills/{SKILL}/SKILL.md"
    run = f"{sys.executable} skills/{SKILL}/scripts/summarize.py data/sales.csv"
    turns: list[Turn] = [
        [ToolCall("exec_command", {"cmd": read})],
        [ToolCall("exec_command", {"cmd": run})],
        answer_with_tool_output,
    ]

    def build(client: AsyncOpenAI) -> Any:
        return Agent(
            name="analyst",
            instructions="Use the shell.",
            tools=[exec_command],
            model=OpenAIResponsesModel(MODEL, client),
        )

    with ScriptedOpenAI(turns) as base_url:
        answer = run_agent(base_url, build)

    assert answer == FINAL
    (agent,) = tree(exporter.get_finished_spans())
    expected = activation(
        workspace,
        sc.TRIGGER_READ_SKILL_MD,
        [
            tool("exec_command", call_id(0, 0), {"cmd": read}, SKILL_MD),
            tool("exec_command", call_id(1, 0), {"cmd": run}, SCRIPT_OUTPUT),
        ],
    )
    assert [c for c in agent["children"] if c["name"].startswith("activate_skill")] == [expected]


def test_shutdown_ends_what_a_cut_short_trace_left_open(
    processor: SkillsightTracingProcessor, exporter: InMemorySpanExporter
) -> None:
    run = sdk_trace("cut short")
    run.start(mark_as_current=True)
    agent = agents.tracing.agent_span("analyst")
    agent.start(mark_as_current=True)
    call = agents.tracing.function_span("load_skill", input=json.dumps({"name": SKILL}))
    call.start(mark_as_current=True)
    assert exporter.get_finished_spans() == ()

    processor.shutdown()
    call.finish(reset_current=True)  # after shutdown: ignored
    agent.finish(reset_current=True)
    run.finish(reset_current=True)

    assert [c["name"] for c in tree(exporter.get_finished_spans())[0]["children"]] == [
        f"activate_skill {SKILL}"
    ]
    assert tree(exporter.get_finished_spans())[0]["children"][0]["children"][0]["name"] == (
        "execute_tool load_skill"
    )


def test_the_package_exposes_the_processor_but_imports_agents_only_on_use() -> None:
    code = (
        "import sys, skillsight.instrumentation as i\n"
        "assert 'agents' not in sys.modules, 'imported at package import'\n"
        "assert i.SkillsightTracingProcessor.__name__ == 'SkillsightTracingProcessor'\n"
        "assert callable(i.instrument_openai_agents) and 'agents' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
