"""allowed-tools: Claude Code's permission-rule grammar, as properties and as a table."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillsight.skills import AllowedTools, PatternProblem, ToolRule, Verdict

fast = settings(max_examples=100, deadline=None, database=None)

# Program names and plain arguments: no quotes, operators or whitespace inside one word.
word = st.from_regex(r"[a-z][a-z0-9._-]{0,7}", fullmatch=True)
argument = st.from_regex(r"[A-Za-z0-9_./=:-]{1,10}", fullmatch=True)
arguments = st.lists(argument, max_size=4)
operator = st.sampled_from([" && ", " || ", "; ", " | ", "\n", " & "])
server = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)
tool = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)


def command(program: str, args: list[str]) -> str:
    return " ".join([program, *args])


# -- properties -------------------------------------------------------------------------------

PATTERNS = [
    "Bash",
    "Bash(*)",
    "Bash(git:*)",
    "Bash(ls *)",
    "Bash(ls*)",
    "Bash(git * main)",
    "Bash(rm -rf \\*)",
    "Bash(cat .env)",
    "Read",
    "Read(./data/**)",
    "Edit(/src/**)",
    "Write(//tmp/**)",
    "Glob(*.csv)",
    "WebFetch(domain:*.example.com)",
    "Task(explore)",
    "mcp__db",
    "mcp__github__*",
    "mcp__x__y",
    "Other(a*)",
    "Bash()",
    "Read(",
    "mcp__x(y)",
]
TOOLS = ["Bash", "Read", "Write", "Edit", "Glob", "Grep", "LS", "WebFetch", "Task", "Agent"]
TOOLS += ["mcp__db__query", "mcp__github__get_issue", "mcp__x__y", "Skill", "Other"]
PATHS = ["data/a.csv", "/w/data/b.csv", "/src/x.py", "/tmp/y", "~/z", "../up", "/etc/passwd"]
URLS = ["https://docs.example.com/a", "https://example.com", "not a url"]
simple = st.builds(command, st.sampled_from(["git", "ls", "lsof", "rm", "cat", "echo"]), arguments)
compound = st.builds(lambda a, op, b: a + op + b, simple, operator, simple)


@fast
@given(
    declared=st.none() | st.lists(st.sampled_from(PATTERNS), max_size=4),
    tool_name=st.sampled_from(TOOLS),
    shell=st.one_of(simple, compound, st.just(""), st.sampled_from(["cat .env", "rm -rf *"])),
    path=st.sampled_from(PATHS),
    url=st.sampled_from(URLS),
    agent=st.sampled_from(["explore", "general"]),
)
def test_allows_is_the_verdict_of_check_without_its_explanation(
    declared: list[str] | None, tool_name: str, shell: str, path: str, url: str, agent: str
) -> None:
    permissions = AllowedTools.parse(declared)
    args = {"command": shell, "file_path": path, "url": url, "subagent_type": agent, "q": "a1"}
    for _ in range(2):  # the second time from what the first remembered of the tool
        verdict = permissions.check(tool_name, args, cwd="/w")
        assert permissions.allows(tool_name, args, cwd="/w") is verdict.allowed


def test_a_bash_specifier_is_compiled_once_however_many_commands_it_judges() -> None:
    from skillsight.skills._allowed_tools import _bash_pattern

    spec = "python3 scripts/only_in_this_test.py:*"
    compiled = _bash_pattern.cache_info().misses
    allowed = AllowedTools.parse([f"Bash({spec})"])
    commands = [f"python3 scripts/only_in_this_test.py in_{n}.csv" for n in range(20)]
    assert [allowed.check("Bash", {"command": c}).allowed for c in commands] == [True] * 20
    assert [allowed.allows("Bash", {"command": c + "; ls"}) for c in commands] == [False] * 20
    assert _bash_pattern.cache_info().misses == compiled + 1


@fast
@given(prefix=st.lists(word, min_size=1, max_size=2), args=arguments)
def test_a_command_built_from_an_allowed_prefix_is_allowed(
    prefix: list[str], args: list[str]
) -> None:
    pattern = f"Bash({' '.join(prefix)}:*)"
    verdict = AllowedTools.parse([pattern]).check(
        "Bash", {"command": command(*prefix[:1], [*prefix[1:], *args])}
    )
    assert (verdict.allowed, verdict.rule) == (True, pattern)


@fast
@given(
    program=word, other=word, suffix=st.from_regex(r"[a-z0-9]{1,3}", fullmatch=True), args=arguments
)
def test_any_other_program_is_not_allowed(
    program: str, other: str, suffix: str, args: list[str]
) -> None:
    allowed = AllowedTools.parse(f"Bash({program}:*)")
    # a longer word that merely starts with the prefix: the word boundary keeps it out
    assert allowed.check("Bash", command(program + suffix, args)) == Verdict(
        False,
        None,
        f"Bash command {command(program + suffix, args)!r} matches none of Bash({program}:*)",
    )
    if other != program:
        assert not allowed.check("Bash", command(other, args)).allowed


@fast
@given(program=word, args=arguments)
def test_trailing_space_star_equals_the_legacy_prefix_form(program: str, args: list[str]) -> None:
    legacy = AllowedTools.parse([f"Bash({program}:*)"])
    modern = AllowedTools.parse([f"Bash({program} *)"])
    for candidate in (command(program, args), program + "x", f"{program}x {program}"):
        assert legacy.check("Bash", candidate).allowed == modern.check("Bash", candidate).allowed, (
            candidate
        )


@fast
@given(
    allowed_programs=st.lists(word, min_size=1, max_size=3, unique=True),
    parts=st.lists(st.tuples(word, arguments), min_size=1, max_size=5),
    ops=st.lists(operator, min_size=4, max_size=4),
)
def test_a_compound_command_is_allowed_only_if_every_part_is(
    allowed_programs: list[str], parts: list[tuple[str, list[str]]], ops: list[str]
) -> None:
    rules = AllowedTools.parse([f"Bash({p}:*)" for p in allowed_programs])
    line = command(*parts[0])
    for (program, args), op in zip(parts[1:], ops, strict=False):
        line += op + command(program, args)
    expected = all(program in allowed_programs for program, _ in parts)
    assert rules.check("Bash", {"command": line}).allowed is expected


@fast
@given(program=word, inner=st.lists(word, min_size=1, max_size=3), op=operator)
def test_operators_inside_quotes_do_not_split(program: str, inner: list[str], op: str) -> None:
    rules = AllowedTools.parse(f"Bash({program}:*)")
    quoted = "'" + op.join(inner) + "'"
    assert rules.check("Bash", f"{program} {quoted}").allowed
    # the same text unquoted runs the inner words as programs of their own
    unquoted = f"{program} x{op}" + op.join(inner)
    expected = all(w == program for w in inner)
    assert rules.check("Bash", unquoted).allowed is expected


@fast
@given(
    program=word,
    hidden=word,
    form=st.sampled_from(["$({})", "`{}`", "({})", "$(echo $({}))"]),
)
def test_substitutions_and_subshells_are_checked_too(program: str, hidden: str, form: str) -> None:
    rules = AllowedTools.parse([f"Bash({program}:*)"])
    line = f"{program} " + form.format(f"{hidden} arg")
    needed = {hidden} | ({"echo"} if "echo" in form else set())
    expected = needed == {program}
    assert rules.check("Bash", line).allowed is expected


@fast
@given(
    program=word,
    body=st.lists(st.tuples(word, arguments, operator), max_size=4),
    quoted=st.booleans(),
)
def test_here_document_lines_are_data_not_commands(
    program: str, body: list[tuple[str, list[str], str]], quoted: bool
) -> None:
    rules = AllowedTools.parse(f"Bash({program}:*)")
    lines = [command(word, args) + op.strip() for word, args, op in body]
    delimiter = "'EOF'" if quoted else "EOF"
    heredoc = f"{program} -F - <<{delimiter}\n" + "\n".join([*lines, "EOF"])
    assert rules.check("Bash", heredoc).allowed
    assert rules.check(
        "Bash", f'{program} -m "$(cat <<{delimiter}\n' + "\n".join([*lines, "EOF", ')"'])
    ).allowed is (program == "cat")


@fast
@given(srv=server, tools=st.lists(tool, min_size=1, max_size=4), other=server)
def test_mcp_server_wildcards_cover_every_tool_of_that_server_only(
    srv: str, tools: list[str], other: str
) -> None:
    for pattern in (f"mcp__{srv}", f"mcp__{srv}__*"):
        rules = AllowedTools.parse([pattern])
        for name in tools:
            assert rules.check(f"mcp__{srv}__{name}", {}) == Verdict(
                True, pattern, f"{pattern} allows every mcp__{srv}__{name} call"
            )
            if other != srv:
                assert not rules.check(f"mcp__{other}__{name}", {}).allowed
        assert not rules.check(f"mcp__{srv}x__{tools[0]}", {}).allowed
    exact = AllowedTools.parse([f"mcp__{srv}__{tools[0]}"])
    assert exact.check(f"mcp__{srv}__{tools[0]}", None).allowed
    assert not exact.check(f"mcp__{srv}__{tools[0]}x", None).allowed


@fast
@given(segments=st.lists(word, min_size=1, max_size=4), elsewhere=word)
def test_path_globs_allow_what_is_below_them(segments: list[str], elsewhere: str) -> None:
    rules = AllowedTools.parse(["Read(./src/**)", "Edit(//srv/data/**)"])
    inside = "src/" + "/".join(segments)
    assert rules.check("Read", {"file_path": inside}, cwd="/repo").allowed
    assert rules.check("Read", {"file_path": "/repo/" + inside}, cwd="/repo").allowed
    assert rules.check("Grep", {"pattern": "x", "path": "/repo/" + inside}, cwd="/repo").allowed
    outside = f"{elsewhere}/" + "/".join(segments)
    assert rules.check("Read", {"file_path": outside}, cwd="/repo").allowed is (elsewhere == "src")
    # `..` is resolved before matching: climbing out of src/ leaves the rule behind
    climbed = rules.check("Read", {"file_path": f"src/../{outside}x"}, cwd="/repo")
    assert climbed.allowed is (elsewhere == "src")
    assert rules.check("Write", {"file_path": "/srv/data/" + "/".join(segments)}).allowed
    sibling = rules.check("Write", {"file_path": "/srv/" + "/".join(segments) + "x"})
    assert sibling.allowed is (segments[0] == "data" and len(segments) > 1)


# -- table ------------------------------------------------------------------------------------

ALLOWED = (
    "Bash(git:*) Bash(npm run test) Bash(ls *) Read(./docs/**) Edit(*.md) "
    "WebFetch(domain:example.com) Task(Explore) mcp__github"
)

TABLE: list[tuple[str, Any, bool, str | None]] = [
    # (tool, arguments, allowed, rule)
    ("Bash", {"command": "git status"}, True, "Bash(git:*)"),
    ("Bash", {"command": "git"}, True, "Bash(git:*)"),
    ("Bash", {"command": "gitk --all"}, False, None),
    ("Bash", {"command": "git log | head -5"}, False, None),
    ("Bash", {"command": "git add . && git commit -m 'a && b'"}, True, "Bash(git:*)"),
    ("Bash", {"command": "git push 2>&1 && ls -la"}, True, "Bash(git:*) Bash(ls *)"),
    ("Bash", {"command": "npm run test"}, True, "Bash(npm run test)"),
    ("Bash", {"command": "npm run test -- --watch"}, False, None),
    ("Bash", {"command": "ls"}, True, "Bash(ls *)"),
    ("Bash", {"command": "lsof -i"}, False, None),
    ("Bash", {"command": "FOO=1 git status"}, False, None),
    ("Bash", '{"command": "git diff"}', True, "Bash(git:*)"),
    (
        "Bash",
        {"command": "git commit -F - <<'EOF'\nrm -rf /; curl x | sh\nEOF"},
        True,
        "Bash(git:*)",
    ),
    ("Bash", {"command": "git commit -F - <<EOF\nmsg\nEOF\nrm -rf /"}, False, None),
    ("Bash", {"command": "git status # ; rm -rf /"}, True, "Bash(git:*)"),
    ("Bash", {"command": "git log -n $((1 + (2)))"}, True, "Bash(git:*)"),
    ("Bash", {"command": "git log $(rm -rf /)"}, False, None),
    ("Bash", {"command": ""}, False, None),
    ("Read", {"file_path": "docs/guide/intro.md"}, True, "Read(./docs/**)"),
    ("Read", {"file_path": "/work/docs"}, True, "Read(./docs/**)"),
    ("Read", {"file_path": "/work/src/main.py"}, False, None),
    ("Glob", {"pattern": "**/*.md", "path": "/work/docs"}, True, "Read(./docs/**)"),
    ("Grep", {"pattern": "TODO"}, False, None),
    ("Edit", {"file_path": "/anywhere/deep/README.md"}, True, "Edit(*.md)"),
    ("Write", {"file_path": "notes.md"}, True, "Edit(*.md)"),
    ("MultiEdit", {"file_path": "/work/setup.py"}, False, None),
    ("WebFetch", {"url": "https://example.com/page"}, True, "WebFetch(domain:example.com)"),
    ("WebFetch", {"url": "https://EXAMPLE.com/"}, True, "WebFetch(domain:example.com)"),
    ("WebFetch", {"url": "https://docs.example.com/"}, False, None),
    ("WebFetch", {"url": "https://example.com.evil.org/"}, False, None),
    ("Task", {"subagent_type": "Explore", "prompt": "find"}, True, "Task(Explore)"),
    ("Agent", {"subagent_type": "Explore"}, True, "Task(Explore)"),
    ("Task", {"subagent_type": "general-purpose"}, False, None),
    ("mcp__github__create_issue", {"title": "x"}, True, "mcp__github"),
    ("mcp__gitlab__create_issue", {"title": "x"}, False, None),
    ("WebSearch", {"query": "x"}, False, None),
    ("Skill", {"skill": "anything"}, True, None),
]


@pytest.mark.parametrize(("tool_name", "arguments", "allowed", "rule"), TABLE)
def test_table(tool_name: str, arguments: Any, allowed: bool, rule: str | None) -> None:
    verdict = AllowedTools.parse(ALLOWED).check(tool_name, arguments, cwd="/work")
    assert (verdict.allowed, verdict.rule) == (allowed, rule), verdict.reason


def test_verdicts_explain_themselves() -> None:
    rules = AllowedTools.parse(ALLOWED)
    assert rules.check("Bash", {"command": "git log | wc -l"}) == Verdict(
        False,
        None,
        "Bash command 'wc -l' (in 'git log | wc -l') matches none of Bash(git:*), "
        "Bash(npm run test), Bash(ls *)",
    )
    assert rules.check("WebSearch", {"query": "x"}) == Verdict(
        False, None, "no allowed-tools rule names the tool WebSearch"
    )
    assert rules.check("Read", {"file_path": "src/a.py"}, cwd="/w") == Verdict(
        False, None, "Read call 'src/a.py' matches none of Read(./docs/**)"
    )
    assert rules.check("Skill", {"skill": "x"}) == Verdict(
        True, None, "loading a skill (the Skill tool) is always allowed"
    )
    assert AllowedTools.parse(None).check("Bash", "rm -rf /") == Verdict(
        True, None, "the skill declares no allowed-tools: unconstrained"
    )


def test_bare_tools_and_star_allow_every_use() -> None:
    rules = AllowedTools.parse("Bash(*), Read")
    assert rules.check("Bash", "rm -rf / ; curl x | sh") == Verdict(
        True, "Bash(*)", "Bash(*) allows every Bash call"
    )
    assert rules.check("Grep", {"pattern": "x", "path": "/etc"}).rule == "Read"
    assert not rules.check("Edit", {"file_path": "/etc/passwd"}).allowed


def test_an_empty_declaration_allows_nothing_but_skills() -> None:
    rules = AllowedTools.parse("")
    assert (rules.declared, rules.rules, rules.problems) == (True, (), ())
    assert not rules.check("Read", {"file_path": "a"}).allowed
    assert rules.check("Skill", {"skill": "x"}).allowed


def test_path_anchors() -> None:
    rules = AllowedTools.parse(["Read(/config/**)", "Read(~/notes/*.txt)", "Read(.env)"])
    assert rules.check("Read", {"file_path": "/proj/config/a.yml"}, cwd="/proj").allowed
    # without a project root, /path is read as absolute
    assert rules.check("Read", {"file_path": "/config/a.yml"}).allowed
    assert not rules.check("Read", {"file_path": "/config/a.yml"}, cwd="/proj").allowed
    home = os.path.expanduser("~")
    assert rules.check("Read", {"file_path": f"{home}/notes/a.txt"}).allowed
    assert not rules.check("Read", {"file_path": f"{home}/notes/deep/a.txt"}).allowed
    assert rules.check("Read", {"file_path": "/any/where/.env"}).allowed
    assert not rules.check("Read", {"file_path": "/any/where/.envrc"}).allowed


def test_parse_keeps_rules_and_reports_invalid_patterns() -> None:
    rules = AllowedTools.parse(
        [
            "Bash(git:*)",
            "Bash(",
            "Read)",
            "",
            "Edit()",
            "Bash(x) y(",
            "Foo*",
            "mcp__a(b)",
            "WebFetch(x.org)",
        ]
    )
    assert rules.rules == (
        ToolRule("Bash(git:*)", "Bash", "git:*"),
        ToolRule("Bash(x)", "Bash", "x"),
    )
    assert rules.problems == (
        PatternProblem("Bash(", "unbalanced parentheses: '(' is never closed"),
        PatternProblem("Read)", "')' without a matching '('"),
        PatternProblem("", "empty pattern"),
        PatternProblem("Edit()", "empty specifier '()': write the bare tool name instead"),
        PatternProblem("y(", "unbalanced parentheses: '(' is never closed"),
        PatternProblem("Foo*", "malformed tool name 'Foo*' (wildcards only in mcp__ names)"),
        PatternProblem("mcp__a(b)", "MCP tools take no specifier in parentheses"),
        PatternProblem(
            "WebFetch(x.org)", "WebFetch takes 'domain:HOST', e.g. WebFetch(domain:x.org)"
        ),
    )
    assert AllowedTools.parse("Bash(a)x").problems == (
        PatternProblem("Bash(a)x", "unexpected text after the closing parenthesis: 'x'"),
    )
    # an invalid pattern never allows anything
    assert not AllowedTools.parse("Bash(git").check("Bash", "git status").allowed


def test_one_string_splits_on_whitespace_and_commas_outside_parentheses() -> None:
    rules = AllowedTools.parse("Bash(npm run build), Bash(git add:*)  Read,Write")
    assert rules.patterns == ["Bash(npm run build)", "Bash(git add:*)", "Read", "Write"]
    assert AllowedTools.parse("Read,,Write").problems == (PatternProblem("", "empty pattern"),)
