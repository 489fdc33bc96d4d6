"""The testament: what a dying golem leaves its successor (format version 1).

A JSON file documented in docs/testament.md. It carries the compressed death
reflection and the genomic bottleneck (at most 2048 entries): knowledge, warnings and
bloodstains, never raw episodes, exact strategy parameters or caches (the Weismann
barrier, enforced again when a testament is loaded). ``load_testament`` trusts nothing:
a successor must not boot from a truncated, oversized or foreign file: it raises
TestamentError naming the problem. This module is the public API; the data model
(golem.mortality.testament_model) is re-exported here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from golem.grimoire.memory_file import atomic_write
from golem.mortality import testament_format as fmt
from golem.mortality.categories import REFLECTION_CATEGORIES
from golem.mortality.testament_build import build
from golem.mortality.testament_model import (
    MAX_ENTRIES,
    MAX_ENTRY_CHARS,
    MAX_FILE_BYTES,
    MAX_REFLECTION_BYTES,
    MAX_SNAPSHOT_CHARS,
    PROVENANCE,
    TESTAMENT_FILE,
    TESTAMENT_VERSION,
    EntryKind,
    Testament,
    TestamentEntry,
    TestamentError,
)

if TYPE_CHECKING:
    from golem.grimoire.grimoire import Grimoire
    from golem.mortality.lineage import Lineage

__all__ = [
    "MAX_ENTRIES", "MAX_ENTRY_CHARS", "MAX_FILE_BYTES", "MAX_REFLECTION_BYTES",
    "MAX_SNAPSHOT_CHARS", "PROVENANCE", "TESTAMENT_FILE", "TESTAMENT_VERSION", "EntryKind",
    "Testament", "TestamentEntry", "TestamentError", "build_testament", "dumps",
    "load_testament", "parse_testament", "render_text", "to_json", "write_testament",
]


async def build_testament(
    grimoire: Grimoire, *, lineage: Lineage, cause: str, died_at: float,
    reflection: dict[str, list[str]], reflection_text: str, reflection_source: str,
    playbook_md: str, memory_md: str, min_confidence: float, max_entries: int,
) -> Testament:
    """Distil the Grimoire through the bottleneck (see testament_build for the rules)."""
    return await build(grimoire, lineage=lineage, cause=cause, died_at=died_at,
                       reflection=reflection, reflection_text=reflection_text,
                       reflection_source=reflection_source, playbook_md=playbook_md,
                       memory_md=memory_md, min_confidence=min_confidence,
                       max_entries=max_entries)


def to_json(t: Testament) -> dict[str, Any]:
    return fmt.testament_json(t)


def dumps(t: Testament) -> str:
    return json.dumps(to_json(t), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_testament(path: Path, t: Testament) -> Path:
    """Validate, then write atomically (temp file, fsync, rename), mode 0644."""
    text = dumps(t)
    parse_testament(text, str(path))  # never write what a successor would refuse
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode())
    path.chmod(0o644)
    return path


def load_testament(path: Path) -> Testament:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise TestamentError(f"{path}: {size} bytes, over the {MAX_FILE_BYTES} limit")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TestamentError(f"{path}: no such testament") from None
    except UnicodeDecodeError:
        raise TestamentError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise TestamentError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_testament(text, str(path))


def parse_testament(text: str, where: str = "testament") -> Testament:
    if len(text.encode()) > MAX_FILE_BYTES:
        raise TestamentError(f"{where}: over the {MAX_FILE_BYTES} byte limit")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TestamentError(f"{where}: not JSON ({exc.msg} at line {exc.lineno})") from None
    try:
        return fmt.testament_from_json(raw)
    except fmt.FormatProblem as exc:
        raise TestamentError(f"{where}: {exc}") from None


def render_text(t: Testament) -> str:
    """The testament for a human reader: identity, reflection, then the entries by kind."""
    c = t.counts()
    lines = [f"Testament {t.testament_id} (format v{t.version})",
             f"  golem {t.golem_name} ({t.golem_id}), namespace {t.namespace}, "
             f"generation {t.generation}",
             f"  parent testament: {t.parent_testament_id or 'none (first of its line)'}",
             f"  died at {t.died_at:.0f} (golem time), cause: {t.cause}",
             f"  reflection by {t.reflection_source}; {len(t.entries)} of at most "
             f"{t.max_entries} entries (" + ", ".join(f"{k} {v}" for k, v in c.items()
                                                     if k != "bloodstains" and v)
             + f"); {c['bloodstains']} carry the bloodstain flag",
             ""]
    for key, heading in REFLECTION_CATEGORIES.items():
        items = t.reflection.get(key, [])
        if items:
            lines.append(f"## {heading}")
            lines.extend(f"- {item}" for item in items)
            lines.append("")
    for kind in EntryKind:
        chosen = [e for e in t.entries if e.kind == kind]
        if not chosen:
            continue
        lines.append(f"## {kind.value} ({len(chosen)})")
        for e in chosen:
            mark = " [bloodstain]" if e.bloodstain and kind != EntryKind.BLOODSTAIN else ""
            lines.append(f"- ({e.confidence:.2f}, gen {e.generation}){mark} {e.text}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
