"""Compile the simulated market's Vyper contracts into a checked artifact cache.

Compiling takes seconds, so the daemon only reads the committed JSON cache;
each artifact records its source's sha256 and a stale cache fails loudly.
Refresh it with ``python -m golem.chain.compile``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golem.chain.contracts import CONTRACTS_DIR
from golem.errors import GolemError

ARTIFACTS_DIR = Path(__file__).resolve().parent / "artifacts"
VYPER_VERSION = "0.4.3"
REFRESH_HINT = "run `python -m golem.chain.compile` to refresh the artifact cache"


class ArtifactError(GolemError):
    """The contract artifact cache is missing, unreadable or stale."""


@dataclass(frozen=True)
class Artifact:
    """One compiled contract: what deploying and decoding need."""

    name: str
    abi: tuple[dict[str, Any], ...]
    bytecode: str
    source_sha256: str
    vyper_version: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "abi": list(self.abi),
            "bytecode": self.bytecode,
            "source_sha256": self.source_sha256,
            "vyper_version": self.vyper_version,
        }


def source_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compile_source(path: Path) -> Artifact:
    """Compile one ``.vy`` file with the pinned vyper (imported lazily: slow)."""
    import vyper  # type: ignore[import-untyped]  # noqa: PLC0415

    version = str(vyper.__version__)
    if version != VYPER_VERSION:
        raise ArtifactError(f"vyper {VYPER_VERSION} required, found {version}")
    try:
        out = vyper.compile_code(
            path.read_text(encoding="utf-8"),
            contract_path=path.name,
            output_formats=["abi", "bytecode"],
        )
    except Exception as exc:  # vyper raises many unrelated exception types
        raise ArtifactError(f"cannot compile {path.name}: {exc}") from exc
    return Artifact(
        name=path.stem,
        abi=tuple(out["abi"]),
        bytecode=str(out["bytecode"]),
        source_sha256=source_sha256(path),
        vyper_version=version,
    )


def compile_all(
    source_dir: Path = CONTRACTS_DIR, artifact_dir: Path | None = ARTIFACTS_DIR
) -> dict[str, Artifact]:
    """Compile every source; write ``<name>.json`` into artifact_dir unless None."""
    artifacts = {p.stem: compile_source(p) for p in sorted(source_dir.glob("*.vy"))}
    if artifact_dir is not None:
        artifact_dir.mkdir(parents=True, exist_ok=True)
        for name, artifact in artifacts.items():
            text = json.dumps(artifact.to_json(), indent=1, sort_keys=True) + "\n"
            (artifact_dir / f"{name}.json").write_text(text, encoding="utf-8")
    return artifacts


def _read_artifact(path: Path) -> Artifact:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Artifact(
            name=str(data["name"]),
            abi=tuple(data["abi"]),
            bytecode=str(data["bytecode"]),
            source_sha256=str(data["source_sha256"]),
            vyper_version=str(data["vyper_version"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArtifactError(f"unreadable artifact {path.name} ({exc}); {REFRESH_HINT}") from exc


def load_artifacts(
    source_dir: Path = CONTRACTS_DIR, artifact_dir: Path = ARTIFACTS_DIR
) -> dict[str, Artifact]:
    """Read the committed cache, checking each artifact against its source."""
    artifacts: dict[str, Artifact] = {}
    for source in sorted(source_dir.glob("*.vy")):
        path = artifact_dir / f"{source.stem}.json"
        if not path.exists():
            raise ArtifactError(f"no artifact for {source.name}; {REFRESH_HINT}")
        artifact = _read_artifact(path)
        if artifact.source_sha256 != source_sha256(source):
            raise ArtifactError(f"artifact for {source.name} is stale; {REFRESH_HINT}")
        artifacts[source.stem] = artifact
    return artifacts


if __name__ == "__main__":
    compile_all()
