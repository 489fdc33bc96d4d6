"""The real embedding model, loaded once per test session (it takes ~0.5 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.grimoire.embedder import Embedder

from ..conftest import REPO

MODEL_DIR = REPO / "models" / "all-minilm-l6-v2-int8"


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, 32)


@pytest.fixture
def model_dir() -> Path:
    return MODEL_DIR
