"""The pure parts of failure clustering: normalization, failure texts, vectors, HDBSCAN with the
real ``hdbscan`` package and the real MiniLM model, stable ids, labels, lifecycle and trend."""

from __future__ import annotations

import numpy as np
import pytest

from skillsight.clustering import (
    Before,
    ClusterState,
    FitOptions,
    Found,
    Thresholds,
    bucket_counts,
    cause_features,
    cluster_label,
    combined,
    ctfidf_terms,
    embed_texts,
    failure_text,
    fit,
    match_clusters,
    medoids,
    merge_close,
    normalize,
    normalized,
    pack,
    project,
    rank_score,
    regressed_by,
    set_status,
    severity_of,
    spread_exemplars,
    terms_of,
    trend_of,
    unpack_all,
)
from skillsight.errors import ConfigError
from skillsight.evaluators import Evaluation, Evidence, Finding, default_embedder
from skillsight.store.records import Activation, ToolCall

HOUR = 3_600_000_000

# --- normalization ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        (
            "1 of 2 calls outside allowed-tools Read: Bash",
            "<n> of <n> calls outside allowed-tools Read: Bash",
        ),
        (
            "Bash retried after call toolu_01c0fbe5ade7ce076d817730 failed",
            "Bash retried after call <id> failed",
        ),
        (
            "rm -rf /tmp/proj-7/outside/cache-12 is outside the workspace",
            "rm -rf <path> is outside the workspace",
        ),
        (
            "python3 .claude/skills/csv-summary/scripts/summarize_csv.py data/q3_north.csv",
            "python3 skills/csv-summary/scripts/summarize_csv.py <path>.csv",
        ),
        ("scripts/report.py was never run", "scripts/report.py was never run"),
        ("key sk-live-62222595d2f8e5d477423f083751b810 leaked", "key <token> leaked"),
        (
            "session 550e8400-e29b-41d4-a716-446655440000 at 2026-01-02T03:04:05Z",
            "session <uuid> at <time>",
        ),
        (
            "upload to https://Evil.Example.com/x?y=1 from sales_2.csv",
            "upload to https://evil.example.com/… from <file>.csv",
        ),
        (
            "secret x3, rm_rf x12 in v2 of SKILL.md (hash a3f9e0c1)",
            "secret x<n>, rm_rf x<n> in v2 of SKILL.md (hash <hex>)",
        ),
    ],
)
def test_instance_values_become_placeholders_and_causes_stay(raw: str, normal: str) -> None:
    assert normalize(raw) == normal


def test_two_instances_of_one_pattern_normalize_alike() -> None:
    first = "Read /home/a/p1/data/sales.csv then toolu_01aa11bb22cc33dd44ee55ff failed with 133.00"
    second = "Read /srv/w/p9/data/q3_emea_7.csv then toolu_01ffeeddccbbaa9988776655 failed with 9.5"
    assert normalize(first) == normalize(second)


# --- failure texts ----------------------------------------------------------------------------


def _activation(calls: list[ToolCall]) -> Activation:
    return Activation(
        activation_id="a1",
        session_id="s1",
        trace_id="t1",
        skill_name="sales-report",
        trigger="skill_tool",
        trigger_call_id="toolu_01000000000000000000000a",
        trigger_step_id=2,
        tool_calls=calls,
        integration_step_id=9,
        started_at="2026-01-01T00:00:00.000000Z",
        ended_at="2026-01-01T00:00:01.000000Z",
    )


def _call(
    call_id: str,
    name: str,
    step: int,
    *,
    error: bool = False,
    result: str | None = None,
    **arguments: str,
) -> ToolCall:
    return ToolCall(
        tool_call_id=call_id,
        name=name,
        arguments=arguments,
        step_id=step,
        is_error=error,
        result=result,
    )


def _evaluation(evaluator: str, label: str, reason: str, *findings: Finding) -> Evaluation:
    return Evaluation(
        "a1", evaluator, "1", 0.0, False, label, reason, Evidence.cite(findings), findings
    )


def test_a_failure_text_names_the_cause_first_then_the_calls_and_errors() -> None:
    read = _call("toolu_01aaaaaaaaaaaaaaaaaaaaaa", "Read", 3, file_path="/w/p/data/sales.csv")
    bash = _call(
        "toolu_01bbbbbbbbbbbbbbbbbbbbbb",
        "Bash",
        4,
        error=True,
        result="Traceback (most recent call last):\nFileNotFoundError: data/sale.csv",
        command="python3 .claude/skills/sales-report/scripts/report.py data/sale.csv",
    )
    finding = Finding(
        "tool_not_allowed",
        "no allowed-tools rule names the tool Bash",
        4,
        bash.tool_call_id,
        "high",
    )
    security = Finding(
        "secret", "sk_secret_key sk-liv…(40 chars) in the tool result", 3, read.tool_call_id, "high"
    )
    text = failure_text(
        _activation([read, bash]),
        [
            _evaluation(
                "allowed_tools",
                "violation",
                "1 of 2 calls outside allowed-tools Read: Bash",
                finding,
            ),
            _evaluation("security", "unsafe", "secret x1", security),
        ],
    )
    assert text.text.splitlines() == [
        "sales-report fails security (unsafe), allowed_tools (violation)",
        "security: secret x<n>",
        "secret: sk_secret_key sk-liv…(<n> chars) in the tool result (at Read <path>.csv)",
        "allowed_tools: <n> of <n> calls outside allowed-tools Read: Bash",
        "tool_not_allowed: no allowed-tools rule names the tool Bash "
        "(at Bash python3 skills/sales-report/scripts/report.py <path>.csv)",
        "calls: Read → Bash (error)",
        "error: Bash: FileNotFoundError: <path>.csv",
    ]
    assert text.evaluators == ("allowed_tools", "security")
    assert text.kinds == ("security:secret", "allowed_tools:tool_not_allowed")
    assert text.severity == "critical"


def test_repeated_calls_collapse_and_a_step_citation_names_the_answer() -> None:
    calls = [_call(f"toolu_01{i:022d}", "Bash", 3 + i, command="ls") for i in range(4)]
    finding = Finding("output_not_referenced", "the answer uses none of the values", 9)
    text = failure_text(
        _activation(calls),
        [_evaluation("integration_heuristic", "ignored", "reference: failed", finding)],
    )
    assert "calls: Bash x<n>" in text.text.splitlines()
    assert "output_not_referenced: the answer uses none of the values (at the answer)" in text.text
    assert text.severity == "medium"


def test_severity_is_security_first_then_the_worst_finding() -> None:
    low = Finding("retry", "retried", 3, severity="info")
    high = Finding("tool_not_allowed", "Bash", 3, severity="high")
    assert severity_of([_evaluation("tool_errors", "errors", "", low)]) == "low"
    assert (
        severity_of(
            [
                _evaluation("tool_errors", "errors", "", low),
                _evaluation("allowed_tools", "v", "", high),
            ]
        )
        == "high"
    )
    assert severity_of([_evaluation("security", "unsafe", "", low)]) == "critical"
    assert severity_of([_evaluation("efficiency", "costly", "")]) == "medium"


def test_thresholds_override_verdicts_per_evaluator_and_per_skill() -> None:
    thresholds = Thresholds.parse("efficiency=0.5, csv-summary:efficiency=0.2")
    assert thresholds.scored == ["efficiency"]

    def row(skill: str, score: float | None, passed: bool | None) -> dict[str, object]:
        return {"skill_name": skill, "evaluator": "efficiency", "score": score, "passed": passed}

    assert thresholds.fails(row("report", 0.4, True))  # type: ignore[arg-type]
    assert not thresholds.fails(row("csv-summary", 0.4, True))  # type: ignore[arg-type]
    assert not thresholds.fails(row("report", None, None))  # type: ignore[arg-type]
    assert Thresholds().fails(
        {"evaluator": "security", "skill_name": "x", "score": 0.0, "passed": False}
    )  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="SKILLSIGHT_CLUSTER_FAIL_BELOW"):
        Thresholds.parse("efficiency=2")


# --- vectors and the fit (real MiniLM, real hdbscan) ----------------------------------------------


def test_vectors_round_trip_as_half_floats_with_cosines_kept() -> None:
    rng = np.random.default_rng(3)
    vectors = normalized(rng.normal(size=(20, 384)).astype(np.float32))
    back = unpack_all([pack(v) for v in vectors], 384)
    assert len(pack(vectors[0])) == 768
    assert np.allclose(back @ back.T, vectors @ vectors.T, atol=2e-3)


def test_identical_texts_are_embedded_once_and_share_their_row() -> None:
    embedder = default_embedder()
    texts = [
        "csv-summary fails tool_errors",
        "deploy-check fails security",
        "csv-summary fails tool_errors",
    ]
    misses = embedder.misses
    matrix = embed_texts(embedder, texts)
    assert matrix.shape == (3, 384) and np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(matrix[0], matrix[2])
    assert embedder.misses - misses <= 2


def test_cause_features_separate_failures_that_fail_differently() -> None:
    text = normalized(np.ones((2, 8), dtype=np.float32))
    same = np.vstack([cause_features(["tool_errors:retry"], ["tool_errors"])] * 2)
    other = np.vstack(
        [
            cause_features(["tool_errors:retry"], ["tool_errors"]),
            cause_features(["security:secret"], ["security"]),
        ]
    )
    assert float(combined(text, same, 0.5)[0] @ combined(text, same, 0.5)[1]) == pytest.approx(1.0)
    assert float(combined(text, other, 0.5)[0] @ combined(text, other, 0.5)[1]) < 0.85
    assert combined(text, other, 0.0) is text


PATTERN_TEXTS = {
    "allowed": "sales-report fails allowed_tools (violation)\n"
    "tool_not_allowed: no allowed-tools rule names the tool Bash",
    "secret": "deploy-check fails security (unsafe)\nsecret: sk_secret_key in the tool result\n"
    "rm_rf_outside_workspace: rm -rf <path>",
    "skipped": "csv-summary fails script_execution (skipped)\n"
    "script_not_run: scripts/summarize_csv.py was never run",
}


def test_hdbscan_finds_each_pattern_and_leaves_one_offs_as_noise() -> None:
    texts, truth = [], []
    for name, text in PATTERN_TEXTS.items():
        for i in range(12):
            variant = text + ("\ncalls: Read → Bash" if i % 3 else "\ncalls: Bash")
            texts.append(variant)
            truth.append(name)
    one_offs = [
        "unit-price fails efficiency (costly): tokens 40 times the skill's median",
        "pdf-fill fails security: invisible characters",
    ]
    texts += one_offs
    truth += ["one-off"] * 2
    vectors = embed_texts(default_embedder(), texts)
    fitted = fit(vectors, FitOptions(min_cluster_size=5, reduce_to=0))
    assert fitted.count == 3
    for name in PATTERN_TEXTS:
        assert len({int(fitted.labels[i]) for i, t in enumerate(truth) if t == name}) == 1
    assert [int(x) for x in fitted.labels[-2:]] == [-1, -1]


def test_a_pca_projection_keeps_the_leading_directions() -> None:
    rng = np.random.default_rng(1)
    signal = rng.normal(size=(200, 3)) @ rng.normal(size=(3, 40))
    data = (signal + 0.01 * rng.normal(size=(200, 40))).astype(np.float32)
    reduced = project(data, 3)
    assert reduced.shape == (200, 3)
    centred = data - data.mean(axis=0)
    assert np.linalg.norm(reduced) ** 2 / np.linalg.norm(centred) ** 2 > 0.99
    few = data[:2]
    assert project(data, 0) is data and project(few, 3) is few


def test_close_clusters_merge_and_noise_stays_noise() -> None:
    base = normalized(np.eye(3, 16, dtype=np.float32))
    near = normalized((base[0] + 0.1 * base[1])[None])[0]
    vectors = np.vstack(
        [
            np.repeat(base[:1], 5, 0),
            np.repeat(near[None], 5, 0),
            np.repeat(base[2:3], 5, 0),
            base[1:2],
        ]
    )
    labels = np.array([0] * 5 + [1] * 5 + [2] * 5 + [-1], dtype=np.intp)
    assert merge_close(vectors, labels, 0.9).tolist() == [0] * 10 + [1] * 5 + [-1]
    assert merge_close(vectors, labels, 0.999).tolist() == labels.tolist()
    apart = ["a"] * 5 + ["b"] * 5 + ["a"] * 6  # the two close clusters are of two skills
    assert merge_close(vectors, labels, 0.9, groups=apart).tolist() == labels.tolist()


def test_each_skill_is_clustered_apart() -> None:
    vectors = embed_texts(default_embedder(), [PATTERN_TEXTS["allowed"]] * 12)
    skills = ["sales-report"] * 6 + ["note-reader"] * 6
    fitted = fit(vectors, FitOptions(min_cluster_size=5, reduce_to=8), groups=skills)
    assert fitted.dims == 384  # no skill has more than reduce_above failures: no projection
    assert fit(vectors, FitOptions(reduce_to=8, reduce_above=0), groups=skills).dims == 8
    assert fitted.count == 2 and len(set(fitted.labels[:6])) == len(set(fitted.labels[6:])) == 1
    assert fitted.labels[0] != fitted.labels[6]
    few = fit(vectors[:8], FitOptions(min_cluster_size=5, reduce_to=0), groups=skills[4:])
    assert few.labels.tolist() == [-1, -1] + [0] * 6  # two failures of a skill: novel


def test_medoids_and_spread_exemplars() -> None:
    vectors = normalized(np.array([[1, 0], [1, 0.1], [1, -0.1], [0.2, 1]], dtype=np.float32))
    assert medoids(vectors, 2)[0] in (0, 1, 2)
    spread = spread_exemplars(vectors, 3)
    assert spread[0] == medoids(vectors, 1)[0] and 3 in spread
    assert spread_exemplars(np.repeat(vectors[:1], 4, 0), 3) == [0]


# --- stable ids ----------------------------------------------------------------------------------


def _found(index: int, members: set[str], direction: int) -> Found:
    return Found(
        index, frozenset(members), normalized(np.eye(1, 8, direction, dtype=np.float32))[0]
    )


def _ids(prefix: str, count: int, start: int = 0) -> set[str]:
    return {f"{prefix}{i}" for i in range(start, start + count)}


def test_ids_survive_a_rerun_and_new_members() -> None:
    before = [Before("A", frozenset(_ids("a", 20))), Before("B", frozenset(_ids("b", 10)))]
    found = [_found(0, _ids("b", 12), 1), _found(1, _ids("a", 25), 0)]
    matching = match_clusters(before, found, lambda f: f"new{f.index}")
    assert {i: m.cluster_id for i, m in matching.matches.items()} == {0: "B", 1: "A"}
    assert matching.kept_share == 1.0 and not matching.merged_into


def test_a_split_keeps_the_id_on_the_larger_part() -> None:
    before = [Before("A", frozenset(_ids("a", 30)))]
    found = [_found(0, _ids("a", 10), 0), _found(1, _ids("a", 20, start=10), 1)]
    matching = match_clusters(before, found, lambda f: f"new{f.index}")
    assert matching.matches[1].cluster_id == "A" and matching.matches[1].how == "overlap"
    assert matching.matches[0] == type(matching.matches[0])("new0", "split", split_from="A")
    assert matching.kept_share == pytest.approx(20 / 30)


def test_a_merge_records_merged_into() -> None:
    before = [Before("A", frozenset(_ids("a", 20))), Before("B", frozenset(_ids("b", 8)))]
    found = [_found(0, _ids("a", 20) | _ids("b", 8), 0)]
    matching = match_clusters(before, found, lambda f: f"new{f.index}")
    assert matching.matches[0].cluster_id == "A"
    assert matching.merged_into == {"B": "A"}


def test_without_shared_members_the_centroid_decides() -> None:
    old = normalized(np.eye(1, 8, 2, dtype=np.float32))[0]
    before = [
        Before("A", frozenset(_ids("gone", 5)), old),
        Before("Z", frozenset(), normalized(np.eye(1, 8, 5, dtype=np.float32))[0]),
    ]
    found = [_found(0, _ids("n", 6), 2), _found(1, _ids("m", 6), 7)]
    matching = match_clusters(before, found, lambda f: f"new{f.index}", min_similarity=0.9)
    assert matching.matches[0].cluster_id == "A" and matching.matches[0].how == "centroid"
    assert matching.matches[1].cluster_id == "new1" and matching.matches[1].how == "new"


# --- labels, lifecycle, trend ---------------------------------------------------------------------


def test_ctfidf_ranks_terms_distinctive_of_a_cluster() -> None:
    documents = {
        "x": [("no allowed-tools rule names the tool Bash outside Read", 10)],
        "y": [("the secret key leaked and rm -rf ran outside the workspace", 8)],
    }
    terms = ctfidf_terms(documents, top=3, exclude={"x": ["allowed-tools"]})
    assert "bash" in terms["x"] and "allowed-tools" not in terms["x"]
    assert set(terms["y"]) & {"secret", "key", "leaked", "rm", "workspace"}
    assert "<n>" not in terms_of("<n> of <n> calls") and terms_of("<path>.csv the Bash") == ["bash"]
    label = cluster_label("allowed_tools", "tool_not_allowed", ["bash", "read"], ["sales-report"])
    assert label == "allowed_tools · tool_not_allowed · bash, read · sales-report"
    # a term the label already shows, however spelt, is not repeated
    repeated = ["rm_rf_outside_workspace", "allowed-tools", "secret", "deploy-check"]
    label = cluster_label("security", "rm_rf_outside_workspace", repeated, ["deploy-check"])
    assert label == "security · rm_rf_outside_workspace · allowed-tools, secret · deploy-check"


def test_the_lifecycle_of_a_cluster() -> None:
    new = ClusterState(changed_at_us=1)
    acknowledged = set_status(new, "acknowledged", 10, assignee="ana", note="looking")
    resolved = set_status(acknowledged, "resolved", 20)
    assert (resolved.status, resolved.assignee, resolved.note, resolved.resolved_at_us) == (
        "resolved",
        "ana",
        "looking",
        20,
    )
    assert (
        regressed_by(resolved, newest_member_started_us=15, now_us=30) is None
    )  # started before the fix
    regressed = regressed_by(resolved, newest_member_started_us=25, now_us=30)
    assert regressed is not None and (regressed.status, regressed.changed_by) == (
        "regressed",
        "clusterer",
    )
    assert regressed_by(acknowledged, 99, 100) is None
    with pytest.raises(ConfigError, match="regressed is set by the clusterer"):
        set_status(new, "regressed", 5)
    assert ClusterState.of(regressed.row("c1")) == regressed  # type: ignore[arg-type]


def test_counts_trend_and_rank() -> None:
    now = 100 * HOUR
    moments = [now - 30 * HOUR] * 2 + [now - 2 * HOUR] * 6 + [now - 200 * HOUR]
    hourly = bucket_counts(moments, now, HOUR, 48)
    assert sum(hourly) == 8 and hourly[-2] == 6 and hourly[18] == 2
    rising = trend_of(hourly, first_seen_us=now - 200 * HOUR, now_us=now)
    assert (rising.direction, rising.last_24h, rising.previous_24h) == ("rising", 6, 2)
    assert trend_of(hourly, first_seen_us=now - 2 * HOUR, now_us=now).direction == "new"
    assert trend_of([0] * 48, first_seen_us=0, now_us=now).direction == "quiet"
    assert rank_score(10, rising, "critical") > rank_score(30, rising, "medium")
