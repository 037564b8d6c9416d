"""Cluster labels: the dominant failing evaluator and finding kind, plus distinctive terms.

The terms come from class-based TF-IDF (c-TF-IDF, as BERTopic defines it): the texts of each
cluster are one document; a term weighs ``tf(t, c) / words(c) · log(1 + A / f(t))`` where ``A``
is the mean number of words per cluster and ``f(t)`` the term's count over all clusters. A term
frequent in one cluster and rare elsewhere ranks first: "Bash", "rm", "secret" rather than
"call" or "skill". Placeholders (``<n>``, ``<path>.csv``) and filler words never count.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

_WORD = re.compile(r"<[a-z]+>(?:\.\w+)?|[A-Za-z][\w.-]*[A-Za-z0-9]|[A-Za-z]")
_FILLER = """a an and are as at be by for from has have in is it its no none not of on or that the
    this to was were with yet while when which what into than then there their one any all
    fails failed failure calls call skill skills tool tools ok"""
_STOP = frozenset(_FILLER.split())
_MIN_LENGTH = 2


def terms_of(text: str) -> list[str]:
    """The words of a text that may label a cluster (lower case, no placeholders)."""
    out = []
    for word in _WORD.findall(text):
        if word.startswith("<"):
            continue
        lowered = word.lower().strip(".-")
        if len(lowered) >= _MIN_LENGTH and lowered not in _STOP:
            out.append(lowered)
    return out


def ctfidf_terms(
    documents: Mapping[str, Iterable[tuple[str, int]]],
    *,
    top: int = 3,
    exclude: Mapping[str, Iterable[str]] | None = None,
) -> dict[str, list[str]]:
    """Per cluster, its ``top`` terms by c-TF-IDF. ``documents`` gives each cluster's distinct
    texts with how many members read so; ``exclude`` names terms per cluster that the label
    already shows (the evaluator, the finding kind, the skill)."""
    counts: dict[str, Counter[str]] = {}
    for cluster_id, texts in documents.items():
        counter: Counter[str] = Counter()
        for text, weight in texts:
            for term in terms_of(text):
                counter[term] += weight
        counts[cluster_id] = counter
    if not counts:
        return {}
    overall: Counter[str] = Counter()
    for counter in counts.values():
        overall.update(counter)
    mean_words = sum(overall.values()) / len(counts)
    out: dict[str, list[str]] = {}
    for cluster_id, counter in counts.items():
        words = sum(counter.values()) or 1
        skip = {t.lower() for t in (exclude or {}).get(cluster_id, ())}
        scored = sorted(
            (
                (-(count / words) * math.log(1 + mean_words / overall[term]), term)
                for term, count in counter.items()
                if term not in skip
            ),
        )
        out[cluster_id] = [term for _, term in scored[:top]]
    return out


def cluster_label(evaluator: str, kind: str, terms: Sequence[str], skills: Sequence[str]) -> str:
    """``allowed_tools · tool_not_allowed · bash, report.py · sales-report``: the parts known."""
    parts = [evaluator]
    if kind:
        parts.append(kind)
    shown = {_same(name) for name in (evaluator, kind, *skills)}
    distinct = [term for term in terms if _same(term) not in shown]
    if distinct:
        parts.append(", ".join(distinct))
    if skills:
        parts.append(skills[0] if len(skills) == 1 else f"{skills[0]} +{len(skills) - 1}")
    return " · ".join(p for p in parts if p)


def _same(name: str) -> str:
    """A name as compared with the label's other parts: ``allowed-tools`` is ``allowed_tools``."""
    return name.lower().replace("-", "_")


__all__ = ["cluster_label", "ctfidf_terms", "terms_of"]
