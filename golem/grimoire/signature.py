"""The embedding model signature every stored vector is sealed with (seed 001 dimension lock).

Two vectors may only be compared when they carry the same signature: same model
file, same tokenizer and pooling, same dimension. The id is what rows and stores
record; changing any field changes it. Pure: hashing of file bytes happens in the
embedder, which passes the bytes in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_HEX64 = frozenset("0123456789abcdef")


def _is_sha256(value: str) -> bool:
    return len(value) == 64 and set(value) <= _HEX64


@dataclass(frozen=True)
class ModelSignature:
    """Which model, exactly, produced a vector."""

    model: str  # model id, e.g. "all-MiniLM-L6-v2-onnx-int8"
    version: str  # sha256 (hex) of model.onnx
    dim: int
    preprocess: str  # sha256 (hex) over tokenizer bytes + pooling, normalisation, max length

    def __post_init__(self) -> None:
        if not self.model or not isinstance(self.model, str):
            raise ValueError("signature.model: must be a non-empty string")
        if isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim < 1:
            raise ValueError(f"signature.dim: must be a positive integer, got {self.dim!r}")
        for name in ("version", "preprocess"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _is_sha256(value):
                raise ValueError(f"signature.{name}: must be a lowercase sha256 hex digest")

    @property
    def id(self) -> str:
        """Short, stable and filename-safe: 16 hex characters over every field."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """Human-readable form for error messages."""
        return f"{self.model} ({self.dim}d, model sha256 {self.version[:12]}, id {self.id})"

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "version": self.version, "dim": self.dim,
                "preprocess": self.preprocess}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelSignature:
        """Inverse of to_dict; raises ValueError on missing or malformed fields."""
        if not isinstance(data, Mapping):
            raise ValueError("signature: must be an object")
        missing = {"model", "version", "dim", "preprocess"} - set(data)
        if missing:
            raise ValueError(f"signature: missing {', '.join(sorted(missing))}")
        return cls(model=data["model"], version=data["version"], dim=data["dim"],
                   preprocess=data["preprocess"])


def preprocess_hash(tokenizer_files: Mapping[str, bytes], *, pooling: str, normalize: bool,
                    max_length: int) -> str:
    """sha256 over the tokenizer files (name, length, bytes; sorted by name) and settings."""
    digest = hashlib.sha256()
    for name in sorted(tokenizer_files):
        data = tokenizer_files[name]
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    digest.update(f"pooling={pooling};normalize={normalize};max_length={max_length}".encode())
    return digest.hexdigest()
