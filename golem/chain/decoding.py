"""Decode raw EVM logs of the events the golem understands, faithfully and without I/O.

Events are registered from their human-readable Solidity signatures, so topic0
is computed (keccak256 of the canonical signature), never typed in by hand.
ERC20 and ERC721 `Transfer`/`Approval` share topic0; the topic count tells them
apart (3 topics: ERC20 with the amount in data; 4 topics: ERC721 token id).

Decoded argument values are JSON-safe: addresses are checksummed strings, bools
are bools, and integers stay exact Python ints of any size (`json.dumps` writes
them exactly; non-Python readers must parse them as big integers, not doubles).
`golem.chain.render` turns a decoded event into one line of English for the embedder.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eth_abi.abi import decode as abi_decode
from eth_abi.exceptions import DecodingError
from eth_utils.crypto import keccak

from golem.chain.abi import AbiError, checksum_address, decode_words
from golem.errors import GolemError

_WORD = 32
_HEX = re.compile(r"0x[0-9a-f]*")


class MalformedLog(GolemError):
    """A log that claims a known event but does not fit its ABI, or is not valid hex."""


@dataclass(frozen=True)
class Param:
    """One event parameter: its name, canonical ABI type and whether it is a topic."""

    name: str
    type: str
    indexed: bool


@dataclass(frozen=True)
class EventSpec:
    """A known event: its ABI, the protocol that emits it and what kind of thing it is."""

    name: str
    protocol: str
    category: str
    params: tuple[Param, ...]

    @property
    def signature(self) -> str:
        return f"{self.name}({','.join(p.type for p in self.params)})"

    @property
    def topic0(self) -> str:
        return "0x" + keccak(text=self.signature).hex()

    @property
    def topic_count(self) -> int:
        return 1 + sum(p.indexed for p in self.params)


def spec(protocol: str, category: str, declaration: str) -> EventSpec:
    """Build an EventSpec from e.g. "Sync(uint112 reserve0, uint112 reserve1)"."""
    match = re.fullmatch(r"\s*(\w+)\((.*)\)\s*", declaration)
    if match is None:
        raise ValueError(f"not an event declaration: {declaration!r}")
    params = []
    for part in match.group(2).split(","):
        words = part.split()
        indexed = "indexed" in words
        words = [w for w in words if w != "indexed"]
        if len(words) != 2:
            raise ValueError(f"bad parameter {part!r} in {declaration!r}")
        params.append(Param(name=words[1], type=words[0], indexed=indexed))
    return EventSpec(match.group(1), protocol, category, tuple(params))


V2, V3, AAVE = "Uniswap V2", "Uniswap V3", "Aave V3"
# A pool's swap fee changing: the event of Ramses V3's concentrated-liquidity pools (old
# and new fee in hundredths of a basis point), which the simulated V2 pair emits too
# (golem.chain.contracts PairV2 says where the signature comes from).
RAMSES = "Ramses V3"
KNOWN_EVENTS: tuple[EventSpec, ...] = (
    spec(V2, "swap", "Swap(address indexed sender, uint256 amount0In, uint256 amount1In, "
         "uint256 amount0Out, uint256 amount1Out, address indexed to)"),
    spec(V2, "liquidity", "Mint(address indexed sender, uint256 amount0, uint256 amount1)"),
    spec(V2, "liquidity", "Burn(address indexed sender, uint256 amount0, uint256 amount1, "
         "address indexed to)"),
    spec(V2, "liquidity", "Sync(uint112 reserve0, uint112 reserve1)"),
    spec(V3, "swap", "Swap(address indexed sender, address indexed recipient, int256 amount0, "
         "int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)"),
    spec(V3, "liquidity", "Mint(address sender, address indexed owner, int24 indexed tickLower, "
         "int24 indexed tickUpper, uint128 amount, uint256 amount0, uint256 amount1)"),
    spec(V3, "liquidity", "Burn(address indexed owner, int24 indexed tickLower, "
         "int24 indexed tickUpper, uint128 amount, uint256 amount0, uint256 amount1)"),
    spec("ERC20", "transfer", "Transfer(address indexed from, address indexed to, "
         "uint256 value)"),
    spec("ERC20", "approval", "Approval(address indexed owner, address indexed spender, "
         "uint256 value)"),
    spec("ERC721", "transfer", "Transfer(address indexed from, address indexed to, "
         "uint256 indexed tokenId)"),
    spec("ERC721", "approval", "Approval(address indexed owner, address indexed approved, "
         "uint256 indexed tokenId)"),
    spec(AAVE, "lending", "Supply(address indexed reserve, address user, "
         "address indexed onBehalfOf, uint256 amount, uint16 indexed referralCode)"),
    spec(AAVE, "lending", "Withdraw(address indexed reserve, address indexed user, "
         "address indexed to, uint256 amount)"),
    spec(AAVE, "lending", "Borrow(address indexed reserve, address user, "
         "address indexed onBehalfOf, uint256 amount, uint8 interestRateMode, "
         "uint256 borrowRate, uint16 indexed referralCode)"),
    spec(AAVE, "lending", "Repay(address indexed reserve, address indexed user, "
         "address indexed repayer, uint256 amount, bool useATokens)"),
    spec(AAVE, "liquidation", "LiquidationCall(address indexed collateralAsset, "
         "address indexed debtAsset, address indexed user, uint256 debtToCover, "
         "uint256 liquidatedCollateralAmount, address liquidator, bool receiveAToken)"),
    spec("Chainlink", "oracle", "AnswerUpdated(int256 indexed current, "
         "uint256 indexed roundId, uint256 updatedAt)"),
    spec(RAMSES, "fee", "FeeAdjustment(uint24 oldFee, uint24 newFee)"),
)


def _build_registry(specs: tuple[EventSpec, ...]) -> dict[str, tuple[EventSpec, ...]]:
    registry: dict[str, tuple[EventSpec, ...]] = {}
    for event in specs:
        same = registry.get(event.topic0, ())
        if any(other.topic_count == event.topic_count for other in same):
            raise ValueError(f"ambiguous registration for {event.signature}")
        registry[event.topic0] = (*same, event)
    return registry


REGISTRY: Mapping[str, tuple[EventSpec, ...]] = _build_registry(KNOWN_EVENTS)


def _hex(value: object, what: str) -> str:
    """Normalise bytes/HexBytes/str to lowercase 0x-hex, or raise MalformedLog."""
    if isinstance(value, bytes | bytearray | memoryview):
        return "0x" + bytes(value).hex()
    if isinstance(value, str):
        text = value.lower() if value.startswith(("0x", "0X")) else "0x" + value.lower()
        text = "0x" + text[2:]
        if _HEX.fullmatch(text) and len(text) % 2 == 0:
            return text
    raise MalformedLog(f"{what} is not hex: {value!r:.80}")


def _address(value: object, what: str) -> str:
    try:
        return checksum_address(_hex(value, what))
    except ValueError as exc:  # right hex, wrong length
        raise MalformedLog(f"{what} is not a 20-byte address: {value!r:.80}") from exc


def _int(value: object, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"0[xX][0-9a-fA-F]+", value):
        return int(value, 16)  # JSON-RPC quantities are hex, odd length allowed
    raise MalformedLog(f"{what} is not an integer: {value!r:.80}")


@dataclass(frozen=True)
class RawLog:
    """One log exactly as the chain gave it; hashes, topics and data are lowercase 0x-hex."""

    chain_id: int
    block_number: int
    block_hash: str
    tx_hash: str
    log_index: int
    address: str
    topics: tuple[str, ...]
    data: str
    removed: bool = False

    @classmethod
    def from_web3(cls, log: Mapping[str, Any], *, chain_id: int) -> RawLog:
        """Build from a web3/JSON-RPC log dict (HexBytes, bytes, hex str or int values)."""
        try:
            return cls(
                chain_id=chain_id,
                block_number=_int(log["blockNumber"], "blockNumber"),
                block_hash=_hex(log["blockHash"], "blockHash"),
                tx_hash=_hex(log["transactionHash"], "transactionHash"),
                log_index=_int(log["logIndex"], "logIndex"),
                address=_address(log["address"], "address"),
                topics=tuple(_hex(t, "topic") for t in log["topics"]),
                data=_hex(log.get("data", "0x"), "data"),
                removed=bool(log.get("removed", False)),
            )
        except KeyError as exc:
            raise MalformedLog(f"log is missing field {exc.args[0]!r}") from exc


@dataclass(frozen=True)
class DecodedEvent:
    """What a log says, in names: args for known events, `raw` kept for unknown ones."""

    name: str
    protocol: str
    category: str
    signature: str
    address: str
    args: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] | None = None

    @property
    def known(self) -> bool:
        return self.name != "unknown"


def _value(abi_type: str, value: Any) -> Any:
    return checksum_address(value) if abi_type == "address" else value


def _decode_values(types: list[str], blob: bytes, what: str) -> tuple[Any, ...]:
    """Every registered event's values are static words: decoded word by word with
    eth_abi's checks (golem.chain.abi.decode_words, cheaper than eth_abi's generic
    decoders); anything else through eth_abi."""
    try:
        words = decode_words(types, blob)
        return tuple(abi_decode(types, blob)) if words is None else words
    except (DecodingError, AbiError) as exc:
        raise MalformedLog(f"{what} does not decode as ({','.join(types)}): {exc}") from exc


def decode(log: RawLog) -> DecodedEvent:
    """Decode a log against the registry; unknown topic0 comes back as name "unknown".

    Raises MalformedLog when the log is not valid hex, or when its topic0 is known
    but its topic count, data length or values do not fit any registered ABI.
    """
    topics = tuple(_hex(t, "topic") for t in log.topics)
    data = bytes.fromhex(_hex(log.data, "data")[2:])
    address = _address(log.address, "address")
    if any(len(t) != 2 + 2 * _WORD for t in topics):
        raise MalformedLog(f"log {log.tx_hash}:{log.log_index} has a topic that is not 32 bytes")
    candidates = REGISTRY.get(topics[0], ()) if topics else ()
    if not candidates:
        raw = {"topic0": topics[0] if topics else None, "topics": list(topics),
               "data": "0x" + data.hex()}
        return DecodedEvent("unknown", "unknown", "unknown", "", address, {}, raw)
    event = next((c for c in candidates if c.topic_count == len(topics)), None)
    if event is None:
        counts = sorted(c.topic_count for c in candidates)
        raise MalformedLog(f"{candidates[0].signature} log has {len(topics)} topics, "
                           f"expected {' or '.join(map(str, counts))}")
    indexed = [p for p in event.params if p.indexed]
    unindexed = [p for p in event.params if not p.indexed]
    if len(data) != _WORD * len(unindexed):
        raise MalformedLog(f"{event.signature} log has {len(data)} bytes of data, "
                           f"expected {_WORD * len(unindexed)}")
    values: dict[str, Any] = {}
    for param, topic in zip(indexed, topics[1:], strict=True):
        (value,) = _decode_values([param.type], bytes.fromhex(topic[2:]), f"topic {param.name}")
        values[param.name] = _value(param.type, value)
    decoded = _decode_values([p.type for p in unindexed], data, f"{event.signature} data")
    for param, value in zip(unindexed, decoded, strict=True):
        values[param.name] = _value(param.type, value)
    args = {p.name: values[p.name] for p in event.params}
    return DecodedEvent(event.name, event.protocol, event.category, event.signature,
                        address, args)
