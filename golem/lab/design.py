"""An experiment's design (pure): which arms, which market seeds, how long a life.

Every arm runs on every seed (a paired design: the arms of one seed see the same market),
so effects are differences within a seed. A preset names a design; the command line may
override its seeds (``--seeds 1000-1009`` reruns it on seeds the golem was never tuned
on), its arms and its life. ``Design`` is what a lab directory records in ``lab.json``;
a rerun in the same directory must ask for the same design, so runs of two designs are
never mixed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from golem.errors import UsageError

MAX_SEEDS = 1000
# A life's data dir, kept for inspection: the full preset's 70 lives of 6 golem hours
# took about 20 GB (~50 MB a golem hour); episode retention and the stores' version
# cleanup bound a long life's (5.8-7.2 GB at golem day 3 of the default config).
# benchmarks/README.md has the measurements.
DISK_MB_PER_GOLEM_HOUR = 50.0
DISK_MB_PER_LIFE_CAP = 8_000.0
# A finished life's data dir is compacted (`golem memory compact`): 70 six-hour lives of
# the full preset took 3.6 GB after it, 26 GB before.
KEPT_MB_PER_GOLEM_HOUR = 10.0


@dataclass(frozen=True)
class Preset:
    name: str
    arms: tuple[str, ...]
    seeds: tuple[int, ...]
    life_s: float
    about: str


PRESETS: dict[str, Preset] = {
    "smoke": Preset("smoke", ("full", "no-memory"), (1, 2), 10 * 60.0,
                    "2 arms x 2 seeds x 10 golem minutes: the lab's own check (a minute)"),
    "full": Preset("full", ("full", "no-memory", "no-forgetting", "random-eviction", "fresh",
                            "testament", "shuffled-testament"), tuple(range(1, 11)),
                   6 * 3600.0, "every arm x 10 seeds x 6 golem hours"),
}


@dataclass(frozen=True, order=True)
class Run:
    """One life: an arm on a market seed. ``key`` names its directory."""

    arm: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.arm}/seed-{self.seed}"


@dataclass(frozen=True)
class Design:
    preset: str
    arms: tuple[str, ...]
    seeds: tuple[int, ...]
    life_s: float

    @property
    def runs(self) -> list[Run]:
        """Seed-major, so the arms of one seed finish close together."""
        return [Run(arm, seed) for seed in self.seeds for arm in self.arms]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def changed(self) -> tuple[str, ...]:
        """What this design changes of its preset ("arms", "seeds", "life"), in that
        order; empty for the preset as it is (or an unknown preset's name)."""
        base = PRESETS.get(self.preset)
        if base is None:
            return ()
        return tuple(name for name, mine, theirs in (
            ("arms", self.arms, base.arms), ("seeds", self.seeds, base.seeds),
            ("life", self.life_s, base.life_s)) if mine != theirs)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Design:
        return cls(str(data["preset"]), tuple(data["arms"]), tuple(int(s) for s in
                                                                   data["seeds"]),
                   float(data["life_s"]))


def design(preset: str, *, arms: tuple[str, ...] | None = None,
           seeds: tuple[int, ...] | None = None, life_s: float | None = None) -> Design:
    """The preset with any overrides. UsageError on an unknown preset, a repeated arm or
    an arm list without ``full`` (every effect is measured against it)."""
    base = PRESETS.get(preset)
    if base is None:
        raise UsageError(f"unknown preset {preset!r}: choose one of {', '.join(PRESETS)}")
    chosen = arms or base.arms
    if len(set(chosen)) != len(chosen):
        raise UsageError(f"--arms: an arm is named twice in {','.join(chosen)}")
    if "full" not in chosen:
        raise UsageError("--arms: include 'full': every effect is measured against it")
    if life_s is not None and life_s <= 0:
        raise UsageError("--life must be a positive duration")
    return Design(preset, tuple(chosen), seeds or base.seeds,
                  base.life_s if life_s is None else life_s)


def parse_seeds(text: str) -> tuple[int, ...]:
    """``1-10``, ``1000-1009``, ``3``, ``1,4,7-9``: distinct non-negative seeds in the order
    given. UsageError on anything else, or on more than MAX_SEEDS."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise UsageError(f"--seeds: {part!r} is not a seed or a range such as 1-10")
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise UsageError(f"--seeds: the range {part!r} runs backwards")
        if last - first + len(seeds) >= MAX_SEEDS:
            raise UsageError(f"--seeds: more than {MAX_SEEDS} seeds")
        seeds.extend(range(first, last + 1))
    if len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds: a seed is named twice in {text!r}")
    return tuple(seeds)


def life_disk_mb(life_s: float) -> float:
    """The disk a life of ``life_s`` golem seconds is expected to take while it runs (MB)."""
    return min(life_s / 3600.0 * DISK_MB_PER_GOLEM_HOUR, DISK_MB_PER_LIFE_CAP)


def kept_disk_mb(life_s: float) -> float:
    """The disk a finished life of ``life_s`` golem seconds keeps once compacted (MB)."""
    return min(life_s / 3600.0 * KEPT_MB_PER_GOLEM_HOUR, DISK_MB_PER_LIFE_CAP)


def check_fits(chosen: Design, *, jobs: int, cores: int, lives_left: int,
               free_mb: float, where: str) -> None:
    """UsageError, before anything runs, when the design does not fit the machine: more
    lives at once than cores (each life is a golem process that keeps a core busy), or
    less free disk at ``where`` than the lives still to run are expected to take: every
    one its compacted size (``kept_disk_mb``), and up to ``jobs`` of them at once their
    size while they run (``life_disk_mb``)."""
    if jobs > cores:
        raise UsageError(f"--jobs {jobs}: this machine has {cores} core(s), and each life "
                         f"is a golem process that keeps one busy; use --jobs {cores} or "
                         f"fewer")
    running = min(jobs, lives_left)
    need = (lives_left * kept_disk_mb(chosen.life_s)
            + running * (life_disk_mb(chosen.life_s) - kept_disk_mb(chosen.life_s)))
    if need > free_mb:
        raise UsageError(
            f"the {lives_left} lives left need about {need / 1024:.1f} GB for their data "
            f"dirs (kept for inspection, compacted: about {KEPT_MB_PER_GOLEM_HOUR:g} MB a "
            f"golem hour each, {DISK_MB_PER_GOLEM_HOUR:g} while one runs), and {where} has "
            f"{free_mb / 1024:.1f} GB free: free some space, choose another --out, or a "
            f"shorter --life or fewer --seeds")
