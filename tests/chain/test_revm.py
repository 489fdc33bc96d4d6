"""The in-process chain (revm through pyrevm): a node's checks, receipts, determinism,
compaction and pruning, on the real EVM with the market's real contracts."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import rlp  # type: ignore[import-untyped]
from eth_account import Account
from hexbytes import HexBytes
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.chain.abi import encode_call
from golem.chain.compile import load_artifacts
from golem.chain.cursor import CaptureStore
from golem.chain.decoding import decode
from golem.chain.evm import ChainError
from golem.chain.market import E18, USDC_UNIT, Market, deploy_market
from golem.chain.rawtx import BadTransaction, DevKey, decode_raw, rlp_encode, sign_1559
from golem.chain.revm import BLOCK_GAS_LIMIT, RevmEvm, next_base_fee
from golem.chain.simulator import MarketSimulator
from golem.chain.source import EVM_RULES, SimulatedSource
from golem.errors import ConfigError

T0 = 1_800_000_000
ABI = {name: a.abi for name, a in load_artifacts().items()}
KEY = bytes.fromhex("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
ME = Account.from_key(KEY).address


def market_run(seed: int, steps: int, *, chain_seed: int = 0, reads: bool = False,
               compact_every: int = 10**9) -> tuple[RevmEvm, Market]:
    evm = RevmEvm(seed=chain_seed, compact_every=compact_every)
    market = deploy_market(evm, seed)
    sim = MarketSimulator(evm, market, seed)
    for i in range(steps):
        sim.step(T0 + 10.0 * i, 10.0)
        if reads:  # what capture, the valuer and the executor read between steps
            evm.call(market.pair_weth_usdc, ABI["PairV2"], "getReserves")
            evm.raw_call(market.usdc.address, "0x95d89b41")  # symbol()
            evm.preflight(market.whale, market.honey.address, ABI["Honeypot"], "transfer",
                          market.pair_honey_weth, 1)
            evm.nonce(market.whale), evm.balance(market.whale), evm.base_fee()
    return evm, market


def chain_of(evm: RevmEvm) -> list[tuple[Any, ...]]:
    head = evm.head().number
    return [(evm.block(n), evm.block_receipts(n)) for n in range(1, head + 1)]


def tx(evm: RevmEvm, to: str, data: bytes, **fields: Any) -> bytes:
    base = evm.base_fee()
    body = {"type": 2, "to": to, "value": 0, "data": data, "nonce": evm.nonce(ME),
            "gas": 200_000, "chainId": evm.chain_id, "maxFeePerGas": 2 * base + 10**9,
            "maxPriorityFeePerGas": 10**9, **fields}
    if "gasPrice" in body:
        for key in ("type", "maxFeePerGas", "maxPriorityFeePerGas"):
            body.pop(key)
    return bytes(Account.sign_transaction(body, KEY).raw_transaction)


@pytest.fixture
def funded() -> tuple[RevmEvm, Market]:
    evm = RevmEvm()
    market = deploy_market(evm, 5)
    evm.send_eth(market.owner, ME, 10 * E18)
    assert evm.transact(market.usdc.address, ABI["ERC20"], "mint", ME, 1_000 * USDC_UNIT,
                        sender=market.owner).ok
    return evm, market


def transfer(market: Market, amount: int) -> bytes:
    return encode_call(ABI["ERC20"], "transfer", market.whale, amount)


# --- determinism ------------------------------------------------------------------------


def test_same_seed_same_chain_and_reads_change_nothing() -> None:
    a, _ = market_run(9, 25)
    b, _ = market_run(9, 25, reads=True)
    assert chain_of(a) == chain_of(b)  # hashes, receipts, gas used, logs
    c, _ = market_run(9, 25, chain_seed=1)
    assert c.block(0).hash != a.block(0).hash
    assert c.head().hash != a.head().hash
    fingerprint = [(log.block_number, log.address, log.topics, log.data)
                   for log in a.get_logs(1, a.head().number)]
    assert fingerprint == [(log.block_number, log.address, log.topics, log.data)
                           for log in c.get_logs(1, c.head().number)]


def test_compaction_keeps_state_and_logs() -> None:
    plain, _ = market_run(4, 60)
    compacted, _ = market_run(4, 60, compact_every=50)
    assert compacted.head().number > 4 * 50

    def logs(evm: RevmEvm) -> list[tuple[Any, ...]]:
        return [(log.block_number, log.log_index, log.address, log.topics, log.data)
                for log in evm.get_logs(1, evm.head().number)]

    assert logs(plain) == logs(compacted)
    one, two = plain.state_dump(), compacted.state_dump()
    assert one.keys() == two.keys() and len(one) > 30
    for address, account in one.items():  # gas differs (cold again), nothing else
        other = two[address]
        assert (account.nonce, account.code, account.storage) == (
            other.nonce, other.code, other.storage)
    before = plain.state_dump()
    plain.compact()
    assert plain.state_dump() == before
    again, _ = market_run(4, 60, compact_every=50)
    assert chain_of(again) == chain_of(compacted)  # same blocks compact the same way


# --- a node's checks on raw transactions ------------------------------------------------


def test_raw_transactions_are_checked_executed_and_charged(
        funded: tuple[RevmEvm, Market]) -> None:
    evm, market = funded
    usdc = market.usdc.address
    raw = tx(evm, usdc, transfer(market, 5 * USDC_UNIT))
    balance, nonce, base = evm.balance(ME), evm.nonce(ME), evm.base_fee()
    sent = evm.send_raw(raw)
    assert sent.ok and sent.tx_hash == decode_raw(raw).hash
    receipt = evm.receipt(sent.tx_hash)
    assert receipt is not None and receipt.ok and receipt.sender == ME and receipt.to == usdc
    assert receipt.block_hash == evm.head().hash and receipt.logs == sent.logs
    (log,) = receipt.logs
    assert (log.tx_hash, log.log_index, log.block_hash) == (sent.tx_hash, 0, evm.head().hash)
    assert decode(log).args["value"] == 5 * USDC_UNIT
    assert evm.nonce(ME) == nonce + 1
    assert evm.balance(ME) == balance - receipt.gas_used * (base + 10**9)
    assert evm.call(usdc, ABI["ERC20"], "balanceOf", ME) == 995 * USDC_UNIT

    head = evm.head()
    refusals = {
        "already mined": raw,
        "nonce": tx(evm, usdc, transfer(market, 1), nonce=nonce + 5),
        "chain": tx(evm, usdc, transfer(market, 1), chainId=1),
        "base fee": tx(evm, usdc, transfer(market, 1), maxFeePerGas=1,
                       maxPriorityFeePerGas=1),
        "block gas limit": tx(evm, usdc, transfer(market, 1), gas=BLOCK_GAS_LIMIT + 1),
        "Initial gas": tx(evm, usdc, transfer(market, 1), gas=21_000),
        "may cost": tx(evm, usdc, b"", value=100 * E18),
        "not RLP": b"\x02\xff\x00",
        "out of range": tx(evm, usdc, b"", value=2**256 - 1),
    }
    for reason, bad in refusals.items():
        with pytest.raises(ChainError, match=reason):
            evm.send_raw(bad)
    assert evm.head() == head and evm.nonce(ME) == nonce + 1  # nothing mined, no time used
    assert evm.set_next_block_time(0) == head.timestamp + 1

    # a revert is mined: status 0, nonce used, gas paid, no logs
    failing = evm.send_raw(tx(evm, usdc, transfer(market, 10**12 * USDC_UNIT)))
    assert not failing.ok and failing.logs == () and evm.nonce(ME) == nonce + 2
    mined = evm.receipt(failing.tx_hash)
    assert mined is not None and not mined.ok and mined.gas_used > 21_000
    assert mined.input.startswith("0xa9059cbb")


def test_legacy_and_access_list_transactions(funded: tuple[RevmEvm, Market]) -> None:
    evm, market = funded
    usdc = market.usdc.address
    legacy = tx(evm, usdc, transfer(market, 1), gasPrice=3 * 10**9)
    assert decode_raw(legacy).tx_type == 0 and decode_raw(legacy).chain_id == evm.chain_id
    assert evm.send_raw(legacy).ok
    slot = (0).to_bytes(32, "big")
    body = {"type": 1, "to": usdc, "value": 0, "data": transfer(market, 2), "gas": 200_000,
            "gasPrice": 3 * 10**9, "nonce": evm.nonce(ME), "chainId": evm.chain_id,
            "accessList": [{"address": usdc, "storageKeys": ["0x" + slot.hex()]}]}
    raw = bytes(Account.sign_transaction(body, KEY).raw_transaction)
    decoded = decode_raw(raw)
    assert decoded.tx_type == 1 and decoded.access_list == ((usdc, (0,)),)
    assert decoded.sender == ME
    sent = evm.send_raw(raw)
    assert sent.ok
    plain = evm.send_raw(tx(evm, usdc, transfer(market, 2), gasPrice=3 * 10**9))
    gas = [r.gas_used for r in (evm.receipt(sent.tx_hash), evm.receipt(plain.tx_hash))
           if r is not None]
    assert gas[0] - gas[1] == 2_400 + 1_900  # the access list's intrinsic gas
    assert evm.call(usdc, ABI["ERC20"], "balanceOf", market.whale) >= 3


def test_signed_bytes_agree_with_eth_account() -> None:
    evm = RevmEvm()
    secret = (4).to_bytes(32, "big")  # the dev accounts' keys are 1..40
    key = DevKey(secret)
    assert key.address == evm.accounts[3]
    signed = sign_1559(key, chain_id=31337, nonce=7, max_fee=3 * 10**9,
                       priority_fee=10**9, gas=50_000, to=evm.accounts[4], value=12,
                       data=b"\x01\x02")
    assert Account.recover_transaction(HexBytes(signed.raw)) == evm.accounts[3]
    decoded = decode_raw(signed.raw)
    assert decoded == signed
    theirs = Account.sign_transaction(
        {"type": 2, "to": evm.accounts[4], "value": 12, "data": b"\x01\x02", "nonce": 7,
         "gas": 50_000, "chainId": 31337, "maxFeePerGas": 3 * 10**9,
         "maxPriorityFeePerGas": 10**9}, secret)
    assert "0x" + bytes(theirs.hash).hex() == signed.hash  # deterministic (RFC 6979) too
    with pytest.raises(BadTransaction):
        decode_raw(signed.raw[:-1])
    with pytest.raises(BadTransaction, match="type 3"):
        decode_raw(b"\x03" + signed.raw[1:])


rlp_items = st.recursive(
    st.binary(max_size=70) | st.integers(min_value=0, max_value=2**256),
    lambda children: st.lists(children, max_size=5), max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(rlp_items)
def test_rlp_encode_matches_the_rlp_package(item: Any) -> None:
    assert rlp_encode(item) == rlp.encode(item)


# --- blocks, fees, pruning --------------------------------------------------------------


def test_base_fee_follows_eip_1559() -> None:
    assert next_base_fee(10**9, 15_000_000) == 10**9
    assert next_base_fee(10**9, 30_000_000) == 1_125_000_000
    assert next_base_fee(10**9, 0) == 875_000_000
    assert next_base_fee(7, 0) == 7  # 7 * 1/8 rounds to nothing
    evm = RevmEvm()
    first = evm.base_fee()
    evm.mine()
    assert evm.base_fee() == next_base_fee(first, 0) < first


def test_old_blocks_are_pruned() -> None:
    evm = RevmEvm(retain_blocks=5)
    evm.send_eth(evm.accounts[0], evm.accounts[1], 1)
    first = evm.head()
    tx_hash = evm.block_receipts(first.number)[0].tx_hash
    for _ in range(5):
        evm.mine()
    with pytest.raises(ChainError, match="pruned"):
        evm.block(first.number)
    with pytest.raises(ChainError, match="pruned"):
        evm.get_logs(first.number, evm.head().number)
    assert evm.receipt(tx_hash) is None
    head = evm.head().number
    assert [evm.block(n).parent_hash for n in range(head - 3, head + 1)] == [
        evm.block(n).hash for n in range(head - 4, head)]
    with pytest.raises(ChainError, match="no block"):
        evm.block(evm.head().number + 1)


def test_reads_from_another_thread_never_undo_a_transaction() -> None:
    """A read is checkpoint, call, revert: under the chain's lock, a market step in one
    thread and reads in another give the chain of the market alone."""
    alone, _ = market_run(6, 20)
    evm = RevmEvm(compact_every=10**9)
    market = deploy_market(evm, 6)
    sim = MarketSimulator(evm, market, 6)
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            evm.call(market.pair_weth_usdc, ABI["PairV2"], "getReserves")
            evm.nonce(market.whale)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(20):
            sim.step(T0 + 10.0 * i, 10.0)
    finally:
        stop.set()
        reader.join()
    assert chain_of(evm) == chain_of(alone)


def test_a_restart_replays_the_journal_to_the_same_chain_across_compaction(
        tmp_path: Path) -> None:
    """SimulatedSource journals every step and golem transaction; rebuilt from the
    journal past two compactions, the chain is the same."""
    every = 300
    store = CaptureStore.open(tmp_path)
    try:
        source = SimulatedSource.create(11, T0, store, compact_every=every)
        source.fund_wallet(ME, 100.0, T0)
        t = T0
        while source.evm.head().number < 2 * every + 40:
            t += 10.0
            source.advance(t, 10.0)
            if source.steps_done % 40 == 0:  # the golem acts now and then
                raw = tx(source.evm, source.market.usdc.address,
                         encode_call(ABI["ERC20"], "transfer", source.market.whale, 1))
                assert source.submit(raw, t).ok
        head, dump = source.evm.head(), source.evm.state_dump()
        last = source.evm.block_receipts(head.number)
    finally:
        store.close()
    store = CaptureStore.open(tmp_path)
    try:
        again = SimulatedSource.create(11, T0 + 999_999, store, compact_every=every)
        assert again.evm.head() == head
        assert again.evm.block_receipts(head.number) == last
        assert again.evm.state_dump() == dump
    finally:
        store.close()


def test_a_data_dir_of_other_chain_rules_is_refused(tmp_path: Path) -> None:
    """A journal replays to the same chain only under the rules that wrote it: a data
    dir from the py-evm era (no recorded rules) or another compaction interval stops
    start-up with a ConfigError naming both."""
    store = CaptureStore.open(tmp_path)
    try:
        store.set_sim_meta("seed", "11")
        store.set_sim_meta("genesis_timestamp", str(T0 - 3600))
        store.append_sim_step(T0, 10.0)
        with pytest.raises(ConfigError, match="py-evm chain of earlier versions"):
            SimulatedSource.create(11, T0, store)
        store.set_sim_meta("evm", f"{EVM_RULES} compact_every=300")
        with pytest.raises(ConfigError, match="compact_every=300"):
            SimulatedSource.create(11, T0, store)
        assert SimulatedSource.create(11, T0, store, compact_every=300).steps_done == 1
    finally:
        store.close()
