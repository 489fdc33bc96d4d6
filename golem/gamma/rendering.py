"""How an episode's text is made from what capture saw, and made again from its payload.

A chain-log episode's text is perception's context line ("Large swap (24x this
contract's usual size). ") followed by the event's sentence (golem.chain.render);
its identifiers are the event's exact hex values and the transaction hash. The
payload keeps what a later re-rendering needs and cannot recompute: the context
line ("context") and the names the registry gave ("names"). `rerender` makes
the text of any stored capture episode again from its payload, including
episodes written before renderings named things (their context line is read off
the old text), and of the action outcomes the actions room writes (with
golem.grimoire.payloads.outcome_text), so `golem memory reembed` can move a store
to today's renderings.

The registry capture renders with is kept beside the chain data (names.json),
so a re-rendering outside the daemon names things the way capture does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from golem.chain.decoding import DecodedEvent
from golem.chain.names import Names, alias, market_names
from golem.chain.render import Rendering, TokenMeta, render
from golem.config import Config
from golem.grimoire.memory_file import atomic_write
from golem.grimoire.payloads import (
    OUTCOME_CATEGORY,
    REVERT_CATEGORY,
    REVERT_EVENT,
    outcome_text,
)
from golem.grimoire.records import Episode

NAMES_FILE = "names.json"
CHAIN_DIR = "chain"


def event_text(context: str, rendering: Rendering) -> str:
    """A chain-log episode's text: the context line, then the event's sentence."""
    return context + rendering.text


def event_identifiers(rendering: Rendering, tx_hash: str) -> tuple[str, ...]:
    """The rendering's identifiers and the transaction hash, each once."""
    return tuple(dict.fromkeys([*rendering.identifiers, *([tx_hash] if tx_hash else [])]))


def names_used(rendering_ids: tuple[str, ...], names: Names) -> dict[str, str]:
    """The registered names of these identifiers (kept in the payload)."""
    return {i.lower(): n for i in rendering_ids if (n := names.name(i)) is not None}


def revert_sentence(payload: Mapping[str, Any], names: Names) -> str:
    """A reverted transaction as a sentence, from its payload (golem.grimoire.payloads):
    "Reverted: transfer on the HONEY token by trader ab12, a sell into the HONEY/WETH
    pool"."""
    to, sender = str(payload.get("address", "")), str(payload.get("sender", ""))
    symbol, recipient = payload.get("symbol"), payload.get("recipient")
    venue = names.name(to) or (f"the {symbol} token" if symbol else f"contract {alias(to)}")
    into = ""
    if payload.get("action") == "sell" and isinstance(recipient, str) and recipient:
        into = f", a sell into {names.name(recipient) or 'pool ' + alias(recipient)}"
    return f"Reverted: {payload.get('function')} on {venue} by {names.label(sender)}{into}"


def revert_identifiers(payload: Mapping[str, Any]) -> tuple[str, ...]:
    values = [payload.get(k) for k in ("address", "sender", "recipient", "tx_hash")]
    return tuple(dict.fromkeys(v for v in values if isinstance(v, str) and v))


def rerender(episode: Episode, names: Names) -> Episode | None:
    """``episode`` with its text and identifiers made again from its payload with ``names``
    (plus the names its payload recorded): a chain event's, a revert's or an action
    outcome's (golem.grimoire.payloads); None for any other episode, which keeps its
    text."""
    payload = episode.payload
    if episode.category == OUTCOME_CATEGORY and "action" in payload and "result" in payload:
        address = str(payload.get("address") or "")
        hashes = payload.get("tx_hashes")
        ids = [address, *(hashes if isinstance(hashes, list) else [])]
        return replace(episode, text=outcome_text(
            payload, names.label(address, "contract") if address else "no contract"),
            identifiers=tuple(dict.fromkeys(str(i) for i in ids if i)))
    if episode.category == REVERT_CATEGORY and payload.get("event") == REVERT_EVENT:
        known = names.with_names(_recorded(payload))
        return replace(episode, text=revert_sentence(payload, known),
                       identifiers=revert_identifiers(payload))
    event = _event(episode)
    if event is None:
        return None
    known = names.with_names(_recorded(payload))
    rendering = render(event, _token_meta(payload), known)
    context = payload.get("context")
    if not isinstance(context, str):
        context = _old_context(episode.text, event)
    new_payload = {**payload, "context": context,
                   "names": names_used(rendering.identifiers, known)}
    return replace(episode, text=event_text(context, rendering), payload=new_payload,
                   identifiers=event_identifiers(rendering, episode.tx_hash))


def _recorded(payload: Mapping[str, Any]) -> dict[str, str]:
    names = payload.get("names")
    if not isinstance(names, dict):
        return {}
    return {str(k): str(v) for k, v in names.items()}


def _event(episode: Episode) -> DecodedEvent | None:
    """The decoded event a capture episode's payload holds (golem.gamma.capture
    .episode_payload), or None when the payload is not one."""
    p = episode.payload
    name, address, args = p.get("event"), p.get("address"), p.get("args")
    if not (isinstance(name, str) and isinstance(address, str) and isinstance(args, dict)
            and "signature" in p and "raw" in p):
        return None
    raw = p.get("raw")
    protocol = episode.protocol or "unknown"
    return DecodedEvent(name, protocol, episode.category, str(p.get("signature") or ""),
                        address, dict(args), raw if isinstance(raw, dict) else None)


def _token_meta(payload: Mapping[str, Any]) -> dict[str, TokenMeta]:
    out: dict[str, TokenMeta] = {}
    tokens = payload.get("tokens")
    for key, value in (tokens.items() if isinstance(tokens, dict) else ()):
        if isinstance(value, dict) and isinstance(value.get("decimals"), int):
            symbol = str(value.get("symbol") or "")
            try:
                out[str(key)] = TokenMeta(symbol, symbol, value["decimals"])
            except ValueError:
                continue
    return out


def _old_context(text: str, event: DecodedEvent) -> str:
    """The context line of a rendering written before renderings named things: what comes
    before "<protocol> <name> on <address>" ("Unknown event on <address>")."""
    head = (f"{event.protocol} {event.name} on {event.address}" if event.known
            else f"Unknown event on {event.address}")
    at = text.find(head)
    return text[:at] if at > 0 else ""


def save_names(data_dir: Path, names: Names) -> None:
    """Keep the registry capture renders with beside the chain data (atomic replace)."""
    folder = data_dir / CHAIN_DIR
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / NAMES_FILE, json.dumps(names.known(), sort_keys=True).encode())


def capture_names(config: Config) -> Names:
    """The names capture renders with for this config: names.json as capture last wrote
    it; for a simulated chain's data dir written before names.json existed, its seed's
    market (deployed again in memory: the same seed, the same addresses); else none."""
    names = load_names(config.data_dir)
    if len(names) or config.chain.mode != "simulated":
        return names
    from golem.chain.source import SimulatedSource  # noqa: PLC0415 - loads the EVM

    # addresses depend on the deployer and its nonces only, not on the genesis time
    return market_names(SimulatedSource.create(config.golem.seed, 7200.0).market)


def load_names(data_dir: Path) -> Names:
    """The registry capture last rendered with; empty when there is none (a golem that
    never captured, or one from before names existed) or it is unreadable."""
    try:
        data = json.loads((data_dir / CHAIN_DIR / NAMES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Names()
    if not isinstance(data, dict):
        return Names()
    return Names({str(k): str(v) for k, v in data.items()})
