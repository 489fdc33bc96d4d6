"""Calldata from a contract ABI, and return data back into Python values, without web3.

`encode_call(abi, fn, *args)` is the 4-byte selector of `fn` followed by its
ABI-encoded arguments; `decode_result(abi, fn, data)` turns return data into what
web3's ``contract.functions[fn](...).call()`` returns: nothing for no outputs, the
value for one output, a tuple for several; addresses come back checksummed.
`revert_reason` reads a Solidity/Vyper ``Error(string)`` revert. Pure: no I/O.

Function specs are looked up by name (the market's contracts have no overloads)
and cached per ABI object. Errors: an unknown function name or arguments that do
not fit the ABI raise `AbiError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
            specs[name] = FunctionSpec(
                name, inputs, tuple(_type(p) for p in item.get("outputs", ())),
                keccak(text=f"{name}({','.join(inputs)})")[:4])
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
    return spec.selector + _encode(spec.inputs, args, fn)


def _value(kind: str, value: Any) -> Any:
    return to_checksum_address(value) if kind == "address" else value


def decode_result(abi: Sequence[Mapping[str, Any]], fn: str, data: bytes) -> Any:
    """Return data of `fn` as web3 gives it: None, one value, or a tuple of values."""
    spec = function_spec(abi, fn)
    if not spec.outputs:
        return None
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
