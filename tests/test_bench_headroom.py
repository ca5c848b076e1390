"""benchmarks/bench_headroom.py on the recorded H200 bench run (no GPU, no compiler): its measured column is the
run's own, the what-ifs only ever raise a split_k pick's ratio, and the figures docs/measurement.md quotes."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_headroom  # noqa: E402

RUN = ROOT / "results" / "20261130-194847-h200-bench-all"
PROBE_ONE_ROW = 1253  # gemv_probe's best at one row, results/archive/gemv-probe-again-20261201-h200.txt


@pytest.fixture(scope="module")
def headroom():
    return bench_headroom.headroom(RUN, PROBE_ONE_ROW)


def test_the_measured_column_is_the_runs_own(headroom):
    rs, ways = headroom
    overall = json.loads((RUN / "bench.json").read_text())["overall"]
    assert len(rs) == overall["shapes"] == 33
    assert bench_headroom.geomean(ways["measured"].values()) == pytest.approx(overall["geomean_vs_cublas"], rel=1e-12)


def test_only_split_k_picks_move_and_only_upwards(headroom):
    rs, ways = headroom
    for r in rs:
        m, nf, nr = (ways[w][r["shape"]] for w in ("measured", "no fixed part", "no reduction"))
        if r["kernel"] == "split_k":
            assert 0 < r["fixed"] <= r["red"] < r["t"] and m < nf <= nr
        else:
            assert r["red"] == r["fixed"] == 0 and m == nf == nr
    one = [r for r in rs if r["M"] == 1]
    assert len(one) == 1 and ways["one-row kernel"][one[0]["shape"]] == pytest.approx(PROBE_ONE_ROW / one[0]["cublas"])


def test_the_figures_the_docs_quote(headroom):
    rs, ways = headroom
    g = {w: bench_headroom.class_geomeans(rs, ratio) for w, ratio in ways.items()}
    assert round(g["measured"]["all"], 3) == 0.994 and round(g["measured"]["skinny_m"], 3) == 0.862
    assert round(g["no fixed part"]["all"], 3) == 1.022 and round(g["no fixed part"]["skinny_m"], 3) == 0.913
    assert round(g["no reduction"]["all"], 3) == 1.048
    assert round(g["one-row kernel"]["all"], 3) == 1.004 and round(g["one-row kernel"]["skinny_m"], 3) == 0.933
    assert min(v for c, v in g["no fixed part"].items()) == pytest.approx(g["no fixed part"]["skinny_m"])


def test_a_folder_without_a_bench_run_is_refused_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_headroom.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "holds no bench.json" in r.stderr
