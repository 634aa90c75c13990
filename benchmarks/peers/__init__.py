"""Every family against the implementation a user would pick instead, in one program.

A family module (``benchmarks/peers/<family>.py``) builds both sides at the sizes asked for, the
same weights where a converter exists, and returns :class:`Comparison` rows: one measure (a
decoding, a training step), our contender and the peer's, each a zero-argument callable doing
the whole measured work once, and the units of work (tokens) it does. :func:`run_comparisons`
times the contenders of a row interleaved (one call of each per round, so a change of load on
the shared cores hits both alike), after ``warmup`` untimed rounds, and keeps the median of
``repeats`` rounds of process CPU time and of wall time. :func:`table` prints them with the
ratio peer time / our time (above 1: ours is faster), the peak memory one call adds (a call of
each side after the timed rounds, :func:`peak_growth_mib`) and the machine's load average.

    OMP_NUM_THREADS=1 python -m benchmarks.peers --families transformer_sm prophetnet --repeats 3
"""

import os
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass
class Comparison:
    """One measure: ours against the peer on the same input (and weights, where convertible)."""

    measure: str
    ours: Callable[[], object]
    peer: Callable[[], object]
    peer_name: str
    units: Optional[float] = None  # tokens (or rows) of work one call does, for a rate column
    unit_name: str = "tokens"
    check: Optional[str] = None  # what was checked equal between the two (e.g. "same tokens")
    note: str = ""


@dataclass
class Timed:
    comparison: Comparison
    ours_cpu: float
    peer_cpu: float
    ours_wall: float
    peer_wall: float
    load: tuple = field(default_factory=tuple)
    ours_mib: Optional[float] = None  # peak resident growth of one call (Linux), MiB
    peer_mib: Optional[float] = None

    @property
    def speedup_cpu(self):
        return self.peer_cpu / self.ours_cpu

    @property
    def speedup_wall(self):
        return self.peer_wall / self.ours_wall


def _once(fn):
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def _status_kib(name):
    with open("/proc/self/status", encoding="ascii") as f:
        return int(re.search(rf"{name}:\s+(\d+)", f.read()).group(1))


def status_mib(name):
    """``VmRSS`` (resident now) or ``VmHWM`` (its peak) of this process, MiB."""
    return _status_kib(name) / 1024


def memory_table(family, rows):
    """Each side's resident memory in its own process: after imports, after reading the model
    from its files, and the peak over the whole run (one decoding included)."""
    lines = [f"#### {family}: memory, a fresh process a side", "",
             "| side | after imports MiB | after loading MiB | loading adds MiB | peak MiB | peak over imports MiB |",
             "|---|---:|---:|---:|---:|---:|"]
    for side, m in rows:
        lines.append(f"| {side} | {m['imports']:.0f} | {m['loaded']:.0f} | {m['loaded'] - m['imports']:.0f} "
                     f"| {m['peak']:.0f} | {m['peak'] - m['imports']:.0f} |")
    return "\n".join(lines)


def peak_growth_mib(fn):
    """How far one call of ``fn`` raises the resident set above where it starts (MiB): the
    kernel's peak (``VmHWM``) is reset first; ``None`` where ``/proc`` cannot do that."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        before = _status_kib("VmRSS")
    except OSError:
        return None
    fn()
    return (_status_kib("VmHWM") - before) / 1024


def run_comparisons(comparisons, warmup=1, repeats=3):
    """Each comparison timed: medians of ``repeats`` interleaved rounds after ``warmup``."""
    timed = []
    for comparison in comparisons:
        rounds = []
        for round_ in range(warmup + repeats):
            # alternate who goes first, so neither side always runs on a warm cache
            pair = (comparison.ours, comparison.peer) if round_ % 2 == 0 else (comparison.peer, comparison.ours)
            first, second = _once(pair[0]), _once(pair[1])
            ours, peer = (first, second) if round_ % 2 == 0 else (second, first)
            if round_ >= warmup:
                rounds.append((ours, peer))
        (ours_cpu, peer_cpu), (ours_wall, peer_wall) = (
            [statistics.median(r[side][clock] for r in rounds) for side in (0, 1)] for clock in (0, 1)
        )
        timed.append(Timed(comparison, ours_cpu, peer_cpu, ours_wall, peer_wall, os.getloadavg(),
                           peak_growth_mib(comparison.ours), peak_growth_mib(comparison.peer)))
    return timed


def table(family, setting, timed):
    """The Markdown table of one family: a row per measure."""
    lines = [f"### {family}", "", setting, ""]
    lines.append("| measure | peer | ours CPU s | peer CPU s | ours wall s | peer wall s | peer / ours (CPU) "
                 "| peer / ours (wall) | ours tokens/s (CPU) | peak growth MiB, ours / peer | checked "
                 "| load (1, 5 min) |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for t in timed:
        c = t.comparison
        rate = f"{c.units / t.ours_cpu:.0f}" if c.units else "-"
        lines.append(
            f"| {c.measure} | {c.peer_name} | {t.ours_cpu:.3f} | {t.peer_cpu:.3f} | {t.ours_wall:.3f} "
            f"| {t.peer_wall:.3f} | **{t.speedup_cpu:.2f}x** | {t.speedup_wall:.2f}x | {rate} "
            f"| {_mib(t.ours_mib)} / {_mib(t.peer_mib)} | {c.check or '-'} | {t.load[0]:.2f}, {t.load[1]:.2f} |"
        )
    notes = [f"- {c.measure}: {c.note}" for c in (t.comparison for t in timed) if c.note]
    return "\n".join(lines + ([""] + notes if notes else []))


def _mib(value):
    return "-" if value is None else f"{value:.0f}"
