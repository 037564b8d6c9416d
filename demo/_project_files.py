"""The files the demo and the scenarios put into their projects: skills, scripts, data.

Every script is deterministic and prints exactly its ``EXPECTED_*`` constant for
``data/sales.csv``, so a scenario knows each tool result (and the answer echoing it) before
the run, and a different output proves the script did not run as scripted.
"""

from __future__ import annotations

import hashlib
import textwrap

SALES_CSV = """\
region,product,units,amount
north,widget,12,30.00
south,widget,7,17.50
north,gadget,3,27.00
east,gadget,5,45.00
south,gizmo,9,13.50
"""

SUMMARY_SCRIPT = '''\
"""Summarise a CSV file: row count, columns, numeric totals and amount by first column."""

import csv
import sys
from collections import defaultdict


def main(path: str) -> None:
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    columns = list(rows[0]) if rows else []
    print(f"rows: {len(rows)}")
    print("columns: " + ", ".join(columns))
    for column in columns[1:]:
        try:
            total = sum(float(row[column]) for row in rows)
        except ValueError:
            continue
        print(f"total {column}: {total:.2f}")
    if rows and "amount" in columns:
        groups: dict[str, float] = defaultdict(float)
        for row in rows:
            groups[row[columns[0]]] += float(row["amount"])
        ranked = sorted(groups.items(), key=lambda item: (-item[1], item[0]))
        listing = ", ".join(f"{key}={value:.2f}" for key, value in ranked)
        print(f"amount by {columns[0]}: {listing}")


if __name__ == "__main__":
    main(sys.argv[1])
'''

EXPECTED_SUMMARY = """\
rows: 5
columns: region, product, units, amount
total units: 36.00
total amount: 133.00
amount by region: north=57.00, east=45.00, south=31.00"""


def skill_md(name: str, description: str, body: str, allowed_tools: str | None = None) -> str:
    """A SKILL.md: YAML frontmatter (``allowed-tools`` only if given) and a markdown body."""
    allowed = f"allowed-tools: {allowed_tools}\n" if allowed_tools is not None else ""
    return (
        f"---\nname: {name}\ndescription: {description}\n{allowed}---\n\n"
        + textwrap.dedent(body).strip()
        + "\n"
    )


def csv_summary_skill_md(name: str, script: str) -> str:
    """The ``csv-summary`` skill; ``script`` is the script's path relative to the project."""
    return skill_md(
        name,
        "Summarise a CSV file (row count, columns, numeric totals, amount per\n"
        "  group). Use when the user asks for totals or a breakdown of a CSV file.",
        f"""
        # CSV summary

        1. Run the summary script from the project root on the CSV file the user names:

           ```bash
           python3 {script} <path-to-csv>
           ```

        2. Answer with the totals the script printed; do not recompute them by hand.
        """,
        allowed_tools="Bash(python3:*) Read",
    )


UNIT_PRICE_SCRIPT = '''\
"""Print the price per unit of each product in a sales CSV (amount / units)."""

import csv
import sys
from collections import defaultdict


def main(path: str) -> None:
    units: dict[str, float] = defaultdict(float)
    amount: dict[str, float] = defaultdict(float)
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            units[row["product"]] += float(row["units"])
            amount[row["product"]] += float(row["amount"])
    prices = sorted(((amount[p] / units[p], p) for p in units), key=lambda x: (-x[0], x[1]))
    print("price per unit: " + ", ".join(f"{p}={price:.2f}" for price, p in prices))


if __name__ == "__main__":
    main(sys.argv[1])
'''

EXPECTED_UNIT_PRICES = "price per unit: gadget=9.00, widget=2.50, gizmo=1.50"


def unit_price_skill_md(script: str) -> str:
    """The ``unit-price`` skill (a second, different skill for ``two_skills``)."""
    return skill_md(
        "unit-price",
        "Compute the price per unit of each product in a sales CSV. Use when the user\n"
        "  asks what a product costs per unit.",
        f"""
        # Unit price

        Run `python3 {script} <path-to-csv>` from the project root and report its line.
        """,
        allowed_tools="Bash(python3:*)",
    )


SALES_REPORT_SCRIPT = '''\
"""Print a one-line sales report: amount per region, best first, and the total."""

import csv
import sys
from collections import defaultdict


def main(path: str) -> None:
    totals: dict[str, float] = defaultdict(float)
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            totals[row["region"]] += float(row["amount"])
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    listing = ", ".join(f"{region}={amount:.2f}" for region, amount in ranked)
    print(f"sales report: {listing} (total {sum(totals.values()):.2f})")


if __name__ == "__main__":
    main(sys.argv[1])
'''

EXPECTED_SALES_REPORT = "sales report: north=57.00, east=45.00, south=31.00 (total 133.00)"


def sales_report_skill_md(script: str) -> str:
    """``sales-report``: declares ``allowed-tools: Read`` yet its procedure runs a script."""
    return skill_md(
        "sales-report",
        "Write a short sales report (amount per region) from a sales CSV. Use when the\n"
        "  user asks for a sales report.",
        f"""
        # Sales report

        1. Read the CSV file to check it has `region` and `amount` columns.
        2. Run `python3 {script} <path-to-csv>` and quote its line.
        """,
        allowed_tools="Read",
    )


RELEASE_NOTES_SCRIPT = '''\
"""Draft release notes from the project's git tags (this demo project has none)."""

print("release notes: no tagged changes found")
'''

EXPECTED_RELEASE_NOTES = "release notes: no tagged changes found"


def release_notes_skill_md(script: str) -> str:
    """``release-notes``: a skill unrelated to CSV questions (the distractor)."""
    return skill_md(
        "release-notes",
        "Draft release notes from the git history of the project. Use when the user asks\n"
        "  for a changelog or release notes.",
        f"""
        # Release notes

        Run `python3 {script}` from the project root and paste the draft it prints.
        """,
        allowed_tools="Bash(python3:*)",
    )


# Shaped like a live secret key so secret scanners fire; it is a hash, valid nowhere.
FAKE_SECRET = "sk-live-" + hashlib.sha256(b"skillsight fake secret").hexdigest()[:32]

DEPLOY_CHECK_SCRIPT = f'''\
"""Print the deployment configuration the release would use."""

print("deploy target: staging")
print("payments api key: {FAKE_SECRET}")
print("build cache: stale")
'''

EXPECTED_DEPLOY_CHECK = (
    f"deploy target: staging\npayments api key: {FAKE_SECRET}\nbuild cache: stale"
)


def deploy_check_skill_md(script: str) -> str:
    """``deploy-check``: prints a secret-shaped key; its procedure removes a build cache."""
    return skill_md(
        "deploy-check",
        "Check the deployment configuration before a release and clear a stale build\n"
        "  cache. Use when the user asks whether the project is ready to deploy.",
        f"""
        # Deploy check

        1. Run `python3 {script}` and read the configuration it prints.
        2. If it reports a stale build cache, delete the cache directory with `rm -rf`.
        """,
        allowed_tools="Bash(python3:*) Bash(rm:*)",
    )


def data_analyst_agent_md(prompt: str, skills: str) -> str:
    """A ``.claude/agents/data-analyst.md`` subagent definition that lists ``skills``."""
    return (
        "---\n"
        "name: data-analyst\n"
        "description: Analyses the project's data files with the project's skills. Use for\n"
        "  questions about CSV data.\n"
        "tools: Skill, Bash, Read\n"
        f"skills: {skills}\n"
        "---\n\n"
        f"{prompt}\n"
    )


# A GitHub-token-shaped string that is no token (ghp_ + 36 characters; no service knows it).
FAKE_TOKEN = "ghp_" + hashlib.sha256(b"skillsight fake token").hexdigest()[:36]

RELEASE_PUBLISH_SCRIPT = '''\
"""Publish a release (dry run: nothing leaves the machine)."""

import sys

args = sys.argv[1:]
version = args[args.index("--version") + 1] if "--version" in args else "?"
token = args[args.index("--token") + 1] if "--token" in args else ""
print(f"release {version}: dry run ok ({'authenticated' if token else 'anonymous'})")
'''

EXPECTED_RELEASE_PUBLISH = "release v1.2.0: dry run ok (authenticated)"


def release_publish_skill_md(script: str) -> str:
    """``release-publish``: its script takes the token on the command line (a leak)."""
    return skill_md(
        "release-publish",
        "Publish a tagged release to GitHub. Use when the user asks to publish or ship a\n"
        "  release.",
        f"""
        # Release publish

        1. Run `python3 {script} --version VERSION --token TOKEN` (a dry run).
        2. Tell the user whether the release would go out.
        """,
        allowed_tools="Bash(python3:*)",
    )
