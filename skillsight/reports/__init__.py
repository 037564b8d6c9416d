"""Read models: what the API, the CLI and the web UI show, as typed records.

Each function reads the store and returns records, so every surface prints the same numbers:
spans and events, activations with their evaluations, skill scorecards and the gate's rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsight._faces import lazy_face

if TYPE_CHECKING:
    from skillsight.reports._activations import evaluation_events, evaluations_of, with_evaluations
    from skillsight.reports._browse import (
        DayCountOut,
        SessionStepsOut,
        SkillPageOut,
        SkillSummaryOut,
        UsagePointOut,
        VersionTrendPointOut,
        session_steps,
        skill_page,
        skill_usage_points,
        skills_overview,
    )
    from skillsight.reports._clusters import (
        ClusterDetailOut,
        ClusterMemberOut,
        ClusterNotFound,
        ClusterOut,
        ClusterTrendOut,
        cluster_detail,
        cluster_refs,
        list_clusters,
        set_cluster_status,
    )
    from skillsight.reports._goldens import (
        CompositionOut,
        GoldenSetOut,
        GoldenSetSummaryOut,
        golden_set,
        golden_sets,
    )
    from skillsight.reports._records import (
        ActivationDetailOut,
        ClusterRefOut,
        EvaluationEventOut,
        EvaluationOut,
        EvaluatorScoreOut,
        EvidenceOut,
        FindingOut,
        ScorecardOut,
        ScoredActivationOut,
        TrendPointOut,
        VersionScoreOut,
    )
    from skillsight.reports._runs import RunNotFound, RunSummaryOut, run_report, runs
    from skillsight.reports._scorecard import (
        DEFAULT_WINDOW,
        build_scorecard,
        scorecard,
        scored_activation,
        window_start,
    )
    from skillsight.reports._telemetry import (
        ActivationOut,
        EventOut,
        SkillOut,
        SpanOut,
        event_out,
        span_out,
    )

__all__ = [
    "DEFAULT_WINDOW",
    "ActivationDetailOut",
    "ActivationOut",
    "ClusterDetailOut",
    "ClusterMemberOut",
    "ClusterNotFound",
    "ClusterOut",
    "ClusterRefOut",
    "ClusterTrendOut",
    "CompositionOut",
    "DayCountOut",
    "EvaluationEventOut",
    "EvaluationOut",
    "EvaluatorScoreOut",
    "EventOut",
    "EvidenceOut",
    "FindingOut",
    "GoldenSetOut",
    "GoldenSetSummaryOut",
    "RunNotFound",
    "RunSummaryOut",
    "ScorecardOut",
    "ScoredActivationOut",
    "SessionStepsOut",
    "SkillOut",
    "SkillPageOut",
    "SkillSummaryOut",
    "SpanOut",
    "TrendPointOut",
    "UsagePointOut",
    "VersionScoreOut",
    "VersionTrendPointOut",
    "build_scorecard",
    "cluster_detail",
    "cluster_refs",
    "evaluation_events",
    "evaluations_of",
    "event_out",
    "golden_set",
    "golden_sets",
    "list_clusters",
    "run_report",
    "runs",
    "scorecard",
    "scored_activation",
    "session_steps",
    "set_cluster_status",
    "skill_page",
    "skill_usage_points",
    "skills_overview",
    "span_out",
    "window_start",
    "with_evaluations",
]

__getattr__, __dir__ = lazy_face(globals())
