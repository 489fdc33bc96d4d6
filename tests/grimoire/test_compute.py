"""Which graph embeds: the pure choice (golem.grimoire.compute)."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.grimoire.compute import ComputeUnavailable, Cpu, choose, cpu, preferred

AVX2 = Cpu("x86_64", frozenset({"sse4_2", "avx2", "fma"}))
VNNI = Cpu("x86_64", frozenset({"avx2", "fma", "avx512f", "avx512_vnni"}))
ARM = Cpu("aarch64", frozenset({"asimd", "asimddp"}))
BOTH = {"int8": "space-int8", "float": "space-float"}


def test_float_products_only_on_x86_without_vnni() -> None:
    assert preferred(AVX2) == "float"
    assert preferred(VNNI) == "int8"
    assert preferred(Cpu("x86_64", frozenset({"avx2", "avx_vnni"}))) == "int8"
    assert preferred(Cpu("x86_64", frozenset({"amx_int8"}))) == "int8"
    assert preferred(ARM) == "int8"  # never measured there: the int8 graph stays


def test_auto_keeps_the_store_space_whatever_the_cpu() -> None:
    assert choose("auto", BOTH, "space-int8", AVX2).compute == "int8"
    assert choose("auto", BOTH, "space-float", VNNI).compute == "float"
    new = choose("auto", BOTH, None, AVX2)
    assert new.compute == "float" and "VNNI" in new.reason
    assert choose("auto", BOTH, None, VNNI).compute == "int8"
    # a store from another model: the CPU's choice, and the store's open asks for a re-embed
    other = choose("auto", BOTH, "space-of-another-model", AVX2)
    assert other.compute == "float" and "not offered" in other.reason


def test_auto_without_a_float_graph_runs_int8() -> None:
    assert choose("auto", {"int8": "space-int8"}, None, AVX2).compute == "int8"


def test_an_explicit_setting_is_obeyed_or_refused() -> None:
    assert choose("int8", BOTH, "space-float", AVX2).compute == "int8"
    assert choose("float", BOTH, None, VNNI).compute == "float"
    with pytest.raises(ComputeUnavailable, match="scripts/setup"):
        choose("float", {"int8": "space-int8"}, None, AVX2)


def test_cpu_reads_the_flags_line(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: X\nflags\t\t: fpu avx2 fma\n\n"
                    "processor\t: 1\nflags\t\t: fpu avx2 fma\n")
    assert cpu(info).flags == frozenset({"fpu", "avx2", "fma"})
    assert cpu(tmp_path / "missing").flags == frozenset()
