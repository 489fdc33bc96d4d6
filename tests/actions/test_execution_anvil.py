"""The same execution path (raw transactions signed by the Wallet) on anvil."""

from __future__ import annotations

import secrets
from pathlib import Path

import anyio

from golem.actions.cage import Cage
from golem.actions.execution import OK, Executor
from golem.actions.positions import PositionBook, Valuer
from golem.actions.proposal import ProposedAction as PA
from golem.actions.wallet import open_wallet
from golem.chain.compile import load_artifacts
from golem.chain.market import E18, USDC_UNIT, deploy_market
from golem.chain.rpc_evm import RpcEvm
from golem.chain.transactions import DirectChain, nonce_of, send_eth
from golem.testing.anvil import AnvilNode

ERC20 = load_artifacts()["ERC20"].abi


def test_swap_supply_withdraw_and_close_all_on_anvil(anvil: AnvilNode, tmp_path: Path) -> None:
    evm = RpcEvm(anvil.http_url)
    m = deploy_market(evm, seed=7)
    key = tmp_path / "wallet.key"
    key.write_text("0x" + secrets.token_hex(32))
    key.chmod(0o600)
    wallet = open_wallet(str(key), tmp_path / "data", simulated=False, seed=0, environ={})
    # anvil's dev accounts fund the wallet: gas from one, tokens minted by the market owner
    send_eth(evm, evm.accounts[-1], wallet.address, 10 * E18)
    assert evm.transact(m.usdc.address, ERC20, "mint", wallet.address, 50 * USDC_UNIT,
                        sender=m.owner).ok
    assert evm.transact(m.weth.address, ERC20, "mint", wallet.address, E18 // 40,
                        sender=m.owner).ok
    book = PositionBook.open(tmp_path)
    cage = Cage(frozenset(m.contracts), frozenset({"WETH", "USDC"}), 50.0, 500.0, 0.5, 1e6)
    ex = Executor(DirectChain(evm), wallet, Valuer(evm, m, wallet.address), book, cage,
                  dry_run=False, max_slippage=0.01, gas_limit=500_000)
    now = float(evm.head().timestamp + 10)

    def balance(token: str) -> int:
        return int(evm.call(token, ERC20, "balanceOf", wallet.address))

    try:
        results = anyio.run(lambda: ex.execute(
            [PA("swap", m.pair_weth_usdc, "USDC", "WETH", amount=10.0),
             PA("supply", m.lending, "USDC", amount=5.0),
             PA("add_liquidity", m.pair_weth_usdc, "USDC", amount=4.0),
             PA("withdraw", m.lending, asset_out="USDC", amount=1.0)], tick=1, now=now))
        assert [r.status for r in results] == [OK] * 4
        assert balance(m.usdc.address) == 50 * USDC_UNIT - 10 * USDC_UNIT - 4 * USDC_UNIT \
            - 4 * USDC_UNIT
        lp = load_artifacts()["LendingPool"].abi
        assert evm.call(m.lending, lp, "liquidityOf", wallet.address) == 4 * USDC_UNIT
        assert nonce_of(evm, wallet.address) == 2 + 2 + 3 + 1
        settled = anyio.run(lambda: ex.close_all(tick=2, now=now + 60))
        assert {r.status for r in settled} == {OK}
        assert balance(m.weth.address) == 0
        assert evm.call(m.lending, lp, "liquidityOf", wallet.address) == 0
        assert [h.label for h in anyio.run(ex.snapshot).holdings] == ["USDC"]
        report = anyio.run(lambda: ex.settle(now + 120))  # again: nothing left to do
        assert report["settled"] and report["actions"] == [] and report["left"] == []
    finally:
        book.close()
