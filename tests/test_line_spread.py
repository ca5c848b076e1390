"""benchmarks/line_spread.py's summary and the tile counters docs/kernels.md quotes, replayed on the recorded H200 files
(no GPU)."""
import json
import lzma
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = ROOT / "results" / "archive"
sys.path.insert(0, str(ROOT / "benchmarks"))
import line_spread  # noqa: E402


def _runs():
    d = json.loads(lzma.open(ARCHIVE / "line-spread-20261129-h200.json.xz").read())
    return d, {(r["path"], 32 // r["lanes_per_line"], r["warps"], r["unroll"]): r for r in d["runs"]}


def test_the_recorded_summaries_come_back_from_the_records():
    d, runs = _runs()
    assert len(runs) == 4 * 3 * 4
    for (_, _, w, u), r in runs.items():
        s = line_spread.summarise(np.asarray(r["records"], dtype=np.int64), w, u, d["passes"])
        assert abs(s["loads_per_clock"] - r["loads_per_clock"]) < 1e-12 and abs(s["bytes_per_clock"] - 512 * s["loads_per_clock"]) < 1e-9


def test_loads_spread_over_16_lines_bring_fewer_bytes_than_loads_of_4_whole_lines():
    _, runs = _runs()
    for w in (16, 32):
        for u in (2, 4, 8, 16):
            spread, whole = (runs[("nc", lines, w, u)]["bytes_per_clock"] for lines in (16, 4))
            assert 26.95 <= spread <= 32 and 34 <= whole <= 39.5 and spread < 0.95 * whole  # what docs/kernels.md quotes
            assert runs[("cg", 16, w, u)]["bytes_per_clock"] < 23 < 34 <= runs[("cg", 4, w, u)]["bytes_per_clock"]
            lines = 16 * runs[("nc", 16, w, u)]["loads_per_clock"]
            assert 0.84 <= lines <= 1.0  # at most about a line a clock through the L1


def test_the_three_tiles_counters():
    d = json.loads(lzma.open(ARCHIVE / "ncu-db-tiles-20261129-h200.json.xz").read())
    k = d["kernels"]
    us = {name.split("(")[1].split(",bk")[0]: v["gpu__time_duration.sum"] / 1e3 for name, v in k.items()}
    assert round(us["bm=128,bn=128"]) == 2859 and round(us["bm=64,bn=256"]) == 2787 and round(us["bm=256,bn=64"]) == 2984
    tag = [v["l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum"] / v["smsp__inst_executed_op_global_ld.sum"] for v in k.values()]
    assert [round(x, 2) for x in tag] == [2.52, 1.62, 3.50]


def test_a_summary_of_synthetic_records():
    rec = np.array([[0, 0, 1000], [0, 10, 1100]], dtype=np.int64)
    s = line_spread.summarise(rec, 2, 4, 10)
    assert abs(s["loads_per_clock"] - 80 / 1100) < 1e-12
