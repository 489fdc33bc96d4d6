"""The marks of death (dying, DEAD.json, the operator's request), the journal, the death
reserve in the spend ledger, the webhook, and what `golem run` / `golem status` / `golem
die` make of a dead data dir."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.cli import run_cli
from golem.cognition.errors import BudgetExceeded
from golem.cognition.ledger import RESERVE_PURPOSE, ModelPrice, SpendLedger, TokenUsage
from golem.config import MortalitySection
from golem.mortality.death import (
    DEAD_FILE,
    EXIT_DEAD,
    DataDirDead,
    DeathRecord,
    accepting_new_positions,
    clear_request,
    death_reserve_usd,
    mark_dying,
    pending_request,
    read_death,
    refuse_if_dead,
    request_death,
    write_death,
)
from golem.mortality.death_journal import (
    DeathJournal,
    describe_death,
    notice_owed,
    unfinished_death,
)
from golem.mortality.webhook import post_json
from golem.runtime.lock import DataDirLock
from golem.status import collect_status, render_status
from golem.testing.webhook_receiver import WebhookReceiver

from ..conftest import run_daemon

PRICES = {"strong": ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)}
DAY = 1_800_000_000.0
RECORD = DeathRecord(name="golem-a", cause="operator: enough", died_at=DAY, generation=2,
                     testament_path="/x/testament/t-1.json", testament_id="t-1",
                     reflection_source="offline", settled=True, trigger="operator")


# -- markers ---------------------------------------------------------------------------------

def test_dying_and_dead_stop_new_positions(tmp_path: Path) -> None:
    assert accepting_new_positions(tmp_path)
    mark_dying(tmp_path, "terminal", DAY)
    assert not accepting_new_positions(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    write_death(other, RECORD)
    assert not accepting_new_positions(other)


def test_the_death_record_round_trips_and_refuses_a_restart(tmp_path: Path) -> None:
    refuse_if_dead(tmp_path)  # alive: no error
    write_death(tmp_path, RECORD)
    assert read_death(tmp_path) == RECORD
    assert not list(tmp_path.glob(".*.tmp"))
    with pytest.raises(DataDirDead) as err:
        refuse_if_dead(tmp_path)
    assert err.value.exit_code == EXIT_DEAD
    message = str(err.value)
    assert "died (operator: enough)" in message and "/x/testament/t-1.json" in message
    assert "\n" not in message


def test_a_request_is_kept_until_cleared(tmp_path: Path) -> None:
    assert pending_request(tmp_path) is None
    request_death(tmp_path, "operator: budget spent", DAY)
    assert pending_request(tmp_path) == "operator: budget spent"
    clear_request(tmp_path)
    clear_request(tmp_path)
    assert pending_request(tmp_path) is None


@given(floor=st.floats(0, 10), fraction=st.floats(0, 0.5), budget=st.floats(0.01, 1e6))
def test_the_death_reserve_is_the_larger_of_floor_and_fraction(
        floor: float, fraction: float, budget: float) -> None:
    cfg = MortalitySection(reserve_floor_usd=floor, reserve_fraction=fraction,
                           starting_budget_usd=budget)
    reserve = death_reserve_usd(cfg)
    assert reserve >= floor and reserve >= fraction * budget
    assert reserve in (floor, fraction * budget)


def test_issue_defaults_give_max_of_30_cents_and_2_percent() -> None:
    assert death_reserve_usd(MortalitySection(starting_budget_usd=10)) == 0.30
    assert death_reserve_usd(MortalitySection(starting_budget_usd=100)) == 2.0


# -- journal ---------------------------------------------------------------------------------

def test_the_journal_records_one_death_and_step_states(tmp_path: Path) -> None:
    journal = DeathJournal.open(tmp_path)
    try:
        first = journal.begin("terminal phase", "vitality", DAY)
        again = journal.begin("operator", "operator", DAY + 5)
        assert again == first and first.cause == "terminal phase"
        journal.started("accept", DAY)
        assert unfinished_death(tmp_path) == first
        journal.started("accept", DAY + 1)  # a resume re-runs it
        step = journal.step("accept")
        assert step is not None and step.state == "started" and step.attempts == 2
        journal.done("accept", {"ok": True}, DAY + 2)
        journal.put("model_reply", {"text": "x"}, DAY)
        assert journal.get("model_reply") == {"text": "x"} and journal.get("nope") is None
        assert describe_death(tmp_path) == {
            "state": "dying", "cause": "terminal phase", "trigger": "vitality", "since": DAY,
            "steps_done": ["accept"]}
        journal.finish(DAY + 3)
        assert unfinished_death(tmp_path) is None and not notice_owed(tmp_path)
        journal.started("notify", DAY)
        journal.done("notify", {"delivered": False, "error": "HTTP 503"}, DAY)
        assert notice_owed(tmp_path)
        journal.done("notify", {"delivered": True}, DAY)
        assert not notice_owed(tmp_path)
    finally:
        journal.close()


# -- the reserve channel of the spend ledger --------------------------------------------------

def test_the_reserve_channel_passes_spent_caps_up_to_the_reserve(tmp_path: Path) -> None:
    with SpendLedger(tmp_path / "spend.db", PRICES, daily_cap_usd=0.01,
                     lifetime_cap_usd=0.01) as book:
        book.reserve("strong", 100, 500, now=DAY)  # 0.0003 + 0.0075
        with pytest.raises(BudgetExceeded):
            book.reserve("strong", 1000, 2000, now=DAY, purpose="theta")
        with pytest.raises(BudgetExceeded):  # not opened yet: normal caps apply
            book.reserve("strong", 1000, 2000, now=DAY, purpose=RESERVE_PURPOSE)
        book.open_death_reserve(0.07)
        rid = book.reserve("strong", 1000, 2000, now=DAY, purpose=RESERVE_PURPOSE)  # 0.03375
        book.settle(rid, TokenUsage(input_tokens=1000, output_tokens=1000), now=DAY)  # 0.018
        book.reserve("strong", 1000, 2000, now=DAY, purpose=RESERVE_PURPOSE)  # 0.05175
        with pytest.raises(BudgetExceeded) as err:
            book.reserve("strong", 1000, 2000, now=DAY, purpose=RESERVE_PURPOSE)
        assert err.value.cap == "death_reserve"
        with pytest.raises(BudgetExceeded) as err:  # normal life stays capped
            book.reserve("strong", 10, 10, now=DAY, purpose="theta")
        assert err.value.cap == "daily"


def test_normal_life_never_spends_the_death_reserve(tmp_path: Path) -> None:
    with SpendLedger(tmp_path / "spend.db", PRICES, lifetime_cap_usd=50.0) as book:
        book.limit_life(0.05)  # a $0.35 budget less its $0.30 reserve
        book.limit_life(1.0)  # only ever lowers the cap
        assert book.lifetime_cap_usd == 0.05
        rid = book.reserve("strong", 1000, 2000, now=DAY, purpose="theta")  # 0.03375
        book.settle(rid, TokenUsage(input_tokens=1000, output_tokens=1000), now=DAY)  # 0.018
        with pytest.raises(BudgetExceeded) as err:
            book.reserve("strong", 1000, 2000, now=DAY, purpose="theta")
        assert err.value.cap == "lifetime"
        book.open_death_reserve(0.30)  # the death protocol still has its reserve
        book.reserve("strong", 1000, 2000, now=DAY, purpose=RESERVE_PURPOSE)


# -- webhook ---------------------------------------------------------------------------------

def test_the_webhook_posts_json_and_reports_failures(tmp_path: Path) -> None:
    del tmp_path
    with WebhookReceiver() as hook:
        ok = anyio.run(post_json, hook.url, {"golem": "a", "settled": True}, 2.0)
        assert ok.delivered and ok.status == 200 and hook.delivered == [
            {"golem": "a", "settled": True}]
        hook.fail_next(1, status=500)
        bad = anyio.run(post_json, hook.url, {"golem": "b"}, 2.0)
        assert not bad.delivered and bad.status == 500 and len(hook.delivered) == 1
        hook.hang_next(1, seconds=10)
        start = time.monotonic()
        slow = anyio.run(post_json, hook.url, {"golem": "c"}, 0.3)
        assert not slow.delivered and time.monotonic() - start < 3
    refused = anyio.run(post_json, "http://127.0.0.1:9/hook?token=secret", {}, 1.0)
    assert not refused.delivered and "secret" not in refused.url + refused.error
    assert not anyio.run(post_json, "file:///etc/passwd", {}, 1.0).delivered


# -- the CLI on a dead data dir ---------------------------------------------------------------

def test_golem_run_refuses_a_dead_data_dir(make_config: Any,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path, cfg = make_config(chain={"mode": "off"})
    cfg.data_dir.mkdir()
    write_death(cfg.data_dir, RECORD)
    with pytest.raises(DataDirDead):
        run_daemon(cfg, stop_after=10)
    assert run_cli(["run", "--config", str(path), "--stop-after", "1s"]) == EXIT_DEAD
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "died (operator: enough)" in err[0]
    assert not (cfg.data_dir / "state.db").exists()


def test_status_shows_the_death_record(make_config: Any) -> None:
    _, cfg = make_config(chain={"mode": "off"})
    cfg.data_dir.mkdir()
    write_death(cfg.data_dir, RECORD)
    report = collect_status(cfg)
    assert report["death"]["state"] == "dead" and report["death"]["testament_id"] == "t-1"
    text = render_status(report)
    assert "DEAD" in text and "operator: enough" in text and "t-1" in text
    json.dumps(report, default=str)


def test_golem_die_leaves_a_request_for_a_running_golem(
        make_config: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path, cfg = make_config(chain={"mode": "off"})
    cfg.data_dir.mkdir()
    lock = DataDirLock(cfg.data_dir)  # a daemon holds the data dir
    lock.acquire()
    try:
        assert run_cli(["die", "--reason", "enough", "--config", str(path)]) == 0
    finally:
        lock.release()
    assert pending_request(cfg.data_dir) == "enough"
    assert "next Delta tick" in capsys.readouterr().out
    assert read_death(cfg.data_dir) is None


def test_golem_die_on_a_dead_golem_says_so(make_config: Any,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path, cfg = make_config(chain={"mode": "off"})
    cfg.data_dir.mkdir()
    write_death(cfg.data_dir, RECORD)
    assert run_cli(["die", "--reason", "again", "--config", str(path)]) == 0
    assert "already dead" in capsys.readouterr().out
    assert (cfg.data_dir / DEAD_FILE).exists() and pending_request(cfg.data_dir) is None
