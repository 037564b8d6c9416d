"""The skill catalogue: parsing, versions, discovery, validation, CLI, store and API."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from skillsight.api import create_app
from skillsight.cli import app
from skillsight.config import Settings
from skillsight.errors import SkillError, SkillsightError
from skillsight.skills import (
    ScanReport,
    SkillManifest,
    Violation,
    find_skill_dir,
    load_skill,
    scan,
    skill_version,
    validate,
)
from skillsight.store import EmbeddedStore, Store

runner = CliRunner()

PDF_FRONTMATTER = """\
name: pdf-tools
description: Extract text and tables from PDF files. Use when the user mentions PDFs.
license: Apache-2.0
compatibility: Needs python3 and poppler-utils
metadata:
  author: example-org
  version: "1.2"
allowed-tools: Bash(python3 scripts/extract.py:*) Read
"""
PDF_BODY = """\
# PDF tools

1. Run `python3 scripts/extract.py INPUT.pdf` to get the text.
2. For tables, read references/tables.md first.
"""


def write_skill(
    root: Path,
    folder: str,
    frontmatter: str | None,
    body: str = "Do the thing.\n",
    files: dict[str, str] | None = None,
) -> Path:
    """A skill folder below ``root``: SKILL.md from ``frontmatter`` and ``body``, plus ``files``
    (relative path -> text)."""
    skill = root / folder
    skill.mkdir(parents=True, exist_ok=True)
    text = body if frontmatter is None else f"---\n{frontmatter}---\n{body}"
    (skill / "SKILL.md").write_text(text, encoding="utf-8")
    for name, content in (files or {}).items():
        path = skill / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return skill


def pdf_skill(root: Path) -> Path:
    return write_skill(
        root,
        "pdf-tools",
        PDF_FRONTMATTER,
        PDF_BODY,
        {
            "scripts/extract.py": "print('text')\n",
            "scripts/util/common.py": "X = 1\n",
            "references/tables.md": "# Tables\n",
        },
    )


def expected_version(folder: Path, files: list[str]) -> str:
    """The documented digest, recomputed independently: path NUL length NUL bytes per file."""
    digest = hashlib.sha256()
    for rel in sorted(files):
        data = (folder / rel).read_bytes()
        digest.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


# -- parsing ----------------------------------------------------------------------------------


def test_load_skill_reads_the_whole_manifest(tmp_path: Path) -> None:
    folder = pdf_skill(tmp_path)
    files = [
        "SKILL.md",
        "references/tables.md",
        "scripts/extract.py",
        "scripts/util/common.py",
    ]
    assert load_skill(folder) == SkillManifest(
        name="pdf-tools",
        description="Extract text and tables from PDF files. Use when the user mentions PDFs.",
        allowed_tools=["Bash(python3 scripts/extract.py:*)", "Read"],
        body=PDF_BODY,
        path=folder,
        skill_md=folder / "SKILL.md",
        version=expected_version(folder, files),
        frontmatter={
            "name": "pdf-tools",
            "description": (
                "Extract text and tables from PDF files. Use when the user mentions PDFs."
            ),
            "license": "Apache-2.0",
            "compatibility": "Needs python3 and poppler-utils",
            "metadata": {"author": "example-org", "version": "1.2"},
            "allowed-tools": "Bash(python3 scripts/extract.py:*) Read",
        },
        scripts=["scripts/extract.py", "scripts/util/common.py"],
    )
    assert load_skill(folder / "SKILL.md") == load_skill(folder)


@pytest.mark.parametrize(
    "declaration",
    [
        "allowed-tools: Bash(git add:*) Bash(git status) Read\n",
        "allowed-tools: Bash(git add:*), Bash(git status), Read\n",
        "allowed-tools:\n  - Bash(git add:*)\n  - Bash(git status)\n  - Read\n",
    ],
    ids=["space-separated", "comma-separated", "yaml-list"],
)
def test_allowed_tools_in_each_declared_form(tmp_path: Path, declaration: str) -> None:
    folder = write_skill(tmp_path, "git-helper", f"name: git-helper\ndescription: x\n{declaration}")
    assert load_skill(folder).allowed_tools == ["Bash(git add:*)", "Bash(git status)", "Read"]


def test_undeclared_allowed_tools_is_none_and_unconstrained(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "free", "name: free\ndescription: x\n")
    manifest = load_skill(folder)
    assert manifest.allowed_tools is None
    assert manifest.permissions.check("Bash", {"command": "rm -rf /tmp/x"}).allowed


def test_scripts_are_those_under_scripts_and_those_the_body_mentions(tmp_path: Path) -> None:
    body = textwrap.dedent(
        """\
        Run `{baseDir}/tools/build.sh`, then `./check.py` and `bash scripts/run.sh`.
        Not skill files: https://example.com/a/b.py, /usr/lib/x/y.py, src/app.py, ../up/z.py.
        """
    )
    folder = write_skill(
        tmp_path,
        "builder",
        "name: builder\ndescription: x\n",
        body,
        {"tools/build.sh": "", "scripts/lint.py": ""},
    )
    assert load_skill(folder).scripts == [
        "check.py",
        "scripts/lint.py",
        "scripts/run.sh",
        "tools/build.sh",
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("# no frontmatter\n", "SKILL.md:1: SKILL.md must start with a '---' line"),
        ("---\nname: x\n", "SKILL.md:1: the frontmatter opened on line 1 is never closed"),
        ("---\nname: [x\n---\n", "SKILL.md:3: frontmatter is not valid YAML"),
        ("---\n- a\n- b\n---\n", "SKILL.md:2: frontmatter must be a YAML mapping"),
        ("---\nname: 7\ndescription: x\n---\n", "SKILL.md:2: name must be a string, not int"),
        (
            "---\nname: x\nallowed-tools: {Bash: yes}\n---\n",
            "SKILL.md:3: allowed-tools must be a string or a list of strings, not dict",
        ),
    ],
    ids=["no-frontmatter", "unclosed", "bad-yaml", "not-a-mapping", "name-int", "tools-dict"],
)
def test_unreadable_skills_raise_a_clear_skill_error(
    tmp_path: Path, content: str, message: str
) -> None:
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "SKILL.md").write_text(content)
    with pytest.raises(SkillError) as caught:
        load_skill(folder)
    assert str(caught.value).startswith(f"{folder}/{message}")
    assert isinstance(caught.value, SkillsightError)


def test_missing_and_non_utf8_skill_md_raise_skill_error(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match=r"no SKILL\.md in this folder"):
        load_skill(tmp_path)
    (tmp_path / "SKILL.md").write_bytes(b"---\nname: caf\xe9\n---\n")
    with pytest.raises(SkillError, match=r"not UTF-8 text \(byte 13\)"):
        load_skill(tmp_path)


# -- versions ---------------------------------------------------------------------------------


def test_version_is_stable_across_places_and_ignores_caches(tmp_path: Path) -> None:
    original = pdf_skill(tmp_path / "a")
    copy = tmp_path / "b" / "elsewhere"
    shutil.copytree(original, copy)
    (copy / "scripts" / "__pycache__").mkdir()
    (copy / "scripts" / "__pycache__" / "extract.cpython-311.pyc").write_bytes(b"\0cache")
    (copy / "stray.pyc").write_bytes(b"\0")
    (copy / ".git").mkdir()
    (copy / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert skill_version(copy) == skill_version(original)
    assert load_skill(copy).version == load_skill(original).version


def test_version_changes_with_content_names_and_new_files(tmp_path: Path) -> None:
    folder = pdf_skill(tmp_path)
    seen = {skill_version(folder)}
    (folder / "scripts" / "extract.py").write_text("print('TEXT')\n")
    seen.add(skill_version(folder))
    (folder / "scripts" / "extract.py").rename(folder / "scripts" / "extract2.py")
    seen.add(skill_version(folder))
    (folder / "assets").mkdir()
    (folder / "assets" / "empty.txt").write_text("")
    seen.add(skill_version(folder))
    assert len(seen) == 4


def test_version_frames_files_so_bytes_cannot_move_between_them(tmp_path: Path) -> None:
    one = write_skill(tmp_path / "1", "s", "name: s\ndescription: x\n", "", {"a": "bc", "ab": ""})
    two = write_skill(tmp_path / "2", "s", "name: s\ndescription: x\n", "", {"a": "", "ab": "c"})
    assert skill_version(one) != skill_version(two)


def test_version_of_a_missing_folder_is_a_skill_error(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="is not a directory"):
        skill_version(tmp_path / "missing")


# -- discovery --------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home directory, and no CLAUDE_CONFIG_DIR."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


def test_find_skill_dir_in_the_project_walking_up_to_the_repo_root(
    tmp_path: Path, home: Path
) -> None:
    repo = tmp_path / "work" / "repo"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "packages" / "api"
    deep.mkdir(parents=True)
    at_root = write_skill(repo / ".claude" / "skills", "deploy", "name: deploy\ndescription: x\n")
    nested = write_skill(deep / ".claude" / "skills", "deploy", "name: deploy\ndescription: y\n")
    # above the repository root: Claude Code does not look there
    write_skill(tmp_path / "work" / ".claude" / "skills", "outside", "name: outside\n")

    assert find_skill_dir("deploy", cwd=deep) == nested
    assert find_skill_dir("deploy", cwd=repo) == at_root
    assert find_skill_dir("deploy", cwd=deep / "..") == at_root
    assert find_skill_dir("outside", cwd=deep) is None
    assert find_skill_dir("missing", cwd=deep) is None


def test_find_skill_dir_in_the_user_config_and_plugins(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    personal = write_skill(home / ".claude" / "skills", "notes", "name: notes\ndescription: x\n")
    plugin = tmp_path / "plugins" / "acme"
    from_plugin = write_skill(plugin / "skills", "lint", "name: lint\ndescription: x\n")

    assert find_skill_dir("notes", cwd=project) == personal
    assert find_skill_dir("lint", cwd=project) is None
    assert find_skill_dir("lint", cwd=project, extra_dirs=[plugin]) == from_plugin
    assert find_skill_dir("acme:lint", cwd=project, extra_dirs=[plugin]) == from_plugin

    config = tmp_path / "claude-config"
    moved = write_skill(config / "skills", "notes", "name: notes\ndescription: moved\n")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    assert find_skill_dir("notes", cwd=project) == moved


def test_find_skill_dir_by_frontmatter_name_and_personal_before_project(
    tmp_path: Path, home: Path
) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    renamed = write_skill(
        project / ".claude" / "skills", "csv_v2", "name: csv-summary\ndescription: x\n"
    )
    assert find_skill_dir("csv-summary", cwd=project) == renamed
    # a personal skill of the same name overrides the project's, as in Claude Code
    personal = write_skill(
        home / ".claude" / "skills", "csv-summary", "name: csv-summary\ndescription: u\n"
    )
    assert find_skill_dir("csv-summary", cwd=project) == personal
    plugin = write_skill(tmp_path / "plugin" / "skills", "lint", "name: lint\ndescription: p\n")
    project_lint = write_skill(
        project / ".claude" / "skills", "lint", "name: lint\ndescription: q\n"
    )
    assert find_skill_dir("lint", cwd=project, extra_dirs=[plugin.parent.parent]) == project_lint
    assert find_skill_dir("../etc", cwd=project) is None


# -- validation -------------------------------------------------------------------------------


def test_a_valid_skill_has_no_violations(tmp_path: Path) -> None:
    folder = pdf_skill(tmp_path)
    assert validate(folder) == []
    assert validate(load_skill(folder)) == []
    claude_code = write_skill(
        tmp_path,
        "review",
        "name: review\ndescription: Review a diff.\nmodel: haiku\ncontext: fork\n"
        "agent: Explore\ndisable-model-invocation: true\nuser-invocable: false\n"
        "argument-hint: '[file]'\n",
    )
    assert validate(claude_code) == []


LONG = "x" * 1025

INVALID_CASES: dict[str, tuple[str, str | None, str, list[tuple[str, str, int | None]]]] = {
    # id: (folder, frontmatter (None: no frontmatter), body, [(rule, message, line)])
    "no-frontmatter": (
        "plain",
        None,
        "# just markdown\n",
        [
            (
                "frontmatter-missing",
                "SKILL.md must start with a '---' line opening YAML frontmatter",
                1,
            )
        ],
    ),
    "bad-yaml": (
        "bad",
        "name: bad\ndescription: [unclosed\n",
        "",
        [
            (
                "frontmatter-yaml",
                "frontmatter is not valid YAML: expected ',' or ']', but got '<stream end>'",
                4,
            )
        ],
    ),
    "name-format": (
        "PDF--Tools-",
        "name: PDF--Tools-\ndescription: x\n",
        "",
        [
            (
                "name-format",
                "name 'PDF--Tools-': must be lowercase; cannot start or end with a hyphen; "
                "cannot contain two hyphens in a row",
                2,
            )
        ],
    ),
    "name-characters": (
        "pdf_tools",
        "name: pdf_tools\ndescription: x\n",
        "",
        [("name-format", "name 'pdf_tools': only letters, digits and hyphens are allowed", 2)],
    ),
    "name-length": (
        "a" * 65,
        f"name: {'a' * 65}\ndescription: x\n",
        "",
        [("name-length", "name is 65 characters; at most 64", 2)],
    ),
    "name-matches-folder": (
        "pdf",
        "name: pdf-tools\ndescription: x\n",
        "",
        [("name-matches-folder", "name 'pdf-tools' differs from the folder name 'pdf'", 2)],
    ),
    "name-and-description-required": (
        "empty",
        "license: MIT\ndescription: ''\n",
        "",
        [
            ("name-required", "name is required (missing)", 1),
            ("description-required", "description is required (empty)", 3),
        ],
    ),
    "description-length": (
        "long",
        f"name: long\ndescription: {LONG}\n",
        "",
        [("description-length", "description is 1025 characters; at most 1024", 3)],
    ),
    "compatibility-and-license": (
        "compat",
        f"name: compat\ndescription: x\ncompatibility: {'c' * 501}\nlicense: 2\n",
        "",
        [
            ("compatibility-format", "compatibility is 501 characters; at most 500", 4),
            ("license-format", "license must be a string, not int", 5),
        ],
    ),
    "metadata-format": (
        "meta",
        "name: meta\ndescription: x\nmetadata:\n  version: 1.0\n  author: me\n  tags: [a]\n",
        "",
        [
            (
                "metadata-format",
                "metadata values must be strings (quote them in YAML): tags, version",
                4,
            )
        ],
    ),
    "unknown-key-and-field-type": (
        "keys",
        "name: keys\ndescription: x\ntags: [a]\nuser-invocable: 'no'\n",
        "",
        [
            (
                "unknown-key",
                "unknown frontmatter key 'tags'; custom fields belong under metadata",
                4,
            ),
            ("field-type", "user-invocable must be bool, not str", 5),
        ],
    ),
    "allowed-tools-pattern": (
        "tools",
        "name: tools\ndescription: x\nallowed-tools: Bash(git:* Read Edit() WebFetch(x.org)\n",
        "",
        [
            (
                "allowed-tools-pattern",
                "'Bash(git:* Read Edit() WebFetch(x.org)': unbalanced parentheses: "
                "'(' is never closed",
                4,
            )
        ],
    ),
    "allowed-tools-patterns-in-a-list": (
        "tools",
        "name: tools\ndescription: x\nallowed-tools:\n  - Edit()\n  - WebFetch(x.org)\n  - ''\n",
        "",
        [
            (
                "allowed-tools-pattern",
                "'Edit()': empty specifier '()': write the bare tool name instead",
                4,
            ),
            (
                "allowed-tools-pattern",
                "'WebFetch(x.org)': WebFetch takes 'domain:HOST', e.g. WebFetch(domain:x.org)",
                4,
            ),
            ("allowed-tools-pattern", "'': empty pattern", 4),
        ],
    ),
    "allowed-tools-format": (
        "tools",
        "name: tools\ndescription: x\nallowed-tools: [Read, 3]\n",
        "",
        [("allowed-tools-format", "allowed-tools list items must all be strings", 4)],
    ),
    "script-missing": (
        "runner",
        "name: runner\ndescription: x\n",
        "Intro.\n\nRun `python scripts/go.py` and `scripts/present.sh`.\n",
        [
            (
                "script-missing",
                "the procedure mentions scripts/go.py, which is not in the skill folder",
                7,
            )
        ],
    ),
}


@pytest.mark.parametrize("case", list(INVALID_CASES), ids=list(INVALID_CASES))
def test_each_rule_reports_file_rule_message_and_line(tmp_path: Path, case: str) -> None:
    folder_name, frontmatter, body, expected = INVALID_CASES[case]
    folder = write_skill(tmp_path, folder_name, frontmatter, body, {"scripts/present.sh": ""})
    skill_md = str(folder / "SKILL.md")
    assert validate(folder) == [
        Violation(skill_md, rule, message, line) for rule, message, line in expected
    ]


def test_validate_without_skill_md_and_with_bad_encoding(tmp_path: Path) -> None:
    assert validate(tmp_path) == [
        Violation(str(tmp_path / "SKILL.md"), "skill-md-missing", f"no SKILL.md in {tmp_path}")
    ]
    (tmp_path / "SKILL.md").write_bytes(b"\xff\xfe---\n")
    assert validate(tmp_path) == [
        Violation(str(tmp_path / "SKILL.md"), "skill-md-encoding", "not UTF-8 text (byte 0)")
    ]


def test_violation_prints_as_file_line_rule_message() -> None:
    assert str(Violation("a/SKILL.md", "name-format", "bad", 2)) == "a/SKILL.md:2: name-format: bad"
    assert str(Violation("a/SKILL.md", "skill-md-missing", "none")) == (
        "a/SKILL.md: skill-md-missing: none"
    )


# -- scanning and the CLI ---------------------------------------------------------------------


def catalogue(root: Path) -> dict[str, Path]:
    """Several hand-written skills, two valid and three broken, some nested deep."""
    return {
        "pdf-tools": pdf_skill(root / "team"),
        "git-helper": write_skill(
            root / "team",
            "git-helper",
            "name: git-helper\ndescription: Commit and push.\nallowed-tools: Bash(git:*)\n",
        ),
        "Broken": write_skill(root / "team", "Broken", "name: Broken\ndescription: x\n"),
        "nofront": write_skill(root / "more" / "deep", "nofront", None, "hello\n"),
        "lost": write_skill(
            root / "more",
            "lost",
            "name: lost\ndescription: x\n",
            "Run scripts/gone.py\n",
        ),
    }


def test_scan_finds_every_skill_and_reports_each_violation(tmp_path: Path) -> None:
    skills = catalogue(tmp_path)
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "SKILL.md").write_text("ignored")
    report = scan([tmp_path])
    md = {name: str(folder / "SKILL.md") for name, folder in skills.items()}
    assert isinstance(report, ScanReport)
    assert report.files == sorted(Path(p) for p in md.values())
    assert sorted(s.name for s in report.skills) == ["Broken", "git-helper", "lost", "pdf-tools"]
    assert sorted(s.name for s in report.valid_skills) == ["git-helper", "pdf-tools"]
    assert sorted((v.file, v.rule, v.line) for v in report.violations) == sorted(
        [
            (md["Broken"], "name-format", 2),
            (md["nofront"], "frontmatter-missing", 1),
            (md["lost"], "script-missing", 5),
        ]
    )
    assert not report.ok
    assert scan([skills["pdf-tools"] / "SKILL.md"]).ok


def test_scan_of_a_missing_path_is_a_skill_error(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="no such file or directory"):
        scan([tmp_path / "nope"])


def test_cli_scan_prints_file_line_rule_and_exits_1(tmp_path: Path) -> None:
    skills = catalogue(tmp_path)
    result = runner.invoke(app, ["skills", "scan", str(tmp_path)])
    assert result.exit_code == 1
    md = {name: folder / "SKILL.md" for name, folder in skills.items()}
    # files in path order: more/deep/nofront, more/lost, team/Broken
    assert result.stdout.splitlines() == [
        f"{md['nofront']}:1: frontmatter-missing: SKILL.md must start with a '---' line "
        "opening YAML frontmatter",
        f"{md['lost']}:5: script-missing: the procedure mentions scripts/gone.py, "
        "which is not in the skill folder",
        f"{md['Broken']}:2: name-format: name 'Broken': must be lowercase",
        "5 skills scanned, 2 valid, 3 violations",
    ]


def test_cli_scan_of_valid_skills_exits_0_and_json_lists_them(tmp_path: Path) -> None:
    skills = catalogue(tmp_path)
    ok = runner.invoke(app, ["skills", "scan", str(skills["pdf-tools"]), str(skills["git-helper"])])
    assert (ok.exit_code, ok.stdout) == (0, "2 skills scanned, 2 valid, 0 violations\n")
    as_json = runner.invoke(app, ["skills", "scan", "--json", str(skills["git-helper"])])
    git_helper = load_skill(skills["git-helper"])
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout) == {
        "files": [str(skills["git-helper"] / "SKILL.md")],
        "skills": [
            {
                "name": "git-helper",
                "version": git_helper.version,
                "path": str(skills["git-helper"]),
                "description": "Commit and push.",
                "allowed_tools": ["Bash(git:*)"],
                "scripts": [],
                "valid": True,
            }
        ],
        "violations": [],
        "stored": 0,
    }


def test_cli_scan_of_a_missing_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["skills", "scan", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "no such file or directory to scan for skills" in result.stderr
    assert "Traceback" not in result.output


def test_cli_scan_store_then_list(tmp_path: Path) -> None:
    skills = catalogue(tmp_path / "skills")
    data = tmp_path / "data"
    stored = runner.invoke(
        app, ["skills", "scan", str(tmp_path / "skills"), "--store", "--data", str(data)]
    )
    assert stored.exit_code == 1  # the broken skills still fail the run
    assert stored.stdout.splitlines()[-1] == (
        "5 skills scanned, 2 valid, 3 violations; 2 recorded in project 'default'"
    )
    listed = runner.invoke(app, ["skills", "list", "--json", "--data", str(data)])
    assert listed.exit_code == 0
    rows = json.loads(listed.stdout)
    assert [(r["name"], r["version"], r["allowed_tools"]) for r in rows] == [
        ("git-helper", load_skill(skills["git-helper"]).version, ["Bash(git:*)"]),
        (
            "pdf-tools",
            load_skill(skills["pdf-tools"]).version,
            ["Bash(python3 scripts/extract.py:*)", "Read"],
        ),
    ]
    table = runner.invoke(app, ["skills", "list", "--data", str(data)])
    assert "git-helper" in table.stdout and "2 skill versions" in table.stdout


# -- the store --------------------------------------------------------------------------------


def stored_entry(manifest: SkillManifest, scanned_at: str) -> dict[str, object]:
    return {
        "name": manifest.name,
        "version": manifest.version,
        "description": manifest.description,
        "allowed_tools": manifest.allowed_tools,
        "scripts": manifest.scripts,
        "source_uri": manifest.path.absolute().as_uri(),
        "scanned_at": scanned_at,
    }


def test_store_round_trip_versions_and_contracts(store: Store, tmp_path: Path) -> None:
    pdf_v1 = load_skill(pdf_skill(tmp_path / "v1"))
    v2_folder = pdf_skill(tmp_path / "v2")
    (v2_folder / "scripts" / "extract.py").write_text("print('v2')\n")
    pdf_v2 = load_skill(v2_folder)
    free = load_skill(write_skill(tmp_path, "free", "name: free\ndescription: Anything.\n"))
    first = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    second = datetime(2026, 11, 2, 9, 0, 0, 250_000, tzinfo=UTC)

    assert store.skills.insert("p1", [pdf_v1, free], scanned_at=first) == 2
    assert store.skills.insert("p1", [pdf_v2], scanned_at=second) == 1
    assert store.skills.insert("p2", [free], scanned_at=second) == 1
    # a re-scan of an unchanged version replaces its row rather than adding one
    assert store.skills.insert("p1", [free], scanned_at=second) == 1
    assert store.skills.insert("p1", []) == 0

    assert store.skills.find("p1") == [
        stored_entry(free, "2026-11-02T09:00:00.250000Z"),
        stored_entry(pdf_v2, "2026-11-02T09:00:00.250000Z"),
        stored_entry(pdf_v1, "2026-11-01T09:00:00Z"),
    ]
    assert store.skills.find("p1", "pdf-tools") == [
        stored_entry(pdf_v2, "2026-11-02T09:00:00.250000Z"),
        stored_entry(pdf_v1, "2026-11-01T09:00:00Z"),
    ]
    assert store.skills.find("p2") == [stored_entry(free, "2026-11-02T09:00:00.250000Z")]
    assert store.skills.find("nobody") == []

    contracts = store.skills.contracts("p1")
    assert contracts == {
        "free": {
            **stored_entry(free, "2026-11-02T09:00:00.250000Z"),
            "body": free.body,
            "frontmatter": {"name": "free", "description": "Anything."},
        },
        "pdf-tools": {
            **stored_entry(pdf_v2, "2026-11-02T09:00:00.250000Z"),
            "body": PDF_BODY,
            "frontmatter": pdf_v2.frontmatter,
        },
    }


def test_api_lists_the_callers_catalogue(embedded_store: EmbeddedStore, tmp_path: Path) -> None:
    pdf = load_skill(pdf_skill(tmp_path))
    free = load_skill(write_skill(tmp_path, "free", "name: free\ndescription: Anything.\n"))
    at = datetime(2026, 11, 3, tzinfo=UTC)
    embedded_store.skills.insert("team-a", [pdf, free], scanned_at=at)
    embedded_store.skills.insert("team-b", [free], scanned_at=at)
    settings = Settings.load(
        {"api_keys": {"key-a": "team-a", "key-b": "team-b"}, "data_dir": tmp_path / "unused"},
        env={},
    )
    with TestClient(create_app(settings=settings, store=embedded_store)) as client:
        team_a = client.get("/api/v1/skills", headers={"x-skillsight-key": "key-a"})
        one = client.get(
            "/api/v1/skills", params={"name": "free"}, headers={"x-skillsight-key": "key-b"}
        )
        anonymous = client.get("/api/v1/skills")
    assert team_a.status_code == 200
    assert team_a.json() == [
        stored_entry(free, "2026-11-03T00:00:00Z"),
        stored_entry(pdf, "2026-11-03T00:00:00Z"),
    ]
    assert one.json() == [stored_entry(free, "2026-11-03T00:00:00Z")]
    assert anonymous.status_code == 401


def test_manifest_is_a_frozen_value(tmp_path: Path) -> None:
    manifest = load_skill(pdf_skill(tmp_path))
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.name = "other"  # type: ignore[misc]


def test_the_documentation_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "skills.md").read_text()
    example = docs.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(example, "docs/skills.md", "exec"), {})
    assert capsys.readouterr().out == (
        "Bash command 'git push' matches none of Bash(git add:*), Bash(git commit:*)\n"
    )


def test_the_package_imports_only_the_standard_library_and_yaml() -> None:
    """The in-process instrumentation imports it, so it must stay light."""
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import skillsight.skills\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        # cython_runtime comes with PyYAML's compiled loader
        "known = set(sys.stdlib_module_names) | {'cython_runtime'}\n"
        "third_party = sorted(m for m in new - known if m[0] != '_')\n"
        "print(third_party)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "['skillsight', 'yaml']"
