"""Backoff with full jitter: bounded, reproducible from a seed, resettable."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.chain.backoff import Backoff


@given(
    base=st.floats(1e-6, 10.0),
    cap=st.floats(0.0, 600.0),
    jitter=st.floats(0.0, 1.0),
    attempt=st.integers(0, 5000),
    seed=st.integers(0, 2**32),
)
def test_delay_is_bounded_and_seeded(
    base: float, cap: float, jitter: float, attempt: int, seed: int
) -> None:
    backoff = Backoff(base, cap, jitter)
    ceiling = min(cap, base * 2.0 ** min(attempt, 1000))
    delay = backoff.delay(attempt, random.Random(seed))
    assert 0.0 <= delay <= ceiling
    assert delay >= (1.0 - jitter) * ceiling * (1 - 1e-12)
    assert delay == backoff.delay(attempt, random.Random(seed))


def test_full_jitter_spreads_over_the_whole_interval() -> None:
    backoff = Backoff(base=1.0, cap=30.0, jitter=1.0)
    rng = random.Random(7)
    draws = [backoff.delay(3, rng) for _ in range(4000)]
    assert max(draws) <= 8.0 and max(draws) > 7.8 and min(draws) < 0.2
    assert 0.45 < sum(d < 4.0 for d in draws) / len(draws) < 0.55


def test_no_jitter_is_plain_exponential_up_to_the_cap() -> None:
    backoff = Backoff(base=0.5, cap=10.0, jitter=0.0)
    rng = random.Random(0)
    assert [backoff.next_delay(rng) for _ in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_next_delay_counts_attempts_and_reset_starts_over() -> None:
    backoff = Backoff(base=1.0, cap=100.0, jitter=0.0)
    rng = random.Random(1)
    backoff.next_delay(rng)
    backoff.next_delay(rng)
    assert backoff.attempt == 2
    assert backoff.next_delay(rng) == 4.0
    backoff.reset()
    assert backoff.attempt == 0
    assert backoff.next_delay(rng) == 1.0


def test_seeded_sequences_repeat() -> None:
    a, b = Backoff(0.1, 5.0), Backoff(0.1, 5.0)
    ra, rb = random.Random(42), random.Random(42)
    assert [a.next_delay(ra) for _ in range(20)] == [b.next_delay(rb) for _ in range(20)]


@pytest.mark.parametrize(
    "args", [(0.0, 1.0, 1.0), (1.0, -1.0, 1.0), (1.0, 1.0, 1.5), (1.0, 1.0, -0.1)]
)
def test_bad_arguments(args: tuple[float, float, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(*args)
    with pytest.raises(ValueError):
        Backoff(1.0, 1.0).delay(-1, random.Random(0))
