"""A one-wave problem's first touch of DRAM against a warm L2 (benchmarks/flush_state.py --warm on the lent H200,
results/archive/flush-warm*-20261130-h200.json; docs/model.md, "One wave", "Against a warm L2"): the figures the
docs quote, replayed from the records on the CPU, the model's double-buffered block hiding what the GPU does not,
and the script's bad input refused in one line without a GPU."""
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = ROOT / "results" / "archive"
RECORDS = ("flush-warm-20261130-h200.json", "flush-warm-grids-20261130-h200.json", "flush-warm-depth-20261130-h200.json")
L2_BYTES = 50e6  # the H200's L2 (devices/h200.toml): a warm run hits it only where A, B and C fit
CLOCK_MHZ = 1980.0


def cases():
    out = []
    for name in RECORDS:
        rec = json.loads((ARCHIVE / name).read_text())
        assert rec["device"] == "NVIDIA H200" and rec["warm"] is True
        out += rec["cases"]
    return out


def one_wave_fitting(c):
    return 4 * (c["M"] * c["K"] + c["K"] * c["N"] + c["M"] * c["N"]) < L2_BYTES and (c["M"], c["N"], c["K"]) != (2048, 2048, 2048)


def premium(c):
    """Cycles a k-tile the first touch adds: (flushed - warm) time over the k-tiles."""
    bk = c["params"]["bk"]
    return (c["dirty"]["median_us"] - c["warm"]["median_us"]) * CLOCK_MHZ / -(-c["K"] // bk)


def test_every_case_verified_and_the_flush_state_costs_nothing():
    cs = cases()
    assert len(cs) == 65 and all(c["verified"] for c in cs)
    ratios = [c["dirty"]["median_us"] / c["clean"]["median_us"] for c in cs]
    assert 0.99 < min(ratios) and max(ratios) < 1.08  # dirty lines after the memset: no cost worth a term


def test_the_premiums_the_docs_quote():
    cs = [c for c in cases() if one_wave_fitting(c)]
    by = {}
    for c in cs:
        by.setdefault((c["kernel"], c["params"]["bk"]), []).append(premium(c))
    single, double = by[("tiled_2d", 8)], by[("double_buffer", 8)]
    assert (len(single), round(min(single)), round(max(single)), round(statistics.median(single))) == (16, 248, 652, 595)
    assert (len(double), round(min(double)), round(max(double)), round(statistics.median(double))) == (14, 150, 275, 195)
    wt = by[("warp_tiled", 16)]
    assert (len(wt), round(min(wt)), round(max(wt)), round(statistics.median(wt))) == (15, 55, 642, 374)


def test_a_lone_double_buffered_block_does_not_hide_the_first_touch_the_model_hides():
    """Today's model (datasheet register estimate, no toolkit needed) puts the flushed and the warm time of the
    default double_buffer within 1 % of each other at these one-wave grids; the GPU takes 9-16 % longer after the
    flush. When a term closes this gap, this test says so."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import flush_warm_score

    from perfmodel import KernelConfig, predict

    # every load an L2 hit: the DRAM latency the L2's, no loaded-latency table (flush_warm_score.figures)
    fig, warm_dev = flush_warm_score.figures(ROOT / "results" / "20261129-160257-h200-bench-all" / "calibration.toml")
    single = KernelConfig.make("tiled_2d")  # the same two figure sets do move a single-buffered block
    assert predict(fig, single, 512, 512, 1024).time_s / predict(warm_dev, single, 512, 512, 1024).time_s > 1.05
    cs = [c for c in cases() if one_wave_fitting(c) and c["config"] == "double_buffer(bm=128,bn=128,bk=8,tm=8,tn=8)"]
    assert len(cs) >= 10
    cfg = KernelConfig.make("double_buffer")
    for c in cs:
        flushed = predict(fig, cfg, c["M"], c["N"], c["K"]).time_s
        hit = predict(warm_dev, cfg, c["M"], c["N"], c["K"]).time_s
        assert flushed / hit < 1.01, c["M"]
        assert c["dirty"]["median_us"] / c["warm"]["median_us"] > 1.09, (c["M"], c["N"], c["K"])


@pytest.mark.parametrize("case, says", [("1,2:naive:", "want M,N,K:kernel"), ("1,2,3:nosuch:", "unknown kernel"),
                                        ("0,2,3:naive:", "at least 1")])
def test_bad_cases_are_refused_in_one_line(case, says):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "flush_state.py"), "--case", case, "--warm"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0 and says in out.stderr
