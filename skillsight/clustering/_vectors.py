"""Failure texts as vectors: embedded in batches, each distinct text once, stored compactly.

Instances of one pattern often normalize to the very same text, so a batch embeds each distinct
text once and shares the row. Vectors are L2-normalized (a dot product is the cosine) and stored
as half-precision bytes: 768 bytes for MiniLM's 384 dimensions, read back at a fraction of the
cost of a float array in JSON, with cosines unchanged to three decimals.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from skillsight.evaluators import Embedder

Matrix = npt.NDArray[np.float32]

_BATCH = 256  # texts handed to the model at once


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> Matrix:
    """One normalized row per text, in order; each distinct text is embedded once."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    distinct = list(dict.fromkeys(texts))
    rows: dict[str, npt.NDArray[np.float32]] = {}
    for start in range(0, len(distinct), _BATCH):
        chunk = distinct[start : start + _BATCH]
        rows.update(zip(chunk, embedder.embed(chunk), strict=True))
    matrix = np.stack([rows[text] for text in texts]).astype(np.float32, copy=False)
    return normalized(matrix)


def normalized(matrix: Matrix) -> Matrix:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Matrix = (matrix / norms).astype(np.float32, copy=False)
    return out


def pack(vector: npt.NDArray[np.floating]) -> bytes:
    """A vector as stored: little-endian half floats."""
    return np.asarray(vector, dtype="<f2").tobytes()


def unpack_all(blobs: Iterable[bytes], dims: int) -> Matrix:
    """Stored vectors back as one float32 matrix (``dims`` columns), rows re-normalized."""
    buffer = b"".join(blobs)
    if not buffer:
        return np.zeros((0, dims), dtype=np.float32)
    matrix = np.frombuffer(buffer, dtype="<f2").astype(np.float32).reshape(-1, dims)
    return normalized(matrix)


def cause_features(kinds: Sequence[str], evaluators: Sequence[str], dims: int = 256) -> Matrix:
    """The failing evaluators and finding kinds as a signed hashed bag (one row, unit
    length): failures that fail the same way share it, others are near orthogonal (the sign
    bit makes the rare colliding tokens cancel rather than add up)."""
    row = np.zeros((1, dims), dtype=np.float32)
    for token in (*evaluators, *kinds):
        digest = zlib.crc32(token.encode())
        row[0, digest % dims] += 1.0 if digest & 0x80000000 else -1.0
    return normalized(row)


def combined(text_vectors: Matrix, causes: Matrix, weight: float) -> Matrix:
    """Text vectors with the cause features appended at ``weight`` (0 = text alone), unit
    length again: what runs cluster and online assignment compares."""
    if weight <= 0 or not len(text_vectors):
        return text_vectors
    return normalized(np.hstack([text_vectors, weight * causes]).astype(np.float32))


__all__ = [
    "Matrix",
    "cause_features",
    "combined",
    "embed_texts",
    "normalized",
    "pack",
    "unpack_all",
]
