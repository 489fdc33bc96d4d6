"""Arms: readable configuration overlays, one TOML file each in ``golem/lab/arms/``.

An overlay holds a top-level ``description`` and the configuration sections it changes;
everything else comes from the base configuration (the starter ``bardo.toml`` unless the
operator gives ``--base``). A run's configuration is the base, the lab's market
(``market.toml``) and the arm's overlay merged over it key by key, then what the lab sets
for every run: the market seed, the planted regularity's swap at half the life, the
golem's name and its own data dir. It is validated by the same loader ``golem run``
uses before any run starts, so a bad overlay fails the whole command at once with the
key it names.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w

from golem.config import parse_config
from golem.errors import ConfigError, UsageError
from golem.lab.design import Run
from golem.lab.succession import market_seed


def arm_names() -> list[str]:
    """Every arm the lab ships, sorted."""
    folder = resources.files("golem.lab").joinpath("arms")
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir()
                  if p.name.endswith(".toml"))


def load_arm(name: str) -> tuple[str, dict[str, Any]]:
    """(description, overlay). UsageError for an arm the lab does not ship."""
    if name not in arm_names():
        raise UsageError(f"unknown arm {name!r}: the lab has {', '.join(arm_names())}")
    text = resources.files("golem.lab").joinpath(f"arms/{name}.toml").read_text("utf-8")
    overlay = tomllib.loads(text)
    description = str(overlay.pop("description", ""))
    return description, overlay


def load_base(path: Path | None, model_dir: Path | None) -> dict[str, Any]:
    """The base configuration as a dict: ``path`` or the starter template. A relative
    ``grimoire.model_dir`` is made absolute against the base file's folder (the current
    folder for the template), since every run's file lives elsewhere; ``model_dir``
    overrides it. ConfigError when the file is not TOML."""
    if path is None:
        text = resources.files("golem").joinpath("templates/bardo.toml").read_text("utf-8")
        folder = Path.cwd()
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--base {path}: {exc.strerror}") from None
        folder = path.resolve().parent
    try:
        base = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path or 'the starter template'}: not valid TOML: {exc}") from None
    grimoire = base.setdefault("grimoire", {})
    chosen = model_dir or Path(str(grimoire.get("model_dir", "models/all-minilm-l6-v2-int8")))
    grimoire["model_dir"] = str(chosen if chosen.is_absolute() else (folder / chosen).resolve())
    return base


def merged(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """``overlay`` over ``base``: tables merge key by key, any other value replaces."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def lab_market() -> dict[str, Any]:
    """The lab's market overlay (``market.toml``)."""
    text = resources.files("golem.lab").joinpath("market.toml").read_text("utf-8")
    return tomllib.loads(text)


def run_config(base: dict[str, Any], run: Run, run_dir: Path, life_s: float) -> str:
    """The TOML text of one run's configuration, validated. ConfigError (naming the arm)
    when the merged configuration is invalid."""
    _, overlay = load_arm(run.arm)
    config = merged(merged(merged(base, lab_market()), overlay), {
        "golem": {"name": f"lab-{run.arm}-{run.seed}", "seed": market_seed(run.arm, run.seed),
                  "data_dir": str((run_dir / "data").resolve())},
        "chain": {"planted": {"swap_after_s": life_s / 2}}})
    text = tomli_w.dumps(config)
    try:
        parse_config(text, source=run_dir / "bardo.toml")
    except ConfigError as exc:
        raise ConfigError(f"arm {run.arm}: {exc}") from None
    return text
