"""Gamma's hand-off to Theta: the price tape and the escalation queue."""

from __future__ import annotations

import dataclasses
import json

import pytest

from golem.gamma.handoff import Escalation, GammaHandoff
from golem.perception.market import PricePoint

from ..grimoire.test_episodes import make_episode


def escalation(chain_id: int, block: int) -> Escalation:
    episode = dataclasses.replace(make_episode(block), chain_id=chain_id, block_number=block)
    return Escalation(episode.id, 0.9, "surprise", episode)


def test_a_reorg_drops_the_queued_escalations_of_the_blocks_it_orphaned() -> None:
    handoff = GammaHandoff(8)
    handoff.escalate([escalation(1, 100), escalation(1, 101), escalation(1, 102),
                      escalation(5, 103), Escalation("made-up", 0.9, "test")])
    assert handoff.drop_orphaned(chain_id=1, common_ancestor=100) == 2
    assert [(e.episode.chain_id, e.episode.block_number) if e.episode else e.episode_id
            for e in handoff.drain()] == [(1, 100), (5, 103), "made-up"]


def test_drain_hands_each_escalation_over_once_and_a_full_queue_keeps_the_newest() -> None:
    handoff = GammaHandoff(3)
    handoff.escalate(Escalation(f"e{i}", 0.5, "test") for i in range(5))
    assert [e.episode_id for e in handoff.drain()] == ["e2", "e3", "e4"]
    assert handoff.drain() == []
    with pytest.raises(ValueError, match="queue_size"):
        GammaHandoff(0)


def test_theta_reads_the_first_feed_by_address_and_its_tape_oldest_first() -> None:
    handoff = GammaHandoff(4)
    assert handoff.latest_feed() == (None, ())
    handoff.record_price("0xbbb", PricePoint(10.0, 2000.0))
    handoff.record_price("0xaaa", PricePoint(11.0, 1.0))
    handoff.record_price("0xbbb", PricePoint(12.0, 2010.0))
    assert handoff.latest_feed() == ("0xaaa", (PricePoint(11.0, 1.0),))
    assert handoff.tape("0xbbb") == (PricePoint(10.0, 2000.0), PricePoint(12.0, 2010.0))
    assert handoff.tape("0xccc") == ()


def test_the_tape_and_the_queue_come_back_whole_after_a_restart() -> None:
    """What Gamma's capture writes at a clean stop (through JSON) is what Theta reads
    after the start: the tapes, and the queue in order with each escalation's episode."""
    handoff = GammaHandoff(4)
    handoff.record_price("0xbbb", PricePoint(10.0, 2000.0))
    handoff.record_price("0xbbb", PricePoint(12.0, 2010.5))
    handoff.escalate([escalation(1, 100), Escalation("made-up", 0.7, "test"),
                      escalation(1, 101)])
    again = GammaHandoff(4)
    again.restore(json.loads(json.dumps(handoff.to_dict())))
    assert again.latest_feed() == handoff.latest_feed()
    assert again.drain() == handoff.drain()
    with pytest.raises(KeyError):
        again.restore({"prices": {}})
