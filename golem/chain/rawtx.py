"""Signed Ethereum transactions as bytes: sign (EIP-1559), decode and recover (all kinds).

The in-process chain takes every transaction as signed bytes, as a node does:
`decode_raw` reads a legacy (pre- and post-EIP-155), EIP-2930 (type 1) or EIP-1559
(type 2) transaction, checks its signature and recovers the sender; `sign_1559`
builds and signs a type-2 transaction with a `DevKey` (the simulated market's actors,
whose keys the chain holds). Hashes are mainnet's: keccak of the signed bytes.

Signing is libsecp256k1 through coincurve (a `DevKey` keeps its context, ~45 us a
signature); recovery goes through eth-keys, which uses coincurve when it is
installed (its pure-Python fallback is ~10x slower). Errors: bytes that are not a
well-formed signed transaction raise `BadTransaction`.
"""

from __future__ import annotations

from dataclasses import dataclass

import coincurve
import rlp  # type: ignore[import-untyped]
from Crypto.Hash import keccak as _keccak
from eth_keys.datatypes import Signature
from eth_keys.exceptions import BadSignature
from eth_utils.address import to_checksum_address
from eth_utils.exceptions import ValidationError

from golem.errors import GolemError

_SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def keccak(data: bytes) -> bytes:
    """keccak-256 (pycryptodome directly: half the cost of eth_utils' dispatch)."""
    return _keccak.new(data=data, digest_bits=256).digest()


class BadTransaction(GolemError):
    """Bytes that do not decode as a validly signed transaction."""


RlpItem = bytes | int | list["RlpItem"]


def _length(n: int, offset: int) -> bytes:
    if n < 56:
        return bytes([offset + n])
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([offset + 55 + len(size)]) + size


def rlp_encode(item: RlpItem) -> bytes:
    """RLP of bytes, non-negative ints (big-endian, no leading zeros) and lists of them
    (the rlp package's encoder infers types per item and is ~10x slower)."""
    if isinstance(item, int):
        if item < 0:
            raise ValueError("RLP cannot encode a negative integer")
        if item < 0x80:
            return bytes([item]) if item else b"\x80"
        item = item.to_bytes((item.bit_length() + 7) // 8, "big")
    if isinstance(item, bytes):
        n = len(item)
        if n == 1 and item[0] < 0x80:
            return item
        return (bytes([0x80 + n]) if n < 56 else _length(n, 0x80)) + item
    payload = b"".join([rlp_encode(x) for x in item])
    n = len(payload)
    return (bytes([0xC0 + n]) if n < 56 else _length(n, 0xC0)) + payload


@dataclass(frozen=True)
class SignedTx:
    """A decoded, signature-checked transaction. `to` is "" for a contract creation;
    `max_fee`/`priority_fee` are both the gas price for legacy and type-1 transactions."""

    tx_type: int
    chain_id: int | None
    nonce: int
    max_fee: int
    priority_fee: int
    gas: int
    to: str
    value: int
    data: bytes
    access_list: tuple[tuple[str, tuple[int, ...]], ...]
    sender: str
    hash: str
    raw: bytes


def _int(item: object, what: str) -> int:
    if not isinstance(item, bytes) or (item[:1] == b"\x00"):
        raise BadTransaction(f"{what}: not a canonical RLP integer")
    return int.from_bytes(item, "big")


def _to(item: object) -> str:
    if item == b"":
        return ""
    if not isinstance(item, bytes) or len(item) != 20:
        raise BadTransaction("to: not a 20-byte address")
    return to_checksum_address(item)


def _access_list(item: object) -> tuple[tuple[str, tuple[int, ...]], ...]:
    if not isinstance(item, list):
        raise BadTransaction("access list: not a list")
    out = []
    for entry in item:
        if (not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], bytes)
                or len(entry[0]) != 20 or not isinstance(entry[1], list)):
            raise BadTransaction("access list: malformed entry")
        slots = []
        for slot in entry[1]:
            if not isinstance(slot, bytes) or len(slot) != 32:
                raise BadTransaction("access list: a storage key is not 32 bytes")
            slots.append(int.from_bytes(slot, "big"))
        out.append((to_checksum_address(entry[0]), tuple(slots)))
    return tuple(out)


def _recover(msg_hash: bytes, y_parity: int, r: int, s: int) -> str:
    if y_parity not in (0, 1) or not 0 < r < _SECP256K1_N or not 0 < s <= _SECP256K1_N // 2:
        raise BadTransaction("signature values out of range")
    try:
        signature = Signature(vrs=(y_parity, r, s))
        return str(signature.recover_public_key_from_msg_hash(msg_hash).to_checksum_address())
    except (BadSignature, ValidationError) as exc:
        raise BadTransaction(f"signature does not recover: {exc}") from None


def _fields(raw: bytes) -> list[object]:
    try:
        fields = rlp.decode(raw)
    except rlp.exceptions.DecodingError as exc:
        raise BadTransaction(f"not RLP: {exc}") from None
    if not isinstance(fields, list):
        raise BadTransaction("not an RLP list")
    return fields


def decode_raw(raw: bytes) -> SignedTx:
    """Decode `raw`, check its signature and recover its sender."""
    if not raw:
        raise BadTransaction("empty transaction")
    tx_hash = "0x" + keccak(raw).hex()
    if raw[0] >= 0xC0:  # legacy: an RLP list
        f = _fields(raw)
        if len(f) != 9:
            raise BadTransaction(f"legacy transaction has {len(f)} fields, not 9")
        nonce, price, gas = _int(f[0], "nonce"), _int(f[1], "gasPrice"), _int(f[2], "gas")
        to, value, data = _to(f[3]), _int(f[4], "value"), f[5]
        v, r, s = _int(f[6], "v"), _int(f[7], "r"), _int(f[8], "s")
        if not isinstance(data, bytes):
            raise BadTransaction("data: not bytes")
        if v in (27, 28):
            chain_id, parity = None, v - 27
            unsigned = rlp.encode(f[:6])
        elif v >= 35:
            chain_id, parity = (v - 35) // 2, (v - 35) % 2
            unsigned = rlp.encode([*f[:6], chain_id, 0, 0])
        else:
            raise BadTransaction(f"legacy v {v} is neither 27/28 nor EIP-155")
        sender = _recover(keccak(unsigned), parity, r, s)
        return SignedTx(0, chain_id, nonce, price, price, gas, to, value, data, (), sender,
                        tx_hash, raw)
    kind = raw[0]
    if kind not in (1, 2):
        raise BadTransaction(f"transaction type {kind} is not supported")
    f = _fields(raw[1:])
    n = 11 if kind == 1 else 12
    if len(f) != n:
        raise BadTransaction(f"type-{kind} transaction has {len(f)} fields, not {n}")
    chain_id, nonce = _int(f[0], "chainId"), _int(f[1], "nonce")
    if kind == 1:
        priority = max_fee = _int(f[2], "gasPrice")
        rest = f[3:]
    else:
        priority, max_fee = _int(f[2], "maxPriorityFeePerGas"), _int(f[3], "maxFeePerGas")
        rest = f[4:]
    gas, to, value, data = _int(rest[0], "gas"), _to(rest[1]), _int(rest[2], "value"), rest[3]
    if not isinstance(data, bytes):
        raise BadTransaction("data: not bytes")
    access = _access_list(rest[4])
    parity, r, s = _int(rest[5], "yParity"), _int(rest[6], "r"), _int(rest[7], "s")
    unsigned = bytes([kind]) + rlp.encode(f[:-3])
    sender = _recover(keccak(unsigned), parity, r, s)
    return SignedTx(kind, chain_id, nonce, max_fee, priority, gas, to, value, data, access,
                    sender, tx_hash, raw)


class DevKey:
    """A private key held by the chain for a dev account; `address` is checksummed."""

    __slots__ = ("_key", "address")

    def __init__(self, secret: bytes) -> None:
        self._key = coincurve.PrivateKey(secret)
        public = self._key.public_key.format(compressed=False)[1:]
        self.address = to_checksum_address(keccak(public)[-20:])

    def sign_hash(self, msg_hash: bytes) -> tuple[int, int, int]:
        """(y parity, r, s) of a low-s ECDSA signature of the 32-byte `msg_hash`."""
        sig = self._key.sign_recoverable(msg_hash, hasher=None)
        return sig[64], int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:64], "big")

    def __repr__(self) -> str:
        return f"DevKey({self.address})"


def sign_1559(key: DevKey, *, chain_id: int, nonce: int, max_fee: int, priority_fee: int,
              gas: int, to: str, value: int, data: bytes) -> SignedTx:
    """Sign an EIP-1559 transaction (no access list) with `key`; `to` is a checksummed
    address, or "" to create a contract."""
    body: list[RlpItem] = [chain_id, nonce, priority_fee, max_fee, gas,
                           bytes.fromhex(to[2:]) if to else b"", value, data, []]
    parity, r, s = key.sign_hash(keccak(b"\x02" + rlp_encode(body)))
    raw = b"\x02" + rlp_encode([*body, parity, r, s])
    return SignedTx(2, chain_id, nonce, max_fee, priority_fee, gas, to, value, data, (),
                    key.address, "0x" + keccak(raw).hex(), raw)
