"""The capture store's one connection shared by the loops' worker threads."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from golem.chain.cursor import CaptureStore
from golem.chain.reorg import BlockWindow


def test_capture_commits_and_journal_writes_from_two_threads_never_collide(
        tmp_path: Path) -> None:
    """Gamma commits its cursor while Theta journals a transaction (a 2-day run failed a
    Theta tick with "cannot start a transaction within a transaction")."""
    store = CaptureStore.open(tmp_path)
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def gamma() -> None:
        start.wait()
        try:
            for i in range(300):
                store.commit(1, BlockWindow(8), i, float(i))
        except BaseException as exc:  # reported below
            errors.append(exc)

    def theta() -> None:
        start.wait()
        try:
            for i in range(300):
                store.append_sim_golem_tx(i, float(i), "raw", bytes([i % 256]))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=gamma), threading.Thread(target=theta)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(store.sim_golem_txs()) == 300
        assert store.load(1, 8)[1] == 299
    finally:
        store.close()


def test_the_hand_off_is_committed_with_the_window_and_old_stores_gain_its_column(
        tmp_path: Path) -> None:
    """A store from before the hand-off and journal heads existed opens with the columns
    added; a commit without a hand-off keeps the last one."""
    conn = sqlite3.connect(tmp_path / "capture.db")
    with conn:
        conn.executescript(
            "CREATE TABLE capture (chain_id INTEGER PRIMARY KEY, window TEXT NOT NULL, "
            "first_block INTEGER NOT NULL, updated_at REAL NOT NULL);"
            "CREATE TABLE sim_steps (seq INTEGER PRIMARY KEY, golem_time REAL NOT NULL, "
            "dt REAL NOT NULL);"
            "INSERT INTO sim_steps (golem_time, dt) VALUES (10.0, 10.0);")
    conn.close()
    store = CaptureStore.open(tmp_path)
    try:
        assert [(s.seq, s.head) for s in store.journal_steps()] == [(1, None)]
        assert store.load_handoff(1) is None
        store.commit(1, BlockWindow(8), 5, 1.0, '{"tape": 1}')
        store.commit(1, BlockWindow(8), 6, 2.0)
        assert store.load_handoff(1) == '{"tape": 1}' and store.load(1, 8)[1] == 6
        store.commit(1, BlockWindow(8), 7, 3.0, '{"tape": 2}')
        assert store.load_handoff(1) == '{"tape": 2}'
    finally:
        store.close()
