"""The real embedding model, loaded once for the consolidation tests."""

from __future__ import annotations

import pytest

from golem.grimoire.embedder import Embedder

from ..grimoire.conftest import MODEL_DIR


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, 32)
