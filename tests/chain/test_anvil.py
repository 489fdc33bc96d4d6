"""The simulated market on a real anvil node over JSON-RPC (RpcEvm), and the node's life cycle."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from golem.chain.compile import load_artifacts
from golem.chain.decoding import decode
from golem.chain.evm import ChainError
from golem.chain.market import deploy_market
from golem.chain.rpc_evm import RpcEvm
from golem.chain.simulator import MarketSimulator, StepReport
from golem.testing.anvil import AnvilError, AnvilNode, find_anvil

from .conftest import ANVIL_GENESIS

T0 = 1_800_000_000
DT = 10.0


def pid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_node_answers_and_stop_leaves_no_process(anvil: AnvilNode) -> None:
    evm = RpcEvm(anvil.http_url, timeout=5)
    assert evm.chain_id == 31337
    assert len(evm.accounts) == 40
    assert evm.head().number == 0 and evm.head().timestamp == ANVIL_GENESIS
    assert anvil.ws_url == anvil.http_url.replace("http://", "ws://")
    pid = anvil.pid
    assert pid_alive(pid)
    anvil.stop()
    assert not pid_alive(pid)
    anvil.stop()  # idempotent
    with pytest.raises(ChainError):
        evm.head()  # connection refused is a ChainError, promptly


def test_reverts_are_results_and_block_time_follows_the_caller(anvil: AnvilNode) -> None:
    evm = RpcEvm(anvil.http_url)
    erc20 = load_artifacts()["ERC20"]
    owner, alice = evm.accounts[:2]
    assert evm.set_next_block_time(T0) == T0
    token = evm.deploy(erc20, "T", "T", 6, sender=owner)
    assert evm.head().timestamp == T0
    minted = evm.transact(token, erc20.abi, "mint", alice, 5, sender=owner)
    assert minted.ok and len(minted.logs) == 1 and decode(minted.logs[0]).name == "Transfer"
    assert minted.logs[0].chain_id == 31337
    refused = evm.transact(token, erc20.abi, "mint", alice, 5, sender=alice)
    assert not refused.ok and refused.logs == () and refused.tx_hash
    assert evm.w3.eth.get_transaction_receipt(refused.tx_hash)["status"] == 0
    assert evm.call(token, erc20.abi, "balanceOf", alice) == 5
    assert evm.raw_call(token, "0x313ce567") == (6).to_bytes(32, "big")  # decimals()
    assert evm.raw_call(token, "0xdeadbeef") is None  # no such function: reverts
    head = evm.head()
    assert head.timestamp == T0 + 2  # one block per transaction, one second apart
    assert evm.set_next_block_time(T0) == head.timestamp + 1  # never backwards
    assert evm.mine().timestamp == head.timestamp + 1
    with pytest.raises(ChainError):
        evm.call(evm.accounts[3], erc20.abi, "balanceOf", alice)  # not a contract


def test_market_and_simulator_run_on_anvil(anvil: AnvilNode) -> None:
    evm = RpcEvm(anvil.http_url)
    market = deploy_market(evm, seed=7)
    start = evm.head().number + 1
    sim = MarketSimulator(evm, market, seed=7)
    reports: list[StepReport] = []
    while len(reports) < 30:  # seed 7 first tries a honeypot sell at step 24
        reports.append(sim.step(T0 + DT * len(reports), DT))
        if reports[-1].reverted:
            break
    logs = evm.get_logs(start, evm.head().number)
    decoded = [decode(log) for log in logs]
    assert all(d.known for d in decoded)
    seen = Counter((d.protocol, d.name) for d in decoded)
    assert seen[("Uniswap V2", "Swap")] > 0 and seen[("Uniswap V2", "Sync")] > 0
    assert seen[("Chainlink", "AnswerUpdated")] == len(reports)  # one oracle update per step
    for i, report in enumerate(reports):
        assert evm.block(report.first_block).timestamp == T0 + DT * i
        assert evm.block(report.last_block).timestamp < T0 + DT * (i + 1)
    reverted = [(action, h) for r in reports for action, h in r.reverted]
    assert reverted and all(action == "honeypot_sell" for action, _ in reverted)
    for _, tx_hash in reverted:
        assert evm.w3.eth.get_transaction_receipt(tx_hash)["status"] == 0
    assert {log.tx_hash for log in logs}.isdisjoint(h for _, h in reverted)


def test_snapshot_revert_gives_another_branch_at_the_same_height(anvil: AnvilNode) -> None:
    evm = RpcEvm(anvil.http_url)
    erc20 = load_artifacts()["ERC20"]
    owner, alice, bob = evm.accounts[:3]
    evm.set_next_block_time(T0)
    token = evm.deploy(erc20, "T", "T", 6, sender=owner)
    fork = evm.head()
    snap = evm.snapshot()
    a = [evm.transact(token, erc20.abi, "mint", alice, 1, sender=owner) for _ in range(2)]
    head_a = evm.head()
    evm.revert(snap)
    assert evm.head() == fork
    b = [evm.transact(token, erc20.abi, "mint", bob, 2, sender=owner) for _ in range(2)]
    head_b = evm.head()
    assert head_b.number == head_a.number and head_b.hash != head_a.hash
    assert evm.block(fork.number + 1).parent_hash == fork.hash
    assert [r.block_number for r in a] == [r.block_number for r in b]
    logs = evm.get_logs(fork.number + 1, head_b.number)
    assert {log.tx_hash for log in logs} == {r.tx_hash for r in b}
    assert evm.call(token, erc20.abi, "balanceOf", alice) == 0
    with pytest.raises(ChainError):
        evm.revert(snap)  # a snapshot is used up by its revert


def test_missing_binary_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOLEM_ANVIL", str(tmp_path / "no-anvil"))
    assert find_anvil() is None
    with pytest.raises(AnvilError, match="scripts/test"):
        AnvilNode(tmp_path).start()


def test_a_node_that_exits_at_start_reports_its_log(anvil: AnvilNode, tmp_path: Path) -> None:
    """(`anvil` only for its skip/fail rule: this test needs the binary, not that node.)"""
    node = AnvilNode(tmp_path / "second", accounts=-1)  # anvil rejects the argument, exits 2
    with pytest.raises(AnvilError, match="exited during start-up") as info:
        node.start()
    assert "unexpected argument" in str(info.value)  # the log tail is in the error
    assert node.log_path.is_file()
    with pytest.raises(AnvilError):
        _ = node.pid  # nothing left running
