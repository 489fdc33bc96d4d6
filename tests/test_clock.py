"""The virtual clock: jumps when every participant sleeps, fixed order, deadlines."""

from __future__ import annotations

import time

import anyio
import pytest

from golem.runtime.clock import VirtualClock, WallClock


def run(fn):  # type: ignore[no-untyped-def]
    return anyio.run(fn, backend_options={"use_uvloop": True})


def test_time_jumps_only_when_every_participant_sleeps() -> None:
    seen: list[tuple[str, float]] = []

    async def main() -> None:
        clock = VirtualClock(start=1000.0)

        async def sleeper(name: str, rank: int, step: float, count: int) -> None:
            with clock.participant(rank):
                for _ in range(count):
                    await clock.sleep_until(clock.now() + step)
                    seen.append((name, clock.now() - 1000.0))

        async def busy() -> None:
            with clock.participant(2):
                # Real work in a thread takes no golem time, and time must not move meanwhile.
                before = clock.now()
                await anyio.to_thread.run_sync(time.sleep, 0.05)
                assert clock.now() == before
                seen.append(("busy-done", clock.now() - 1000.0))

        async with anyio.create_task_group() as tg:
            tg.start_soon(clock.run)
            async with anyio.create_task_group() as inner:
                inner.start_soon(sleeper, "a", 0, 10.0, 3)
                inner.start_soon(sleeper, "b", 1, 15.0, 2)
                inner.start_soon(busy)
            tg.cancel_scope.cancel()

    started = time.monotonic()
    run(main)
    assert time.monotonic() - started < 2
    assert seen == [("busy-done", 0.0), ("a", 10.0), ("b", 15.0), ("a", 20.0), ("a", 30.0),
                    ("b", 30.0)]


def test_same_instant_wakeups_fire_in_rank_order_regardless_of_registration() -> None:
    order: list[int] = []

    async def main() -> None:
        clock = VirtualClock(start=0.0)

        async def sleeper(rank: int, delay: float) -> None:
            with clock.participant(rank):
                await anyio.sleep(delay)  # register in a different order than rank
                await clock.sleep_until(100.0)
                order.append(rank)

        async with anyio.create_task_group() as tg:
            tg.start_soon(clock.run)
            async with anyio.create_task_group() as inner:
                for rank, delay in ((2, 0.0), (0, 0.02), (1, 0.01)):
                    inner.start_soon(sleeper, rank, delay)
            tg.cancel_scope.cancel()

    run(main)
    assert order == [0, 1, 2]


def test_same_instant_work_never_overlaps_and_a_past_instant_waits_its_turn() -> None:
    """At one instant the next participant wakes only once the one before sleeps again,
    however long its work takes in wall time (a thread); a participant sleeping until an
    instant already reached (a loop's first tick) also waits for its rank's turn."""
    events: list[str] = []

    async def main() -> None:
        clock = VirtualClock(start=0.0)

        async def ticker(rank: int, work_s: float) -> None:
            with clock.participant(rank):
                for at in (0.0, 10.0):  # 0.0: already reached when it starts
                    await clock.sleep_until(at)
                    events.append(f"{rank} starts at {clock.now():g}")
                    await anyio.to_thread.run_sync(time.sleep, work_s)
                    events.append(f"{rank} ends")

        async with anyio.create_task_group() as tg:
            tg.start_soon(clock.run)
            async with anyio.create_task_group() as inner:
                inner.start_soon(ticker, 1, 0.0)  # registers first, ranks second
                inner.start_soon(ticker, 0, 0.05)
            tg.cancel_scope.cancel()

    run(main)
    assert events == ["0 starts at 0", "0 ends", "1 starts at 0", "1 ends",
                      "0 starts at 10", "0 ends", "1 starts at 10", "1 ends"]


def test_deadline_cancels_a_sleeping_participant_at_golem_time() -> None:
    result: dict[str, float | bool] = {}

    async def main() -> None:
        clock = VirtualClock(start=0.0)

        async def worker() -> None:
            with clock.participant(0):
                with clock.deadline(30.0) as scope:
                    await clock.sleep_until(100.0)
                result["cancelled"] = scope.cancelled_caught
                result["at"] = clock.now()
                await clock.sleep_until(clock.now() + 5)
                result["after"] = clock.now()

        async with anyio.create_task_group() as tg:
            tg.start_soon(clock.run)
            await worker()
            tg.cancel_scope.cancel()

    run(main)
    assert result == {"cancelled": True, "at": 30.0, "after": 35.0}


def test_paced_speed_runs_at_the_requested_ratio() -> None:
    async def main() -> float:
        clock = VirtualClock(start=0.0, speed=100.0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(clock.run)
            with clock.participant(0):
                started = time.monotonic()
                await clock.sleep_until(20.0)  # 20 golem s at 100x = 0.2 wall s
                elapsed = time.monotonic() - started
            tg.cancel_scope.cancel()
        return elapsed

    elapsed = run(main)
    assert 0.18 <= elapsed < 1.0


def test_one_sleep_per_participant() -> None:
    async def main() -> None:
        clock = VirtualClock(start=0.0)
        with clock.participant(0):
            async with anyio.create_task_group() as tg:
                tg.start_soon(clock.sleep_until, 50.0)
                await anyio.sleep(0.01)
                with pytest.raises(RuntimeError, match="one sleep in flight"):
                    await clock.sleep_until(60.0)
                tg.cancel_scope.cancel()

    run(main)


def test_wall_clock_deadline_and_sleep() -> None:
    async def main() -> tuple[bool, float]:
        clock = WallClock()
        started = time.monotonic()
        await clock.sleep_until(clock.now() + 0.05)
        with clock.deadline(0.05) as scope:
            await anyio.sleep(5)
        return scope.cancelled_caught, time.monotonic() - started

    cancelled, elapsed = run(main)
    assert cancelled
    assert 0.09 <= elapsed < 2
