"""Recorded points replayed with compiler facts built here instead of those recorded with the binaries
that ran (CPU; a toolchain for sm_90: the local nvcc, or NVIDIA's compiler wheels with
PERFMODEL_IGNORE_LOCAL_TOOLKIT=1). Only runs of the accuracy set made with today's kernel sources
(their binaries are today's builds). Per point it compares the built facts with the recorded ones
(registers, local frame, prefetch share of the SASS, the archived k-tile loop program), then scores
each run both ways with its device's reference calibration.
    PERFMODEL_IGNORE_LOCAL_TOOLKIT=1 python3 benchmarks/replay_built_facts.py [results]"""
import sys
import time
from pathlib import Path

import numpy as np

from perfmodel import facts
from perfmodel.accuracy import accuracy_set, figures_for
from perfmodel.analysis import load_run, rows, run_facts
from perfmodel.catalogue import KernelConfig
from perfmodel.measure import build

results = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
today = build.sources_sha256()


class Built:
    """Build facts from the toolchain here (facts.compiled), one per configuration."""

    def __init__(self, built: dict):
        self.built = built

    def for_measurement(self, m, cfg):
        return self.built[cfg.label()]


def mape(table):
    e = np.array([abs(r["error_pct"]) for r in table if r.get("error_pct") is not None])
    return e.mean(), len(e)


tc = build.toolchain_for("9.0")
print(f"toolchain: {tc.label if tc else 'none'}")
totals = dict(points=0, registers=0, spills=0, prefetch=0, prefetch_n=0, program=0, program_n=0)
lines = []
t0 = time.perf_counter()
for name in accuracy_set(results):
    rd = results / name
    run = load_run(rd)
    if run.environment.kernel_sources_sha256 != today:
        lines.append(f"{name}: other kernel sources, skipped")
        continue
    cc = run.environment.compute_capability
    pts = [(m, KernelConfig.make(m.kernel, **m.config)) for m in run.measurements if m.kernel != "cublas" and m.verified]
    uniq = {c.label(): c for _, c in pts}
    got = facts.compiled_many(list(uniq.values()), cc)
    built = dict(zip(uniq, got))
    rf = run_facts(run, rd)
    for m, cfg in pts:
        b = built[cfg.label()]
        totals["points"] += 1
        totals["registers"] += b.registers == m.registers
        # the run recorded the local frame the driver reports (LOCAL_SIZE_BYTES): the ptxas stack frame
        totals["spills"] += build.resource_usage(cfg, cc)["stack_frame"] == (m.spill_bytes or 0)
        if cfg.spec.buffers == 2 and m.prefetch_fraction is not None:
            totals["prefetch_n"] += 1
            totals["prefetch"] += abs((b.prefetch if b.prefetch is not None else 1.0) - m.prefetch_fraction) < 1e-9
        rec = rf.program(cfg)
        if rec is not None:
            totals["program_n"] += 1
            totals["program"] += b.program is not None and b.program["id"] == rec["id"]
    fig = figures_for(rd, "measured", None, results)
    a, n = mape(rows(run, fig, rf))
    b, _ = mape(rows(run, fig, Built(built)))
    lines.append(f"{name}: {n} points, MAPE recorded facts {a:.2f} %, built facts {b:.2f} %")
    print(lines[-1], f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)

print("\n".join(lines))
p = totals["points"]
print(f"facts built here equal to the recorded ones: registers {totals['registers']}/{p}, local frame {totals['spills']}/{p}, "
      f"prefetch share {totals['prefetch']}/{totals['prefetch_n']}, k-tile loop program {totals['program']}/{totals['program_n']}")
