"""The README's exit-status table, `golem --help` and the code agree on every status."""

from __future__ import annotations

import importlib
import pkgutil
import re

import golem
from golem import errors
from golem.cli import _DESCRIPTION
from golem.errors import GolemError

from .conftest import REPO

ARGPARSE_USAGE = 2  # argparse's own status for bad arguments; no code of ours raises it


def readme_table() -> dict[int, str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("Exit status (every command")
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", text[start:start + 4000], flags=re.M)
    return {int(code): meaning for code, meaning in rows}


def codes_in_the_package() -> set[int]:
    """Every exit status the package can return: the EXIT_* constants anywhere in it and
    the exit_code of every GolemError subclass (all modules imported first)."""
    codes = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    for info in pkgutil.walk_packages(golem.__path__, "golem."):
        if info.name.startswith("golem.testing") or info.name == "golem.__main__":
            continue
        module = importlib.import_module(info.name)
        codes |= {value for name, value in vars(module).items()
                  if name.startswith("EXIT_") and isinstance(value, int)}
    todo: list[type[GolemError]] = [GolemError]
    while todo:
        cls = todo.pop()
        codes.add(cls.exit_code)
        todo.extend(cls.__subclasses__())
    return codes


def test_the_readme_table_lists_exactly_the_statuses_the_code_returns() -> None:
    table = readme_table()
    assert table, "the README has no exit-status table"
    assert set(table) == codes_in_the_package() | {ARGPARSE_USAGE}


def test_golem_help_names_every_status_in_the_table() -> None:
    described = {int(n) for n in re.findall(r"\b(\d+)\b", _DESCRIPTION.split("Exit status:")[1])}
    assert described == set(readme_table())
