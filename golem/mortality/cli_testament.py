"""`golem testament show|export` and `golem vault list|export|import`.

Read-only on the data dir (snapshots use SQLite's backup API, safe while a golem runs).
The vault commands refuse unless succession.vault_enabled is set; `testament export
--to DIR` is an explicit operator copy and needs no vault.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from golem.config import Config, load_config
from golem.errors import EXIT_OK
from golem.grimoire.memory_file import atomic_write
from golem.mortality import testament as tm
from golem.mortality import vault as vt

TESTAMENT_DIR = "testament"  # <data_dir>/testament/<id>.json, written by the death protocol


def add_testament_parsers(sub: Any, config_arg: Callable[[argparse.ArgumentParser], None],
                          ) -> None:
    t = sub.add_parser("testament", help="show or export a testament",
                       description="A dead golem's testament: what its successor inherits.")
    tsub = t.add_subparsers(dest="testament_command", required=True, metavar="ACTION")
    show = tsub.add_parser("show", help="print a testament (a file, or this golem's)",
                           description="Validate and print a testament: PATH, or the one the "
                                       "golem of --config left.")
    config_arg(show)
    show.add_argument("path", nargs="?", type=Path, metavar="PATH")
    show.add_argument("--json", action="store_true", help="print the JSON")
    export = tsub.add_parser("export", help="copy a validated testament to a directory")
    config_arg(export)
    export.add_argument("path", nargs="?", type=Path, metavar="PATH")
    export.add_argument("--to", type=Path, required=True, metavar="DIR")

    v = sub.add_parser("vault", help="the local vault (Styx L0, opt-in, files only)",
                       description="Testaments and Grimoire snapshots in succession.vault_dir. "
                                   "Off unless succession.vault_enabled = true.")
    vsub = v.add_subparsers(dest="vault_command", required=True, metavar="ACTION")
    config_arg(vsub.add_parser("list", help="list testaments and snapshots"))
    vexp = vsub.add_parser("export", help="export this golem's testament and a snapshot")
    config_arg(vexp)
    vexp.add_argument("--testament", type=Path, metavar="PATH",
                      help="the testament to export (default: this golem's, if it died)")
    vexp.add_argument("--no-snapshot", action="store_true", help="skip the Grimoire snapshot")
    vimp = vsub.add_parser("import", help="find a testament by id, for `golem run --inherit`")
    config_arg(vimp)
    vimp.add_argument("id", metavar="TESTAMENT_ID")


def own_testament(config: Config) -> Path | None:
    """The testament this data dir's golem left: DEAD.json's, else the newest written."""
    from golem.mortality.death import read_death  # noqa: PLC0415 - owned by death

    record = read_death(config.data_dir)
    if record is not None and record.testament_path:
        return Path(record.testament_path)
    found = sorted((config.data_dir / TESTAMENT_DIR).glob("*.json"),
                   key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def _testament_path(args: argparse.Namespace) -> Path:
    if args.path is not None:
        return Path(args.path)
    path = own_testament(load_config(args.config))
    if path is None:
        raise tm.TestamentError(f"{args.config}: this golem has left no testament (it has "
                                "not died); give a PATH")
    return path


def run_testament_command(args: argparse.Namespace, out: TextIO) -> int:
    if args.command == "testament":
        path = _testament_path(args)
        t = tm.load_testament(path)
        if args.testament_command == "show":
            out.write(tm.dumps(t) if args.json else f"{path}\n{tm.render_text(t)}")
            return EXIT_OK
        dest = args.to / f"{t.testament_id}.json"
        args.to.mkdir(parents=True, exist_ok=True)
        atomic_write(dest, path.read_bytes())
        dest.chmod(0o644)
        out.write(f"exported {t.testament_id} to {dest}\n")
        return EXIT_OK
    config = load_config(args.config)
    vault = vt.vault_dir(config)
    if args.vault_command == "list":
        items = vt.list_vault(vault)
        out.write("".join(f"{i.kind:<9} {i.id}  {i.detail}\n" for i in items)
                  or f"{vault}: empty\n")
    elif args.vault_command == "export":
        _vault_export(config, vault, args, out)
    else:
        path = vt.import_testament(vault, args.id)
        out.write(f"{path}\nstart a successor with: golem run --config NEW.toml "
                  f"--inherit {path}\n")
    return EXIT_OK


def _vault_export(config: Config, vault: Path, args: argparse.Namespace, out: TextIO) -> None:
    path = args.testament or own_testament(config)
    if path is not None:
        out.write(f"testament -> {vt.export_testament(vault, path)}\n")
    if not args.no_snapshot:
        label = f"{config.grimoire.namespace}-{int(time.time())}"  # operator's wall time
        out.write(f"snapshot  -> {vt.export_snapshot(vault, config.data_dir, label)}\n")
    if path is None and args.no_snapshot:
        out.write(json.dumps({"exported": []}) + "\n")
