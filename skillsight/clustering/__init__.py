"""Failure clusters: failing activations grouped by cause, with ids that last across runs.

A failing activation (an evaluation of its newest rebuild failed) is described by a short,
normalized failure text, embedded with the offline MiniLM model and stored once. A run clusters
a project's failures of the window with HDBSCAN, matches the clusters found to the previous
run's (stable ids, splits, merges), labels them and counts their facts; between runs each new
failure joins the nearest cluster at once, or stays novel. Each cluster has a lifecycle an
on-call engineer drives: new, acknowledged, resolved, regressed. ``docs/clusters.md`` tells all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsight._faces import lazy_face

if TYPE_CHECKING:
    from skillsight.clustering._advice import Advice, advise, basis_of
    from skillsight.clustering._assign import Assigned, ExemplarIndex, assign_failures
    from skillsight.clustering._collect import (
        Failure,
        Thresholds,
        failing_now,
        source_key,
        with_causes,
        with_vectors,
    )
    from skillsight.clustering._facts import Cause, cause_of, severity_of_cluster
    from skillsight.clustering._fit import (
        FitOptions,
        Fitted,
        fit,
        medoids,
        merge_close,
        project,
        spread_exemplars,
    )
    from skillsight.clustering._labels import cluster_label, ctfidf_terms, terms_of
    from skillsight.clustering._lifecycle import (
        OPEN,
        SETTABLE,
        STATUSES,
        ClusterState,
        regressed_by,
        set_status,
    )
    from skillsight.clustering._matching import Before, Found, Match, Matching, match_clusters
    from skillsight.clustering._normalize import normalize
    from skillsight.clustering._run import RunOptions, RunSummary, run_clustering
    from skillsight.clustering._service import Clusterer, ClustererOptions, ClustererStats
    from skillsight.clustering._settings import clusterer_options, run_options
    from skillsight.clustering._text import SEVERITY_ORDER, FailureText, failure_text, severity_of
    from skillsight.clustering._trend import (
        HOUR_US,
        HOURS,
        Trend,
        bucket_counts,
        rank_score,
        trend_of,
    )
    from skillsight.clustering._vectors import (
        cause_features,
        combined,
        embed_texts,
        normalized,
        pack,
        unpack_all,
    )

__all__ = [
    "HOURS",
    "HOUR_US",
    "OPEN",
    "SETTABLE",
    "SEVERITY_ORDER",
    "STATUSES",
    "Advice",
    "Assigned",
    "Before",
    "Cause",
    "ClusterState",
    "Clusterer",
    "ClustererOptions",
    "ClustererStats",
    "ExemplarIndex",
    "Failure",
    "FailureText",
    "FitOptions",
    "Fitted",
    "Found",
    "Match",
    "Matching",
    "RunOptions",
    "RunSummary",
    "Thresholds",
    "Trend",
    "advise",
    "assign_failures",
    "basis_of",
    "bucket_counts",
    "cause_features",
    "cause_of",
    "cluster_label",
    "clusterer_options",
    "combined",
    "ctfidf_terms",
    "embed_texts",
    "failing_now",
    "failure_text",
    "fit",
    "match_clusters",
    "medoids",
    "merge_close",
    "normalize",
    "normalized",
    "pack",
    "project",
    "rank_score",
    "regressed_by",
    "run_clustering",
    "run_options",
    "set_status",
    "severity_of",
    "severity_of_cluster",
    "source_key",
    "spread_exemplars",
    "terms_of",
    "trend_of",
    "unpack_all",
    "with_causes",
    "with_vectors",
]

__getattr__, __dir__ = lazy_face(globals())
