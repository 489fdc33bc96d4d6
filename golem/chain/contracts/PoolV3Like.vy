# pragma version 0.4.3
"""
@title PoolV3Like
@notice Minimal pool emitting the exact Uniswap V3 Swap event. Simplification:
        pricing is a full-range constant product (x*y=k, 0.3% fee) rather than
        concentrated liquidity; sqrtPriceX96 = sqrt(reserve1/reserve0) * 2**96,
        liquidity = sqrt(reserve0 * reserve1) and tick = floor(log_1.0001(price)),
        all derived from the reserves after the swap. Tokens are transferred in
        first (no callback), as with a V2 pair.
"""
from ethereum.ercs import IERC20

event Swap:
    sender: indexed(address)
    recipient: indexed(address)
    amount0: int256
    amount1: int256
    sqrtPriceX96: uint160
    liquidity: uint128
    tick: int24

# 2**64 / log2(sqrt(1.0001)), as in Uniswap's TickMath (Q64 scaled).
LOG_SQRT10001_INV: constant(int256) = 255738958999603826347141
FEE_NUM: constant(uint256) = 997
FEE_DEN: constant(uint256) = 1000

token0: public(address)
token1: public(address)
reserve0: public(uint256)
reserve1: public(uint256)


@deploy
def __init__(_token0: address, _token1: address):
    assert _token0 != _token1, "identical tokens"
    self.token0 = _token0
    self.token1 = _token1


@internal
@pure
def _floorDiv(a: int256, b: int256) -> int256:
    q: int256 = a // b
    if a % b != 0 and a < 0:
        q -= 1
    return q


@internal
@pure
def _tickAt(sqrtPriceX96: uint256) -> int24:
    """@dev floor(log_sqrt(1.0001)(sqrtPriceX96 / 2**96)) via a 40-bit log2."""
    msb: uint256 = 0
    x: uint256 = sqrtPriceX96
    for i: uint256 in range(256):
        if x <= 1:
            break
        x >>= 1
        msb += 1
    r: uint256 = 0
    if msb >= 127:
        r = sqrtPriceX96 >> (msb - 127)
    else:
        r = sqrtPriceX96 << (127 - msb)
    frac: uint256 = 0
    for i: uint256 in range(40):
        r = (r * r) >> 127
        f: uint256 = r >> 128
        frac |= f << (63 - i)
        r >>= f
    log2Q64: int256 = (convert(msb, int256) - 96) * 2**64 + convert(frac, int256)
    return convert(self._floorDiv(log2Q64 * LOG_SQRT10001_INV, 2**128), int24)


@internal
@pure
def _sqrtPriceX96(r0: uint256, r1: uint256) -> uint256:
    """@dev sqrt(r1/r0) * 2**96, full precision while r1 < 2**64, else 48 bits."""
    sqrtP: uint256 = 0
    if r1 < 2**64:
        sqrtP = isqrt(r1 * 2**192 // r0)
    else:
        sqrtP = isqrt(r1 * 2**96 // r0) * 2**48
    assert sqrtP > 0 and sqrtP < 2**160, "price out of range"
    return sqrtP


@pure
@external
def priceAt(r0: uint256, r1: uint256) -> (uint160, int24):
    """@notice sqrtPriceX96 and tick this pool reports for reserves (r0, r1)."""
    sqrtP: uint256 = self._sqrtPriceX96(r0, r1)
    return convert(sqrtP, uint160), self._tickAt(sqrtP)


@view
@external
def slot0() -> (uint160, int24):
    sqrtP: uint256 = self._sqrtPriceX96(self.reserve0, self.reserve1)
    return convert(sqrtP, uint160), self._tickAt(sqrtP)


@internal
@view
def _balances() -> (uint256, uint256):
    b0: uint256 = staticcall IERC20(self.token0).balanceOf(self)
    b1: uint256 = staticcall IERC20(self.token1).balanceOf(self)
    return b0, b1


@external
def mint():
    """@notice Take the tokens sent in as full-range liquidity (not withdrawable)."""
    self.reserve0, self.reserve1 = self._balances()
    assert self.reserve0 > 0 and self.reserve1 > 0, "empty pool"


@external
def swap(recipient: address, zeroForOne: bool) -> (int256, int256):
    """@notice Swap the input token already sent in; returns pool deltas (V3 sign)."""
    b0: uint256 = 0
    b1: uint256 = 0
    b0, b1 = self._balances()
    amount0: int256 = 0
    amount1: int256 = 0
    if zeroForOne:
        amountIn: uint256 = b0 - self.reserve0
        assert amountIn > 0, "no input"
        inFee: uint256 = amountIn * FEE_NUM
        out: uint256 = inFee * self.reserve1 // (self.reserve0 * FEE_DEN + inFee)
        assert extcall IERC20(self.token1).transfer(recipient, out)
        amount0 = convert(amountIn, int256)
        amount1 = -convert(out, int256)
    else:
        amountIn: uint256 = b1 - self.reserve1
        assert amountIn > 0, "no input"
        inFee: uint256 = amountIn * FEE_NUM
        out: uint256 = inFee * self.reserve0 // (self.reserve1 * FEE_DEN + inFee)
        assert extcall IERC20(self.token0).transfer(recipient, out)
        amount0 = -convert(out, int256)
        amount1 = convert(amountIn, int256)
    self.reserve0, self.reserve1 = self._balances()
    sqrtP: uint256 = self._sqrtPriceX96(self.reserve0, self.reserve1)
    log Swap(
        sender=msg.sender, recipient=recipient, amount0=amount0, amount1=amount1,
        sqrtPriceX96=convert(sqrtP, uint160),
        liquidity=convert(isqrt(self.reserve0 * self.reserve1), uint128),
        tick=self._tickAt(sqrtP),
    )
    return amount0, amount1
