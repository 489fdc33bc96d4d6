"""`golem memory ...` and the daemon's Grimoire wiring, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from ..conftest import config_text, run_golem


def write_config(tmp_path: Path, model_dir: Path) -> Path:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "golem-a", "data_dir": "data"},
                                 "grimoire": {"model_dir": str(model_dir)},
                                 "chain": {"mode": "off"},
                                 "logging": {"format": "json", "level": "warning"}}))
    return path


def test_add_search_show_stats_forget(tmp_path: Path, model_dir: Path) -> None:
    config = str(write_config(tmp_path, model_dir))
    empty = run_golem("memory", "search", "anything", "--config", config)
    assert empty.returncode != 0 and "golem memory add" in empty.stderr
    added = run_golem("memory", "add", "Never LP in pools with under $100k TVL",
                      "--type", "constraint", "--importance", "0.9", "--json", "--config", config)
    assert added.returncode == 0, added.stderr
    entry = json.loads(added.stdout)
    assert entry["memory_type"] == "constraint" and entry["importance"] == 0.9
    found = run_golem("memory", "search", "thin low-TVL pools", "--json", "--config", config)
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["refused"] is False
    assert result["hits"][0]["id"] == entry["id"]
    assert result["hits"][0]["uri"].startswith("grimoire://golem-a/warning/")
    assert set(result["hits"][0]["score"]) >= {"semantic", "temporal", "importance",
                                               "emotional", "final"}
    refused = run_golem("memory", "search", "sourdough bread recipe", "--config", config)
    assert refused.returncode == 0 and refused.stdout.startswith("refused:")
    shown = run_golem("memory", "show", entry["id"], "--config", config)
    assert json.loads(shown.stdout)["text"] == "Never LP in pools with under $100k TVL"
    stats = json.loads(run_golem("memory", "stats", "--json", "--config", config).stdout)
    assert stats["namespace"] == "golem-a" and stats["model"]
    bad = run_golem("memory", "add", "x", "--importance", "nan", "--config", config)
    assert bad.returncode == 65 and "importance" in bad.stderr
    gone = run_golem("memory", "forget", entry["id"], "--reason", "test", "--config", config)
    assert gone.returncode == 0, gone.stderr
    after = json.loads(run_golem("memory", "show", entry["id"], "--config", config).stdout)
    assert after["status"] == "pruned"


def test_bad_add_input_is_refused_before_any_store_exists(tmp_path: Path,
                                                         model_dir: Path) -> None:
    config = str(write_config(tmp_path, model_dir))
    data = tmp_path / "data"
    for argv, word in ((["x", "--type", "bogus"], "type"), (["", "--type", "fact"], "text"),
                       (["x", "--decay-class", "forever"], "decay_class"),
                       (["x", "--category", "gossip"], "category"),
                       (["x", "--importance", "2"], "importance")):
        bad = run_golem("memory", "add", *argv, "--config", config)
        assert bad.returncode == 65 and word in bad.stderr, (argv, bad.returncode, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1
    assert not data.exists()  # nothing was created for input that was refused


def test_daemon_opens_the_grimoire_and_registers_delta(tmp_path: Path,
                                                            model_dir: Path) -> None:
    config = str(write_config(tmp_path, model_dir))
    ran = run_golem("run", "--config", config, "--stop-after", "1h")
    assert ran.returncode == 0, ran.stderr
    status = json.loads(run_golem("status", "--config", config, "--json").stdout)
    # mortality first (the death protocol, then vitality), then consolidation, then the
    # calendar jobs (compaction, SQLite upkeep) that the golem clock drives in simulated mode
    assert status["loops"]["delta"]["handlers"] == ["thanatopsis", "vitality", "delta",
                                                    "scheduled-jobs"]
    assert status["loops"]["delta"]["ok"] == 6
    assert (tmp_path / "data" / "grimoire.db").exists()
    assert (tmp_path / "data" / "consolidation" / "consolidation.db").exists()


def test_missing_model_stops_the_daemon_with_the_setup_command(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, tmp_path / "no-model-here"))
    ran = run_golem("run", "--config", config, "--stop-after", "1h")
    assert ran.returncode == 78
    assert "scripts/setup" in ran.stderr
    assert "no-model-here" in ran.stderr
