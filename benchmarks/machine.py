"""What machine a benchmark ran on, for its JSON output.

The same code measured ~2-3x apart on the machines these benchmarks have run on: the
CPU model and its vector instructions decide, among others, whether the embedder's int8
matrix products beat float ones (benchmarks/README.md, twenty-second session). Numbers
from two runs compare only when their ``machine`` blocks agree.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from golem.grimoire.compute import COMPUTES, Compute, cpu, preferred

COMPUTE_ENV = "BENCH_EMBED_COMPUTE"
# The instruction sets that change which kernels onnxruntime, numpy and LanceDB run.
ISA_OF_NOTE = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16",
               "amx_int8", "asimddp", "sve")


def machine(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """The CPU model, its instruction sets of note, the usable cores and the Python
    version. Never raises: what cannot be read is reported as unknown."""
    model = "unknown"
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip().lower() in ("model name", "cpu model"):
                model = value.strip()
                break
    except OSError:
        model = platform.processor() or "unknown"
    flags = cpu(cpuinfo).flags  # the flags the embedder's choice reads
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": model, "isa": [f for f in ISA_OF_NOTE if f in flags], "cores": cores,
            "arch": platform.machine(), "python": platform.python_version(),
            "embed_compute": embed_compute()}


def embed_compute() -> Compute:
    """The graph a benchmark that loads its own embedder runs: $BENCH_EMBED_COMPUTE
    (``int8`` or ``float``) when set, else what ``grimoire.embed_compute = "auto"``
    gives a new store on this CPU. Benchmarks that run a golem's config measure what
    that config chose instead."""
    value = os.environ.get(COMPUTE_ENV, "")
    if not value:
        return preferred(cpu())
    for compute in COMPUTES:
        if value == compute:
            return compute
    raise SystemExit(f"{COMPUTE_ENV}={value!r}: one of {', '.join(COMPUTES)}")
