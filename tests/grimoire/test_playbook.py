"""PLAYBOOK.md: one writer, numbered snapshots, atomic replacement, diffs."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from golem.grimoire.errors import InvalidMemory, StoreCorrupt
from golem.grimoire.memory_file import WriterBusy
from golem.grimoire.playbook import (
    EXTERNAL_EDIT,
    MAX_PLAYBOOK_CHARS,
    STARTER_PLAYBOOK,
    Playbook,
)

from ..conftest import child_env

T0 = 1_773_325_800.0  # 2026-03-12T14:30:00Z
V1 = "# PLAYBOOK\n\n- Widen the range when realized volatility doubles.\n"
V2 = V1 + "- Skip rebalances while gas is above 50 gwei.\n"
V3 = V2.replace("doubles", "triples")


def test_starter_content_when_none_exists_and_nothing_is_written(tmp_path: Path) -> None:
    pb = Playbook(tmp_path / "gr")
    assert pb.read() == STARTER_PLAYBOOK
    assert "Machine-maintained" in STARTER_PLAYBOOK
    assert pb.history() == []
    assert not (tmp_path / "gr").exists()


def test_rewrites_are_numbered_snapshots_with_reason_and_time(tmp_path: Path) -> None:
    pb = Playbook(tmp_path)
    assert pb.rewrite(V1, "first heuristics", T0) == 1
    assert pb.rewrite(V2, "curator cycle 50", T0 + 600.5) == 2
    assert pb.rewrite(V3, "dream: volatility replay", T0 + 1200) == 3
    assert pb.read() == V3 == pb.path.read_text()
    assert [pb.snapshot(n) for n in (1, 2, 3)] == [V1, V2, V3]
    history = pb.history()
    assert [(h.number, h.reason, h.at, h.chars) for h in history] == [
        (1, "first heuristics", T0, len(V1)),
        (2, "curator cycle 50", T0 + 600.5, len(V2)),
        (3, "dream: volatility replay", T0 + 1200, len(V3)),
    ]
    assert [h.path.name for h in history] == ["0001.md", "0002.md", "0003.md"]
    assert (tmp_path / "playbook" / "0002.md").read_text().split("\n")[0] == (
        "<!-- playbook snapshot 0002 | golem time 2026-03-12T14:40:00.500Z "
        "| reason: curator cycle 50 -->")


def test_numbering_continues_across_instances_and_past_9999(tmp_path: Path) -> None:
    Playbook(tmp_path).rewrite(V1, "one", T0)
    assert Playbook(tmp_path).rewrite(V2, "two", T0) == 2
    pb = Playbook(tmp_path)
    header = "<!-- playbook snapshot 9999 | golem time 2026-03-12T14:30:00.000Z | reason: r -->"
    (pb.snapshot_dir / "9999.md").write_text(f"{header}\n{V2}")
    assert pb.rewrite(V3, "three", T0) == 10000
    assert pb.snapshot(10000) == V3 and (pb.snapshot_dir / "10000.md").is_file()


def test_diff_shows_the_change(tmp_path: Path) -> None:
    pb = Playbook(tmp_path)
    pb.rewrite(V1, "a", T0)
    pb.rewrite(V2, "b", T0)
    pb.rewrite(V3, "c", T0)
    diff = pb.diff(1, 3)
    assert diff.startswith("--- playbook/0001.md\n+++ playbook/0003.md\n")
    assert "-- Widen the range when realized volatility doubles.\n" in diff
    assert "+- Widen the range when realized volatility triples.\n" in diff
    assert "+- Skip rebalances while gas is above 50 gwei.\n" in diff
    assert pb.diff(2, 2) == ""


def test_a_concurrent_writer_is_refused_at_once(tmp_path: Path) -> None:
    pb = Playbook(tmp_path)
    pb.rewrite(V1, "a", T0)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys; f = open(sys.argv[1], 'r+');"
         "fcntl.flock(f, fcntl.LOCK_EX); f.write(str(os.getpid())); f.flush();"
         "print('held', flush=True); sys.stdin.read()", str(pb.lock_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(WriterBusy, match=f"pid {holder.pid}"):
            pb.rewrite(V2, "b", T0)
    finally:
        holder.communicate("", timeout=10)
    assert pb.read() == V1 and [h.number for h in pb.history()] == [1]
    assert pb.rewrite(V2, "b", T0) == 2  # the lock died with its holder


def test_two_writers_in_one_process_never_interleave(tmp_path: Path) -> None:
    barrier = threading.Barrier(4)
    outcomes: list[int | str] = []

    def writer(i: int) -> None:
        barrier.wait()
        for j in range(10):
            try:
                outcomes.append(Playbook(tmp_path).rewrite(f"# v{i}.{j}\n" * 2000, f"w{i}", T0))
            except WriterBusy:
                outcomes.append("busy")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    numbers = sorted(o for o in outcomes if isinstance(o, int))
    pb = Playbook(tmp_path)
    assert numbers == list(range(1, len(numbers) + 1)) == [h.number for h in pb.history()]
    assert pb.read() == pb.snapshot(numbers[-1])
    assert len(outcomes) == 40


def test_readers_never_see_a_partial_playbook(tmp_path: Path) -> None:
    pb = Playbook(tmp_path)
    versions = [("# A\n" + "a" * 200_000 + "\n"), ("# B\n" + "b" * 150_000 + "\n")]
    pb.rewrite(versions[0], "start", T0)
    seen: set[str] = set()
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            seen.add(pb.path.read_text())

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(40):
            pb.rewrite(versions[i % 2 - 1], f"swap {i}", T0 + i)
    finally:
        done.set()
        t.join()
    assert seen <= set(versions) and len(seen) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [".PLAYBOOK.md.lock", "PLAYBOOK.md",
                                                          "playbook"]


def test_temp_files_of_a_killed_writer_are_ignored_and_cleaned(tmp_path: Path) -> None:
    pb = Playbook(tmp_path)
    pb.rewrite(V1, "a", T0)
    (tmp_path / ".PLAYBOOK.md.tmp-1-dead").write_text("half")
    (pb.snapshot_dir / ".0002.md.tmp-1-dead").write_text("half")
    assert pb.read() == V1 and [h.number for h in pb.history()] == [1]
    assert pb.rewrite(V2, "b", T0) == 2
    assert not list(tmp_path.rglob(".*.tmp-*"))


def test_a_hand_edit_is_kept_as_a_snapshot_before_the_next_rewrite(tmp_path: Path) -> None:
    pb = Playbook(tmp_path)
    pb.rewrite(V1, "a", T0)
    edited = V1 + "- Owner: never touch pools under $1M TVL.\n"
    pb.path.write_text(edited)
    assert pb.read() == edited
    assert pb.rewrite(V2, "curator", T0 + 60) == 3
    assert [(h.number, h.reason) for h in pb.history()] == [
        (1, "a"), (2, EXTERNAL_EDIT), (3, "curator")]
    assert pb.snapshot(2) == edited


def test_a_hand_written_playbook_is_kept_before_the_first_rewrite(tmp_path: Path) -> None:
    pb = Playbook(tmp_path)
    pb.path.write_text("# my own rules\n")
    assert pb.rewrite(V1, "first", T0) == 2
    assert pb.snapshot(1) == "# my own rules\n" and pb.snapshot(2) == V1


def test_an_interrupted_rewrite_is_superseded_without_a_false_hand_edit(tmp_path: Path) -> None:
    pb = Playbook(tmp_path)
    pb.rewrite(V1, "a", T0)
    pb.rewrite(V2, "b", T0)
    pb.path.write_text(V1)  # as if killed after snapshot 2 but before replacing PLAYBOOK.md
    assert pb.rewrite(V3, "c", T0) == 3
    assert [h.reason for h in pb.history()] == ["a", "b", "c"]


def test_read_falls_back_to_the_latest_snapshot_when_the_file_is_gone(tmp_path: Path) -> None:
    pb = Playbook(tmp_path)
    pb.rewrite(V1, "a", T0)
    pb.rewrite(V2, "b", T0)
    pb.path.unlink()
    assert pb.read() == V2
    assert pb.rewrite(V3, "c", T0) == 3


@pytest.mark.parametrize(("text", "reason", "now", "match"), [
    ("", "r", T0, "text is empty"),
    ("  \n", "r", T0, "text is empty"),
    ("x" * (MAX_PLAYBOOK_CHARS + 1), "r", T0, "max"),
    ("\ud800", "r", T0, "UTF-8"),
    (V1, "", T0, "reason"),
    (V1, "two\nlines", T0, "reason"),
    (V1, "sneaky --> end", T0, "reason"),
    (V1, "x" * 201, T0, "reason"),
    (V1, "r", float("nan"), "now"),
    (V1, "r", -5.0, "now"),
])
def test_bad_rewrites_are_refused_and_nothing_is_written(tmp_path: Path, text: str, reason: str,
                                                         now: float, match: str) -> None:
    pb = Playbook(tmp_path)
    with pytest.raises(InvalidMemory, match=match):
        pb.rewrite(text, reason, now)
    assert list(tmp_path.iterdir()) == []


def test_missing_or_corrupt_snapshots_are_clear_errors(tmp_path: Path) -> None:
    pb = Playbook(tmp_path)
    with pytest.raises(InvalidMemory, match="none yet"):
        pb.snapshot(1)
    pb.rewrite(V1, "a", T0)
    with pytest.raises(InvalidMemory, match=r"no playbook snapshot 7 \(snapshots: 1..1\)"):
        pb.diff(1, 7)
    (pb.snapshot_dir / "0001.md").write_text(V1)  # header lost
    with pytest.raises(StoreCorrupt, match=r"0001\.md: not a playbook snapshot"):
        pb.history()
