"""Golden sets: per-skill, versioned regression cases built from production traffic.

A case is drafted from an activation (or the exemplars of a failure cluster) that ran in
production: its request, its answer when every evaluation passed, and expected behaviours drafted
from what the failing evaluators found; people edit it. Sets read and write BenchFlow/ACES and
Anthropic skill-creator ``evals/evals.json``, skill-creator trigger evals, and Harbor task
directories. ``docs/golden-sets.md`` tells all.
"""

from __future__ import annotations

from skillsight.goldens._composition import GREEN_HIGH, GREEN_LOW, Composition, composition
from skillsight.goldens._draft import draft_behavior, draft_case, failing, passed_in_production
from skillsight.goldens._draft_judge import DraftedBehavior, judge_behavior
from skillsight.goldens._files import (
    FORMATS,
    ImportedCases,
    detect_format,
    parse_cases,
    read_cases_file,
    render_cases,
    write_cases_file,
)
from skillsight.goldens._from_cluster import cluster_members, promote_cluster
from skillsight.goldens._harbor import CONDITIONS, export_harbor, read_task_metadata, task_key
from skillsight.goldens._model import (
    STATUSES,
    CaseStatus,
    GoldenCase,
    GoldenSet,
    Provenance,
    case_id_for,
)
from skillsight.goldens._sets import (
    Promotion,
    create_set,
    final_answer,
    import_cases,
    load_set,
    newest_set_of,
    promote,
    save_version,
)

__all__ = [
    "CONDITIONS",
    "FORMATS",
    "GREEN_HIGH",
    "GREEN_LOW",
    "STATUSES",
    "CaseStatus",
    "Composition",
    "DraftedBehavior",
    "GoldenCase",
    "GoldenSet",
    "ImportedCases",
    "Promotion",
    "Provenance",
    "case_id_for",
    "cluster_members",
    "composition",
    "create_set",
    "detect_format",
    "draft_behavior",
    "draft_case",
    "export_harbor",
    "failing",
    "final_answer",
    "import_cases",
    "judge_behavior",
    "load_set",
    "newest_set_of",
    "parse_cases",
    "passed_in_production",
    "promote",
    "promote_cluster",
    "read_cases_file",
    "read_task_metadata",
    "render_cases",
    "save_version",
    "task_key",
    "write_cases_file",
]
