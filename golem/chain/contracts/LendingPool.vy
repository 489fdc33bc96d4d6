# pragma version 0.4.3
"""
@title LendingPool
@notice Aave-V3-shaped lending market with one collateral asset (priced by an
        OracleFeed in USD, 8 decimals) and one debt asset (a stablecoin taken
        at $1). It emits the exact Aave V3 events so decoders match mainnet.
        Simplifications: no interest, no close factor (a liquidator may repay
        the whole debt), supplies of the debt asset are lendable liquidity only.
"""
from ethereum.ercs import IERC20
from ethereum.ercs import IERC20Detailed

interface IFeed:
    def latestAnswer() -> int256: view

event Supply:
    reserve: indexed(address)
    user: address
    onBehalfOf: indexed(address)
    amount: uint256
    referralCode: indexed(uint16)

event Borrow:
    reserve: indexed(address)
    user: address
    onBehalfOf: indexed(address)
    amount: uint256
    interestRateMode: uint8
    borrowRate: uint256
    referralCode: indexed(uint16)

event Repay:
    reserve: indexed(address)
    user: indexed(address)
    repayer: indexed(address)
    amount: uint256
    useATokens: bool

event Withdraw:
    reserve: indexed(address)
    user: indexed(address)
    to: indexed(address)
    amount: uint256

event LiquidationCall:
    collateralAsset: indexed(address)
    debtAsset: indexed(address)
    user: indexed(address)
    debtToCover: uint256
    liquidatedCollateralAmount: uint256
    liquidator: address
    receiveAToken: bool

BPS: constant(uint256) = 10000
LTV_BPS: constant(uint256) = 8000
LIQUIDATION_THRESHOLD_BPS: constant(uint256) = 8250
LIQUIDATION_BONUS_BPS: constant(uint256) = 500
VARIABLE_RATE_MODE: constant(uint8) = 2

collateralAsset: public(address)
debtAsset: public(address)
oracle: public(address)
collateralUnit: public(uint256)
debtUnit: public(uint256)
collateralOf: public(HashMap[address, uint256])
debtOf: public(HashMap[address, uint256])
liquidityOf: public(HashMap[address, uint256])


@deploy
def __init__(_collateral: address, _debt: address, _oracle: address):
    self.collateralAsset = _collateral
    self.debtAsset = _debt
    self.oracle = _oracle
    self.collateralUnit = 10 ** convert(staticcall IERC20Detailed(_collateral).decimals(), uint256)
    self.debtUnit = 10 ** convert(staticcall IERC20Detailed(_debt).decimals(), uint256)


@internal
@view
def _price() -> uint256:
    answer: int256 = staticcall IFeed(self.oracle).latestAnswer()
    assert answer > 0, "bad oracle answer"
    return convert(answer, uint256)


@internal
@view
def _collateralValue(user: address) -> uint256:
    """@dev USD value with 8 decimals."""
    return self.collateralOf[user] * self._price() // self.collateralUnit


@internal
@view
def _debtValue(user: address) -> uint256:
    return self.debtOf[user] * 10**8 // self.debtUnit


@view
@external
def healthFactor(user: address) -> uint256:
    """@notice Collateral value * threshold / debt value, 1e18 = 1.0."""
    debt: uint256 = self._debtValue(user)
    if debt == 0:
        return max_value(uint256)
    return self._collateralValue(user) * LIQUIDATION_THRESHOLD_BPS * 10**18 // (debt * BPS)


@external
def supply(asset: address, amount: uint256, onBehalfOf: address, referralCode: uint16):
    assert amount > 0, "zero amount"
    if asset == self.collateralAsset:
        self.collateralOf[onBehalfOf] += amount
    else:
        assert asset == self.debtAsset, "unknown asset"
        self.liquidityOf[onBehalfOf] += amount
    assert extcall IERC20(asset).transferFrom(msg.sender, self, amount)
    log Supply(
        reserve=asset, user=msg.sender, onBehalfOf=onBehalfOf, amount=amount,
        referralCode=referralCode,
    )


@external
def withdraw(asset: address, amount: uint256, to: address) -> uint256:
    """@notice Return the caller's supply (max_value(uint256): all of it, as in Aave);
               collateral only while the health factor stays at or above 1."""
    taken: uint256 = amount
    if asset == self.collateralAsset:
        if taken == max_value(uint256):
            taken = self.collateralOf[msg.sender]
        assert taken > 0, "zero amount"
        assert taken <= self.collateralOf[msg.sender], "exceeds supply"
        self.collateralOf[msg.sender] -= taken
        threshold: uint256 = self._collateralValue(msg.sender) * LIQUIDATION_THRESHOLD_BPS
        assert threshold >= self._debtValue(msg.sender) * BPS, "health factor below 1"
    else:
        assert asset == self.debtAsset, "unknown asset"
        if taken == max_value(uint256):
            taken = self.liquidityOf[msg.sender]
        assert taken > 0, "zero amount"
        assert taken <= self.liquidityOf[msg.sender], "exceeds supply"
        self.liquidityOf[msg.sender] -= taken
    assert extcall IERC20(asset).transfer(to, taken)
    log Withdraw(reserve=asset, user=msg.sender, to=to, amount=taken)
    return taken


@external
def borrow(
    asset: address, amount: uint256, interestRateMode: uint256, referralCode: uint16,
    onBehalfOf: address,
):
    assert asset == self.debtAsset, "not borrowable"
    assert onBehalfOf == msg.sender, "no credit delegation"
    self.debtOf[onBehalfOf] += amount
    limit: uint256 = self._collateralValue(onBehalfOf) * LTV_BPS
    assert self._debtValue(onBehalfOf) * BPS <= limit, "exceeds loan to value"
    assert extcall IERC20(asset).transfer(msg.sender, amount)
    log Borrow(
        reserve=asset, user=msg.sender, onBehalfOf=onBehalfOf, amount=amount,
        interestRateMode=VARIABLE_RATE_MODE, borrowRate=0, referralCode=referralCode,
    )


@external
def repay(
    asset: address, amount: uint256, interestRateMode: uint256, onBehalfOf: address
) -> uint256:
    assert asset == self.debtAsset, "not borrowable"
    paid: uint256 = min(amount, self.debtOf[onBehalfOf])
    assert paid > 0, "no debt"
    self.debtOf[onBehalfOf] -= paid
    assert extcall IERC20(asset).transferFrom(msg.sender, self, paid)
    log Repay(reserve=asset, user=onBehalfOf, repayer=msg.sender, amount=paid, useATokens=False)
    return paid


@external
def liquidate(user: address, debtToCover: uint256) -> uint256:
    """@notice Repay `user`'s debt and seize collateral plus the bonus; only
               allowed when collateral value * threshold < debt value."""
    debtValue: uint256 = self._debtValue(user)
    assert debtValue > 0, "no debt"
    threshold: uint256 = self._collateralValue(user) * LIQUIDATION_THRESHOLD_BPS
    assert threshold < debtValue * BPS, "health factor not below 1"
    covered: uint256 = min(debtToCover, self.debtOf[user])
    assert covered > 0, "zero debt to cover"
    coveredValue: uint256 = covered * 10**8 // self.debtUnit
    seized: uint256 = (
        coveredValue * (BPS + LIQUIDATION_BONUS_BPS) * self.collateralUnit
        // (BPS * self._price())
    )
    seized = min(seized, self.collateralOf[user])
    self.debtOf[user] -= covered
    self.collateralOf[user] -= seized
    assert extcall IERC20(self.debtAsset).transferFrom(msg.sender, self, covered)
    assert extcall IERC20(self.collateralAsset).transfer(msg.sender, seized)
    log LiquidationCall(
        collateralAsset=self.collateralAsset, debtAsset=self.debtAsset, user=user,
        debtToCover=covered, liquidatedCollateralAmount=seized, liquidator=msg.sender,
        receiveAToken=False,
    )
    return seized
