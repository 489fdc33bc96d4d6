"""Raw transactions signed by the golem's Wallet, ready for a `TxChain`.

Signing happens here and nowhere else in the actions room; the key never leaves
the Wallet (golem.actions.wallet). Errors: a node that cannot build the call raises
`ChainError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from web3 import Web3

from golem.actions.wallet import Wallet
from golem.chain.evm import ChainError, Web3Evm
from golem.chain.transactions import PRIORITY_FEE


def build_signed(evm: Web3Evm, wallet: Wallet, address: str, abi: Sequence[Mapping[str, Any]],
                 fn: str, *args: Any, gas: int) -> bytes:
    """The signed raw transaction calling `fn`, at the wallet's next nonce."""
    contract = evm._contract(address, abi)
    try:
        base = int(evm.w3.eth.get_block("latest").get("baseFeePerGas") or 0)
        nonce = evm.w3.eth.get_transaction_count(Web3.to_checksum_address(wallet.address))
        tx = contract.functions[fn](*args).build_transaction({
            "from": wallet.address, "nonce": nonce, "gas": gas, "chainId": evm.chain_id,
            "maxFeePerGas": 2 * base + PRIORITY_FEE, "maxPriorityFeePerGas": PRIORITY_FEE})
    except evm._errors as exc:
        raise ChainError(f"cannot build {fn} on {address}: {exc}") from exc
    return wallet.sign_transaction(tx)


