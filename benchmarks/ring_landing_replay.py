"""A candidate term, not in the model: async_pipeline's ring waits the measured landing of its SM's tile bytes where
the tile comes from DRAM, in place of the pointer chase. Runs any `perfmodel` command (predict, accuracy, ...) with
`predict.compute_stage` wrapped so that, for async_pipeline configurations, the load latency its ring's s - 1 compute
phases must hide (`hide_of`, terms.tile_cycles' kind 2) is raised by D x max(0, landing(b x tile KB) - (DRAM latency +
b x tile bytes / L2->SM port)), with b the blocks an SM runs at once, D the DRAM share of the latency mix
((mem - L2) / (DRAM - L2), 1 for a grid of one wave), and landing() read from
results/archive/copy-landing-bytes-20261207-h100-sxm.json (benchmarks/copy_landing.py, copies alone from DRAM, 4 warps,
all SMs of an H100: a round's clocks against the tile's KB, interpolated, from the pointer chase at 0 KB, extended
past the last point along its last slope). docs/model.md ("Where the model misses": async_pipeline's two-stage ring)
gives what it moves.

    python3 benchmarks/ring_landing_replay.py accuracy RUN ... --points F      (any perfmodel arguments)
"""
import dataclasses
import importlib
import json
import sys
from pathlib import Path

import numpy as np

P = importlib.import_module("perfmodel.model.predict")
RECORD = Path(__file__).resolve().parent.parent / "results" / "archive" / "copy-landing-bytes-20261207-h100-sxm.json"


def landing_table(path: Path = RECORD) -> tuple[np.ndarray, np.ndarray]:
    """(KB, clocks a round) of the record's 4-warp rows, by KB."""
    rows = sorted((r["tile_bytes"] / 1024.0, r["copies_clocks"]) for r in json.loads(path.read_text())["rows"]
                  if r["warps"] == 4)
    return np.array([k for k, _ in rows]), np.array([c for _, c in rows])


def landing(kb, chase: float, table=None) -> np.ndarray:
    """Clocks for kb KB a SM to land: the table, from (0, chase), extended past its last point along its last slope."""
    x, y = table if table is not None else landing_table()
    x, y = np.concatenate([[0.0], x]), np.concatenate([[chase], y])
    kb = np.asarray(kb, float)
    slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
    return np.where(kb <= x[-1], np.interp(kb, x, y), y[-1] + slope * (kb - x[-1]))


_original = P.compute_stage
_table = None


def compute_stage(fig, r, o, t, i, ll, loc, w, builds, configs, hz, edge=0.0):
    global _table
    ring = np.array([c.kernel == "async_pipeline" for c in configs])
    if ring.any():
        _table = _table or landing_table()
        n, dev = len(configs), fig.effective
        b = np.minimum(np.maximum(o.blocks_per_sm, 1), np.ceil(t.blocks / dev.compute.sm_count))
        dram, l2, mem = (np.broadcast_to(np.asarray(x, float), (n,)) for x in (t.dram_latency, t.l2_latency, t.mem_latency))
        share = np.clip((mem - l2) / np.maximum(dram - l2, 1.0), 0.0, 1.0)
        burst = b * t.l2_bytes_tile / fig.l2_port_bytes_per_clock
        extra = share * np.maximum(0.0, landing(b * t.l2_bytes_tile / 1024.0, dev.latency.dram_latency_cycles, _table) - (dram + burst))
        t = dataclasses.replace(t, mem_latency=np.where(ring, mem + extra, mem))
    return _original(fig, r, o, t, i, ll, loc, w, builds, configs, hz, edge=edge)


P.compute_stage = compute_stage

if __name__ == "__main__":
    from perfmodel.cli import main
    sys.exit(main(sys.argv[1:]))
