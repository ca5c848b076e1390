"""Timing like Triton's do_bench: budgets in ms, one event pair per repetition, L2 flushed
outside the timed region, median and quantiles, raw times kept."""
from __future__ import annotations

import numpy as np


def do_bench(fn, flush, event, sync, warmup_ms: float = 25.0, rep_ms: float = 100.0, min_reps: int = 5,
             max_reps: int = 500, sampler=None):
    """fn(): launch the work; flush(): evict L2; event(): new CUDA event with .record()/.time_since();
    sync(): wait for the device. Returns (times_ms, warmup_runs, sampler summary)."""
    start, end = event(), event()
    fn()
    sync()
    start.record()
    for _ in range(3):
        fn()
    end.record()
    end.synchronize()
    est = max(end.time_since(start) / 3, 1e-3)
    n_warm = int(min(max(1, warmup_ms / est), 200))
    n_rep = int(min(max(min_reps, rep_ms / est), max_reps))
    for _ in range(n_warm):
        fn()
    sync()
    starts = [event() for _ in range(n_rep)]
    ends = [event() for _ in range(n_rep)]
    if sampler:
        sampler.start()
    for s, e in zip(starts, ends):
        flush()
        s.record()
        fn()
        e.record()
    ends[-1].synchronize()
    summary = sampler.stop() if sampler else {}
    times = [float(e.time_since(s)) for s, e in zip(starts, ends)]
    return times, n_warm, summary


def bench_us(fn, flush, event, sync, warmup_ms: float = 25.0, rep_ms: float = 100.0) -> dict:
    """do_bench of fn, each repetition after flush(): median, q10 and q90 in microseconds, and the repetitions."""
    times, _, _ = do_bench(fn, flush, event, sync, warmup_ms, rep_ms)
    s = summarize(times)
    return dict(median_us=s["median_ms"] * 1e3, q10_us=s["q10_ms"] * 1e3, q90_us=s["q90_ms"] * 1e3, reps=len(times))


def summarize(times_ms):
    t = np.asarray(times_ms)
    return dict(median_ms=float(np.median(t)), q10_ms=float(np.quantile(t, 0.1)), q90_ms=float(np.quantile(t, 0.9)),
                min_ms=float(t.min()))
