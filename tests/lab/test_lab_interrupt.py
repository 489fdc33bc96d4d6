"""A lab stopped with SIGTERM (or Ctrl-C) stops its running golems and starts no other
life; the same command resumes it."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from ..conftest import REPO, child_env, golem_cmd

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"


@pytest.mark.timeout(180)
def test_sigterm_stops_the_running_life_and_starts_no_other(tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    argv = golem_cmd("lab", "run", "--preset", "smoke", "--life", "2h", "--jobs", "1",
                     "--out", str(lab), "--model-dir", str(MODEL))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 90
        while not list(lab.glob("runs/*/*/run.log")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(lab.glob("runs/*/*/run.log")), "no life started"
        time.sleep(3)  # the first golem is running
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "every running golem was stopped cleanly" in out
    started = sorted(p.parent.relative_to(lab / "runs").as_posix()
                     for p in lab.glob("runs/*/*/run.log"))
    assert len(started) == 1  # one life at a time, and none after the signal
    assert not list(lab.glob("runs/*/*/result.json"))  # the 2-hour life did not finish
