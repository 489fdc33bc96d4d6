"""The marks death leaves in a data dir: "dying" (no new positions), a pending operator
request, and DEAD.json (the death record that makes `golem run` refuse).

Plain JSON files written atomically (temp file, fsync, rename, fsync of the directory),
so a reader never sees half a record and a crash leaves either the old file or the new.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from golem.config import MortalitySection
from golem.errors import GolemError
from golem.grimoire.memory_file import atomic_write
from golem.mortality import vitality

MORTALITY_DIR = "mortality"
DEAD_FILE = "DEAD.json"
DYING_FILE = "dying.json"
REQUEST_FILE = "die_request.json"
# sysexits EX_UNAVAILABLE: the golem is gone; systemd must not restart it.
EXIT_DEAD = 69


class DataDirDead(GolemError):
    """`golem run` on a data dir whose golem has died."""

    exit_code = EXIT_DEAD


@dataclass(frozen=True)
class DeathRecord:
    """What DEAD.json holds: enough for an operator and a successor to find the legacy."""

    name: str
    cause: str
    died_at: float
    generation: int
    testament_path: str
    testament_id: str
    reflection_source: str
    settled: bool
    trigger: str = ""


def death_reserve_usd(cfg: MortalitySection) -> float:
    """max(floor, fraction x starting budget): ring-fenced for the death protocol."""
    return vitality.death_reserve_usd(cfg.starting_budget_usd, cfg.reserve_floor_usd,
                                      cfg.reserve_fraction)


def life_spend_limit_usd(cfg: MortalitySection) -> float | None:
    """What normal life may spend on models: the starting budget less the death reserve
    (None when mortality is off: nothing is ring-fenced)."""
    if not cfg.enabled:
        return None
    return cfg.starting_budget_usd - death_reserve_usd(cfg)


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())


def read_json(path: Path, error: type[GolemError] = GolemError) -> dict[str, Any] | None:
    """A small JSON state file (None when absent); `error` when unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise error(f"{path} is unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise error(f"{path} is not a JSON object")
    return data


def read_death(data_dir: Path) -> DeathRecord | None:
    data = read_json(data_dir / DEAD_FILE)
    if data is None:
        return None
    try:
        return DeathRecord(**data)
    except TypeError as exc:
        raise GolemError(f"{data_dir / DEAD_FILE} is not a death record: {exc}") from None


def write_death(data_dir: Path, record: DeathRecord) -> None:
    write_json_atomic(data_dir / DEAD_FILE, asdict(record))


def refuse_if_dead(data_dir: Path) -> None:
    """Raise DataDirDead with the one-line explanation when the data dir's golem died."""
    record = read_death(data_dir)
    if record is not None:
        raise DataDirDead(
            f"the golem of data dir {data_dir} died ({record.cause}) at golem time "
            f"{record.died_at:.0f}, generation {record.generation}; its testament is "
            f"{record.testament_path}. Start a successor from it with a new data dir "
            "(golem run --inherit)")


def mark_dying(data_dir: Path, cause: str, since: float) -> None:
    write_json_atomic(data_dir / MORTALITY_DIR / DYING_FILE, {"cause": cause, "since": since})


def dying(data_dir: Path) -> dict[str, Any] | None:
    return read_json(data_dir / MORTALITY_DIR / DYING_FILE)


def accepting_new_positions(data_dir: Path) -> bool:
    """False from Phase 0 Acceptance on: only risk-reducing actions may pass.

    Two stats per call; cheap enough for every Theta tick and every execution.
    """
    return not ((data_dir / MORTALITY_DIR / DYING_FILE).exists()
                or (data_dir / DEAD_FILE).exists())


def request_death(data_dir: Path, reason: str, requested_at: float) -> Path:
    """The operator's request to a running daemon; its next Delta tick takes it."""
    path = data_dir / MORTALITY_DIR / REQUEST_FILE
    write_json_atomic(path, {"reason": reason, "requested_at": requested_at})
    return path


def pending_request(data_dir: Path) -> str | None:
    """The reason of a pending operator request, or None (kept until death finishes)."""
    data = read_json(data_dir / MORTALITY_DIR / REQUEST_FILE)
    if data is None:
        return None
    reason = data.get("reason")
    return reason if isinstance(reason, str) and reason else "operator request"


def clear_request(data_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (data_dir / MORTALITY_DIR / REQUEST_FILE).unlink()
