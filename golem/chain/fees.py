"""The swap fee of the simulated market's V2 pairs: its unit, the amount a swap pays out,
and how a sentence says it. Pure: no I/O.

A pair keeps its fee as state (golem.chain.contracts PairV2: ``fee()``, ``setFee``) in
hundredths of a basis point, "pips" (1e-6: 3000 is 0.30%), the unit of the
``FeeAdjustment`` event it emits; the fee is a whole number of basis points, at most
10%. A pair that has no ``fee()`` (a plain Uniswap V2 pair) charges V2's 0.30%.
"""

from __future__ import annotations

from decimal import Decimal

PIPS = 1_000_000  # pips in 1 (100%)
PIPS_PER_BPS = 100
V2_FEE_PIPS = 3_000  # Uniswap V2's 0.30%: every pair's fee at deployment
MAX_FEE_PIPS = 100_000  # 10%: what PairV2.setFee accepts at most


def amount_out(amount_in: int, r_in: int, r_out: int, fee_pips: int = V2_FEE_PIPS) -> int:
    """What a V2 pair pays out for ``amount_in`` against reserves (r_in, r_out) at a fee of
    ``fee_pips``: the most its swap check accepts (at 3000, UniswapV2Library's
    getAmountOut); 0 when a reserve is empty."""
    if not r_in or not r_out:
        return 0
    kept = amount_in * (PIPS - fee_pips)
    return kept * r_out // (r_in * PIPS + kept)


def fee_pips(fraction: float) -> int:
    """A fee given as a fraction (0.01: 1%) in pips; ValueError unless it is a whole
    number of basis points from 0 to 10% (what a pair accepts)."""
    bps = fraction * (PIPS // PIPS_PER_BPS)
    if not 0 <= fraction <= MAX_FEE_PIPS / PIPS or abs(bps - round(bps)) > 1e-6:
        raise ValueError(f"a pool fee must be whole basis points from 0 to 0.1 (10%), "
                         f"got {fraction!r}")
    return round(bps) * PIPS_PER_BPS


def fee_percent(pips: int) -> str:
    """A fee in pips as a sentence says it: "0.30%", "1.00%", "0.0005%" (at least two
    decimals, no trailing zeros beyond them; exact for any integer)."""
    text = f"{Decimal(pips).scaleb(-4):f}"
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0").ljust(2, "0")
    return f"{whole}.{frac}%"
