"""Episodes made again from their payloads, and `golem memory reembed` moving a store written
before renderings named things: real LanceDB, the real model, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import numpy as np
import pytest

from golem.chain.decoding import decode
from golem.chain.names import Names
from golem.chain.render import TokenMeta
from golem.config import Config, load_config
from golem.gamma.capture import episode_payload
from golem.gamma.rendering import load_names, rerender, save_names
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.migration import reembed_all
from golem.grimoire.payloads import outcome_payload, revert_payload
from golem.grimoire.records import Episode, Provenance, episode_id

from ..chain.test_decoding import ALICE, BOB, PAIR, _spec, encode_log
from ..conftest import config_text, run_golem
from ..grimoire.conftest import MODEL_DIR

WETH = TokenMeta("WETH", "WETH", 18)
USDC = TokenMeta("USDC", "USDC", 6)
HONEY = "0x" + "51" * 20
OLD_SWAP = (f"Market steady: price +0.1% over 1 min. Uniswap V2 Swap on {PAIR}: "
            f"0.568352229212509248 WETH in, 1,164.236546 USDC out, by {ALICE} to {ALICE}")


def _episode(i: int, text: str, payload: dict[str, object], category: str = "swap",
             protocol: str | None = "Uniswap V2") -> Episode:
    block_hash = f"0x{i:064x}"
    return Episode(id=episode_id(1, block_hash, 0), namespace="golem-a", chain_id=1,
                   block_number=100 + i, block_hash=block_hash, log_index=0,
                   tx_hash=f"0x{i + 9:064x}", tick=i, observed_at=1_700_000_000.0 + i,
                   category=category, protocol=protocol, text=text, payload=payload,
                   provenance=Provenance(author="golem-a", process="gamma", verified=True))


def old_store_episodes() -> list[Episode]:
    """Episodes as the capture of the previous version wrote them: hex-led texts, payloads
    without "context" and "names"."""
    swap = decode(encode_log(_spec("Uniswap V2", "Swap"), {
        "sender": ALICE, "amount0In": 568_352_229_212_509_248, "amount1In": 0,
        "amount0Out": 0, "amount1Out": 1_164_236_546, "to": ALICE}))
    swap_payload = episode_payload(swap, "calm", "discard", {"token0": WETH, "token1": USDC})
    revert = {**revert_payload(HONEY, "transfer", HONEY, "sell"), "tx_hash": "0x" + "ab" * 32,
              "sender": BOB.lower(), "selector": "0xa9059cbb", "recipient": PAIR.lower(),
              "symbol": "HONEY"}
    outcome = {**outcome_payload("swap", "ok", -0.0278), "address": PAIR.lower(),
               "detail": "swap 5 USDC for 0.00236265 WETH (impact 0.30%)",
               "equity_before": 101.19, "equity_after": 101.16,
               "tx_hashes": ["0x" + "cd" * 32]}
    return [
        _episode(1, OLD_SWAP, swap_payload),
        _episode(2, f"Reverted: transfer on HONEY {HONEY[:6]}...{HONEY[-4:]} by "
                    f"{BOB[:6]}...{BOB[-4:]}, a sell into pool {PAIR[:6]}...{PAIR[-4:]}",
                 revert, category="revert", protocol="ERC20"),
        _episode(3, f"Own action swap on {PAIR}: ok. swap 5 USDC for 0.00236265 WETH (impact "
                    "0.30%). Realised P&L $-0.0278; equity $101.19 -> $101.16.", outcome,
                 category="strategy_outcome", protocol=None),
        _episode(4, "Noted by hand: WETH looked thin", {"note": True}, category="observation",
                 protocol=None),
    ]


def test_rerender_names_things_and_keeps_the_old_context_line() -> None:
    swap, revert, outcome, note = old_store_episodes()
    names = Names({PAIR: "the WETH/USDC pool"})
    new = rerender(swap, names)
    assert new is not None and new.text == (
        "Market steady: price +0.1% over 1 min. Uniswap V2 swap on the WETH/USDC pool: "
        "0.5684 WETH sold for 1,164 USDC by trader 1111")
    assert new.identifiers == (PAIR, ALICE, swap.tx_hash)
    assert new.payload["context"] == "Market steady: price +0.1% over 1 min. "
    assert new.payload["names"] == {PAIR.lower(): "the WETH/USDC pool"}
    assert new.payload["args"] == swap.payload["args"]  # exact values untouched
    # Made again from the new payload, with no registry at hand: the same text.
    again = rerender(new, Names())
    assert again is not None and again.text == new.text
    gone = rerender(revert, names)
    assert gone is not None and gone.text == (
        "Reverted: transfer on the HONEY token by account 2222, a sell into the WETH/USDC pool")
    assert set(gone.identifiers) == {HONEY, BOB.lower(), PAIR.lower(), "0x" + "ab" * 32}
    ours = rerender(outcome, names)
    assert ours is not None and ours.text == (
        "Our own swap on the WETH/USDC pool: ok. swap 5 USDC for 0.00236265 WETH (impact "
        "0.30%). Realised a loss of $0.0278; equity $101.19 -> $101.16.")
    assert ours.identifiers == (PAIR.lower(), "0x" + "cd" * 32)
    assert rerender(note, names) is None


def _config(tmp_path: Path, model_dir: Path) -> Path:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "golem-a", "data_dir": "data"},
                                 # the test's embedder's graph, on any CPU
                                 "grimoire": {"model_dir": str(model_dir),
                                              "embed_compute": "int8"},
                                 "chain": {"mode": "off"},
                                 "logging": {"format": "json", "level": "warning"}}))
    return path


async def _write(config: Config, episodes: list[Episode]) -> None:
    g = await Grimoire.open(config, now=lambda: 1_700_000_100.0)
    try:
        await g.add_episodes(episodes)
    finally:
        await g.close()


async def _read(config: Config) -> tuple[dict[str, Episode], dict[str, np.ndarray]]:
    g = await Grimoire.open(config, now=lambda: 1_700_000_100.0)
    try:
        eps = {e.id: e for e in await g.scan_episodes(lambda b: [e for x in b for e in x])}
        return eps, await g.episode_vectors(list(eps))
    finally:
        await g.close()


def test_reembed_rerenders_an_old_store_and_is_safe_to_interrupt_and_repeat(
        tmp_path: Path) -> None:
    embedder = Embedder.load(MODEL_DIR, 32)
    path = _config(tmp_path, MODEL_DIR)
    config = load_config(path)
    old = old_store_episodes()
    anyio.run(_write, config, old)
    save_names(config.data_dir, Names({PAIR: "the WETH/USDC pool"}))
    assert load_names(config.data_dir).name(PAIR) == "the WETH/USDC pool"
    _, before = anyio.run(_read, config)

    def interrupted(episode: Episode) -> Episode | None:
        raise KeyboardInterrupt  # Ctrl-C in the middle of the copy

    with pytest.raises(KeyboardInterrupt):
        anyio.run(reembed_all, config, interrupted)
    unchanged, vectors = anyio.run(_read, config)
    assert {e.id: e.text for e in unchanged.values()} == {e.id: e.text for e in old}
    assert all(np.array_equal(vectors[i], before[i]) for i in before)

    done = run_golem("memory", "reembed", "--config", str(path), timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["episodes"], report["episodes_rerendered"]) == (4, 3)
    assert "reembed: 4 of 4 episodes (100%)" in done.stderr
    after, vectors = anyio.run(_read, config)
    swap, revert, outcome, note = (after[e.id] for e in old)
    assert swap.text.endswith("Uniswap V2 swap on the WETH/USDC pool: 0.5684 WETH sold for "
                              "1,164 USDC by trader 1111") and "0x" not in swap.text
    assert revert.text.startswith("Reverted: transfer on the HONEY token")
    assert outcome.text.startswith("Our own swap on the WETH/USDC pool: ok.")
    assert note.text == old[3].text and np.array_equal(vectors[note.id], before[note.id])
    fresh = embedder.embed_shapes([swap.text, revert.text, outcome.text])  # numbers masked
    np.testing.assert_allclose(np.vstack([vectors[e.id] for e in (swap, revert, outcome)]),
                               fresh, atol=2e-3)  # the CLI embeds with batch size 1, here 32

    again = run_golem("memory", "reembed", "--config", str(path), timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["episodes_rerendered"] == 0
    same, same_vectors = anyio.run(_read, config)
    assert {i: e.text for i, e in same.items()} == {i: e.text for i, e in after.items()}
    assert all(np.array_equal(same_vectors[i], vectors[i]) for i in vectors)


def test_reembed_help_says_what_it_does(tmp_path: Path) -> None:
    shown = run_golem("memory", "reembed", "--help")
    assert shown.returncode == 0
    text = " ".join(shown.stdout.split())
    assert "rendered again from its stored payload" in text and "interrupting it" in text
