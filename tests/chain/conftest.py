"""Chain tests share the `anvil` fixture of tests/conftest.py."""

from __future__ import annotations

from ..conftest import ANVIL_GENESIS

__all__ = ["ANVIL_GENESIS"]
