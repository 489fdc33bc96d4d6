"""Calldata from a contract ABI, and return data back into Python values, without web3.

`encode_call(abi, fn, *args)` is the 4-byte selector of `fn` followed by its
ABI-encoded arguments; `decode_result(abi, fn, data)` turns return data into what
web3's ``contract.functions[fn](...).call()`` returns: nothing for no outputs, the
value for one output, a tuple for several; addresses come back checksummed.
`revert_reason` reads a Solidity/Vyper ``Error(string)`` revert. Pure: no I/O.

Function specs are looked up by name (the market's contracts have no overloads)
and cached per ABI object. Calls whose types are all static words (address, bool,
uintN, intN) are encoded and decoded here, with eth_abi's range checks, ~10x faster
than eth_abi; anything else goes through eth_abi. Errors: an unknown function name
or arguments that do not fit the ABI raise `AbiError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from eth_abi.abi import decode as abi_decode
from eth_abi.abi import encode as abi_encode
from eth_abi.exceptions import DecodingError, EncodingError
from eth_utils.address import to_checksum_address
from eth_utils.crypto import keccak

from golem.errors import GolemError

ERROR_SELECTOR = bytes.fromhex("08c379a0")  # Error(string)


class AbiError(GolemError):
    """A call that does not fit the contract's ABI (unknown function, wrong arguments)."""


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    selector: bytes
    static_inputs: bool  # every input is one static word: the fast path encodes it
    static_outputs: bool


@lru_cache(maxsize=256)
def _word_type(kind: str) -> tuple[str, int] | None:
    """("address"|"bool"|"uint"|"int", bits) for a one-word static type, else None."""
    if kind in ("address", "bool"):
        return kind, 160 if kind == "address" else 1
    for base in ("uint", "int"):
        if kind.startswith(base) and kind[len(base):].isdigit():
            bits = int(kind[len(base):])
            if bits % 8 == 0 and 8 <= bits <= 256:
                return base, bits
    return None


# Distinct addresses whose checksummed form is remembered: a chain's events name the same
# few contracts and accounts again and again (EIP-55 hashes each one, ~23 us).
CHECKSUM_CACHE = 4096


@lru_cache(maxsize=CHECKSUM_CACHE)
def checksum_address(raw: bytes | str) -> str:
    """The EIP-55 form of a 20-byte address given as bytes or hex (the last CHECKSUM_CACHE
    distinct ones remembered). Raises ValueError when it is not one."""
    return str(to_checksum_address(raw))


def _encode_word(kind: str, value: Any) -> bytes:
    base, bits = _word_type(kind) or ("", 0)
    if base == "address":
        if isinstance(value, str) and len(value) == 42 and value[:2] in ("0x", "0X"):
            try:
                return bytes(12) + bytes.fromhex(value[2:])
            except ValueError:
                pass
        raise AbiError(f"not an address: {value!r:.60}")
    if base == "bool":
        if not isinstance(value, bool):
            raise AbiError(f"not a bool: {value!r:.60}")
        return int(value).to_bytes(32, "big")
    if not isinstance(value, int) or isinstance(value, bool):
        raise AbiError(f"not an integer for {kind}: {value!r:.60}")
    if base == "uint":
        if not 0 <= value < 1 << bits:
            raise AbiError(f"{value} does not fit {kind}")
        return value.to_bytes(32, "big")
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise AbiError(f"{value} does not fit {kind}")
    return value.to_bytes(32, "big", signed=True)


def _decode_word(kind: str, word: bytes) -> Any:
    """One word as eth_abi decodes it, with its checks (padding, bool, range)."""
    base, bits = _word_type(kind) or ("", 0)
    if base == "address":
        if any(word[:12]):
            raise AbiError(f"{kind}: non-zero padding")
        return checksum_address(word[12:])
    if base == "bool":
        if any(word[:31]) or word[31] > 1:
            raise AbiError(f"{kind}: not 0 or 1")
        return word[31] == 1
    if base == "uint":
        value = int.from_bytes(word, "big")
        if value >> bits:
            raise AbiError(f"{kind}: {value} out of range")
        return value
    value = int.from_bytes(word, "big", signed=True)
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise AbiError(f"{kind}: {value} out of range")
    return value


def decode_words(types: Sequence[str], data: bytes) -> tuple[Any, ...] | None:
    """``data`` as ``types`` when every type is one static word (address, bool, uintN, intN)
    and ``data`` is exactly one word each: the values eth_abi gives (addresses
    checksummed), with its checks; AbiError when a word does not fit its type. None for
    any other types or length (then ask eth_abi)."""
    if len(data) != 32 * len(types) or any(_word_type(k) is None for k in types):
        return None
    return tuple(_decode_word(k, data[i * 32:(i + 1) * 32]) for i, k in enumerate(types))


_SPECS: dict[int, tuple[Sequence[Mapping[str, Any]], dict[str, FunctionSpec]]] = {}


def _type(param: Mapping[str, Any]) -> str:
    kind = str(param["type"])
    if kind.startswith("tuple"):  # not used by our contracts; refuse rather than guess
        raise AbiError(f"tuple parameters are not supported ({param.get('name', '?')})")
    return kind


def function_spec(abi: Sequence[Mapping[str, Any]], fn: str) -> FunctionSpec:
    """The spec of function `fn` in `abi` (cached per ABI object)."""
    cached = _SPECS.get(id(abi))
    if cached is None or cached[0] is not abi:
        specs: dict[str, FunctionSpec] = {}
        for item in abi:
            if item.get("type") != "function":
                continue
            inputs = tuple(_type(p) for p in item.get("inputs", ()))
            name = str(item["name"])
            outputs = tuple(_type(p) for p in item.get("outputs", ()))
            specs[name] = FunctionSpec(
                name, inputs, outputs, keccak(text=f"{name}({','.join(inputs)})")[:4],
                all(_word_type(t) is not None for t in inputs),
                all(_word_type(t) is not None for t in outputs))
        cached = _SPECS[id(abi)] = (abi, specs)
    try:
        return cached[1][fn]
    except KeyError:
        raise AbiError(f"the ABI has no function {fn!r}") from None


def constructor_args(abi: Sequence[Mapping[str, Any]], *args: Any) -> bytes:
    """The ABI-encoded constructor arguments (appended to the creation bytecode)."""
    types = next((tuple(_type(p) for p in item.get("inputs", ()))
                  for item in abi if item.get("type") == "constructor"), ())
    return _encode(types, args, "constructor")


def _encode(types: Sequence[str], args: Sequence[Any], what: str) -> bytes:
    if len(types) != len(args):
        raise AbiError(f"{what} takes {len(types)} arguments, got {len(args)}")
    try:
        return abi_encode(list(types), list(args))
    except (EncodingError, TypeError, ValueError, OverflowError) as exc:
        raise AbiError(f"{what}: arguments do not fit {list(types)}: {exc}") from None


def encode_call(abi: Sequence[Mapping[str, Any]], fn: str, *args: Any) -> bytes:
    """Selector + encoded arguments of `fn(*args)`."""
    spec = function_spec(abi, fn)
    if spec.static_inputs:
        if len(args) != len(spec.inputs):
            raise AbiError(f"{fn} takes {len(spec.inputs)} arguments, got {len(args)}")
        try:
            return spec.selector + b"".join(
                _encode_word(k, v) for k, v in zip(spec.inputs, args, strict=True))
        except AbiError as exc:
            raise AbiError(f"{fn}: {exc}") from None
    return spec.selector + _encode(spec.inputs, args, fn)


def _value(kind: str, value: Any) -> Any:
    return checksum_address(value) if kind == "address" else value


def decode_result(abi: Sequence[Mapping[str, Any]], fn: str, data: bytes) -> Any:
    """Return data of `fn` as web3 gives it: None, one value, or a tuple of values."""
    spec = function_spec(abi, fn)
    if not spec.outputs:
        return None
    if spec.static_outputs and len(data) == 32 * len(spec.outputs):
        try:
            out = decode_words(spec.outputs, data)
        except AbiError as exc:
            raise AbiError(f"{fn} returned data that does not fit: {exc}") from None
        if out is not None:
            return out[0] if len(out) == 1 else out
    try:
        values = abi_decode(list(spec.outputs), data)
    except (DecodingError, TypeError, ValueError) as exc:
        raise AbiError(f"{fn} returned data that does not fit {list(spec.outputs)}: "
                       f"{exc}") from None
    out = tuple(_value(k, v) for k, v in zip(spec.outputs, values, strict=True))
    return out[0] if len(out) == 1 else out


def revert_reason(data: bytes) -> str:
    """The message of an ``Error(string)`` revert, else the raw data as hex (or "")."""
    if data[:4] == ERROR_SELECTOR:
        try:
            (message,) = abi_decode(["string"], data[4:])
            return str(message)
        except (DecodingError, TypeError, ValueError):
            pass
    return "0x" + data.hex() if data else ""
