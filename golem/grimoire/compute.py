"""Which of the model directory's graphs the embedder runs: int8 or float products.

Set-up writes two graphs of the same weights (``golem.grimoire.model_compact``): int8
matrix products (``MatMulNBits``, the smaller session) and float32 ones (the source's
vectors bit for bit, ~19 MB more RSS). Which is faster depends on the CPU. On an x86
CPU with AVX2 alone the int8 products lose by ~2x (benchmarks/README.md, twenty-second
and twenty-third sessions); on the machine where they were chosen (CPU not recorded)
they won, 3.9 against 4.8 ms a query. onnxruntime's fast int8 kernels on x86 need the
VNNI dot-product instructions (``avx512_vnni``, ``avx_vnni``; AMX), so those keep int8.
Elsewhere (ARM) only int8 was ever measured, so int8 stays.

The two graphs compute different vector spaces (cosine >= 0.9997 apart), and a store
records the one its vectors are in. ``auto`` therefore keeps an existing store's space
when the model directory offers it (a data dir moved to another CPU keeps working, at
that CPU's speed for the other graph) and chooses by CPU only for a new store; an
explicit setting is obeyed, and a store in another space then asks for
``golem memory reembed`` as any model change does.

``choose`` and ``preferred`` are pure; ``cpu`` reads /proc/cpuinfo.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Compute = Literal["int8", "float"]
Setting = Literal["auto", "int8", "float"]
COMPUTES: tuple[Compute, ...] = ("int8", "float")
# x86 instructions with which int8 products are expected to be the faster ones.
INT8_ISA = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
X86 = frozenset({"x86_64", "amd64", "i386", "i686"})


@dataclass(frozen=True)
class Cpu:
    arch: str  # platform.machine(), lower case
    flags: frozenset[str]  # /proc/cpuinfo "flags" (x86) or "Features" (ARM)


@dataclass(frozen=True)
class Choice:
    compute: Compute
    reason: str  # for the log: why this graph


class ComputeUnavailable(ValueError):
    """The setting names a graph the model directory does not have."""


def preferred(cpu: Cpu) -> Compute:
    """Float products on x86 without VNNI-class int8 instructions; int8 everywhere else."""
    if cpu.arch.lower() in X86 and not cpu.flags & INT8_ISA:
        return "float"
    return "int8"


def choose(setting: Setting, offered: Mapping[Compute, str], recorded: str | None,
           cpu: Cpu) -> Choice:
    """The graph to run. ``offered``: compute -> the vector space (signature version) of
    each graph the model directory has; ``recorded``: the vector space an existing store
    is in, None for a new one. ComputeUnavailable when an explicit setting is not
    offered; ``auto`` falls back to int8, which every model directory has."""
    if setting != "auto":
        if setting not in offered:
            raise ComputeUnavailable(
                f"grimoire.embed_compute = {setting!r}, but the model directory has only "
                f"{', '.join(sorted(offered))}; run scripts/setup to rebuild it")
        return Choice(setting, "set in the config")
    for compute, space in offered.items():
        if recorded is not None and space == recorded:
            return Choice(compute, "the store's vectors are in its space")
    best = preferred(cpu)
    if best in offered:
        why = ("int8 products are slow on this CPU (no VNNI)" if best == "float"
               else "int8 products are fast on this CPU")
        return Choice(best, why if recorded is None else
                      f"the store's space is not offered; {why}")
    return Choice("int8", "the model directory has no float graph")


def cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> Cpu:
    """This machine's architecture and instruction-set flags; no flags if unreadable."""
    flags: frozenset[str] = frozenset()
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip().lower() in ("flags", "features"):
                flags = frozenset(value.split())
                break
    except OSError:
        pass
    return Cpu(platform.machine().lower(), flags)
