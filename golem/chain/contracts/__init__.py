"""Vyper sources of the simulated market (compiled into golem/chain/artifacts)."""

from pathlib import Path

CONTRACTS_DIR = Path(__file__).resolve().parent
"""Directory holding the ``*.vy`` sources."""
