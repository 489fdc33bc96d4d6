"""Decoding: topic0 values, round trips through eth_abi, disambiguation, malformed logs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from eth_abi.abi import encode
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from hexbytes import HexBytes
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.chain.decoding import (
    KNOWN_EVENTS,
    REGISTRY,
    EventSpec,
    MalformedLog,
    RawLog,
    decode,
    spec,
)
from golem.chain.render import Rendering, render
from golem.errors import GolemError

PAIR = to_checksum_address("0x" + "b4e16d0168e52d35cacd2c6185b44281ec28c9dc")
ALICE = to_checksum_address("0x" + "11" * 20)
BOB = to_checksum_address("0x" + "22" * 20)

# Well-known mainnet topic0 values (checked against Etherscan-published hashes).
MAINNET_TOPIC0 = {
    ("Uniswap V2", "Swap"): "0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822",
    ("Uniswap V2", "Mint"): "0x4c209b5fc8ad50758f13e2e1088ba56a560dff690a1c6fef26394f4c03821c4f",
    ("Uniswap V2", "Burn"): "0xdccd412f0b1252819cb1fd330b93224ca42612892bb3f4f789976e6d81936496",
    ("Uniswap V2", "Sync"): "0x1c411e9a96e071241c2f21f7726b17ae89e3cab4c78be50e062b03a9fffbbad1",
    ("Uniswap V3", "Swap"): "0xc42079f94a6350d7e6235f29174924f928cc2ac818eb64fed8004e115fbcca67",
    ("Uniswap V3", "Mint"): "0x7a53080ba414158be7ec69b987b5fb7d07dee101fe85488f0853ae16239d0bde",
    ("Uniswap V3", "Burn"): "0x0c396cd989a39f4459b5fa1aed6a9a8dcdbc45908acfd67e028cd568da98982c",
    ("ERC20", "Transfer"): "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
    ("ERC721", "Transfer"): "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
    ("ERC20", "Approval"): "0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925",
    ("ERC721", "Approval"): "0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925",
    ("Aave V3", "Supply"): "0x2b627736bca15cd5381dcf80b0bf11fd197d01a037c52b927a881a10fb73ba61",
    ("Aave V3", "Withdraw"): "0x3115d1449a7b732c986cba18244e897a450f61e1bb8d589cd2e69e6c8924f9f7",
    ("Aave V3", "Borrow"): "0xb3d084820fb1a9decffb176436bd02558d15fac9b0ddfed8c465bc7359d7dce0",
    ("Aave V3", "Repay"): "0xa534c8dbe71f871f9f3530e97a74601fea17b426cae02e1c5aee42c96c784051",
    ("Aave V3", "LiquidationCall"):
        "0xe413a321e8681d831f4dbccbca790d2952b56f977908e45be37335533e005286",
    ("Chainlink", "AnswerUpdated"):
        "0x0559884fd3a460db3073b7fc896cc77986f16e378210ded43186175bf646fc5f",
    # not on Ethereum: Ramses V3 pools' (and its forks') fee event, 0x0cba8718...df24 as
    # the logs of such pools on Avalanche show it (golem/chain/contracts/PairV2.vy)
    ("Ramses V3", "FeeAdjustment"):
        "0x0cba87189055d3b5ab05c96fbd641bc766576c9e7cf0d195bdfb58a0c6a6df24",
}


def _spec(protocol: str, name: str) -> EventSpec:
    return next(e for e in KNOWN_EVENTS if (e.protocol, e.name) == (protocol, name))


def encode_log(event: EventSpec, args: dict[str, Any], address: str = PAIR,
               log_index: int = 0) -> RawLog:
    """Encode args the way the EVM does: indexed params into topics, the rest into data."""
    topics = [event.topic0]
    topics += ["0x" + encode([p.type], [args[p.name]]).hex() for p in event.params if p.indexed]
    unindexed = [p for p in event.params if not p.indexed]
    data = encode([p.type for p in unindexed], [args[p.name] for p in unindexed])
    return RawLog(chain_id=1, block_number=100, block_hash="0x" + "ab" * 32,
                  tx_hash="0x" + "cd" * 32, log_index=log_index, address=address,
                  topics=tuple(topics), data="0x" + data.hex())


def _strategy(abi_type: str) -> st.SearchStrategy[Any]:
    if abi_type == "address":
        return st.binary(min_size=20, max_size=20).map(to_checksum_address)
    if abi_type == "bool":
        return st.booleans()
    bits = int(abi_type.removeprefix("u").removeprefix("int"))
    if abi_type.startswith("uint"):
        return st.integers(0, 2**bits - 1)
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _args(event: EventSpec) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({p.name: _strategy(p.type) for p in event.params})


def test_every_registered_event_has_its_mainnet_topic0() -> None:
    assert {(e.protocol, e.name): e.topic0 for e in KNOWN_EVENTS} == MAINNET_TOPIC0
    for event in KNOWN_EVENTS:
        assert event.topic0 == "0x" + keccak(text=event.signature).hex()
    assert _spec("Uniswap V3", "Swap").signature == (
        "Swap(address,address,int256,int256,uint160,uint128,int24)")


def test_spec_parses_indexed_flags_and_rejects_garbage() -> None:
    supply = _spec("Aave V3", "Supply")
    assert [p.name for p in supply.params if p.indexed] == ["reserve", "onBehalfOf",
                                                            "referralCode"]
    assert supply.topic_count == 4
    with pytest.raises(ValueError, match="not an event"):
        spec("X", "y", "no parens")
    with pytest.raises(ValueError, match="bad parameter"):
        spec("X", "y", "E(uint256)")


@pytest.mark.parametrize("event", KNOWN_EVENTS, ids=lambda e: f"{e.protocol}-{e.name}")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_decode_round_trips_every_registered_event(event: EventSpec, data: st.DataObject) -> None:
    args = data.draw(_args(event))
    decoded = decode(encode_log(event, args))
    assert (decoded.name, decoded.protocol, decoded.category) == (
        event.name, event.protocol, event.category)
    assert decoded.signature == event.signature
    assert decoded.args == args
    assert list(decoded.args) == [p.name for p in event.params]
    assert json.loads(json.dumps(decoded.args)) == args  # JSON-safe and exact
    line = render(decoded)
    assert line.text.startswith(f"{event.protocol} ")
    assert "\n" not in line.text and "0x" not in line.text  # names and aliases, no hex
    assert line.identifiers[0] == PAIR


def test_v2_swap_decodes_with_checksummed_addresses_and_exact_big_ints() -> None:
    args = {"sender": ALICE.lower(), "amount0In": 2**255 + 7, "amount1In": 0,
            "amount0Out": 0, "amount1Out": 3_012_400_000, "to": BOB.lower()}
    decoded = decode(encode_log(_spec("Uniswap V2", "Swap"), args))
    assert decoded.args["sender"] == ALICE and decoded.args["to"] == BOB
    assert decoded.args["amount0In"] == 2**255 + 7
    assert decoded.address == PAIR and decoded.category == "swap" and decoded.known


def test_erc20_and_erc721_transfer_are_told_apart_by_topic_count() -> None:
    erc20 = decode(encode_log(_spec("ERC20", "Transfer"),
                              {"from": ALICE, "to": BOB, "value": 5 * 10**18}))
    erc721 = decode(encode_log(_spec("ERC721", "Transfer"),
                               {"from": ALICE, "to": BOB, "tokenId": 42}))
    assert (erc20.protocol, erc20.args["value"]) == ("ERC20", 5 * 10**18)
    assert (erc721.protocol, erc721.args["tokenId"]) == ("ERC721", 42)
    assert "value" not in erc721.args
    assert len(REGISTRY[_spec("ERC20", "Transfer").topic0]) == 2


def test_unknown_topic0_and_anonymous_logs_are_kept_raw() -> None:
    topic0 = "0x" + keccak(text="Whatever(uint256)").hex()
    log = RawLog(1, 5, "0x" + "00" * 32, "0x" + "01" * 32, 3, PAIR,
                 (topic0.upper().replace("0X", "0x"),), "0xDEADBEEF")
    event = decode(log)
    assert (event.name, event.protocol, event.category, event.known) == (
        "unknown", "unknown", "unknown", False)
    assert event.args == {}
    assert event.raw == {"topic0": topic0, "topics": [topic0], "data": "0xdeadbeef"}
    assert render(event) == Rendering(f"Unknown event on contract b4e1: topic0 {topic0[:10]}, "
                                      "1 topics, 4 bytes of data", (PAIR, topic0))
    anonymous = decode(RawLog(1, 5, "0x00", "0x01", 0, PAIR, (), "0x"))
    assert anonymous.raw == {"topic0": None, "topics": [], "data": "0x"}


def _good_transfer() -> RawLog:
    return encode_log(_spec("ERC20", "Transfer"), {"from": ALICE, "to": BOB, "value": 1})


def _with(log: RawLog, **changes: Any) -> RawLog:
    fields = {**log.__dict__, **changes}
    return RawLog(**fields)


@pytest.mark.parametrize(("change", "message"), [
    (lambda log: _with(log, topics=log.topics[:2]), "has 2 topics, expected 3 or 4"),
    (lambda log: _with(log, data=log.data[:-2]), "31 bytes of data, expected 32"),
    (lambda log: _with(log, data=log.data + "00" * 32), "64 bytes of data, expected 32"),
    (lambda log: _with(log, data="0xzz"), "data is not hex"),
    (lambda log: _with(log, data="0xabc"), "data is not hex"),
    (lambda log: _with(log, topics=(*log.topics[:2], "0x1234")), "not 32 bytes"),
    (lambda log: _with(log, topics=(*log.topics[:2], "0x" + "ff" * 32)), "topic to"),
    (lambda log: _with(log, address="0x1234"), "address"),
])
def test_malformed_logs_raise_malformed_log(change: Any, message: str) -> None:
    with pytest.raises(MalformedLog, match=message) as info:
        decode(change(_good_transfer()))
    assert isinstance(info.value, GolemError)


def test_bad_bool_in_data_is_malformed() -> None:
    repay = _spec("Aave V3", "Repay")
    log = encode_log(repay, {"reserve": ALICE, "user": BOB, "repayer": BOB, "amount": 1,
                             "useATokens": True})
    bad = _with(log, data=log.data[:-2] + "02")
    with pytest.raises(MalformedLog, match="does not decode"):
        decode(bad)


def test_from_web3_accepts_hexbytes_bytes_and_str() -> None:
    log = _good_transfer()
    web3_style = {
        "address": PAIR.lower(), "blockNumber": 100, "blockHash": HexBytes(log.block_hash),
        "transactionHash": bytes.fromhex(log.tx_hash[2:]), "logIndex": 0,
        "topics": [HexBytes(t) for t in log.topics], "data": HexBytes(log.data),
        "removed": False,
    }
    assert RawLog.from_web3(web3_style, chain_id=1) == log
    rpc_style = {**web3_style, "blockNumber": "0x64", "logIndex": "0x0",
                 "blockHash": log.block_hash.upper().replace("0X", "0x"),
                 "transactionHash": log.tx_hash, "topics": list(log.topics), "data": log.data}
    assert RawLog.from_web3(rpc_style, chain_id=1) == log
    removed = RawLog.from_web3({**rpc_style, "removed": True}, chain_id=1)
    assert removed.removed and decode(removed).args["value"] == 1


@pytest.mark.parametrize(("field", "value", "message"), [
    ("blockHash", None, "blockHash is not hex"),
    ("blockNumber", "100", "blockNumber is not an integer"),
    ("blockNumber", True, "blockNumber is not an integer"),
    ("address", "0x12", "address is not a 20-byte address"),
    ("topics", ["nothex"], "topic is not hex"),
])
def test_from_web3_rejects_bad_fields(field: str, value: Any, message: str) -> None:
    log = {"address": PAIR, "blockNumber": 1, "blockHash": "0x00", "transactionHash": "0x01",
           "logIndex": 0, "topics": [], "data": "0x"}
    with pytest.raises(MalformedLog, match=message):
        RawLog.from_web3({**log, field: value}, chain_id=1)
    del log["logIndex"]
    with pytest.raises(MalformedLog, match="missing field 'logIndex'"):
        RawLog.from_web3(log, chain_id=1)
