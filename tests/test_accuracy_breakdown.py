"""`perfmodel accuracy --by KEYS` and `--points FILE`: where the error of the scored points is, and every
point written out, from the same scoring as the accuracy table."""
import csv
import json
from pathlib import Path

import numpy as np
import pytest

from perfmodel.accuracy import GROUP_KEYS, group_errors, parse_group_keys
from perfmodel.cli import main
from perfmodel.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "results" / "20261122-153912-h100-sxm-seed10"


def _pt(kernel, bound, err, waves, registers=None, blocks=None):
    return dict(kernel=kernel, bound=bound, error_pct=err, waves=waves, regime="many", run="r", registers=registers,
                blocks_per_sm=blocks)


def test_groups_hold_every_point_and_rank_by_their_share_of_the_error():
    pts = [_pt("a", "fma", +10.0, 8.0, 255, 1), _pt("a", "fma", -10.0, 8.0, 250, 4), _pt("b", "smem", +30.0, 0.5, 249, 5),
           _pt("b", "fma", -2.0, 1.5, 64, 9), _pt("c", "l2", +4.0, None)]
    by = group_errors(pts, ("kernel",))
    assert [g["group"]["kernel"] for g in by] == ["b", "a", "c"]  # 32, 20 and 4 of the 56 summed
    assert sum(g["points"] for g in by) == len(pts)
    assert sum(g["share_pct"] for g in by) == pytest.approx(100.0)
    a = next(g for g in by if g["group"]["kernel"] == "a")
    assert (a["points"], a["mape_pct"], a["bias_pct"]) == (2, 10.0, 0.0)
    assert a["share_pct"] == pytest.approx(100 * 20 / 56)
    bands = {g["group"]["waves"]: g["points"] for g in group_errors(pts, ("waves",))}
    assert bands == {"4-16": 2, "under 1": 1, "1-2": 1, "n/a": 1}
    regs = {g["group"]["registers"]: (g["points"], g["bias_pct"]) for g in group_errors(pts, ("registers",))}
    assert regs == {"250-255 (the cap)": (2, 0.0), "193-249": (1, 30.0), "up to 64": (1, -2.0), "n/a": (1, 4.0)}
    blocks = {g["group"]["blocks"]: (g["points"], g["bias_pct"]) for g in group_errors(pts, ("blocks",))}
    assert blocks == {"5-8": (1, 30.0), "1": (1, 10.0), "3-4": (1, -10.0), "9 or more": (1, -2.0), "n/a": (1, 4.0)}
    two = group_errors(pts, ("kernel", "bound"))
    assert len(two) == 4 and {tuple(g["group"].values()) for g in two} == {("a", "fma"), ("b", "smem"), ("b", "fma"), ("c", "l2")}


def test_group_keys_are_checked():
    assert parse_group_keys(" kernel, regime ") == ("kernel", "regime")
    assert set(GROUP_KEYS) >= {"kernel", "bound", "regime", "class", "waves", "registers", "blocks"}
    for bad in ("", "kernel,nope", "run,run"):
        with pytest.raises(UserError):
            parse_group_keys(bad)


@pytest.mark.skipif(not RUN.exists(), reason="recorded run absent")
def test_points_file_and_breakdown_agree_with_the_accuracy_table(tmp_path, capsys, monkeypatch):
    from perfmodel import facts

    # recorded facts only, no loop replay: the scoring is the table's, faster
    monkeypatch.setattr(facts.RunFacts, "program", lambda self, cfg: None)
    monkeypatch.setattr(facts.RunFacts, "_today", lambda self, cfg: None)
    monkeypatch.setattr(facts.RunFacts, "prebuild", lambda self, cfgs, progress=None: 0)
    out = tmp_path / "points.csv"
    assert main(["accuracy", str(RUN), "--figures", "datasheet", "--by", "kernel,regime", "--points", str(out), "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    n = j["overall"]["points"]
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == n > 100
    meas, pred, err = (np.array([float(r[k]) for r in rows]) for k in ("measured_gflops", "predicted_gflops", "error_pct"))
    assert np.allclose(err, 100 * (pred - meas) / meas)
    assert np.mean(np.abs(err)) == pytest.approx(j["overall"]["mape_pct"])
    assert {r["run"] for r in rows} == {RUN.name} and all(r["bound"] and r["regime"] for r in rows)
    regs = np.array([int(r["registers"]) for r in rows])  # the recorded binaries' registers, every point
    assert regs.min() >= 16 and regs.max() <= 255 and len(set(regs)) > 5
    assert all(int(r["local_frame_bytes"]) >= 0 for r in rows)
    assert sum(g["points"] for g in j["by"]) == n
    assert sum(g["share_pct"] for g in j["by"]) == pytest.approx(100.0)
    for g in j["by"]:  # each group's figures are its points' errors
        e = err[[r["kernel"] == g["group"]["kernel"] and r["regime"] == g["group"]["regime"] for r in rows]]
        assert (len(e), np.mean(np.abs(e)), np.mean(e)) == (g["points"], pytest.approx(g["mape_pct"]), pytest.approx(g["bias_pct"]))
    # written once: the same file again is refused, and the first is kept
    before = out.read_text()
    assert main(["accuracy", str(RUN), "--figures", "datasheet", "--points", str(out)]) == 2
    assert out.read_text() == before
