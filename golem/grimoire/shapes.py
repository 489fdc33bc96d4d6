"""An episode's shape: its text with every standalone number and address alias masked,
which is what is embedded for it.

A chain episode says what happened ("Uniswap V2 swap on the WETH/USDC pool: 2,898
USDC sold for 0.07233 WBTC by trader 1eff"), how much, and who. A sentence model
reads the first part; the amounts, percentages and counts are word pieces it cannot
compare, and so is an address's alias (four hex digits after a role word: "trader
1eff"). They stay in the episode's text, its payload and the full-text index, where
recall reads orders and thresholds (golem.grimoire.quantities) and matches exact
identifiers, and the vector holds the shape. Two episodes that differ only in their
numbers and aliases have one shape and so one vector, which the embedder computes
once (Embedder.embed_shapes): a stream of events costs a model call per new kind of
event, not per new account.

An alias is recognised by its form alone: a standalone token of four lowercase hex
digits with at least one digit and one letter ("1eff", "e57b"); one of only digits
is a number already. One of only letters ("beef") is kept, since it may be a word:
about one alias in fifty.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import re

MASK = "#"
# A number standing alone: optional sign, digits with thousands commas, optional
# decimals, optional percent sign or multiplier ("12x"). Digits inside a word, a hex
# value ("0x6D41..."), an alias such as "1eff" or a version ("V3") are not numbers.
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:%|x(?!\w))?(?![\w])")
# An address alias standing alone (golem.chain.names.alias): four lowercase hex digits,
# at least one of them a digit and one a letter.
_ALIAS = re.compile(r"(?<![\w.])(?=[a-f]{0,3}\d)(?=\d{0,3}[a-f])[0-9a-f]{4}(?![\w])")


def episode_shape(text: str) -> str:
    """``text`` with each standalone number and address alias replaced by MASK; every
    other character kept. Deterministic, so an episode's vector does not depend on which
    episodes came before."""
    return _ALIAS.sub(MASK, _NUMBER.sub(MASK, text))
