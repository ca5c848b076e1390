"""benchmarks/with_switch.py: model switches set for one perfmodel command, and two points files compared (CPU)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("with_switch", ROOT / "benchmarks" / "with_switch.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("text, says", [
    ("schedule.LATENCY_APART", "is not MODULE.NAME=VALUE"),
    ("nosuch.X=1", "is not one of schedule, terms, predict"),
    ("schedule.NOPE=1", "LATENCY_APART"),
    ("schedule.passes_for=1", "is no switch"),
    ("schedule.LATENCY_APART=maybe", "is not one of"),
])
def test_bad_switch_is_one_line_and_exit_2(text, says, capsys):
    ws = _load()
    with pytest.raises(SystemExit) as e:
        ws.main([text, "--", "predict"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err


def test_switch_is_set_for_the_command(monkeypatch, capsys):
    """The switch is set before the command runs (perfmodel.cli.main, replaced here by one that records what it
    sees), and the command gets the arguments after --."""
    from perfmodel.model import schedule
    ws = _load()
    monkeypatch.setattr(schedule, "LATENCY_APART", False)
    seen = {}
    import perfmodel.cli as cli

    def command(argv):
        seen["v"] = (schedule.LATENCY_APART, list(argv))
        return 0

    monkeypatch.setattr(cli, "main", command)
    assert ws.main(["schedule.LATENCY_APART=on", "--", "accuracy", "--by", "class"]) == 0
    assert seen["v"] == (True, ["accuracy", "--by", "class"])


def test_diff_counts_the_points_that_moved(tmp_path):
    head = "run,kernel,config,shape,class,error_pct,predicted_gflops,blocks_per_sm\n"
    a = tmp_path / "a.csv"
    b = tmp_path / "b.csv"
    a.write_text(head + "r,warp_tiled,c1,s,square,-4.0,100,6\nr,tiled_2d,c2,s,square,2.0,200,2\n")
    b.write_text(head + "r,warp_tiled,c1,s,square,-1.0,103.125,6\nr,tiled_2d,c2,s,square,2.0,200,2\n")
    out = _load().diff(str(a), str(b))
    assert "A: MAPE 3.000 %, bias -1.00 %" in out
    assert "B: MAPE 1.500 %, bias +0.50 %" in out
    assert "moved: 1 points" in out and "warp_tiled" in out and "tiled_2d " not in out


def test_diff_of_unreadable_file_is_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        _load().diff(str(tmp_path / "none.csv"), str(tmp_path / "none.csv"))
    assert e.value.code == 2 and "cannot be read" in capsys.readouterr().err


def test_net_of_x_update_switch_scales_only_the_calibrated_outer_product_factor(monkeypatch):
    """figures.FFMA_NET_OF_X_UPDATE (off by default) takes calibrate's 8x8 rate per FFMA its loop issued (64 of 72
    counted): the calibrated factor times 64/72 where that stays >= 1; datasheet figures keep one clock per FFMA."""
    import numpy as np

    from perfmodel.model import figures as F
    ws = _load()
    assert ws.parse_switch("figures.FFMA_NET_OF_X_UPDATE=1")[1:] == ("FFMA_NET_OF_X_UPDATE", True)
    assert F.FFMA_NET_OF_X_UPDATE is False
    cal = ROOT / "results" / "reference-calibration-h100-sxm.toml"
    if not cal.exists():
        pytest.skip("reference calibration absent")
    fig = F.Figures.load("h100-sxm", calibration=str(cal))
    warps = np.array([4.0, 8.0, 16.0, 24.0])
    on_datasheet = F.Figures.load("h100-sxm", figures="datasheet").ffma_issue_factor(warps)
    before = fig.ffma_issue_factor(warps)
    monkeypatch.setattr(F, "FFMA_NET_OF_X_UPDATE", True)
    after = fig.ffma_issue_factor(warps)
    assert np.all(before > 1.0) and np.allclose(after, np.maximum(1.0, before * 64.0 / 72.0))
    assert np.all(on_datasheet == 1.0)
    assert np.array_equal(F.Figures.load("h100-sxm", figures="datasheet").ffma_issue_factor(warps), on_datasheet)
