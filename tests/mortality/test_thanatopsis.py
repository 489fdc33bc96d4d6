"""The Thanatopsis protocol end to end: the real Grimoire, the real SDK against the local
Messages server, the real spend ledger, a local webhook receiver, and crash injection at
every step (before and after its action) compared with an uninterrupted death."""
# ruff: noqa: F811 - the embedder fixture is imported from tests/grimoire/conftest.py

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from golem.cognition.model import LEDGER_FILE, ModelCognition
from golem.config import Config, load_config
from golem.events import Event, EventBus
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import (
    EntryType,
    FactKind,
    MemoryType,
    Provenance,
    SemanticEntry,
    Status,
)
from golem.mortality.categories import REFLECTION_CATEGORIES
from golem.mortality.death import (
    DEAD_FILE,
    DeathRecord,
    accepting_new_positions,
    read_death,
)
from golem.mortality.death_journal import DeathJournal, read_journal
from golem.mortality.die import run_protocol
from golem.mortality.thanatopsis import STEPS, Checkpoint, CrashInjected, DeathServices, Settle
from golem.mortality.vault import exporter
from golem.testing.messages_server import MessagesServer
from golem.testing.webhook_receiver import WebhookReceiver

from ..conftest import config_text
from ..grimoire.conftest import MODEL_DIR, embedder  # noqa: F401 - the session fixture

NOW = 1_767_225_600.0
KEY = "sk-ant-test-0123456789abcdefghijklmnop"
CAUSE = "economic vitality reached zero"
REFLECTION = {k: [f"model says {k}"] for k in REFLECTION_CATEGORIES}


@pytest.fixture
def api() -> Iterator[MessagesServer]:
    with MessagesServer() as server:
        yield server


@pytest.fixture
def hook() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as receiver:
        yield receiver


def make_cfg(root: Path, api: MessagesServer | None, hook: WebhookReceiver | None,
             **extra: dict[str, Any]) -> Config:
    root.mkdir(parents=True, exist_ok=True)
    sections: dict[str, dict[str, Any]] = {
        "golem": {"name": "golem-a", "data_dir": "data"},
        "logging": {"format": "json"},
        "grimoire": {"model_dir": str(MODEL_DIR)},
        "chain": {"mode": "off"},
        "mortality": {"webhook_url": hook.url if hook else "", "webhook_timeout_s": 2},
    }
    if api is not None:
        sections["cognition"] = {"provider": "anthropic", "base_url": api.url,
                                 "timeout_s": 5, "max_attempts": 1}
    for name, values in extra.items():
        sections.setdefault(name, {}).update(values)
    (root / "golem.toml").write_text(config_text(sections))
    return load_config(root / "golem.toml")


def entry(i: int, text: str, *, entry_type: EntryType = EntryType.INSIGHT,
          status: Status = Status.ACTIVE, confidence: float = 0.8, process: str = "",
          fact_kind: FactKind | None = None) -> SemanticEntry:
    return SemanticEntry(id=f"e{i:03d}", namespace="golem-a", text=text, entry_type=entry_type,
                         memory_type=MemoryType.FACT, created_at=NOW - 86_400,
                         confidence=confidence, status=status, fact_kind=fact_kind,
                         provenance=Provenance(author="golem-a", process=process))


LIFE = [
    entry(1, "Swaps at pool A move the price by about 0.3 percent per 1k USD.", confidence=0.9),
    entry(2, "Fees at pool B rise after large oracle updates.", confidence=0.7),
    entry(3, "Never add liquidity during an oracle gap: it reverted twice.",
          entry_type=EntryType.ANTI_KNOWLEDGE, fact_kind=FactKind.ANTI_KNOWLEDGE, confidence=0.6),
    entry(4, "Lending utilisation may lead swap volume by an hour.", status=Status.STAGED,
          confidence=0.3),
    entry(5, "Gas spikes precede every liquidation cascade.", status=Status.QUARANTINED,
          confidence=0.4),
    entry(6, "Range orders near the tick boundary earn more.", status=Status.PRUNED,
          process="dream", confidence=0.2),
]


async def seed(cfg: Config, embedder: Embedder) -> None:
    g = await Grimoire.open(cfg, now=lambda: NOW, embedder=embedder)
    try:
        await g.write_entries(LIFE, checked=False)
    finally:
        await g.close()


class Positions:
    """The executor's close_all() at the seam: idempotent, like the real one checking chain
    state (closing what is already closed does nothing)."""

    def __init__(self) -> None:
        self.open = {"swap:WETH/USDC": 10.0, "lend:USDC": 5.0}
        self.calls = 0

    async def close_all(self) -> dict[str, Any]:
        self.calls += 1
        self.open.clear()
        return {"settled": not self.open, "open_positions": len(self.open)}  # chain state


def die(cfg: Config, embedder: Embedder, *, checkpoint: Checkpoint | None = None,
        settle: Settle | None = None, events: EventBus | None = None) -> DeathRecord:
    async def main() -> DeathRecord:
        g = await Grimoire.open(cfg, now=lambda: NOW, embedder=embedder)
        model = (ModelCognition.open(cfg.cognition, KEY, cfg.data_dir / "cognition" / LEDGER_FILE,
                                     g, lambda: NOW)
                 if cfg.cognition.provider == "anthropic" else None)
        try:
            return await run_protocol(DeathServices(cfg, g, lambda: NOW, events, model, settle,
                                                    exporter(cfg), checkpoint), CAUSE, "vitality")
        finally:
            if model is not None:
                await model.aclose()
            await g.close()

    return anyio.run(main, backend_options={"use_uvloop": True})


def crash_at(step: str, where: str) -> Checkpoint:
    def checkpoint(name: str, at: str) -> None:
        if (name, at) == (step, where):
            raise CrashInjected(f"{name} {at}")
    return checkpoint


def final_state(cfg: Config, hook: WebhookReceiver, api: MessagesServer | None) -> dict[str, Any]:
    death, steps = read_journal(cfg.data_dir)
    assert death is not None
    record = read_death(cfg.data_dir)
    assert record is not None
    here = str(cfg.data_dir)

    def norm(value: Any) -> str:  # paths differ between the runs compared
        text = value.decode() if isinstance(value, bytes) else json.dumps(value, sort_keys=True)
        return text.replace(here, "<data_dir>")

    return {
        "death": (death.cause, death.trigger, death.started_at, death.finished_at is not None),
        "steps": norm([(s.name, s.state, {k: v for k, v in (s.result or {}).items()
                                          if k != "attempts"}) for s in steps]),
        "testament": norm(Path(record.testament_path).read_bytes()),
        "dead": norm((cfg.data_dir / DEAD_FILE).read_bytes()),
        "webhook": norm(hook.delivered),
        "model_requests": len(api.requests) if api else 0,
        "testaments": sorted(p.name for p in (cfg.data_dir / "testament").iterdir()),
    }


def test_a_death_settles_reflects_by_model_leaves_a_testament_and_marks_the_dir(
        tmp_path: Path, embedder: Embedder, api: MessagesServer, hook: WebhookReceiver) -> None:
    cfg = make_cfg(tmp_path, api, hook)
    anyio.run(seed, cfg, embedder)
    api.reply_text(json.dumps(REFLECTION))
    positions, seen = Positions(), []
    bus = EventBus(lambda: NOW)
    bus.subscribe(lambda event, record: seen.append(event))
    assert accepting_new_positions(cfg.data_dir)
    record = die(cfg, embedder, settle=positions.close_all, events=bus)

    assert not accepting_new_positions(cfg.data_dir)
    assert positions.open == {} and record.settled
    assert record.reflection_source == "model:claude-sonnet-5"
    assert [p["event"] for p in hook.delivered] == ["dying", "died"]
    died = hook.delivered[1]
    assert {k: died[k] for k in ("golem", "generation", "cause", "testament_id", "settled")} == {
        "golem": "golem-a", "generation": 0, "cause": CAUSE,
        "testament_id": record.testament_id, "settled": True}
    testament = json.loads(Path(record.testament_path).read_text())
    assert testament["reflection_source"] == "model:claude-sonnet-5"
    assert testament["reflection"]["what_worked"] == ["model says what_worked"]
    assert read_death(cfg.data_dir) == record
    _, steps = read_journal(cfg.data_dir)
    assert [s.name for s in steps] == list(STEPS) and {s.state for s in steps} == {"done"}
    kinds = [e.kind for e in seen]
    assert kinds.count("mortality:death_step") == 2 * len(STEPS) and "mortality:died" in kinds
    body = api.requests[0].body
    assert body["model"] == "claude-sonnet-5"
    assert "Never add liquidity during an oracle gap" in body["messages"][0]["content"][0]["text"]
    # paid from the death reserve, booked as such
    conn = sqlite3.connect(cfg.data_dir / "cognition" / LEDGER_FILE)
    assert conn.execute("SELECT purpose, state FROM llm_spend").fetchall() == [
        ("thanatopsis", "settled")]
    conn.close()


def baseline(tmp_path: Path, embedder: Embedder) -> dict[str, Any]:
    with MessagesServer() as api, WebhookReceiver() as hook:
        cfg = make_cfg(tmp_path / "baseline", api, hook)
        anyio.run(seed, cfg, embedder)
        api.reply_text(json.dumps(REFLECTION))
        die(cfg, embedder, settle=Positions().close_all)
        return final_state(cfg, hook, api)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory,
                  embedder: Embedder) -> dict[str, Any]:
    return baseline(tmp_path_factory.mktemp("baseline"), embedder)


@pytest.mark.parametrize(("step", "where"),
                         [(s, w) for s in STEPS for w in ("before", "after")])
def test_a_crash_at_any_step_resumes_to_the_same_end(
        step: str, where: str, tmp_path: Path, embedder: Embedder, api: MessagesServer,
        hook: WebhookReceiver, uninterrupted: dict[str, Any]) -> None:
    cfg = make_cfg(tmp_path, api, hook)
    anyio.run(seed, cfg, embedder)
    api.reply_text(json.dumps(REFLECTION))  # one scripted reply; a second call gets junk
    positions = Positions()
    with pytest.raises(CrashInjected):
        die(cfg, embedder, checkpoint=crash_at(step, where), settle=positions.close_all)
    assert read_death(cfg.data_dir) is None or (step, where) == ("mark_dead", "after")
    assert not accepting_new_positions(cfg.data_dir) or (step, where) == ("accept", "before")
    die(cfg, embedder, settle=positions.close_all)  # a fresh protocol object resumes
    state = final_state(cfg, hook, api)
    assert state == uninterrupted
    assert state["model_requests"] == 1
    assert positions.open == {}


def test_without_a_model_the_reflection_is_offline_and_says_so(
        tmp_path: Path, embedder: Embedder, hook: WebhookReceiver) -> None:
    cfg = make_cfg(tmp_path, None, hook, actions={"enabled": False})
    anyio.run(seed, cfg, embedder)
    record = die(cfg, embedder)
    assert record.reflection_source == "offline" and not record.settled
    _, steps = read_journal(cfg.data_dir)
    by = {s.name: s.result for s in steps}
    assert by["settle"] is not None and "nothing to settle" in by["settle"]["note"]
    cats = by["reflect"]["categories"]  # type: ignore[index]
    assert cats["what_worked"][0].startswith("Swaps at pool A")
    assert any("oracle gap" in x for x in cats["what_failed"])
    assert any("Lending utilisation" in x for x in cats["suspected_unproven"])
    assert any("Gas spikes" in x for x in cats["what_confused_me"])
    assert any("Range orders" in x for x in cats["never_tested"])
    assert by["reflect"]["notes"] == ["no model configured: offline synthesis from the Grimoire"]


@pytest.mark.parametrize("reply", ["I am dying, here are my thoughts.",
                                   json.dumps({"what_worked": ["x"]}),
                                   json.dumps({**REFLECTION, "extra": ["y"]}),
                                   json.dumps({**REFLECTION, "warnings": "not a list"})])
def test_a_malformed_model_reply_falls_back_offline_and_is_recorded(
        reply: str, tmp_path: Path, embedder: Embedder, api: MessagesServer) -> None:
    cfg = make_cfg(tmp_path, api, None)
    anyio.run(seed, cfg, embedder)
    api.reply_text(reply)
    record = die(cfg, embedder)
    assert record.reflection_source == "offline"
    _, steps = read_journal(cfg.data_dir)
    result = next(s.result for s in steps if s.name == "reflect")
    assert result is not None and "malformed" in result["notes"][0]
    assert len(api.requests) == 1


def test_a_failing_model_falls_back_offline_without_a_second_call(
        tmp_path: Path, embedder: Embedder, api: MessagesServer) -> None:
    cfg = make_cfg(tmp_path, api, None)
    anyio.run(seed, cfg, embedder)
    api.fail(500)
    record = die(cfg, embedder)
    assert record.reflection_source == "offline" and len(api.requests) == 1


def test_the_death_reserve_pays_when_the_normal_caps_are_spent(
        tmp_path: Path, embedder: Embedder, api: MessagesServer) -> None:
    cfg = make_cfg(tmp_path, api, None, cognition={"lifetime_cap_usd": 0.000001})
    anyio.run(seed, cfg, embedder)
    api.reply_text(json.dumps(REFLECTION))
    assert die(cfg, embedder).reflection_source == "model:claude-sonnet-5"


def test_beyond_the_death_reserve_the_model_is_refused(
        tmp_path: Path, embedder: Embedder, api: MessagesServer) -> None:
    cfg = make_cfg(tmp_path, api, None, mortality={"reserve_floor_usd": 0.001,
                                                   "reserve_fraction": 0.0})
    anyio.run(seed, cfg, embedder)
    record = die(cfg, embedder)
    assert record.reflection_source == "offline" and api.requests == []
    _, steps = read_journal(cfg.data_dir)
    notes = next(s.result for s in steps if s.name == "reflect")["notes"]  # type: ignore[index]
    assert "death reserve" in notes[0]


def test_an_undelivered_notification_is_retried_on_resume_and_never_blocks_death(
        tmp_path: Path, embedder: Embedder, hook: WebhookReceiver) -> None:
    cfg = make_cfg(tmp_path, None, hook)
    anyio.run(seed, cfg, embedder)
    hook.fail_next(2, status=503)  # the dying notice and the death notice both fail
    record = die(cfg, embedder)
    assert read_death(cfg.data_dir) == record and hook.delivered == []
    die(cfg, embedder)  # resume: only the death notice is owed
    assert [p["event"] for p in hook.delivered] == ["died"]
    die(cfg, embedder)  # delivered: nothing more is sent
    assert len(hook.posts) == 3


def test_events_of_a_resumed_death_show_skipped_steps(
        tmp_path: Path, embedder: Embedder) -> None:
    cfg = make_cfg(tmp_path, None, None)
    anyio.run(seed, cfg, embedder)
    with pytest.raises(CrashInjected):
        die(cfg, embedder, checkpoint=crash_at("testament", "after"))
    seen: list[Event] = []
    bus = EventBus(lambda: NOW)
    bus.subscribe(lambda event, record: seen.append(event))
    die(cfg, embedder, events=bus)
    states = [(e.step, e.state) for e in seen if e.kind == "mortality:death_step"]  # type: ignore[attr-defined]
    assert states[:3] == [("accept", "skipped"), ("settle", "skipped"), ("reflect", "skipped")]
    assert ("testament", "started") in states


def test_the_testament_goes_to_the_vault_when_enabled(tmp_path: Path, embedder: Embedder) -> None:
    cfg = make_cfg(tmp_path, None, None,
                   succession={"vault_enabled": True, "vault_dir": "vault"})
    anyio.run(seed, cfg, embedder)
    with pytest.raises(CrashInjected):
        die(cfg, embedder, checkpoint=crash_at("vault", "after"))
    record = die(cfg, embedder)
    exported = sorted(p.name for p in (tmp_path / "vault").rglob("*.json"))
    assert f"{record.testament_id}.json" in exported
    _, steps = read_journal(cfg.data_dir)
    vault = next(s.result for s in steps if s.name == "vault")
    assert vault is not None and vault["exported"] is True


def test_a_model_call_lost_in_a_crash_is_not_sent_again(
        tmp_path: Path, embedder: Embedder, api: MessagesServer) -> None:
    cfg = make_cfg(tmp_path, api, None)
    anyio.run(seed, cfg, embedder)
    with pytest.raises(CrashInjected):
        die(cfg, embedder, checkpoint=crash_at("reflect", "before"))
    journal = DeathJournal.open(cfg.data_dir)  # as a crash between sending and storing leaves it
    journal.put("model_requested", True, NOW)
    journal.close()
    record = die(cfg, embedder)
    assert record.reflection_source == "offline" and api.requests == []
    _, steps = read_journal(cfg.data_dir)
    notes = next(s.result for s in steps if s.name == "reflect")["notes"]  # type: ignore[index]
    assert "interrupted by a crash; not repeated" in notes[0]
