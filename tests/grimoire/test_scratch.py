"""The scratch buffer WAL: format, validation, torn records, kill -9, consume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.grimoire.errors import InvalidMemory
from golem.grimoire.scratch import (
    HEADER,
    ScratchLog,
    decode_text,
    encode_text,
    make_note,
    parse_line,
    scan_text,
)

from ..conftest import child_env

T0 = 1_773_325_800.0  # 2026-03-12T14:30:00Z


def test_append_writes_one_readable_line_and_reads_back(tmp_path: Path) -> None:
    log = ScratchLog(tmp_path / "wm")
    note = log.append("Owner: never exceed 10k USDC.\nSaid twice.", 0.8, T0 + 0.25, "theta")
    assert (note.at, note.importance, note.source) == (T0 + 0.25, 0.8, "theta")
    text = log.path.read_text()
    assert text == (HEADER + f"- [2026-03-12T14:30:00.250Z] (importance 0.80, theta, #{note.id}) "
                    "Owner: never exceed 10k USDC.\\nSaid twice.\n")
    assert log.read() == [note]
    assert log.path.name == "scratch.md"


def test_notes_keep_order_and_ids_are_content_hashes(tmp_path: Path) -> None:
    log = ScratchLog(tmp_path)
    notes = [log.append(f"note {i}", 0.5, T0 + i, "auto") for i in range(5)]
    assert log.read() == notes
    assert len({n.id for n in notes}) == 5
    again = make_note("note 3", 0.5, T0 + 3, "auto")
    assert again.id == notes[3].id
    assert make_note("note 3", 0.51, T0 + 3, "auto").id != notes[3].id


def test_identical_notes_are_one_note(tmp_path: Path) -> None:
    log = ScratchLog(tmp_path)
    first = log.append("same", 0.5, T0, "theta")
    log.append("same", 0.5, T0, "theta")
    scan = log.scan()
    assert scan.notes == (first,)
    assert [s.reason for s in scan.skipped] == ["duplicate of an earlier note"]


@given(st.text())
def test_text_encoding_round_trips_and_stays_on_one_line(text: str) -> None:
    raw = encode_text(text)
    assert decode_text(raw) == text
    assert len(raw.splitlines()) <= 1 and "\n" not in raw and "\r" not in raw
    raw.encode()  # always valid UTF-8, even for lone surrogates


@given(st.text(min_size=1).filter(str.strip), st.floats(0, 1),
       st.floats(0, 4_102_444_800), st.from_regex(r"[a-z0-9][a-z0-9_.-]{0,31}", fullmatch=True))
def test_note_lines_round_trip_exactly(text: str, imp: float, now: float, src: str) -> None:
    note = make_note(text, imp, now, src)
    assert parse_line(note.line()) == note
    assert scan_text(HEADER + note.line() + "\n").notes == (note,)
    assert len(note.prompt_line().splitlines()) == 1


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"text": ""}, "text is empty"),
    ({"text": " \n\t "}, "text is empty"),
    ({"text": "x" * 8001}, "8001 chars"),
    ({"importance": float("nan")}, "importance"),
    ({"importance": -0.01}, "importance"),
    ({"importance": 1.01}, "importance"),
    ({"importance": True}, "importance"),
    ({"now": float("inf")}, "now"),
    ({"now": -1.0}, "now"),
    ({"source": ""}, "source"),
    ({"source": "Theta"}, "source"),
    ({"source": "a b"}, "source"),
    ({"source": "x" * 33}, "source"),
])
def test_bad_notes_are_refused_and_nothing_is_written(tmp_path: Path, kwargs: dict[str, object],
                                                      match: str) -> None:
    log = ScratchLog(tmp_path)
    args: dict[str, object] = {"text": "fine", "importance": 0.5, "now": T0, "source": "theta"}
    args.update(kwargs)
    with pytest.raises(InvalidMemory, match=match):
        log.append(**args)  # type: ignore[arg-type]
    assert not log.path.exists()


# -- crashes ------------------------------------------------------------------------------

APPEND_THEN_DIE = """
import os, signal, sys
from pathlib import Path
from golem.grimoire.scratch import ScratchLog
log = ScratchLog(Path(sys.argv[1]))
for i in range(int(sys.argv[2])):
    note = log.append(f"note {i}\\nsecond line", (i % 10) / 10, 1773325800 + i, "theta")
    print(note.id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_scratch_notes_survive_a_kill_9_between_append_and_consolidation(tmp_path: Path) -> None:
    n = 25
    proc = subprocess.run([sys.executable, "-c", APPEND_THEN_DIE, str(tmp_path), str(n)],
                          capture_output=True, text=True, timeout=60, env=child_env(),
                          check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    reported = proc.stdout.split()
    assert len(reported) == n
    scan = ScratchLog(tmp_path).scan()
    assert [note.id for note in scan.notes] == reported and scan.skipped == ()
    assert [note.text for note in scan.notes] == [f"note {i}\nsecond line" for i in range(n)]


APPEND_FOREVER = """
import sys
from pathlib import Path
from golem.grimoire.scratch import ScratchLog
log = ScratchLog(Path(sys.argv[1]))
i = 0
while True:
    note = log.append(f"tick {i} " + "y" * (i % 500), 0.5, 1773325800 + i, "gamma")
    print(note.id, flush=True)
    i += 1
"""


def test_a_writer_killed_at_a_random_moment_loses_no_acknowledged_note(tmp_path: Path) -> None:
    with subprocess.Popen([sys.executable, "-c", APPEND_FOREVER, str(tmp_path)],
                          stdout=subprocess.PIPE, text=True, env=child_env()) as proc:
        assert proc.stdout is not None
        acked = [proc.stdout.readline().strip() for _ in range(200)]
        os.kill(proc.pid, signal.SIGKILL)
        acked += proc.stdout.read().split()
    assert proc.returncode == -signal.SIGKILL
    log = ScratchLog(tmp_path)
    scan = log.scan()
    ids = [note.id for note in scan.notes]
    assert ids[: len(acked)] == acked  # every acknowledged note, in order
    assert len(ids) - len(acked) <= 1 and len(scan.skipped) <= 1  # at most the one in flight
    later = log.append("after the crash", 0.9, 1773400000, "theta")
    assert log.read()[-1] == later


def test_a_torn_last_record_is_skipped_and_earlier_notes_are_intact(tmp_path: Path) -> None:
    log = ScratchLog(tmp_path)
    earlier = [log.append(f"earlier {i}", 0.6, T0 + i, "theta") for i in range(2)]
    last = log.append("the last one, cut short by a crash", 0.9, T0 + 9, "theta")
    whole = log.path.read_bytes()
    start = whole.rindex(b"\n", 0, len(whole) - 1) + 1
    for cut in range(start, len(whole)):
        log.path.write_bytes(whole[:cut])
        scan = log.scan()
        if cut == len(whole) - 1:  # only the newline is missing: the record is whole
            assert scan.notes == (*earlier, last) and scan.skipped == ()
        elif cut == start:
            assert scan.notes == tuple(earlier) and scan.skipped == ()
        else:
            assert scan.notes == tuple(earlier), cut
            assert len(scan.skipped) == 1 and scan.skipped[0].torn
            assert scan.skipped[0].line_no == 5
    log.path.write_bytes(whole[: start + 30])
    assert log.read() == earlier
    after = log.append("written after the tear", 0.7, T0 + 20, "theta")
    scan = log.scan()
    assert scan.notes == (*earlier, after)
    assert [(s.line_no, s.torn) for s in scan.skipped] == [(5, False)]


def test_a_damaged_middle_line_costs_only_itself(tmp_path: Path) -> None:
    log = ScratchLog(tmp_path)
    notes = [log.append(f"note {i}", 0.5, T0 + i, "theta") for i in range(3)]
    data = log.path.read_bytes().replace(b"note 1", b"n\xffte 1")
    log.path.write_bytes(data)
    scan = log.scan()
    assert scan.notes == (notes[0], notes[2])
    assert [s.reason for s in scan.skipped] == ["checksum mismatch (torn or edited)"]
    log.path.write_bytes(log.path.read_bytes() + b"stray text\n")
    assert [s.reason for s in log.scan().skipped][-1] == "not a note record"


# -- concurrency and consume --------------------------------------------------------------

def test_concurrent_appends_from_threads_are_all_kept(tmp_path: Path) -> None:
    log = ScratchLog(tmp_path)
    barrier = threading.Barrier(8)

    def worker(w: int) -> None:
        barrier.wait()
        for i in range(40):
            ScratchLog(tmp_path).append(f"w{w} n{i} " + "z" * 300, 0.5, T0 + i, "theta")

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    scan = log.scan()
    assert len(scan.notes) == 320 and scan.skipped == ()


def test_consume_never_loses_a_concurrent_append(tmp_path: Path) -> None:
    log = ScratchLog(tmp_path)
    consumed: list[str] = []
    with subprocess.Popen([sys.executable, "-c", APPEND_THEN_DIE, str(tmp_path), "200"],
                          stdout=subprocess.PIPE, text=True, env=child_env()) as proc:
        while proc.poll() is None:
            ids = [n.id for n in log.read()]
            assert log.consume(ids) == len(ids)
            consumed += ids
        assert proc.stdout is not None
        written = proc.stdout.read().split()
    remaining = [n.id for n in log.read()]
    assert sorted(consumed + remaining) == sorted(written) and len(written) == 200
    assert consumed  # the consumer really raced the writer


def test_consume_by_ids_and_by_time(tmp_path: Path) -> None:
    log = ScratchLog(tmp_path)
    notes = [log.append(f"note {i}", 0.5, T0 + i, "theta") for i in range(6)]
    assert log.consume([notes[1].id, notes[4].id, "0000000000000000"]) == 2
    assert log.read() == [notes[0], notes[2], notes[3], notes[5]]
    assert log.consume(up_to=T0 + 3) == 3
    assert log.read() == [notes[5]]
    before = log.path.read_bytes()
    assert log.consume(["nothing-here"]) == 0
    assert log.path.read_bytes() == before
    assert log.consume(up_to=T0 + 100) == 1
    assert log.read() == [] and log.path.read_text() == HEADER


def test_consume_drops_damaged_lines_and_stale_temps(tmp_path: Path) -> None:
    log = ScratchLog(tmp_path)
    keep = log.append("keep me", 0.5, T0, "theta")
    with log.path.open("ab") as fh:
        fh.write(b"- [2026-03-12T14:30:00.000Z] (importance 0.5")
    (tmp_path / ".scratch.md.tmp-1-abcd").write_text("junk")
    assert log.consume(["none"]) == 0
    assert log.scan().notes == (keep,) and log.scan().skipped == ()
    assert not list(tmp_path.glob(".*.tmp-*"))


def test_consume_argument_checks_and_missing_file(tmp_path: Path) -> None:
    log = ScratchLog(tmp_path)
    assert log.consume(up_to=T0) == 0 and log.read() == []
    assert not log.path.exists()
    with pytest.raises(InvalidMemory, match="either ids or up_to"):
        log.consume()
    with pytest.raises(InvalidMemory, match="either ids or up_to"):
        log.consume(["a"], up_to=T0)
    with pytest.raises(InvalidMemory, match="up_to"):
        log.consume(up_to=float("nan"))


def test_astral_format_characters_round_trip() -> None:
    # U+E0020 (a tag character, category Cf) is escaped with 8 hex digits
    for text in ("\U000e0020", "a\U000e0041b\u200bc", "\U0001f600 ok"):
        assert decode_text(encode_text(text)) == text
        assert "\n" not in encode_text(text)
