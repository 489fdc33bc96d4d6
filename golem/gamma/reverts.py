"""Gamma's reverted transactions: a failed call emits no log, yet it is worth remembering.

For each captured block range, the failed transactions sent to a watched address
become one episode each (category "revert", payload by the convention in
`golem.consolidation.facts`), so consolidation can turn repeated reverts into
anti-knowledge ("selling HONEY reverts: do not retry"). A transaction whose block
hash is not the one the follower verified was read from another branch in between
and is dropped: the next round sees the reorg and re-captures the new branch.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from functools import cache
from typing import Any, cast

from eth_utils.abi import function_abi_to_4byte_selector

from golem.chain.compile import load_artifacts
from golem.chain.follower import Captured
from golem.chain.names import Names
from golem.chain.reader import MAX_FAILED_SPAN, ChainReader, FailedTx
from golem.chain.tokens import TokenDirectory
from golem.gamma.rendering import revert_identifiers, revert_sentence
from golem.grimoire.payloads import REVERT_CATEGORY, revert_payload
from golem.grimoire.records import Episode, Provenance, tx_episode_id

REVERT_CURIOSITY = 0.5
TOKEN_FUNCTIONS = ("transfer", "transferFrom", "approve")
# common functions beyond the simulated market's own ABIs (routers, aggregators)
COMMON_SIGNATURES = (
    "transfer(address,uint256)", "transferFrom(address,address,uint256)",
    "approve(address,uint256)",
    "swap(uint256,uint256,address,bytes)",
    "swapExactTokensForTokens(uint256,uint256,address[],address,uint256)",
    "swapTokensForExactTokens(uint256,uint256,address[],address,uint256)",
    "swapExactETHForTokens(uint256,address[],address,uint256)",
    "swapExactTokensForETH(uint256,uint256,address[],address,uint256)",
    "swapExactTokensForTokensSupportingFeeOnTransferTokens"
    "(uint256,uint256,address[],address,uint256)",
    "swapExactTokensForETHSupportingFeeOnTransferTokens"
    "(uint256,uint256,address[],address,uint256)",
    "exactInputSingle((address,address,uint24,address,uint256,uint256,uint256,uint160))",
    "exactInput((bytes,address,uint256,uint256,uint256))",
    "multicall(bytes[])", "execute(bytes,bytes[],uint256)",
)


@cache
def selectors() -> Mapping[str, str]:
    """4-byte selector (0x hex) -> function name: common ones, then the market's ABIs."""
    from eth_utils.crypto import keccak  # noqa: PLC0415 - as watch.py: slow import

    table = {"0x" + keccak(text=sig)[:4].hex(): sig.split("(")[0] for sig in COMMON_SIGNATURES}
    for artifact in load_artifacts().values():
        for item in artifact.abi:
            if item.get("type") == "function":
                selector = function_abi_to_4byte_selector(cast("Any", item))
                table["0x" + selector.hex()] = str(item["name"])
    return table


def function_of(selector: str) -> str:
    """The function a selector calls; an unknown one stays its hex."""
    return selectors().get(selector.lower(), selector.lower())


def recipient_of(tx: FailedTx, function: str) -> str | None:
    """The receiving address of transfer(to, ...) / transferFrom(from, to, ...)."""
    word = {"transfer": 0, "transferFrom": 1}.get(function)
    if word is None:
        return None
    start = 10 + 64 * word
    arg = tx.input[start:start + 64]
    return "0x" + arg[24:] if len(arg) == 64 else None


async def classify(tx: FailedTx, function: str,
                   directory: TokenDirectory) -> tuple[str | None, str, str | None]:
    """(token, action, recipient): a token transfer into a pool is a sell."""
    if function in TOKEN_FUNCTIONS:
        recipient = recipient_of(tx, function)
        if function == "approve":
            return tx.to, "approve", None
        if recipient is not None and await directory.pool_tokens(recipient) is not None:
            return tx.to, "sell", recipient
        return tx.to, "transfer", recipient
    if function.startswith(("swap", "exact")):
        return None, "swap", None
    return None, "call", None


async def revert_episodes(reader: ChainReader, directory: TokenDirectory,
                          addresses: Iterable[str], lo: int, hi: int, *,
                          verified: Mapping[int, str], succeeded: Collection[str] = (),
                          namespace: str, tick: int, now: float,
                          names: Names | None = None) -> list[Episode]:
    """Episodes of the failed transactions to `addresses` in blocks lo..hi, except those
    whose block hash differs from the one in `verified` (block number -> hash).
    `succeeded`: hashes of txs that emitted a log (no receipt needed for those); `names`:
    what the texts call known addresses (golem.gamma.rendering.revert_sentence)."""
    failed: list[FailedTx] = []
    for start in range(lo, hi + 1, MAX_FAILED_SPAN):  # max_blocks_per_tick may be larger
        end = min(start + MAX_FAILED_SPAN - 1, hi)
        failed += await reader.failed_transactions(start, end, addresses, succeeded)
    kept = [tx for tx in failed if verified.get(tx.block_number, tx.block_hash) == tx.block_hash]
    return [await _episode(tx, directory, namespace=namespace, tick=tick, now=now,
                           names=names or Names()) for tx in kept]


async def _episode(tx: FailedTx, directory: TokenDirectory, *, namespace: str, tick: int,
                   now: float, names: Names) -> Episode:
    function = function_of(tx.selector) if tx.selector != "0x" else "fallback"
    token, action, recipient = await classify(tx, function, directory)
    meta = await directory.token(token) if token is not None else None
    payload: dict[str, Any] = {**revert_payload(tx.to, function, token, action),
                               "tx_hash": tx.tx_hash, "sender": tx.sender,
                               "selector": tx.selector, "recipient": recipient,
                               "symbol": meta.symbol if meta is not None else None}
    return Episode(
        id=tx_episode_id(tx.chain_id, tx.block_hash, tx.tx_index), namespace=namespace,
        chain_id=tx.chain_id, block_number=tx.block_number, block_hash=tx.block_hash,
        log_index=-1, tx_hash=tx.tx_hash, tick=tick, observed_at=now,
        category=REVERT_CATEGORY, protocol="ERC20" if token is not None else None,
        text=revert_sentence(payload, names), payload=payload, curiosity=REVERT_CURIOSITY,
        identifiers=revert_identifiers(payload),
        provenance=Provenance(author=namespace, process="gamma", verified=True))


def verified_hashes(round_: Captured) -> dict[int, str]:
    """Block hashes the follower verified for this round: the committed window's headers
    and the blocks of the captured logs. A block below both is older than the reorg
    window, and a reorg that deep halts capture anyway."""
    hashes = {log.block_number: log.block_hash for log in round_.logs}
    hashes.update((h.number, h.hash) for h in round_.window.headers)
    return hashes
