"""benchmarks/interval_groups.py (CPU): the residual's levels per group make the intervals it scores, and a point runs
the guarded edge body where its tile does not divide the problem."""
import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import interval_groups as ig  # noqa: E402


def _row(kernel, bound, regime, pred, meas, M=4096, N=4096, K=4096, **cfg):
    return dict(kernel=kernel, bound=bound, regime=regime, predicted_gflops=str(pred), measured_gflops=str(meas),
                M=str(M), N=str(N), K=str(K), config=json.dumps(cfg or {"bm": 128, "bn": 128, "bk": 8}))


def test_the_levels_of_a_group_are_its_own_residuals_quantiles():
    # 100 points of one group, measured at exp(r) x the prediction, r evenly from -0.2 to +0.2
    rs = np.linspace(-0.2, 0.2, 100)
    pts = [_row("double_buffer", "issue", "many", 1000.0, 1000.0 * np.exp(r)) for r in rs]
    s = ig.score(pts, pts, ig.GROUPINGS["bound, regime"])
    q05, q95 = np.quantile(rs, [0.05, 0.95])
    assert s["half_width_pct"] == pytest.approx(50.0 * (np.exp(q95) - np.exp(q05)))
    assert 88.0 <= s["inside_90_pct"] <= 92.0 and 48.0 <= s["inside_50_pct"] <= 52.0
    mae = np.median(np.abs(100.0 * (np.exp(-rs) - 1.0)))
    assert s["mae_pct"] == pytest.approx(mae) and s["ratio"] == pytest.approx(s["half_width_pct"] / mae)


def test_a_small_group_takes_its_bounds_residuals():
    wide = [_row("tiled_2d", "latency", "many", 1000.0, 1000.0 * np.exp(r)) for r in np.linspace(-0.5, 0.5, 40)]
    few = [_row("tiled_2d", "latency", "lone", 1000.0, 1000.0) for _ in range(5)]  # 5 residuals of 0: too few
    s = ig.score(few, wide + few, ig.GROUPINGS["bound, regime"])
    assert s["half_width_pct"] > 30.0 and s["inside_90_pct"] == 100.0


def test_edge_is_a_tile_that_does_not_divide_or_k_and_n_not_multiples_of_4():
    assert not ig.edge(_row("double_buffer", "issue", "many", 1, 1))
    assert ig.edge(_row("double_buffer", "issue", "many", 1, 1, M=4095))
    assert ig.edge(_row("double_buffer", "issue", "many", 1, 1, K=4092, bm=128, bn=128, bk=8))
    assert ig.edge(_row("naive", "smem", "many", 1, 1, N=1022, bm=32, bn=2))
    assert not ig.edge(_row("naive", "smem", "many", 1, 1, M=1000, N=1000, K=1000, bm=8, bn=8))


def test_the_command_reads_points_csvs_and_refuses_a_missing_one(tmp_path, capsys, monkeypatch):
    f = tmp_path / "points.csv"
    rows = [_row("double_buffer", "issue", "many", 1000.0, 1000.0 * np.exp(r)) for r in np.linspace(-0.1, 0.1, 40)]
    with open(f, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    monkeypatch.setattr(sys, "argv", ["interval_groups.py", str(f)])
    assert ig.main() == 0
    out = capsys.readouterr().out
    assert out.count(f"| {f} |") == len(ig.GROUPINGS) and "| 40 |" in out
    monkeypatch.setattr(sys, "argv", ["interval_groups.py", str(tmp_path / "missing.csv")])
    assert ig.main() == 2
    assert capsys.readouterr().err.count("\n") == 1
