"""The capture store's one connection shared by the loops' worker threads."""

from __future__ import annotations

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
