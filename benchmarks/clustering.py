"""``bench clustering``: embeddings per core, full runs at 10k and 100k failures, online
assignment per failure, and the cluster list over 10 million activations.

DESIGN.md's targets: 100,000 failures clustered in under 5 minutes on 2 cores; a new failure in
its cluster in under 5 ms; the cluster list under 200 ms over 10 million activations.

1. **embeddings** — MiniLM on distinct failure texts, torch on one thread then two: texts/s.
2. **runs** — a store per size with N failing activations cloned from really scored seeds
   (:mod:`benchmarks.clustering_data`: 100 skill names by 6 patterns, 3% one-off noise). A cold
   run (every failure text built and embedded) and a warm one (texts stored), wall and process
   CPU time by stage, and how well the clusters match the clones' causes. At the smallest size
   the PCA choice is measured: the same vectors clustered at several dimensions.
3. **online** — on the smallest store, new failures assigned in batches of 1, 10 and 100
   (store round trips included), and the in-process part alone (text, embedding, nearest).
4. **list** — 10M synthetic activations (:mod:`benchmarks.synthetic_store`) with a clustering
   of their failures written beside them; the cluster list, a cluster page and the route.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.clustering_corpus import Corpus
from benchmarks.clustering_data import clone, fill_failures, seeds, skill_name, write_clones
from benchmarks.clustering_list import list_bench
from benchmarks.eval import _machine
from skillsight.clustering import (
    ExemplarIndex,
    FitOptions,
    RunOptions,
    Thresholds,
    assign_failures,
    cause_features,
    combined,
    embed_texts,
    failing_now,
    failure_text,
    fit,
    normalize,
    with_causes,
    with_vectors,
)
from skillsight.evaluators import CachedEmbedder, Embedder, MiniLMEmbedder, default_embedder
from skillsight.store import EmbeddedStore

PROJECT = "bench"


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> dict[str, float]:
    wall, cpu = _clock()
    return {"wall_s": round(wall - start[0], 3), "cpu_s": round(cpu - start[1], 3)}


def embeddings_bench(texts: int, console: Console) -> dict[str, Any]:
    """Distinct normalized failure-like texts per second, torch on 1 thread and on 2."""
    import torch

    rng = random.Random(5)
    words = ("allowed", "tools", "Bash", "Read", "secret", "workspace", "script", "retried")
    sample = [
        normalize(
            f"skill-{i % 97} fails {rng.choice(words)} ({rng.choice(words)})\n"
            + " ".join(rng.choice(words) for _ in range(40))
        )
        + f" #{i}"
        for i in range(texts)
    ]
    model = MiniLMEmbedder()
    model.embed(["warm-up"])
    out: dict[str, Any] = {"texts": texts}
    threads = torch.get_num_threads()
    for n in (1, 2):
        torch.set_num_threads(n)
        start = _clock()
        embed_texts(model, sample)
        took = _since(start)
        out[f"threads_{n}"] = {**took, "per_s": round(texts / took["wall_s"], 1)}
        console.print(f"embeddings, torch on {n} thread(s): {texts / took['wall_s']:,.0f} texts/s")
    torch.set_num_threads(threads)
    return out


def _agreement(truth: dict[str, str], membership: dict[str, str]) -> dict[str, float]:
    """How the clusters match the clones' causes (pattern and skill): purity of clusters,
    share of each cause in its best cluster (weighted by size), noise left out of clusters;
    and the purity by pattern alone."""
    by_pattern = {a: c.partition("/")[0] for a, c in truth.items()}
    return {**_match(truth, membership), "pattern_purity": _match(by_pattern, membership)["purity"]}


def _match(truth: dict[str, str], membership: dict[str, str]) -> dict[str, float]:
    by_cluster: dict[str, Counter[str]] = {}
    for activation, cluster in membership.items():
        by_cluster.setdefault(cluster, Counter())[truth.get(activation, "?")] += 1
    clustered = sum(sum(c.values()) for c in by_cluster.values()) or 1
    purity = sum(max(c.values()) for c in by_cluster.values()) / clustered
    causes = Counter(v for v in truth.values() if v != "noise")
    best = Counter[str]()
    for counts in by_cluster.values():
        for cause, n in counts.items():
            best[cause] = max(best[cause], n)
    coverage = sum(best[c] for c in causes) / (sum(causes.values()) or 1)
    noise = [a for a, v in truth.items() if v == "noise"]
    return {
        "purity": round(purity, 4),
        "coverage": round(coverage, 4),
        "noise_left_out": round(
            sum(1 for a in noise if a not in membership) / (len(noise) or 1), 4
        ),
    }


def runs_bench(sizes: list[int], console: Console, *, pca: tuple[int, ...]) -> dict[str, Any]:
    from skillsight.clustering import run_clustering

    report: dict[str, Any] = {}
    for size in sizes:
        folder = Path(tempfile.mkdtemp(prefix=f"clusters-{size}-"))
        store = EmbeddedStore(folder)
        store.migrate()
        try:
            rng = random.Random(size)
            corpus = Corpus(store, PROJECT)
            start = _clock()
            scored = seeds(corpus, 40, rng)
            truth = fill_failures(store, corpus, scored, size, rng)
            prepared = _since(start)
            console.print(f"{size:,} failures written in {prepared['wall_s']:.0f} s")
            embedder = CachedEmbedder(MiniLMEmbedder())  # cold: nothing cached
            entry: dict[str, Any] = {"prepare": prepared}
            for name in ("cold", "warm"):
                start = _clock()
                summary = run_clustering(store, PROJECT, embedder=embedder, options=RunOptions())
                took = _since(start)
                membership = store.clusters.membership(PROJECT, store.clusters.latest_run(PROJECT))
                entry[name] = {
                    **took,
                    "stages_s": {k: round(v, 3) for k, v in summary.seconds.items()},
                    "clusters": summary.clusters,
                    "novel": summary.novel,
                    "kept_share": summary.kept_share,
                    "dims": summary.dims,
                    "embedded_texts": embedder.misses,
                    **_agreement(truth, membership),
                }
                console.print(
                    f"{size:,} failures, {name} run: {took['wall_s']:.1f} s wall, "
                    f"{took['cpu_s']:.1f} CPU-s; {summary.clusters} clusters, {summary.novel} "
                    f"novel, kept {summary.kept_share:.1%}; {entry[name]}"
                )
            if pca:
                entry["pca"] = _pca_bench(store, truth, pca, console)
            if size == min(sizes):
                report["online"] = online_bench(store, corpus, scored, rng, console, embedder)
            report[str(size)] = entry
        finally:
            store.close()
            shutil.rmtree(folder, ignore_errors=True)
    return report


def _pca_bench(
    store: EmbeddedStore, truth: dict[str, str], dims: tuple[int, ...], console: Console
) -> list[dict[str, Any]]:
    failing = failing_now(store, PROJECT, 0, Thresholds())
    failures, texts = with_vectors(
        store, default_embedder(), PROJECT, failing, store.failures.stored(PROJECT, 0)
    )
    vectors = with_causes(failures, texts, RunOptions().cause_weight)
    out = []
    for reduce_to in dims:
        groups = [f.skill_name for f in failures]
        fitted = fit(vectors, FitOptions(reduce_to=reduce_to, reduce_above=0), groups=groups)
        membership = {
            f.activation_id: str(int(k))
            for f, k in zip(failures, fitted.labels, strict=True)
            if k >= 0
        }
        row = {
            "reduce_to": reduce_to,
            "fit_s": round(fitted.seconds, 3),
            "clusters": fitted.count,
            **_agreement(truth, membership),
        }
        console.print(f"  PCA to {reduce_to or 'none'}: {row}")
        out.append(row)
    return out


def online_bench(
    store: EmbeddedStore,
    corpus: Corpus,
    scored: list[Any],
    rng: random.Random,
    console: Console,
    embedder: Embedder,
) -> dict[str, Any]:
    """Per-failure cost of assigning new failures, by batch size: instances of the causes the
    run saw (their normalized texts embedded already, as in the service, where runs and
    assignment share the embedder), and the in-process part for a known and a new text."""
    index = ExemplarIndex.load(store, PROJECT)
    out: dict[str, Any] = {}
    for batch in (1, 10, 100):
        pending = []
        for _ in range(batch):
            seed = rng.choice(scored)
            skill = skill_name(seed.activation.skill_name, rng.randrange(100))
            pending.append(
                clone(seed, rng, skill=skill, started_us=time.time_ns() // 1000, noise=False)
            )
        write_clones(store, corpus, pending)
        ids = [a.activation_id for a, _ in pending]
        start = _clock()
        assigned = assign_failures(
            store,
            PROJECT,
            ids,
            embedder=embedder,
            index=index,
            thresholds=Thresholds(),
            max_distance=0.15,
        )
        took = _since(start)
        joined = sum(1 for a in assigned if a.cluster_id)
        out[f"batch_{batch}"] = {
            **took,
            "ms_per_failure": round(1000 * took["wall_s"] / batch, 2),
            "cpu_ms_per_failure": round(1000 * took["cpu_s"] / batch, 2),
            "joined": joined,
        }
        console.print(
            f"online, batch of {batch}: {1000 * took['wall_s'] / batch:.2f} ms per failure, "
            f"{1000 * took['cpu_s'] / batch:.2f} CPU-ms ({joined}/{batch} joined)"
        )
    # the in-process part alone: failure text, embedding (a new text), nearest exemplar
    seed = scored[0]
    skill = skill_name(seed.activation.skill_name, 3)
    activation, evaluations = clone(
        seed, rng, skill=skill, started_us=time.time_ns() // 1000, noise=False
    )
    failed = [e for e in evaluations if e.passed is False]
    times = []
    for i in range(50):
        began = time.perf_counter()
        text = failure_text(activation, failed)
        vector = embed_texts(embedder, [f"{text.text} #{i}"])
        causes = cause_features(text.kinds, text.evaluators)
        index.nearest(combined(vector, causes, RunOptions().cause_weight), [skill])
        times.append((time.perf_counter() - began) * 1000)
    cached = []  # an instance of a known pattern: its normalized text was embedded before
    for _ in range(50):
        began = time.perf_counter()
        text = failure_text(activation, failed)
        vector = embed_texts(embedder, [text.text])
        causes = cause_features(text.kinds, text.evaluators)
        index.nearest(combined(vector, causes, RunOptions().cause_weight), [skill])
        cached.append((time.perf_counter() - began) * 1000)
    out["in_process_known_text_ms"] = {
        "median": round(statistics.median(cached[1:]), 3),
        "p95": round(sorted(cached[1:])[int(0.95 * 49)], 3),
    }
    console.print(f"online, in-process part for a known text: {out['in_process_known_text_ms']}")
    out["in_process_ms"] = {
        "median": round(statistics.median(times), 2),
        "p95": round(sorted(times)[int(0.95 * len(times))], 2),
    }
    console.print(f"online, in-process part (text, embedding, nearest): {out['in_process_ms']}")
    return out


def run_clustering_bench(
    *,
    sizes: list[int],
    list_activations: int,
    embed_texts_count: int,
    pca: tuple[int, ...],
    data: Path | None,
    console: Console,
) -> dict[str, Any]:
    machine = _machine()
    console.print(
        f"machine: {machine['cpus']} CPUs, load average {machine['load_average_1m']} at the start"
    )
    report: dict[str, Any] = {"machine": machine}
    if embed_texts_count:
        report["embeddings"] = embeddings_bench(embed_texts_count, console)
    if sizes:
        report["runs"] = runs_bench(sizes, console, pca=pca)
    if list_activations:
        report["list"] = list_bench(list_activations, data, console)
    report["machine_after"] = _machine()
    return report


__all__ = ["run_clustering_bench"]
