"""An L2 hit on a line read before (benchmarks/l2_reuse_latency.py, recorded on the H200): the recorded tables, and the
tile loads' latency the model would take from it (model.terms.tile_l2_latency, off: terms.SECOND_READS), which
--figures datasheet leaves out."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from perfmodel import KernelConfig
from perfmodel.devices import datasheet_only, load_device
from perfmodel.model.figures import Figures
from perfmodel.model.predict import predict
from perfmodel.model import terms
from perfmodel.model.terms import second_read_share, tile_l2_latency

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import l2_reuse_latency  # noqa: E402

RECORD = ROOT / "results" / "archive" / "l2-reuse-latency-20261201-h200.json"
REFERENCE = ROOT / "results" / "reference-calibration-h100-sxm.toml"


def _rec():
    return json.loads(RECORD.read_text())


@pytest.mark.parametrize("name, row", [
    ("l2-reuse-latency-20261201-h200", "| 8 MB | 366 (0.2 %) | 280 (0.1 %) | 0.765 |"),
    ("l2-reuse-latency-together-20261201-h200", "| 132 | 359 (0.3 %) | 286 (0.1 %) | 0.796 |"),
    ("l2-reuse-latency-churn-20261201-h200", "| 32 MB | 461 (30.5 %) | 296 (8.0 %) | 0.642 |")])
def test_the_recorded_tables_are_what_the_script_prints(name, row):
    text = l2_reuse_latency.table(json.loads((ROOT / "results" / "archive" / f"{name}.json").read_text()))
    assert row in text
    assert (ROOT / "results" / "archive" / f"{name}.txt").read_text().strip() == text.strip()


def test_readers_at_once_wait_for_the_first_read_and_other_lines_do_not_undo_a_second():
    """1-132 blocks chasing the ring at once: each within 4 % of one block's first walk; every second walk, after
    64 MB of other lines or not, under 0.82 of its first."""
    rec = json.loads((ROOT / "results" / "archive" / "l2-reuse-latency-together-20261201-h200.json").read_text())
    med = {b: {k: float(np.median(v[k])) for k in v} for b, v in rec["together_cycles_per_step_by_blocks"].items()}
    assert all(abs(m["first"] / med["1"]["first"] - 1) < 0.04 and m["again"] / m["first"] < 0.82 for m in med.values())
    churn = json.loads((ROOT / "results" / "archive" / "l2-reuse-latency-churn-20261201-h200.json").read_text())
    again = {mb: float(np.median(v["again"])) for mb, v in churn["churn_cycles_per_step_by_other_MB"].items()}
    plain = float(np.median(churn["cycles_per_step"]["8"]["again"]))
    assert all(a / plain < 1.04 for a in again.values())


def test_a_line_read_again_is_served_at_one_latency_whatever_the_ring():
    """Second walks of 2 MB to 1 GiB rings within 3 % of each other, each at most 0.81 of its first walk; the device
    files' figure is the 8 MB ring's, calibrate's ring."""
    again = {mb: float(np.median(v["again"])) for mb, v in _rec()["cycles_per_step"].items()}
    first = {mb: float(np.median(v["first"])) for mb, v in _rec()["cycles_per_step"].items()}
    assert max(again.values()) / min(again.values()) < 1.03
    assert all(again[mb] / first[mb] < 0.81 for mb in again)
    for name in ("h200", "h100-sxm"):
        assert load_device(name).latency.l2_reread_latency_cycles == round(again["8"])


def test_tile_loads_take_the_second_read_where_it_was_measured():
    dev = load_device("h100-sxm")
    first, again = dev.latency.l2_latency_cycles, dev.latency.l2_reread_latency_cycles
    assert again < first
    assert tile_l2_latency(dev.latency, 0.0) == first and tile_l2_latency(dev.latency, 1.0) == again
    assert tile_l2_latency(dev.latency, 0.25) == first + 0.25 * (again - first)
    ds = datasheet_only(dev)
    assert ds.latency.l2_reread_latency_cycles is None and tile_l2_latency(ds.latency, 1.0) == first
    # a generation nobody measured it on keeps one L2 latency
    turing = load_device("rtx2070s")
    assert turing.latency.l2_reread_latency_cycles is None
    assert tile_l2_latency(turing.latency, 0.5) == turing.latency.l2_latency_cycles


def test_second_reads_are_the_later_waves_reads():
    # one wave: every panel's readers run at once
    assert second_read_share(4096, 4096, 128, 128, 1024) == 0.0
    # 4096^2 in 128 x 128 tiles, 264 blocks a wave: A's rows of 32 blocks fit a wave, B's 32 rows come 8.25 at a time
    assert abs(second_read_share(4096, 4096, 128, 128, 264) - 0.5 * (1 - 264 / 32 / 32)) < 1e-12
    # one block row of 512 blocks: both panels' first wave holds 264 of their readers
    assert abs(second_read_share(128, 65536, 128, 128, 264) - (1 - 264 / 512)) < 1e-12
    # taller tiles give A's bytes more weight
    assert abs(second_read_share(4096, 4096, 256, 64, 264) - 64 * (1 - 264 / 64 / 16) / 320) < 1e-12


def test_a_calibrated_single_buffered_kernel_would_expose_the_shorter_latency(monkeypatch):
    """bank_conflict_free's default at 4096 with the H100 reference calibration (first read 380 cycles): with the
    term on, its load phase is shorter by the second reads' share (0.37) of the 100 cycles between the two
    latencies, times the L2's share of its loads; off (the model's default) nothing moves."""
    cfg = KernelConfig.make("bank_conflict_free")
    fig = Figures.load("h100-sxm", calibration=REFERENCE)
    dev = fig.device
    no_reread = Figures(dev.model_copy(update={"latency": dev.latency.model_copy(update={"l2_reread_latency_cycles": None})}),
                        calibrated=True)
    assert not terms.SECOND_READS
    assert predict(fig, cfg, 4096).gflops == predict(no_reread, cfg, 4096).gflops
    monkeypatch.setattr(terms, "SECOND_READS", True)
    on, without = predict(fig, cfg, 4096), predict(no_reread, cfg, 4096)
    drop = without.exposed_latency_cycles - on.exposed_latency_cycles
    share = second_read_share(4096, 4096, 128, 128, 264)
    assert 0.8 * share * 100 < drop <= share * 100 and on.gflops > without.gflops
    assert on.l2_second_read_share == pytest.approx(share) and on.l2_tile_latency_cycles < without.l2_tile_latency_cycles
    ds = Figures.load("h100-sxm", figures="datasheet")
    assert ds.effective.latency.l2_reread_latency_cycles is None


def test_a_calibration_that_timed_the_second_read_replaces_the_device_files(tmp_path):
    text = REFERENCE.read_text().replace("l2_latency_cycles = 379.941", "l2_latency_cycles = 379.941\nl2_reread_latency_cycles = 290.5")
    assert text != REFERENCE.read_text()
    cal = tmp_path / "calibration.toml"
    cal.write_text(text)
    lat = Figures.load("h100-sxm", calibration=cal).effective.latency
    assert lat.l2_reread_latency_cycles == 290.5 and lat.l2_latency_cycles == 379.941
    assert Figures.load("h100-sxm", calibration=REFERENCE).effective.latency.l2_reread_latency_cycles == 280
