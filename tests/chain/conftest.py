"""Chain test fixtures: a real anvil node per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.testing.anvil import ANVIL_ENV, REPO_ANVIL, AnvilNode, find_anvil

ANVIL_GENESIS = 1_700_000_000


@pytest.fixture
def anvil(tmp_path: Path) -> Iterator[AnvilNode]:
    """A fresh anvil (chain id 31337, 40 funded accounts, genesis at ANVIL_GENESIS).

    Skips when the binary is not installed, except under CI, where that is a failure:
    scripts/test installs it.
    """
    if find_anvil() is None:
        where = os.environ.get(ANVIL_ENV) or str(REPO_ANVIL)
        reason = f"anvil is not installed ({where}); scripts/test installs it"
        if os.environ.get("CI"):  # as in tests/conftest.py: any non-empty CI
            pytest.fail(f"{reason} (CI is set: a missing anvil is a failure)", pytrace=False)
        pytest.skip(reason)
    with AnvilNode(tmp_path / "anvil", timestamp=ANVIL_GENESIS) as node:
        yield node
