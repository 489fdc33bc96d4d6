"""Raw transactions signed by the golem's Wallet, ready for a `TxChain`.

Signing happens here and nowhere else in the actions room; the key never leaves
the Wallet (golem.actions.wallet). The transaction is EIP-1559 at the wallet's next
nonce, with a fee cap of twice the next base fee plus the tip. Errors: a chain that
cannot answer, or arguments that do not fit the ABI, raise `ChainError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eth_utils.address import to_checksum_address

from golem.actions.wallet import Wallet
from golem.chain.abi import AbiError, encode_call
from golem.chain.evm import ChainError, Evm
from golem.chain.transactions import PRIORITY_FEE


def build_signed(evm: Evm, wallet: Wallet, address: str, abi: Sequence[Mapping[str, Any]],
                 fn: str, *args: Any, gas: int) -> bytes:
    """The signed raw transaction calling `fn`, at the wallet's next nonce."""
    try:
        data = encode_call(abi, fn, *args)
    except AbiError as exc:
        raise ChainError(f"cannot build {fn} on {address}: {exc}") from exc
    base = evm.base_fee()
    tx = {"type": 2, "to": to_checksum_address(address), "value": 0, "data": data,
          "nonce": evm.nonce(wallet.address), "gas": gas, "chainId": evm.chain_id,
          "maxFeePerGas": 2 * base + PRIORITY_FEE, "maxPriorityFeePerGas": PRIORITY_FEE}
    return wallet.sign_transaction(tx)
