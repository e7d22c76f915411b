"""Timing helpers the bench scripts share (each script runs on its own: `python bench/bench_x.py`)."""

from __future__ import annotations

import statistics
import time


def timed_result(fn, n: int) -> tuple[list[float], object]:
    """Seconds of ``n`` calls of ``fn``, and what the last one returned."""
    samples, result = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - t0)
    return samples, result


def timed(fn, n: int) -> list[float]:
    return timed_result(fn, n)[0]


def fmt(samples: list[float], digits: int = 1) -> str:
    """Median, min and max in milliseconds."""
    ms = [s * 1000 for s in samples]
    w = 7 + digits
    return (f"median {statistics.median(ms):{w}.{digits}f} ms  min {min(ms):{w}.{digits}f} ms  "
            f"max {max(ms):{w}.{digits}f} ms  (n={len(ms)})")
