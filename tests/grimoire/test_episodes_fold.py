"""The fold's child process: pylance stays out of the golem, failures are our errors,
and the child never outlives the process that asked for the fold."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from golem.grimoire import episodes_fold
from golem.grimoire.episodes import FTS_REFRESH_ROWS, EpisodeStore
from golem.grimoire.episodes_fold import TEXT_INDEX, FoldChild, FoldFailed, FoldSpec
from golem.grimoire.errors import GrimoireError
from golem.grimoire.signature import ModelSignature

from .test_episodes import make_episode, unit

SIG = ModelSignature(model="fold-test-model", version="a" * 64, dim=8, preprocess="b" * 64)
REPO = Path(__file__).resolve().parents[2]

# Written to a file and run by a fresh interpreter: the test process itself has pylance
# loaded (other tests read datasets with it).
WRITE_AND_FOLD = """
import json, sys
import numpy as np
from golem.grimoire import episodes_layout as layout
from golem.grimoire.episodes import FTS_REFRESH_ROWS, EpisodeStore
from golem.grimoire.records import Episode, Pad, Provenance, Source, episode_id
from golem.grimoire.signature import ModelSignature

def episode(i):
    block = f"0x{i:064x}"
    return Episode(id=episode_id(1, block, 0), namespace="main", chain_id=1,
                   block_number=i, block_hash=block, log_index=0, tx_hash=block, tick=i,
                   observed_at=1_700_000_000.0 + i, category="swap", protocol="uniswap_v3",
                   text=f"Swap {i} WETH for USDC", payload={}, curiosity=0.1,
                   importance=None, pad=Pad(0.0, 0.0, 0.0),
                   provenance=Provenance(source=Source.SELF, author="main", process="gamma"))

sig = ModelSignature(**json.loads(sys.argv[2]))
store = EpisodeStore.open(sys.argv[1], sig, index_min_rows=100)
rng = np.random.default_rng(5)
for start in range(0, 400, 50):  # small commits, as Gamma's
    vectors = rng.standard_normal((50, sig.dim)).astype(np.float32)
    store.upsert([episode(i) for i in range(start, start + 50)], vectors)
before = layout.table_stats(store._table, layout.table_dir(store.directory,
                                                           store._meta.table))
report = store.optimize()
text = store._table.index_stats(layout.TEXT_INDEX)
with open("/proc/self/maps") as maps:  # pylance's engine, mapped or not
    mapped = any("/lance/lance" in line for line in maps)
print(json.dumps({"lance_loaded": "lance" in sys.modules or mapped, "before": before,
                  "after": report["after"],
                  "text_unindexed": text.num_unindexed_rows,
                  "found": [e.id for e, _ in store.search_text("Swap 123 WETH", 1, ["main"])],
                  "wanted": episode(123).id}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_a_fold_commits_without_loading_pylance_into_the_golem(tmp_path: Path) -> None:
    script = tmp_path / "fold_once.py"
    script.write_text(WRITE_AND_FOLD)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "ep"), json.dumps(dataclasses.asdict(SIG))],
        capture_output=True, text=True, cwd=REPO, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["lance_loaded"] is False
    assert result["before"]["fragments"] == 8
    assert result["after"]["fragments"] == 1  # the child compacted them
    assert result["after"]["rows"] == 400
    assert result["text_unindexed"] == 0  # ... and folded them into the text index
    assert result["found"] == [result["wanted"]]


def spec(table_dir: Path) -> FoldSpec:
    return FoldSpec(table_dir=str(table_dir), index_cache_mb=8, metadata_cache_mb=8,
                    older_than_s=0.0, max_versions=None, vector_index="vector_idx",
                    fold_vector=True)


def test_a_fold_that_fails_raises_with_the_childs_reason(tmp_path: Path) -> None:
    with pytest.raises(FoldFailed, match=r"not found|does not exist|No such") as caught:
        FoldChild().run(spec(tmp_path / "missing.lance"))
    assert "\n" not in str(caught.value)  # one line, no traceback


def test_the_store_reports_a_failed_fold_as_its_own_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the store: a fold whose child fails (here its interpreter cannot start) is
    a GrimoireError naming the store, and the store stays usable."""
    store = EpisodeStore.open(tmp_path / "ep", SIG, index_min_rows=10_000)
    store.upsert([make_episode(i) for i in range(20)], unit(np.random.default_rng(3), 20, 8))
    with monkeypatch.context() as env:
        env.setenv("PYTHONHOME", str(tmp_path / "no-python-here"))
        with pytest.raises(GrimoireError, match=r"episode store .*: optimize failed: \S"):
            store.optimize()
    assert store.count() == 20
    assert store.optimize()["after"]["rows"] == 20


def test_the_child_refuses_to_fold_for_a_parent_that_is_gone(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-P", episodes_fold.__file__, "1"],
                          input=json.dumps(dataclasses.asdict(spec(tmp_path / "ep.lance"))),
                          capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "the golem that asked for this fold is gone; nothing folded" in done.stderr


KEEPER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE, text=True)
print(child.pid, child.stdout.readline().strip(), flush=True)
time.sleep(120)
"""
CHILD = """
import os, sys, time
sys.path.append({folder!r})
import episodes_fold
episodes_fold._bind_to_parent(os.getppid())
print("armed", flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the death signal is Linux's")
def test_the_child_dies_with_the_golem_and_leaves_sigterm_to_it(tmp_path: Path) -> None:
    """A SIGKILLed golem must not leave a fold writing to its store (a second writer
    once the golem starts again); a SIGTERM for the whole group (systemd's stop) must
    not cut a fold short while the golem's shutdown waits for it."""
    child_code = CHILD.format(folder=str(Path(episodes_fold.__file__).parent))
    keeper = subprocess.Popen([sys.executable, "-c", KEEPER, child_code],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert keeper.stdout is not None
        pid_text, armed = keeper.stdout.readline().split()
        child = int(pid_text)
        assert armed == "armed" and _alive(child)
        os.kill(child, signal.SIGTERM)
        os.kill(child, signal.SIGINT)
        time.sleep(0.3)
        assert _alive(child)
        keeper.send_signal(signal.SIGKILL)
        keeper.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        keeper.kill()
        keeper.wait()
        if keeper.stdout is not None:
            keeper.stdout.close()


def _children() -> set[int]:
    """This process's live child processes (Linux)."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        pids.update(int(p) for p in (task / "children").read_text().split())
    return {pid for pid in pids if _alive(pid)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_child_released_without_a_spec_exits_having_folded_nothing() -> None:
    before = _children()
    child = FoldChild()
    assert len(_children() - before) == 1
    child.release()
    assert _children() == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_prepared_fold_runs_in_the_child_started_for_it(tmp_path: Path) -> None:
    """prepare_fold starts the child only when a fold is due, once; maybe_build_index then
    folds in it (no other child is started) and none is left behind."""
    rng = np.random.default_rng(8)
    store = EpisodeStore.open(tmp_path / "ep", SIG, index_min_rows=300)
    store.upsert([make_episode(i) for i in range(500)], unit(rng, 500, 8))
    assert store.maybe_build_index() is True  # the indexes exist; nothing waits
    assert store.prepare_fold() is False  # no fold due
    store.upsert([make_episode(i) for i in range(500, 500 + FTS_REFRESH_ROWS + 1)],
                 unit(rng, FTS_REFRESH_ROWS + 1, 8))
    before = _children()
    assert store.prepare_fold() is True
    started = _children() - before
    assert len(started) == 1
    assert store.prepare_fold() is False  # one is waiting already
    assert _children() - before == started
    assert store.maybe_build_index() is True
    assert store._table.index_stats(TEXT_INDEX).num_unindexed_rows == 0
    assert _children() == before
    assert store.prepare_fold() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_closing_the_store_lets_a_waiting_child_go(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    store = EpisodeStore.open(tmp_path / "ep", SIG, index_min_rows=300)
    store.upsert([make_episode(i) for i in range(400)], unit(rng, 400, 8))
    store.maybe_build_index()
    store.upsert([make_episode(i) for i in range(400, 1500)], unit(rng, 1100, 8))
    before = _children()
    assert store.prepare_fold() is True
    store.close()
    assert _children() == before


# Run by a fresh interpreter: the fold module imported from a copy, whose file is then
# replaced on disk (a golem upgraded in place while it runs).
UPGRADED_UNDER_IT = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("fold_copy", sys.argv[1])
fold = sys.modules["fold_copy"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fold)
with open(sys.argv[1], "w") as f:
    f.write("import sys; sys.stderr.write('the new file ran'); sys.exit(3)")
try:
    fold.FoldChild().run(fold.FoldSpec(table_dir=sys.argv[2], index_cache_mb=8,
                                       metadata_cache_mb=8, older_than_s=0.0,
                                       max_versions=None, vector_index="v",
                                       fold_vector=True))
    print("folded")
except fold.FoldFailed as exc:
    print(str(exc))
"""


def test_a_golem_upgraded_in_place_folds_with_the_code_it_loaded(tmp_path: Path) -> None:
    copy = tmp_path / "fold_copy.py"
    copy.write_text(Path(episodes_fold.__file__).read_text())
    done = subprocess.run([sys.executable, "-c", UPGRADED_UNDER_IT, str(copy),
                           str(tmp_path / "missing.lance")],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    reason = done.stdout.strip()
    assert "the new file ran" not in reason
    assert re.search(r"not found|does not exist|No such", reason), reason
