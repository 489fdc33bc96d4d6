"""The Thanatopsis protocol: Acceptance, Settle, Reflect, Legacy, then the data dir is dead.

Every step is journalled "started" before it runs and "done" with its result after it
(death_journal.py). A resumed protocol skips done steps and re-runs a started one
idempotently: the "dying" marker and DEAD.json are atomic rewrites, ``settle`` checks
chain state itself, the model's reply is stored before it is used (and the model is
never asked twice: a request marked sent without a stored reply falls back offline),
the testament is rebuilt only if its file is missing, a webhook already delivered is
not sent again. ``checkpoint(step, "before" | "after")`` is called around each step's
action (after "started" is journalled, before "done" is) for logging and for tests
that inject crashes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import structlog

from golem.actions.opening import Settle
from golem.cognition.errors import CognitionError
from golem.cognition.ledger import RESERVE_PURPOSE
from golem.cognition.tiers import Tier
from golem.config import Config
from golem.errors import GolemError
from golem.events import DeathProtocolStep, EventBus, GolemDied
from golem.grimoire.grimoire import Grimoire
from golem.mortality import reflection as rf
from golem.mortality.death import (
    DeathRecord,
    clear_request,
    death_reserve_usd,
    mark_dying,
    write_death,
)
from golem.mortality.death_journal import Death, DeathJournal
from golem.mortality.lineage import Lineage
from golem.mortality.webhook import post_json

if TYPE_CHECKING:
    from golem.cognition.model import ModelCognition

log = structlog.get_logger("golem.mortality")

STEPS = ("accept", "settle", "reflect", "testament", "vault", "notify", "mark_dead")
SETTLE_ATTEMPTS = 3  # then death goes on, recording what was left unsettled
NOTIFY_ATTEMPTS = 5  # resumes that retry an undelivered notification

Checkpoint = Callable[[str, str], None]
VaultExport = Callable[[Path], Awaitable[str]]


class CrashInjected(Exception):
    """Raised by a test's checkpoint to stop the protocol as a crash would."""


@dataclass
class DeathServices:
    """What the protocol works with; everything optional is honestly reported when absent."""

    config: Config
    grimoire: Grimoire
    now: Callable[[], float]
    events: EventBus | None = None
    model: ModelCognition | None = None
    settle: Settle | None = None  # the executor's close_all(); None: nothing to settle
    vault_export: VaultExport | None = None  # H4's vault export of a testament file
    checkpoint: Checkpoint | None = None
    model_timeout_s: float = 180.0
    model_max_tokens: int = 2_000


class Thanatopsis:
    def __init__(self, services: DeathServices, journal: DeathJournal) -> None:
        self.s, self.journal = services, journal
        self.data_dir = services.config.data_dir

    async def run(self, cause: str, trigger: str) -> DeathRecord:
        """Run (or resume) the whole protocol; returns the death record."""
        death = await self._db(self.journal.begin, cause, trigger, self.s.now())
        log.warning("thanatopsis", cause=death.cause, trigger=death.trigger,
                    resumed=death.cause != cause or death.trigger != trigger)
        for name in STEPS:
            await self._step(name, death)
        return await self._record(death)

    async def _step(self, name: str, death: Death) -> None:
        row = await self._db(self.journal.step, name)
        if row is not None and row.state == "done" and not self._retry_notify(name, row.result):
            self._emit(DeathProtocolStep(name, "skipped", death.cause))
            return
        await self._db(self.journal.started, name, self.s.now())
        self._emit(DeathProtocolStep(name, "started", death.cause))
        self._checkpoint(name, "before")
        result = await getattr(self, f"_{name}")(death)
        self._checkpoint(name, "after")
        await self._db(self.journal.done, name, result, self.s.now())
        self._emit(DeathProtocolStep(name, "done", death.cause, _brief(result)))

    def _retry_notify(self, name: str, result: dict[str, Any] | None) -> bool:
        return (name == "notify" and result is not None and not result.get("delivered")
                and bool(self.s.config.mortality.webhook_url)
                and int(result.get("attempts", 0)) < NOTIFY_ATTEMPTS)

    # -- Phase 0: acceptance ---------------------------------------------------------------
    async def _accept(self, death: Death) -> dict[str, Any]:
        await anyio.to_thread.run_sync(mark_dying, self.data_dir, death.cause, death.started_at)
        notice = await self._post_once("dying_notice", {
            "event": "dying", "golem": self.s.config.golem.name, "cause": death.cause,
            "since": death.started_at, "generation": self._lineage(death).generation})
        return {"accepting_new_positions": False, "dying_notice": notice}

    # -- Phase I: settle -------------------------------------------------------------------
    async def _settle(self, death: Death) -> dict[str, Any]:
        del death
        if self.s.settle is None:
            return {"settled": False, "note": "nothing to settle: actions disabled, dry run or "
                                              "no executor in this process"}
        try:
            detail = await self.s.settle()
        except (GolemError, OSError) as exc:
            row = await self._db(self.journal.step, "settle")
            if row is not None and row.attempts < SETTLE_ATTEMPTS:
                raise  # retried by the next resume; side effects are checked on chain
            log.error("settle failed for good; dying with positions open", error=str(exc))
            return {"settled": False, "error": f"{type(exc).__name__}: {exc}"}
        return {"settled": bool(detail.get("settled", True)), "detail": detail}

    # -- Phase II: reflect -----------------------------------------------------------------
    async def _reflect(self, death: Death) -> dict[str, Any]:
        ev = await rf.gather(self.s.grimoire, self.data_dir, death.cause)
        cats, source, notes = rf.offline_reflection(ev), rf.OFFLINE, []
        reply = await self._model_reply(ev)
        model = self.s.model
        if model is None:
            notes.append("no model configured: offline synthesis from the Grimoire")
        elif reply is None:
            notes.append("the model call was interrupted by a crash; not repeated (offline)")
        elif "error" in reply:
            notes.append(f"model failed ({reply['error']}): offline synthesis")
        else:
            try:
                cats, source = rf.parse(str(reply["text"])), f"model:{reply['model']}"
            except rf.MalformedReflection as exc:
                notes.append(f"model reply malformed ({exc}): offline synthesis")
        header = (f"# Death reflection of {self.s.config.golem.name}\n\nCause: {death.cause}."
                  f" Source: {source}.")
        return {"source": source, "categories": cats, "notes": notes,
                "text": rf.render(cats, header=header),
                "cost_usd": float(reply.get("cost_usd", 0.0)) if reply else 0.0}

    async def _model_reply(self, ev: rf.Evidence) -> dict[str, Any] | None:
        """The stored reply, or one new call when none was ever sent (None: sent, lost)."""
        model = self.s.model
        if model is None:
            return None
        stored: dict[str, Any] | None = await self._db(self.journal.get, "model_reply")
        if stored is not None or await self._db(self.journal.get, "model_requested"):
            return stored
        await self._db(self.journal.put, "model_requested", True, self.s.now())
        model.ledger.open_death_reserve(death_reserve_usd(self.s.config.mortality))
        try:
            with anyio.fail_after(self.s.model_timeout_s):
                written = await model.write(Tier.T2, system=rf.SYSTEM, user=rf.prompt(ev),
                                            purpose=RESERVE_PURPOSE,
                                            max_tokens=self.s.model_max_tokens)
            stored = {"text": written.text, "model": written.model,
                      "cost_usd": written.cost_usd, "truncated": written.truncated}
        except (CognitionError, TimeoutError) as exc:
            stored = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        await self._db(self.journal.put, "model_reply", stored, self.s.now())
        return stored

    # -- Phase III: legacy -----------------------------------------------------------------
    async def _testament(self, death: Death) -> dict[str, Any]:
        from golem.mortality.testament import (  # noqa: PLC0415 - only a dying golem needs it
            build_testament,
            write_testament,
        )

        stored: dict[str, Any] | None = await self._db(self.journal.get, "testament")
        if stored is not None and await anyio.Path(stored["path"]).exists():
            return stored
        reflect = await self._result("reflect")
        lineage, cfg = self._lineage(death), self.s.config.mortality
        testament = await build_testament(
            self.s.grimoire, lineage=lineage, cause=death.cause, died_at=death.started_at,
            reflection=reflect["categories"], reflection_text=reflect["text"],
            reflection_source=reflect["source"],
            playbook_md=_read(self.s.grimoire.playbook_path),
            memory_md=_read(self.s.grimoire.memory_path),
            min_confidence=cfg.testament_min_confidence, max_entries=cfg.testament_max_entries)
        path = self.data_dir / "testament" / f"{testament.testament_id}.json"
        stored = {"testament_id": testament.testament_id, "path": str(path),
                  "generation": lineage.generation, "entries": len(testament.entries)}
        await self._db(self.journal.put, "testament", stored, self.s.now())
        await anyio.to_thread.run_sync(write_testament, path, testament)
        return stored

    async def _vault(self, death: Death) -> dict[str, Any]:
        del death
        if not self.s.config.succession.vault_enabled:
            return {"exported": False, "note": "vault disabled"}
        if self.s.vault_export is None:
            return {"exported": False, "note": "vault enabled but no exporter wired"}
        where = await self.s.vault_export(Path((await self._result("testament"))["path"]))
        return {"exported": True, "where": where}

    async def _notify(self, death: Death) -> dict[str, Any]:
        record = await self._record(death)
        payload = {"event": "died", "golem": record.name, "generation": record.generation,
                   "cause": record.cause, "died_at": record.died_at,
                   "testament_path": record.testament_path, "testament_id": record.testament_id,
                   "reflection_source": record.reflection_source, "settled": record.settled}
        row = await self._db(self.journal.step, "notify")
        result = await self._post_once("death_notice", payload)
        return {**result, "attempts": row.attempts if row else 1}

    async def _mark_dead(self, death: Death) -> dict[str, Any]:
        record = await self._record(death)
        await anyio.to_thread.run_sync(write_death, self.data_dir, record)
        await anyio.to_thread.run_sync(clear_request, self.data_dir)
        await self._db(self.journal.finish, self.s.now())
        self._emit(GolemDied(record.cause, record.generation, record.testament_id,
                             record.testament_path, record.reflection_source, record.settled))
        log.warning("golem died", **asdict(record))
        return asdict(record)

    # -- helpers ---------------------------------------------------------------------------
    async def _post_once(self, key: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST unless already delivered (recorded in the journal right after a 2xx)."""
        url = self.s.config.mortality.webhook_url
        if not url:
            log.warning("no webhook configured; the notice is logged only", notice=payload)
            return {"delivered": False, "note": "no webhook_url configured"}
        if await self._db(self.journal.get, key):
            return {"delivered": True}
        delivery = await post_json(url, payload, self.s.config.mortality.webhook_timeout_s)
        if delivery.delivered:
            await self._db(self.journal.put, key, True, self.s.now())
            return {"delivered": True}
        log.error("webhook not delivered; retried on resume", url=delivery.url,
                  error=delivery.error)
        return {"delivered": False, "error": delivery.error}

    async def _record(self, death: Death) -> DeathRecord:
        steps = {s.name: s.result or {} for s in await self._db(self.journal.steps)}
        testament = steps.get("testament", {})
        return DeathRecord(
            name=self.s.config.golem.name, cause=death.cause, died_at=death.started_at,
            generation=int(testament.get("generation", self._lineage(death).generation)),
            testament_path=str(testament.get("path", "")),
            testament_id=str(testament.get("testament_id", "")),
            reflection_source=str(steps.get("reflect", {}).get("source", "")),
            settled=bool(steps.get("settle", {}).get("settled", False)), trigger=death.trigger)

    def _lineage(self, death: Death) -> Lineage:
        cfg = self.s.config
        return Lineage.load(self.data_dir) or Lineage.create(
            name=cfg.golem.name, namespace=self.s.grimoire.namespace, seed=cfg.golem.seed,
            born_at=death.started_at)

    async def _result(self, name: str) -> dict[str, Any]:
        row = await self._db(self.journal.step, name)
        if row is None or row.result is None:
            raise GolemError(f"thanatopsis: step {name} has no recorded result")
        return dict(row.result)

    def _checkpoint(self, name: str, where: str) -> None:
        log.info("thanatopsis step", step=name, at=where)
        if self.s.checkpoint is not None:
            self.s.checkpoint(name, where)

    def _emit(self, event: DeathProtocolStep | GolemDied) -> None:
        if self.s.events is not None:
            self.s.events.emit(event)

    async def _db(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if isinstance(v, str | int | float | bool)}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
