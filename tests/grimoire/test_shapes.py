"""Episode shapes (pure) and the embedder's shape vectors (real model)."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from golem.chain.names import Names
from golem.grimoire.embedder import Embedder
from golem.grimoire.errors import InvalidMemory
from golem.grimoire.shapes import MASK, episode_shape

MODEL_DIR = Path(__file__).resolve().parents[2] / "models" / "all-minilm-l6-v2-int8"
SWAP = "Uniswap V2 swap on the WBTC/USDC pool: 2,898 USDC sold for 0.07233 WBTC by trader 1eff"


@pytest.mark.parametrize(("text", "shape"), [
    (SWAP, "Uniswap V2 swap on the WBTC/USDC pool: # USDC sold for # WBTC by trader #"),
    ("Large swap (24x this contract's usual size); market falling: price -4.4% over 10 min.",
     "Large swap (# this contract's usual size); market falling: price # over # min."),
    ("Realised a loss of $12.50; equity $1,000 -> $987.5.",
     "Realised a loss of $#; equity $# -> $#."),
    ("transfer to 0x6D411e0A54382eD43F02410Ce1c7a7c122afA6E1 on the WETH/USDC V3 pool",
     "transfer to 0x6D411e0A54382eD43F02410Ce1c7a7c122afA6E1 on the WETH/USDC V3 pool"),
    ("ERC20 transfer: 3,118 USDC from account e57b", "ERC20 transfer: # USDC from account #"),
    ("Reverted: swap on the pool by account 8234; tick 3da8.",
     "Reverted: swap on the pool by account #; tick #."),
    # a token of hex letters only may be a word: kept; so are longer hex words and 0x values
    ("trader beef, deadbeef 0x1eff a1b2c", "trader beef, deadbeef 0x1eff a1b2c"),
])
def test_numbers_and_aliases_are_masked_and_names_and_hex_kept(text: str, shape: str) -> None:
    assert episode_shape(text) == shape


@given(st.binary(min_size=20, max_size=20))
def test_the_renderings_aliases_are_what_is_masked(raw: bytes) -> None:
    """The mask follows golem.chain.names' aliases: any address's label is masked unless
    its alias is hex letters only (kept: it may be a word)."""
    assume(any(raw))  # the zero address has a name, not an alias
    label = Names().label("0x" + raw.hex(), "trader")
    alias = label.removeprefix("trader ")
    shape = episode_shape(f"Swap by {label}; done")
    assert shape == ("Swap by trader #; done" if not alias.isalpha()
                     else f"Swap by {label}; done")


@given(st.text(max_size=200))
def test_masking_is_idempotent(text: str) -> None:
    shape = episode_shape(text)
    assert episode_shape(shape) == shape
    assert shape.count(MASK) >= text.count(MASK)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, batch_size=1, shape_cache_size=2)


def test_a_shape_vector_is_the_masked_texts_vector_and_is_embedded_once(
        embedder: Embedder) -> None:
    # other amounts, another trader: the same kind of event
    other_amounts = SWAP.replace("2,898", "17").replace("0.07233", "0.0004").replace(
        "trader 1eff", "trader e57b")
    before = embedder.totals()
    vectors = embedder.embed_shapes([SWAP, other_amounts, SWAP])
    after = embedder.totals()
    np.testing.assert_array_equal(vectors[0], embedder.embed([episode_shape(SWAP)])[0])
    np.testing.assert_array_equal(vectors[0], vectors[1])
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert after["texts"] - before["texts"] == 1  # one model call for three episodes
    assert after["shapes_reused"] - before["shapes_reused"] == 2
    again = embedder.embed_shapes([other_amounts])  # remembered: no model work at all
    assert embedder.totals()["texts"] == after["texts"] + 1  # only the embed() check above
    np.testing.assert_array_equal(again[0], vectors[0])


def test_the_vector_does_not_depend_on_what_the_cache_holds(embedder: Embedder) -> None:
    texts = [f"Chainlink price update on the {feed} price feed: {n}"
             for feed, n in [("ETH/USD", 1), ("BTC/USD", 2), ("LINK/USD", 3), ("ETH/USD", 4)]]
    cold = Embedder.load(MODEL_DIR, batch_size=3, shape_cache_size=0)
    np.testing.assert_array_equal(embedder.embed_shapes(texts), cold.embed_shapes(texts))
    np.testing.assert_array_equal(anyio.run(embedder.aembed_shapes, texts),
                                  cold.embed_shapes(list(reversed(texts)))[::-1])


def test_shape_input_is_checked(embedder: Embedder) -> None:
    assert embedder.embed_shapes([]).shape == (0, 384)
    with pytest.raises(InvalidMemory):
        embedder.embed_shapes("a bare string")
    with pytest.raises(InvalidMemory):
        embedder.embed_shapes(["fine", None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="shape_cache_size"):
        Embedder.load(MODEL_DIR, shape_cache_size=-1)
