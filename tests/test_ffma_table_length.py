"""benchmarks/ffma_table_length.py's table, replayed on the recorded H200 file (no GPU): calibrate's 2,000-iteration
FFMA-rate launches hold about 9 us that are not the loop, which is why calibrate now runs 16 times as many."""
import json
import lzma
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import ffma_table_length  # noqa: E402

RECORD = ROOT / "results" / "archive" / "ffma-table-length-20261130-h200.json.xz"


def _rec():
    return json.loads(lzma.open(RECORD).read())


def _rates(rec, m, n):
    ts = np.array([r[str(m)][str(n)] for r in rec["rounds"]])
    return rec["sms"] * n * 128 * rec["iters"] * m * ffma_table_length.FLOP_PER_ITER / ts * 1e-9


def test_the_recorded_table_is_what_the_script_prints():
    text = ffma_table_length.table(_rec())
    assert "| x1 | 4 | 46,884 | 2.6 % | 92.3 | 10.0 % |" in text
    assert "| x16 | 4 | 51,709 | 0.7 % | 1,338.4 | 0.7 % |" in text
    assert (ROOT / "results" / "archive" / "ffma-table-length-20261130-h200.txt").read_text().strip().endswith(
        text.splitlines()[-1])


def test_the_short_loop_reads_slower_by_about_its_fixed_time():
    """x1 against x16: the rate lost is the share of the launch that is not the loop (the empty launch's), at every
    warp count, within a point; the longer loop's own share is under 1 %."""
    rec = _rec()
    for n in rec["counts"]:
        lost = 1 - np.median(_rates(rec, 1, n)) / np.median(_rates(rec, 16, n))
        t1 = np.median([r["1"][str(n)] for r in rec["rounds"]])
        t16 = np.median([r["16"][str(n)] for r in rec["rounds"]])
        empty = np.median([r["empty_s"][str(n)] for r in rec["rounds"]])
        assert abs(lost - empty / t1) < 0.01, n
        assert empty / t16 < 0.01, n


def test_a_synthetic_record():
    rec = {"gpu": "x", "sms": 2, "iters": 2000, "multipliers": [1], "counts": [1],
           "rounds": [{"empty_s": {"1": 1e-5}, "1": {"1": t}} for t in (1e-4, 1.1e-4, 0.9e-4)]}
    text = ffma_table_length.table(rec)
    # 2 SMs x 128 threads x 2,000 iterations x 128 flop in 100 us = 655 GFLOPS; rates 595-728, spread 133 / 655
    assert "| x1 | 4 | 655 | 20.2 % | 100.0 | 10.0 % |" in text
