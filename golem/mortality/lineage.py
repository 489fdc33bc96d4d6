"""The golem's identity across generations: who it is, and whose testament it came from.

Persisted in ``<data_dir>/mortality/lineage.json`` (atomic replace), so a restart keeps
the identity and never re-imports a testament. The id is derived from name, seed and
birth time rather than drawn at random: a simulated run replayed from the same config
gets the same id, and so do its testaments.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from golem.errors import EXIT_CONFIG, GolemError
from golem.mortality.death import read_json, write_json_atomic

LINEAGE_DIR = "mortality"
LINEAGE_FILE = "lineage.json"
LINEAGE_VERSION = 1


class LineageError(GolemError):
    """lineage.json is unreadable, or an inheritance would overwrite another identity."""

    exit_code = EXIT_CONFIG


def lineage_path(data_dir: Path) -> Path:
    return data_dir / LINEAGE_DIR / LINEAGE_FILE


def derive_golem_id(name: str, seed: int, born_at: float) -> str:
    """Stable id: the same name, seed and birth time always give the same golem id."""
    key = f"{name}\x00{seed}\x00{born_at!r}".encode()
    return "g-" + hashlib.sha256(key).hexdigest()[:24]


@dataclass(frozen=True)
class Lineage:
    """One golem's place in its line. ``generation`` 0 is a first golem."""

    golem_id: str
    name: str
    namespace: str
    generation: int
    born_at: float
    parent_testament_id: str | None = None
    parent_golem_id: str | None = None
    parent_namespace: str | None = None
    inherited_at: float | None = None  # set once the parent's testament is imported
    inherited_entries: int = 0

    @classmethod
    def create(cls, *, name: str, namespace: str, seed: int, born_at: float,
               generation: int = 0, parent_testament_id: str | None = None,
               parent_golem_id: str | None = None,
               parent_namespace: str | None = None) -> Lineage:
        if generation < 0:
            raise LineageError(f"lineage: generation must be >= 0, got {generation}")
        if not math.isfinite(born_at):
            raise LineageError(f"lineage: born_at must be finite, got {born_at!r}")
        return cls(golem_id=derive_golem_id(name, seed, born_at), name=name,
                   namespace=namespace, generation=generation, born_at=float(born_at),
                   parent_testament_id=parent_testament_id, parent_golem_id=parent_golem_id,
                   parent_namespace=parent_namespace)

    @property
    def inherited(self) -> bool:
        return self.parent_testament_id is not None and self.inherited_at is not None

    def to_json(self) -> dict[str, Any]:
        return {"version": LINEAGE_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, raw: Any, where: str = LINEAGE_FILE) -> Lineage:
        if not isinstance(raw, dict) or raw.get("version") != LINEAGE_VERSION:
            raise LineageError(f"{where}: not a lineage file of version {LINEAGE_VERSION}")
        try:
            lineage = cls(
                golem_id=str(raw["golem_id"]), name=str(raw["name"]),
                namespace=str(raw["namespace"]), generation=int(raw["generation"]),
                born_at=float(raw["born_at"]),
                parent_testament_id=_opt_str(raw.get("parent_testament_id")),
                parent_golem_id=_opt_str(raw.get("parent_golem_id")),
                parent_namespace=_opt_str(raw.get("parent_namespace")),
                inherited_at=(None if raw.get("inherited_at") is None
                              else float(raw["inherited_at"])),
                inherited_entries=int(raw.get("inherited_entries", 0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise LineageError(f"{where}: bad field ({exc})") from None
        if lineage.generation < 0:
            raise LineageError(f"{where}: generation must be >= 0")
        return lineage

    @staticmethod
    def load(data_dir: Path) -> Lineage | None:
        """The data dir's lineage, or None for a golem that has not been born here yet."""
        path = lineage_path(data_dir)
        raw = read_json(path, LineageError)
        return None if raw is None else Lineage.from_json(raw, str(path))

    def save(self, data_dir: Path) -> Path:
        path = lineage_path(data_dir)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_json_atomic(path, self.to_json())
        return path


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
