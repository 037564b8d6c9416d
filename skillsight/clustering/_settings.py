"""The clusterer's options from the service's settings, checked at start-up."""

from __future__ import annotations

from skillsight.clustering._collect import Thresholds
from skillsight.clustering._fit import FitOptions
from skillsight.clustering._run import RunOptions
from skillsight.clustering._service import ClustererOptions
from skillsight.config import Settings
from skillsight.errors import ConfigError
from skillsight.evaluators.judges import judge_settings


def clusterer_options(settings: Settings, *, worker: tuple[int, int] = (0, 1)) -> ClustererOptions:
    """``ClustererOptions`` as the ``cluster_*`` settings say; a bad value raises
    :class:`~skillsight.errors.ConfigError` naming its variable. ``worker`` is this process's
    share of the projects (INDEX, COUNT)."""
    _check(settings)
    return ClustererOptions(
        run=run_options(settings),
        interval_s=settings.cluster_interval_s,
        poll_s=settings.cluster_assign_poll_s,
        max_distance=settings.cluster_assign_max_distance,
        worker=worker,
        advice=judge_settings(settings) if settings.judge_model else None,
    )


def run_options(settings: Settings) -> RunOptions:
    """How a run clusters, as the settings say (``POST /api/v1/clusters/run``, the CLI)."""
    _check(settings)
    return RunOptions(
        window_days=settings.cluster_window_days,
        fit=FitOptions(
            min_cluster_size=settings.cluster_min_size,
            reduce_to=settings.cluster_reduce_to,
            merge_similarity=settings.cluster_merge_similarity,
        ),
        thresholds=Thresholds.parse(settings.cluster_fail_below),
        cause_weight=settings.cluster_cause_weight,
    )


def _check(settings: Settings) -> None:
    def fail(name: str, expected: str) -> ConfigError:
        value = getattr(settings, name)
        return ConfigError(f"{name}={value!r}: {expected} (SKILLSIGHT_{name.upper()})")

    if settings.cluster_window_days < 1:
        raise fail("cluster_window_days", "expected at least 1 day")
    if settings.cluster_min_size < 2:
        raise fail("cluster_min_size", "expected at least 2")
    if settings.cluster_reduce_to < 0:
        raise fail("cluster_reduce_to", "expected 0 (no PCA) or a number of dimensions")
    for name in ("cluster_interval_s", "cluster_cause_weight"):
        if getattr(settings, name) < 0:
            raise fail(name, "must not be negative")
    if settings.cluster_assign_poll_s <= 0:
        raise fail("cluster_assign_poll_s", "must be positive")
    for name in ("cluster_merge_similarity",):
        if not 0.0 <= getattr(settings, name) <= 1.0:
            raise fail(name, "expected a cosine in [0, 1]")
    if not 0.0 <= settings.cluster_assign_max_distance <= 2.0:
        raise fail("cluster_assign_max_distance", "expected a cosine distance in [0, 2]")
    Thresholds.parse(settings.cluster_fail_below)


__all__ = ["clusterer_options", "run_options"]
