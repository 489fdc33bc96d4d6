"""An episode's shape: its text with every standalone number masked, which is what is
embedded for it.

A chain episode says what happened ("Uniswap V2 swap on the WETH/USDC pool: 2,898
USDC sold for 0.07233 WBTC by trader 1eff") and how much. A sentence model reads
the first part; the amounts, percentages and counts are word pieces it cannot
compare. They stay in the episode's text, its payload and the full-text index,
where recall reads orders and thresholds (golem.grimoire.quantities), and the
vector holds the shape. Two episodes that differ only in their numbers have one
shape and so one vector, which the embedder computes once (Embedder.embed_shapes).

Pure: no I/O, no clock.
"""

from __future__ import annotations

import re

MASK = "#"
# A number standing alone: optional sign, digits with thousands commas, optional
# decimals, optional percent sign or multiplier ("12x"). Digits inside a word, a hex
# value ("0x6D41..."), an alias such as "1eff" or a version ("V3") are not numbers.
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:%|x(?!\w))?(?![\w])")


def episode_shape(text: str) -> str:
    """``text`` with each standalone number replaced by MASK; every other character kept.
    Deterministic, so an episode's vector does not depend on which episodes came before."""
    return _NUMBER.sub(MASK, text)
