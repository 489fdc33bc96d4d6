"""golem.chain.abi: calldata and return values agree with eth_abi, fast path or not."""

from __future__ import annotations

from typing import Any

import pytest
from eth_abi import decode as abi_decode
from eth_abi import encode as abi_encode
from eth_abi.exceptions import DecodingError
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.chain.abi import (
    CHECKSUM_CACHE,
    AbiError,
    checksum_address,
    decode_result,
    decode_words,
    encode_call,
    function_spec,
    revert_reason,
)

TYPES = ("address", "bool", "uint8", "uint112", "uint256", "int24", "int256")
ABI = (
    *({"type": "function", "name": f"f_{t}",
       "inputs": [{"name": "a", "type": t}, {"name": "b", "type": "uint256"}],
       "outputs": [{"name": "", "type": t}, {"name": "", "type": "bool"}]} for t in TYPES),
    {"type": "function", "name": "named", "inputs": [],
     "outputs": [{"name": "", "type": "string"}]},
)


def values(kind: str) -> st.SearchStrategy[Any]:
    if kind == "address":
        return st.binary(min_size=20, max_size=20).map(to_checksum_address)
    if kind == "bool":
        return st.booleans()
    bits = int(kind.lstrip("uint"))
    if kind.startswith("uint"):
        return st.integers(0, 2**bits - 1)
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TYPES).flatmap(lambda t: st.tuples(st.just(t), values(t),
                                                          values("uint256"), st.booleans())))
def test_static_words_agree_with_eth_abi(case: tuple[str, Any, int, bool]) -> None:
    kind, a, b, flag = case
    fn = f"f_{kind}"
    data = encode_call(ABI, fn, a, b)
    assert data[:4] == keccak(text=f"{fn}({kind},uint256)")[:4]
    assert data[4:] == abi_encode([kind, "uint256"], [a, b])
    out = abi_encode([kind, "bool"], [a, flag])
    expected = abi_decode([kind, "bool"], out)
    got = decode_result(ABI, fn, out)
    assert got == (to_checksum_address(expected[0]) if kind == "address" else expected[0],
                   expected[1])


def test_bad_arguments_and_data_are_abi_errors() -> None:
    with pytest.raises(AbiError, match="no function"):
        encode_call(ABI, "missing")
    with pytest.raises(AbiError, match="takes 2"):
        encode_call(ABI, "f_uint8", 1)
    for kind, bad in (("uint8", 256), ("uint8", -1), ("int24", 2**23), ("bool", 1),
                      ("address", "0x12"), ("uint256", "7")):
        with pytest.raises(AbiError):
            encode_call(ABI, f"f_{kind}", bad, 0)
    with pytest.raises(AbiError, match="padding"):
        decode_result(ABI, "f_address", b"\x01" + bytes(31) + bytes(32))
    with pytest.raises(AbiError, match="0 or 1"):
        decode_result(ABI, "f_uint8", bytes(32) + (2).to_bytes(32, "big"))
    with pytest.raises(AbiError, match="out of range"):
        decode_result(ABI, "f_uint8", (256).to_bytes(32, "big") + bytes(32))
    with pytest.raises(AbiError):
        decode_result(ABI, "named", b"\x00" * 5)
    assert decode_result(ABI, "named", abi_encode(["string"], ["WETH"])) == "WETH"
    assert function_spec(ABI, "named").static_outputs is False


def test_revert_reason() -> None:
    reason = bytes.fromhex("08c379a0") + abi_encode(["string"], ["only owner"])
    assert revert_reason(reason) == "only owner"
    assert revert_reason(b"") == ""
    assert revert_reason(b"\x12\x34") == "0x1234"


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=20, max_size=20))
def test_checksummed_addresses_are_eip55_from_bytes_or_hex(raw: bytes) -> None:
    """checksum_address gives eth_utils' EIP-55 form whichever way the address comes, the
    same when it is remembered; what is not 20 bytes is a ValueError, never remembered."""
    expected = to_checksum_address(raw)
    for form in (raw, "0x" + raw.hex(), "0x" + raw.hex()):  # the last one remembered
        assert checksum_address(form) == expected
    with pytest.raises(ValueError, match="Unknown format"):
        checksum_address("0x" + raw.hex() + "00")


def test_the_checksum_memory_is_bounded() -> None:
    """An address feed that never repeats (RPC mode over a long life) keeps at most
    CHECKSUM_CACHE of them."""
    for i in range(CHECKSUM_CACHE + 500):
        checksum_address(i.to_bytes(20, "big"))
    info = checksum_address.cache_info()
    assert info.maxsize == CHECKSUM_CACHE and info.currsize <= CHECKSUM_CACHE


def words(kind: str) -> st.SearchStrategy[bytes]:
    """A word that encodes a value of ``kind``, or one with a byte of it changed (padding
    or value), or any 32 bytes."""
    valid = values(kind).map(lambda v: abi_encode([kind], [v]))
    flipped = st.tuples(valid, st.integers(0, 31), st.integers(1, 255)).map(
        lambda t: t[0][:t[1]] + bytes([t[0][t[1]] ^ t[2]]) + t[0][t[1] + 1:])
    return st.one_of(valid, flipped, st.binary(min_size=32, max_size=32))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TYPES), min_size=1, max_size=3).flatmap(
    lambda kinds: st.tuples(st.just(kinds), st.tuples(*(words(k) for k in kinds)))))
def test_decode_words_is_eth_abi_on_any_word(case: tuple[list[str], tuple[bytes, ...]]) -> None:
    """What the log decoder and decode_result use: for any words, eth_abi's values, or an
    AbiError exactly where eth_abi refuses."""
    kinds, data = case[0], b"".join(case[1])
    try:
        expected: tuple[Any, ...] | None = tuple(
            to_checksum_address(v) if k == "address" else v
            for k, v in zip(kinds, abi_decode(kinds, data), strict=True))
    except DecodingError:  # eth_abi refuses
        expected = None
    if expected is None:
        with pytest.raises(AbiError):
            decode_words(kinds, data)
    else:
        assert decode_words(kinds, data) == expected
    assert decode_words(kinds, data + bytes(1)) is None  # not one word each: eth_abi's
    assert decode_words([*kinds, "string"], data + bytes(32)) is None
