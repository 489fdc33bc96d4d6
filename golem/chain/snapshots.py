"""Snapshots of the simulated market: files that let a restart skip most of the journal.

A snapshot is the whole simulated chain at one point between two market steps, taken
right after a revm compaction (so a chain rebuilt from it has the same cold state, and
the same gas, as the chain that kept running): the EVM's state and head block
(`RevmEvm.snapshot`), the market driver's state (`MarketSimulator.state`), the source's
own (steps run, wallets funded, the last step's golem time) and the journal position it
stands for (the last market step's and golem transaction's row numbers in
data/chain/capture.db).

Files: ``data/chain/snapshots/market-<steps run, 10 digits>.snap``, the newest KEEP kept.
Each is one header line ``golem-market-snapshot <format> <sha256 of the rest>`` and then
the zlib-compressed JSON. Written atomically: a temporary file in the same folder, fsync,
rename, fsync of the folder; a crash leaves the old set whole (and perhaps a ``.tmp``
file that the next write removes). A file whose checksum or format does not match is
not a snapshot: `load_newest` passes over it, and `golem check` reports it.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

SNAPSHOT_DIR = "snapshots"
FORMAT = 1
KEEP = 3
_MAGIC = b"golem-market-snapshot"
_PREFIX, _SUFFIX = "market-", ".snap"


class BadSnapshot(Exception):
    """A snapshot file that cannot be read back as it was written."""


def snapshot_dir(chain_dir: Path) -> Path:
    return chain_dir / SNAPSHOT_DIR


def snapshot_files(chain_dir: Path) -> list[Path]:
    """The snapshot files of a chain folder, newest (most steps) first."""
    folder = snapshot_dir(chain_dir)
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.name.startswith(_PREFIX)
             and p.name.endswith(_SUFFIX) and p.name[len(_PREFIX):-len(_SUFFIX)].isdigit()]
    return sorted(found, key=lambda p: int(p.name[len(_PREFIX):-len(_SUFFIX)]), reverse=True)


def write_snapshot(chain_dir: Path, steps: int, data: dict[str, Any]) -> Path:
    """Write `data` as the snapshot after `steps` market steps, atomically; keep the
    newest KEEP. OSError when the disk refuses."""
    folder = snapshot_dir(chain_dir)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for stale in folder.glob("*.tmp"):
        stale.unlink(missing_ok=True)
    body = zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 6)
    header = b"%s %d %s\n" % (_MAGIC, FORMAT, hashlib.sha256(body).hexdigest().encode())
    path = folder / f"{_PREFIX}{steps:010d}{_SUFFIX}"
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(header + body)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    for old in snapshot_files(chain_dir)[KEEP:]:
        old.unlink(missing_ok=True)
    return path


def read_snapshot(path: Path) -> dict[str, Any]:
    """The data of one snapshot file; BadSnapshot when it is damaged or not one."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BadSnapshot(f"{path}: unreadable: {exc.strerror or exc}") from None
    header, _, body = raw.partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 3 or parts[0] != _MAGIC:
        raise BadSnapshot(f"{path}: not a market snapshot")
    if parts[1] != str(FORMAT).encode():
        raise BadSnapshot(f"{path}: snapshot format {parts[1].decode(errors='replace')}, "
                          f"this version reads {FORMAT}")
    if hashlib.sha256(body).hexdigest().encode() != parts[2]:
        raise BadSnapshot(f"{path}: checksum mismatch (the file was changed or cut short)")
    try:
        data = json.loads(zlib.decompress(body))
    except (zlib.error, ValueError) as exc:
        raise BadSnapshot(f"{path}: unreadable body: {exc}") from None
    if not isinstance(data, dict):
        raise BadSnapshot(f"{path}: not a market snapshot")
    return data


def newest_usable(chain_dir: Path, usable: Callable[[dict[str, Any]], bool],
                  on_bad: Callable[[BadSnapshot], None]) -> dict[str, Any] | None:
    """The newest snapshot that reads back whole and that `usable` accepts; damaged files
    are reported to `on_bad` and passed over. None: replay from genesis."""
    for path in snapshot_files(chain_dir):
        try:
            data = read_snapshot(path)
        except BadSnapshot as exc:
            on_bad(exc)
            continue
        if usable(data):
            return data
    return None


def snapshot_problems(chain_dir: Path) -> list[tuple[Path, str]]:
    """For `golem check`: (file, problem) for every snapshot that does not read back."""
    out = []
    for path in snapshot_files(chain_dir):
        try:
            read_snapshot(path)
        except BadSnapshot as exc:
            out.append((path, str(exc)))
    return out
