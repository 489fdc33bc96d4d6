"""The watch list: signatures hash to the real topic0s, filters match what they say."""

from __future__ import annotations

import pytest

from golem.chain.decoding import KNOWN_EVENTS
from golem.chain.watch import WatchList, event_topic
from golem.config_checks import url_problem

POOL = "0x" + "ab" * 20
OTHER = "0x" + "cd" * 20
SWAP_V2 = "Swap(address,uint256,uint256,uint256,uint256,address)"


def test_signatures_hash_to_the_registry_topics() -> None:
    for spec in KNOWN_EVENTS:
        assert event_topic(spec.signature) == spec.topic0
    # spacing is not part of a signature; a literal topic passes through lowercased
    assert event_topic(" Sync(uint112, uint112) ") == event_topic("Sync(uint112,uint112)")
    topic = KNOWN_EVENTS[0].topic0
    assert event_topic(topic.upper().replace("0X", "0x")) == topic


@pytest.mark.parametrize("bad", ["Swap(", "0x1234", "swap address", ""])
def test_bad_events_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="neither an event signature"):
        event_topic(bad)


def test_matches_and_rpc_filter() -> None:
    watch = WatchList.build([POOL.upper().replace("0X", "0x")], [SWAP_V2])
    swap = event_topic(SWAP_V2)
    assert watch.matches(POOL, swap)
    assert not watch.matches(OTHER, swap)
    assert not watch.matches(POOL, event_topic("Sync(uint112,uint112)"))
    assert not watch.matches(POOL, None)
    assert watch.rpc_filter() == {"address": [POOL], "topics": [[swap]]}
    every = WatchList.build([POOL])
    assert every.matches(POOL, None) and every.rpc_filter() == {"address": [POOL]}


def test_url_problems() -> None:
    assert url_problem("http://127.0.0.1:8545") is None
    assert url_problem("wss://node.example/ws") is None
    assert "scheme" in (url_problem("127.0.0.1:8545") or "")
    assert "no host" in (url_problem("ws://") or "")
    assert "not a URL" in (url_problem("http://h:70000") or "")
