"""The working-memory cycle end to end: real Grimoire (model, LanceDB, SQLite) in a tmp dir."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from golem.config import Config, load_config
from golem.consolidation.memory_cycle import ModelRequest, WorkingMemoryCycle, version_of
from golem.consolidation.seed_migration import SEED_HEADING
from golem.events import Event, EventBus, WorkingMemoryRewritten
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.memory_file import prev_path
from golem.grimoire.records import DecayClass, SemanticEntry, Status
from golem.grimoire.scratch import ScratchLog
from golem.grimoire.working_memory import parse_memory, validate_rewrite

from ..conftest import child_env, config_text
from ..grimoire.conftest import MODEL_DIR
from ..grimoire.stores import scratch_log

T = TypeVar("T")
NOW = 1_767_225_600.0
NAME, MANDATE = "Ada", "Market-make ETH/USDC with at most 5k USDC at risk."


@pytest.fixture
def cfg(tmp_path: Path) -> Config:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "golem-a", "data_dir": "data"},
                                 # the fixture embedder's graph, also in children
                                 "grimoire": {"model_dir": str(MODEL_DIR),
                                              "embed_compute": "int8"}}))
    return load_config(path)


def with_grimoire(cfg: Config, embedder: Embedder | None,
                  body: Callable[[Grimoire], Awaitable[T]], events: EventBus | None = None) -> T:
    async def main() -> T:
        g = await Grimoire.open(cfg, now=lambda: NOW, embedder=embedder, events=events)
        try:
            return await body(g)
        finally:
            await g.close()

    return anyio.run(main, backend_options={"use_uvloop": True})


def cycle(g: Grimoire, events: EventBus | None = None, **kw: Any) -> WorkingMemoryCycle:
    return WorkingMemoryCycle(g, g.memory_path, events, name=NAME, mandate=MANDATE, **kw)


def recorder() -> tuple[EventBus, list[Event]]:
    bus, seen = EventBus(lambda: NOW), []
    bus.subscribe(lambda event, record: seen.append(event))
    return bus, seen


def test_notes_are_indexed_written_then_consumed(cfg: Config, embedder: Embedder) -> None:
    bus, seen = recorder()

    async def body(g: Grimoire) -> None:
        noted = [await g.note("Owner says: never hold over 10k USDC in a pool", importance=0.9),
                 await g.note("Why does gas spike at 14:00 UTC?", importance=0.8)]
        raw = scratch_log(g.data_dir).append("ETH/USDC volume doubled after the CPI print",
                                             0.7, NOW, "theta")
        assert await g.get(f"scratch-{raw.id}") is None  # appended, never indexed
        report = await cycle(g, bus).run(NOW + 60)
        assert report.accepted and report.source == "deterministic"
        assert report.notes_consumed == 3 and await g.scratch_notes() == []
        text = g.memory_path.read_text()
        assert validate_rewrite(None, text).ok and report.version == version_of(text)
        for note in [*noted, raw]:
            assert f"scratch-{note.id}]" in text
            entry = await g.get(f"scratch-{note.id}")
            assert isinstance(entry, SemanticEntry) and entry.status is Status.ACTIVE
            assert entry.decay_class is DecayClass.STRATEGIC  # promoted: outlives the note
        assert report.indexed == 3  # two ephemeral ones promoted, one missing one indexed
        result = await g.recall("CPI print volume", k=3)
        assert not result.refused and result.hits[0].id == f"scratch-{raw.id}"
        again = await cycle(g, bus).run(NOW + 120)  # nothing new: still valid, nothing lost
        assert again.accepted and again.indexed == 0 and again.notes_consumed == 0

    with_grimoire(cfg, embedder, body, bus)
    rewrites = [e for e in seen if isinstance(e, WorkingMemoryRewritten)]
    assert [(e.accepted, e.notes_consumed) for e in rewrites] == [(True, 3), (True, 0)]


def test_a_collapsing_model_rewrite_is_rejected_and_keeps_file_and_notes(
        cfg: Config, embedder: Embedder) -> None:
    bus, seen = recorder()

    async def collapse(req: ModelRequest) -> str:
        assert req.old_text is not None
        return req.old_text[: len(req.old_text) // 10]

    async def body(g: Grimoire) -> None:
        scratch = scratch_log(g.data_dir)
        for i in range(40):
            scratch.append(f"Position {i}: LP in pool {i} with range {i}-{i + 5}", 0.7,
                           NOW + i, "theta")
        assert (await cycle(g).run(NOW + 100)).accepted
        mature = g.memory_path.read_bytes()
        assert len(mature) > 2000
        notes = [scratch.append("Opened a position on WETH/DAI", 0.7, NOW + 200, "theta")]
        report = await cycle(g, bus, model=collapse).run(NOW + 300)
        assert not report.accepted and report.source == "model"
        assert any("mass drop" in p for p in report.problems)
        assert g.memory_path.read_bytes() == mature
        assert [n.id for n in await g.scratch_notes()] == [n.id for n in notes]
        assert report.notes_pending == 1 and report.notes_consumed == 0

    with_grimoire(cfg, embedder, body)
    assert [(e.accepted, bool(e.problems)) for e in seen
            if isinstance(e, WorkingMemoryRewritten)] == [(False, True)]


def test_a_failing_model_falls_back_to_the_synthesis(cfg: Config, embedder: Embedder) -> None:
    async def broken(req: ModelRequest) -> str:
        raise TimeoutError("model timed out")

    async def good(req: ModelRequest) -> str:
        return req.draft.replace("new golem", "new golem").replace("Mood: new", "Mood: keen")

    async def body(g: Grimoire) -> None:
        await g.note("Why does gas spike at 14:00 UTC?")
        report = await cycle(g, model=broken).run(NOW)
        assert report.accepted and report.source == "deterministic (model failed: TimeoutError)"
        await g.note("Opened a position on WETH/DAI")
        report = await cycle(g, model=good).run(NOW + 60)
        assert report.accepted and report.source == "model"
        assert "Mood: keen" in g.memory_path.read_text()

    with_grimoire(cfg, embedder, body)


def test_a_crash_between_the_write_and_the_consume_is_recovered_exactly_once(
        cfg: Config, embedder: Embedder) -> None:
    """The state a kill leaves after MEMORY.md is committed but before scratch is consumed:
    the next cycle finds the notes already placed, adds nothing twice and consumes them."""

    async def body(g: Grimoire) -> None:
        notes = [await g.note(f"Pool {i} fee tier changed to {i * 5} bp") for i in range(3)]
        wal = scratch_log(g.data_dir).path
        scratch = wal.read_bytes()
        assert (await cycle(g).run(NOW)).notes_consumed == 3
        written = g.memory_path.read_text()
        wal.write_bytes(scratch)  # as if killed before the consume
        report = await cycle(g).run(NOW + 60)
        assert report.accepted and report.notes_consumed == 3 and await g.scratch_notes() == []
        text = g.memory_path.read_text()
        for note in notes:
            assert text.count(f"scratch-{note.id}") == 1
        assert text.replace("00:01:00.000Z", "00:00:00.000Z") == written

    with_grimoire(cfg, embedder, body)


def test_ids_merged_out_of_memory_keep_their_crystals(cfg: Config, embedder: Embedder) -> None:
    """Past ~45 cycles merged pointers drop their oldest ids (at most 16 each); the notes
    behind them stay in the store, promoted, so the kill test's invariant still holds."""

    clock = [NOW]

    async def main() -> list[str]:
        g = await Grimoire.open(cfg, now=lambda: clock[0], embedder=embedder)
        try:
            cyc, ids = cycle(g), []
            for i in range(50):
                clock[0] += 3600
                for k in range(2):
                    note = await g.note(f"note {i}.{k}: pool {i % 7} moved {i * 3 + k} bp")
                    ids.append(note.id)
                assert (await cyc.run(clock[0])).accepted
            return ids
        finally:
            await g.close()

    ids = anyio.run(main, backend_options={"use_uvloop": True})
    text = cfg.data_dir.joinpath("MEMORY.md").read_text()
    gone = [i for i in ids if f"scratch-{i}" not in text]
    assert gone and ids.index(gone[0]) < 20  # the oldest left the file
    check_invariants(cfg, embedder, cfg.data_dir / "MEMORY.md", ids)


HAND_WRITTEN = "# My notes\n\nThe owner is Douglas.\n\n## Pools\n\n- ETH/USDC 0.05% is home\n"


def test_a_hand_written_memory_is_migrated_with_seed_crystals(cfg: Config,
                                                             embedder: Embedder) -> None:
    async def body(g: Grimoire) -> None:
        g.memory_path.parent.mkdir(parents=True, exist_ok=True)
        g.memory_path.write_text(HAND_WRITTEN)
        await g.note("Why does gas spike at 14:00 UTC?")
        report = await cycle(g, model=lambda req: pytest.fail("first cycle is deterministic"),
                             ).run(NOW)
        assert report.accepted and report.migrated and report.source == "deterministic"
        backup = g.memory_path.with_name("MEMORY.md.seed-backup")
        assert backup.read_text() == HAND_WRITTEN
        assert prev_path(g.memory_path).read_text() == HAND_WRITTEN
        wm = parse_memory(g.memory_path.read_text())
        assert wm.missing_sections() == () and wm.unknown_sections() == (SEED_HEADING,)
        result = await g.recall("who is the owner", k=3)
        assert not result.refused and result.hits[0].id.startswith("seed-")

    with_grimoire(cfg, embedder, body)


# -- kill -9 ------------------------------------------------------------------------------

CHILD = """
import os, sys
from pathlib import Path
import anyio
from golem.config import load_config
from golem.consolidation.memory_cycle import WorkingMemoryCycle
from golem.grimoire.grimoire import Grimoire

cfg, mode, tag = load_config(Path(sys.argv[1])), sys.argv[2], sys.argv[3]
clock = [float(sys.argv[4])]

async def main():
    g = await Grimoire.open(cfg, now=lambda: clock[0])
    if mode == "block":
        fifo = sys.argv[5]
        async def model(req):
            Path(fifo + ".computed").write_text(req.draft)
            await anyio.to_thread.run_sync(lambda: open(fifo).read())  # blocks: no writer
            return req.draft
        await WorkingMemoryCycle(g, g.memory_path, None, name="Ada", mandate="M",
                                 model=model).run(clock[0])
        return
    cyc = WorkingMemoryCycle(g, g.memory_path, None, name="Ada", mandate="M")
    print("ready", flush=True)
    i = 0
    while True:
        clock[0] += 3600
        for k in range(2):
            note = await g.note(f"{tag} note {i}.{k}: pool {i % 7} moved {i * 3 + k} bp")
            print("note", note.id, flush=True)
        report = await cyc.run(clock[0])
        print("cycle", report.accepted, report.notes_consumed, flush=True)
        i += 1

anyio.run(main)
"""


def child(cfg_path: Path, mode: str, tag: str, now: float, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(cfg_path), mode, tag, str(now),
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env())


def test_kill_9_after_the_state_is_computed_keeps_old_memory_and_notes(
        tmp_path: Path, cfg: Config, embedder: Embedder) -> None:
    async def seed(g: Grimoire) -> list[str]:
        await g.note("Owner says: never hold more than 10k USDC in one pool")
        assert (await cycle(g).run(NOW)).accepted
        return [(await g.note(f"Pending note {i} about pool {i}")).id for i in range(3)]

    pending = with_grimoire(cfg, embedder, seed)
    before = cfg.data_dir.joinpath("MEMORY.md").read_bytes()
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    proc = child(tmp_path / "golem.toml", "block", "b", NOW + 3600, str(fifo))
    marker = Path(str(fifo) + ".computed")
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.stderr.read() if proc.stderr else ""
    assert all(f"scratch-{i}]" in marker.read_text() for i in pending)  # state computed
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert cfg.data_dir.joinpath("MEMORY.md").read_bytes() == before
    assert [n.id for n in ScratchLog(cfg.data_dir / "memory").read()] == pending


def test_kill_9_at_random_moments_never_tears_memory_nor_loses_a_note(
        tmp_path: Path, cfg: Config, embedder: Embedder) -> None:
    rng = random.Random(int(os.environ.get("KILL_SEED", "6")))
    acked: list[str] = []
    memory = cfg.data_dir / "MEMORY.md"
    cycles_seen = 0
    for round_no in range(3):
        proc = child(tmp_path / "golem.toml", "loop", f"r{round_no}",
                     NOW + round_no * 1_000_000)
        try:
            assert proc.stdout is not None
            while (line := proc.stdout.readline()) and line.strip() != "ready":
                pass  # log lines of the child's start-up
            assert line.strip() == "ready", proc.communicate(timeout=30)
            time.sleep(rng.uniform(0.05, 1.2))
        finally:
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        lines = out.split("\n")
        acked += [ln.split()[1] for ln in lines if ln.startswith("note ")]
        cycles_seen += sum(ln.startswith("cycle True") for ln in lines)
        check_invariants(cfg, embedder, memory, acked)
    assert cycles_seen >= 2  # the kills did land among completed cycles

    async def finish(g: Grimoire) -> None:
        report = await cycle(g).run(NOW + 10_000_000)
        assert report.accepted and await g.scratch_notes() == []

    with_grimoire(cfg, embedder, finish)
    check_invariants(cfg, embedder, memory, acked)


def check_invariants(cfg: Config, embedder: Embedder, memory: Path, acked: list[str]) -> None:
    """MEMORY.md is a whole valid state; every acknowledged note is indexed and is still
    in scratch or was consumed as a crystal that outlives it (promoted to strategic).

    A consumed note's id is in MEMORY.md until pointers merge: a merged pointer keeps at
    most 16 ids (the keywords find the rest), so after ~45 cycles the oldest ids leave
    the file while their crystals stay in the store."""
    text = memory.read_text() if memory.exists() else None
    merged_out = False
    if text is not None:
        result = validate_rewrite(None, text)
        assert result.ok, result.problems
        merged_out = any(len(p.crystal_ids) == 16 for p in parse_memory(text).crystal_pointers())
    scan = ScratchLog(cfg.data_dir / "memory").scan()  # a torn line is an unacknowledged note
    in_scratch = {n.id for n in scan.notes}

    async def indexed(g: Grimoire) -> dict[str, DecayClass]:
        found = {}
        for nid in acked:
            entry = await g.get(f"scratch-{nid}")
            if isinstance(entry, SemanticEntry) and entry.status is Status.ACTIVE:
                found[nid] = entry.decay_class
        return found

    in_store = with_grimoire(cfg, embedder, indexed)
    for nid in acked:
        assert nid in in_store, nid  # indexed at note time, never lost
        if nid in in_scratch:
            continue
        assert in_store[nid] is DecayClass.STRATEGIC, nid  # consumed only once promoted
        assert merged_out or (text is not None and f"scratch-{nid}" in text), nid
