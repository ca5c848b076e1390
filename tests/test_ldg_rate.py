"""The L1's rate for global loads that hit (benchmarks/ldg_rate.py on the lent H200,
results/archive/ldg-rate-20261129-h200.json; docs/model.md, "Where the model misses": coalesced): replayed on
the CPU, and the script's bad input refused without a GPU."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "results" / "archive" / "ldg-rate-20261129-h200.json"


def rates():
    rows = json.loads(RECORD.read_text())["rows"]
    return {(r["pattern"], r["warps_per_sm"]): r["loads_per_clock_per_sm"] for r in rows}


def test_hits_never_pass_one_request_a_clock_and_grow_with_the_warps():
    r = rates()
    assert {p for p, _ in r} == {"line", "broadcast", "pair"}
    for p in ("line", "broadcast", "pair"):
        seq = [r[(p, w)] for w in (4, 8, 16, 32, 64)]
        assert all(a < b for a, b in zip(seq, seq[1:])), p
        assert seq[-1] < 1.0  # the L1 takes at most one request a clock


def test_the_coalesced_kernels_pair_of_loads_runs_as_fast_as_either_alone():
    """The figures docs/model.md quotes: the pair at 0.89 / 0.83 / 0.64 a clock with 64 / 32 / 16 warps, lines
    alone 0.91 and broadcast words alone 0.89 at 64: what holds the coalesced kernel at 0.70 is not its mix."""
    r = rates()
    assert [round(r[("pair", w)], 2) for w in (64, 32, 16)] == [0.89, 0.83, 0.64]
    assert round(r[("line", 64)], 2) == 0.91 and round(r[("broadcast", 64)], 2) == 0.89
    assert abs(r[("pair", 64)] - r[("line", 64)]) < 0.05 and abs(r[("pair", 64)] - r[("broadcast", 64)]) < 0.05


def test_bad_warp_counts_are_refused_in_one_line():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "ldg_rate.py"), "x.json", "--warps", "48"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0 and "--warps '48'" in out.stderr
