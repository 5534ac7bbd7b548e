"""Sweep progress: which phase runs, how far it is, and seconds left from the measured cost of each phase.

A sweep runs its phases one after another: 'precompile' (the configs' kernels compiled in worker processes),
'timing' (configs run, checked and timed one by one) and 'trace' (kernel names). Each phase has items with weights
(relative predicted cost; 1 each by default). `EtaEstimator` turns them into seconds left:

  * the running phase: its measured seconds per unit of weight so far (wall seconds since the phase began, less
    the one-off seconds reported with `add_one_off`, / weight done) x the weight left, once an item is done; before
    that, its prior rate x its weight;
  * phases not started yet: their prior rate (seconds per unit of weight) x their weight; a phase's prior becomes
    the measured rate once it runs, so the estimate is honest from the first item of each phase on;
  * phases done: 0.

`SweepStatus` is what a sweep reports (run_sweep's `status` callback): the CLI prints its `text()`, the Run sweep
page shows it on its progress bar.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

PHASES: tuple[str, ...] = ("precompile", "timing", "trace")
# prior seconds per unit of weight before a phase has measured its own rate, from the H200 default sweep of
# 2026-12-04 without peers (experiments/2026-12-04-sweep-speed: 1536 configs, empty caches, 16 workers): precompile
# 140 s for 1420 configs asked (0.10 s each), timing 132 s for 854 configs of 96.5 predicted seconds
# (sweep.predicted_config_weight; 1.37 s per predicted second), trace ~15 s for 1536 configs (0.01 s each)
PRIOR_S: dict[str, float] = {"precompile": 0.10, "timing": 1.37, "trace": 0.01}


def format_duration(seconds: float) -> str:
    """'45 s', '3 min 05 s', '1 h 02 min' (seconds rounded)."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


@dataclass(frozen=True)
class SweepStatus:
    """One progress report: `phase` ('precompile' | 'timing' | 'trace'), `done` of `total` items in it, wall
    seconds since the sweep started, seconds left for the whole sweep (None: not estimated yet), the seconds
    left per phase, and the label of the item just finished ('' when none)."""

    phase: str
    done: int
    total: int
    elapsed_s: float
    eta_s: float | None
    phase_left_s: Mapping[str, float] = field(default_factory=dict)
    label: str = ""
    workers: int = 0

    def fraction(self) -> float:
        """Share of the running phase done, 0..1."""
        return min(1.0, self.done / self.total) if self.total > 0 else 0.0

    def text(self) -> str:
        """'compiling 1602 configs in parallel (16 workers): 37/1602, 12 s elapsed, about 2 min 10 s left
        (compile 1 min 30 s, timing 40 s)'."""
        if self.phase == "precompile":
            workers = f" ({self.workers} workers)" if self.workers else ""
            head = f"compiling {self.total} configs in parallel{workers}"
        elif self.phase == "timing":
            head = "timing configs"
        elif self.phase == "trace":
            head = "naming kernels (torch.profiler)"
        else:
            head = self.phase
        if self.eta_s is None:
            left = "estimating time left"
        elif self.eta_s <= 0 and self.done >= self.total:
            left = "done"
        else:
            parts = [f"{_SHORT.get(p, p)} {format_duration(s)}" for p, s in self.phase_left_s.items() if s >= 0.5]
            left = f"about {format_duration(self.eta_s)} left" + (f" ({', '.join(parts)})" if len(parts) > 1 else "")
        return f"{head}: {self.done}/{self.total}, {format_duration(self.elapsed_s)} elapsed, {left}"


_SHORT = {"precompile": "compile", "timing": "timing", "trace": "trace"}


class EtaEstimator:
    """Seconds left of a run of phases from their measured cost (module docstring).

    `weights`: phase -> total weight of its items (a phase missing or at 0 is skipped); `prior_s`: phase -> prior
    seconds per unit of weight, used until the phase measures its own (None: that phase is not estimated until it
    runs, so eta_s is None before). `now`: the wall clock in seconds (injectable for tests)."""

    def __init__(
        self,
        weights: Mapping[str, float],
        prior_s: Mapping[str, float | None] | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._order = list(weights)
        self._weights = {phase: float(w) for phase, w in weights.items() if w > 0}
        self._prior = dict(PRIOR_S if prior_s is None else prior_s)
        self._now = now
        self._started = now()
        self._phase_start: dict[str, float] = {}
        self._done: dict[str, float] = {}
        self._one_off: dict[str, float] = {}
        self._finished: set[str] = set()

    @property
    def elapsed_s(self) -> float:
        return self._now() - self._started

    def set_weight(self, phase: str, weight: float) -> None:
        """Replace a phase's total weight (e.g. once the precompile plan knows how many kernels it compiles)."""
        if phase not in self._order:
            self._order.append(phase)
        if weight > 0:
            self._weights[phase] = float(weight)
        else:
            self._weights.pop(phase, None)

    def begin(self, phase: str) -> None:
        """The phase starts now (the phases before it in `weights` order are done)."""
        if phase not in self._order:
            self._order.append(phase)
        self._finished.update(self._order[: self._order.index(phase)])
        self._phase_start[phase] = self._now()
        self._done.setdefault(phase, 0.0)

    def advance(self, phase: str, weight_done: float) -> None:
        """`weight_done` (cumulative) of the phase's weight is done; starts the phase if not begun."""
        if phase not in self._phase_start:
            self.begin(phase)
        self._done[phase] = float(weight_done)

    def add_one_off(self, phase: str, seconds: float) -> None:
        """`seconds` of the phase's wall time so far will not recur (a backend's first call in the process: its
        imports and initialisation): left out of the phase's measured rate."""
        self._one_off[phase] = self._one_off.get(phase, 0.0) + max(0.0, seconds)

    def finish(self, phase: str) -> None:
        """The phase is over (also when cut short): nothing left of it."""
        self._finished.add(phase)

    def rate_s(self, phase: str) -> float | None:
        """Seconds per unit of weight: measured once the phase has done some, else the prior (None: unknown)."""
        done = self._done.get(phase, 0.0)
        if phase in self._phase_start and done > 0:
            return max(0.0, self._now() - self._phase_start[phase] - self._one_off.get(phase, 0.0)) / done
        return self._prior.get(phase)

    def phase_left_s(self) -> dict[str, float | None]:
        """Seconds left per phase, in phase order (None: not estimated)."""
        out: dict[str, float | None] = {}
        for phase in self._order:
            if phase not in self._weights:
                continue
            weight = self._weights[phase]
            if phase in self._finished:
                out[phase] = 0.0
                continue
            rate = self.rate_s(phase)
            out[phase] = None if rate is None else max(0.0, weight - self._done.get(phase, 0.0)) * rate
        return out

    def eta_s(self) -> float | None:
        """Seconds left for all phases; None while any phase still to run has no estimate."""
        left = self.phase_left_s().values()
        return None if any(v is None for v in left) else float(sum(v for v in left if v is not None))

    def status(self, phase: str, done: int, total: int, label: str = "", workers: int = 0) -> SweepStatus:
        """A SweepStatus of the phase now."""
        left = self.phase_left_s()
        return SweepStatus(
            phase=phase,
            done=done,
            total=total,
            elapsed_s=self.elapsed_s,
            eta_s=self.eta_s(),
            phase_left_s={p: v for p, v in left.items() if v is not None},
            label=label,
            workers=workers,
        )
