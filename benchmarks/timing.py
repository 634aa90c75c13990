"""The one timing helper of the benchmarks: contenders interleaved, so that a change of machine
load (the cores are shared) hits all of them alike.

The default clock is the process's CPU time: on shared cores wall time mostly measures the
neighbours (with one thread, CPU time is the work done); ``wall`` for a machine of one's own.
"""

import statistics
import sys
import time

#: cpu: this process's CPU time, fair on a shared machine; wall: elapsed time, for a dedicated one
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def once(fn, clock=time.process_time):
    """Seconds of one call of ``fn`` (or the float seconds it returns itself)."""
    start = clock()
    seconds = fn()
    return seconds if isinstance(seconds, float) else clock() - start


def interleaved(fns, warmup, repeat, clock=time.process_time, reduce=statistics.median, label=None):
    """``reduce`` (the median, or ``min`` for the least disturbed) of each function's seconds over
    ``repeat`` rounds after ``warmup`` untimed ones, one call of every function a round; with a
    ``label``, each round's times on stderr."""
    times = [[] for _ in fns]
    for round_ in range(warmup + repeat):
        seconds = [once(fn, clock) for fn in fns]
        if round_ >= warmup:
            for record, value in zip(times, seconds):
                record.append(value)
        if label is not None:
            print(f"{label} round {round_}: " + " ".join(f"{s:.3f}s" for s in seconds), file=sys.stderr)
    return [reduce(record) for record in times]
