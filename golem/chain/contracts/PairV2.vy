# pragma version 0.4.3
"""
@title PairV2
@notice Constant-product pool emitting the exact Uniswap V2 events so that
        decoders written against mainnet logs work on the simulated market.
        Liquidity shares are an internal balance (no LP token); tokens are
        transferred in before mint/swap, as with a V2 pair.
        The swap fee is pair state, 0.30% at deployment as in Uniswap V2, that
        the deployer (`owner`) can change with `setFee`. It is kept in
        hundredths of a basis point (1e-6, "pips": 3000 is 0.30%), the unit of
        the event it emits, and limited to whole basis points up to 10%.
"""
from ethereum.ercs import IERC20

event Mint:
    sender: indexed(address)
    amount0: uint256
    amount1: uint256

event Burn:
    sender: indexed(address)
    amount0: uint256
    amount1: uint256
    to: indexed(address)

event Swap:
    sender: indexed(address)
    amount0In: uint256
    amount1In: uint256
    amount0Out: uint256
    amount1Out: uint256
    to: indexed(address)

event Sync:
    reserve0: uint112
    reserve1: uint112

# A fee change is logged with the signature of the event a Ramses V3
# concentrated-liquidity pool emits when its mutable swap fee changes (old and
# new fee in hundredths of a basis point): FeeAdjustment(uint24 oldFee,
# uint24 newFee), topic0 0x0cba8718...a6df24. Source of the signature: `setFee`
# in contracts/CL/core/libraries/ProtocolActions.sol of the Ramses V3 core
# (GitHub code-423n4/2024-10-ramses-exchange); the pools of its forks (Shadow,
# Pharaoh) emit it on their chains too. The code here is our own.
event FeeAdjustment:
    oldFee: uint24
    newFee: uint24

MINIMUM_LIQUIDITY: constant(uint256) = 1000
BPS: constant(uint256) = 10000  # the swap invariant's scale: fees are whole bps
PIPS_PER_BPS: constant(uint24) = 100
V2_FEE: constant(uint24) = 3000  # Uniswap V2's 0.30%, in pips
MAX_FEE: constant(uint24) = 100000  # 10%, in pips

token0: public(address)
token1: public(address)
reserve0: uint112
reserve1: uint112
blockTimestampLast: uint32
totalSupply: public(uint256)
balanceOf: public(HashMap[address, uint256])
owner: public(address)
fee: public(uint24)  # in pips (1e-6): 3000 is 0.30%


@deploy
def __init__(_token0: address, _token1: address):
    assert _token0 != _token1, "identical tokens"
    self.token0 = _token0
    self.token1 = _token1
    self.owner = msg.sender
    self.fee = V2_FEE


@external
def setFee(newFee: uint24):
    """@notice Set the swap fee (pips, whole basis points, at most 10%); owner only."""
    assert msg.sender == self.owner, "only owner"
    assert newFee <= MAX_FEE and newFee % PIPS_PER_BPS == 0, "bad fee"
    oldFee: uint24 = self.fee
    self.fee = newFee
    log FeeAdjustment(oldFee=oldFee, newFee=newFee)


@view
@external
def getReserves() -> (uint112, uint112, uint32):
    return self.reserve0, self.reserve1, self.blockTimestampLast


@internal
def _update(balance0: uint256, balance1: uint256):
    self.reserve0 = convert(balance0, uint112)
    self.reserve1 = convert(balance1, uint112)
    self.blockTimestampLast = convert(block.timestamp % 2**32, uint32)
    log Sync(reserve0=self.reserve0, reserve1=self.reserve1)


@internal
@view
def _balances() -> (uint256, uint256):
    b0: uint256 = staticcall IERC20(self.token0).balanceOf(self)
    b1: uint256 = staticcall IERC20(self.token1).balanceOf(self)
    return b0, b1


@external
@nonreentrant
def mint(to: address) -> uint256:
    balance0: uint256 = 0
    balance1: uint256 = 0
    balance0, balance1 = self._balances()
    amount0: uint256 = balance0 - convert(self.reserve0, uint256)
    amount1: uint256 = balance1 - convert(self.reserve1, uint256)
    liquidity: uint256 = 0
    if self.totalSupply == 0:
        liquidity = isqrt(amount0 * amount1) - MINIMUM_LIQUIDITY
        self.balanceOf[empty(address)] = MINIMUM_LIQUIDITY
        self.totalSupply = MINIMUM_LIQUIDITY
    else:
        liquidity = min(
            amount0 * self.totalSupply // convert(self.reserve0, uint256),
            amount1 * self.totalSupply // convert(self.reserve1, uint256),
        )
    assert liquidity > 0, "insufficient liquidity minted"
    self.balanceOf[to] += liquidity
    self.totalSupply += liquidity
    self._update(balance0, balance1)
    log Mint(sender=msg.sender, amount0=amount0, amount1=amount1)
    return liquidity


@external
@nonreentrant
def burn(to: address) -> (uint256, uint256):
    """@notice Burn all of the caller's shares and send the tokens to `to`."""
    liquidity: uint256 = self.balanceOf[msg.sender]
    balance0: uint256 = 0
    balance1: uint256 = 0
    balance0, balance1 = self._balances()
    amount0: uint256 = liquidity * balance0 // self.totalSupply
    amount1: uint256 = liquidity * balance1 // self.totalSupply
    assert amount0 > 0 and amount1 > 0, "insufficient liquidity burned"
    self.balanceOf[msg.sender] = 0
    self.totalSupply -= liquidity
    assert extcall IERC20(self.token0).transfer(to, amount0)
    assert extcall IERC20(self.token1).transfer(to, amount1)
    balance0, balance1 = self._balances()
    self._update(balance0, balance1)
    log Burn(sender=msg.sender, amount0=amount0, amount1=amount1, to=to)
    return amount0, amount1


@external
@nonreentrant
def swap(amount0Out: uint256, amount1Out: uint256, to: address):
    assert amount0Out > 0 or amount1Out > 0, "insufficient output amount"
    r0: uint256 = convert(self.reserve0, uint256)
    r1: uint256 = convert(self.reserve1, uint256)
    assert amount0Out < r0 and amount1Out < r1, "insufficient liquidity"
    assert to != self.token0 and to != self.token1, "invalid to"
    if amount0Out > 0:
        assert extcall IERC20(self.token0).transfer(to, amount0Out)
    if amount1Out > 0:
        assert extcall IERC20(self.token1).transfer(to, amount1Out)
    balance0: uint256 = 0
    balance1: uint256 = 0
    balance0, balance1 = self._balances()
    amount0In: uint256 = 0
    amount1In: uint256 = 0
    if balance0 > r0 - amount0Out:
        amount0In = balance0 - (r0 - amount0Out)
    if balance1 > r1 - amount1Out:
        amount1In = balance1 - (r1 - amount1Out)
    assert amount0In > 0 or amount1In > 0, "insufficient input amount"
    # Uniswap V2's check at a 1e4 scale (exactly its own at 30 bps): with uint112
    # reserves the products stay below 2**252
    fee_bps: uint256 = convert(self.fee // PIPS_PER_BPS, uint256)
    adjusted0: uint256 = balance0 * BPS - amount0In * fee_bps
    adjusted1: uint256 = balance1 * BPS - amount1In * fee_bps
    assert adjusted0 * adjusted1 >= r0 * r1 * BPS**2, "K"
    self._update(balance0, balance1)
    log Swap(
        sender=msg.sender,
        amount0In=amount0In,
        amount1In=amount1In,
        amount0Out=amount0Out,
        amount1Out=amount1Out,
        to=to,
    )
