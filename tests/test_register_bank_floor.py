"""The register-file floor under a calibrated FFMA rate (Figures.register_bank_floor): the binary's k-tile
loop replayed with its register-bank reads at the chip's own FFMA rate (calibrate's independent FFMA
chains) bounds the compute phase from below, so a loop whose operands pile into one bank is not
predicted at calibrate's outer-product rate."""
from pathlib import Path

import numpy as np
import pytest

from perfmodel import analysis
from perfmodel.devices import load_device
from perfmodel.model.figures import Figures

ROOT = Path(__file__).resolve().parent.parent
REF = ROOT / "results" / "reference-calibration-h100-sxm.toml"
RUN = ROOT / "results" / "20261124-045847-h100-sxm-variants"


def test_the_floor_exists_only_with_a_measured_ffma_rate_and_register_banks():
    h100 = load_device("h100-sxm")
    assert Figures(h100).register_bank_floor is None  # datasheet: the replay charges the banks at one clock itself
    banks, c = Figures.load("h100-sxm", REF).register_bank_floor
    # peak at calibrate's clock over calibrate's independent FFMA chains: 66,908 / 64,671.8 GFLOPS
    assert banks == 2 and c == pytest.approx(h100.peak_fp32_GFLOPS(1980) / 64671.8) and 1.03 < c < 1.04
    gen = Figures.of_generation(load_device("h200"))  # the Hopper generation's figures: the same floor
    assert gen.register_bank_floor == pytest.approx((2, c))
    a100 = Figures.of_generation(load_device("a100"))  # no generation calibration for sm_80: no floor
    assert a100.register_bank_floor is None


@pytest.mark.skipif(not RUN.exists(), reason="recorded run absent")
def test_recorded_design_choices_with_and_without_the_floor(monkeypatch):
    """The recorded design-choice run at 4096 (190 verified points, the binaries' loops from the recorded SASS):
    the floor only ever slows a prediction; the points it moves are 8.1 % off (bias +6.6 %) without it and
    6.2 % (+3.2 %) with it, A stored untransposed (`a_transposed no`) most, and the run 5.1 -> 4.7 %."""
    run = analysis.load_run(RUN)
    facts = analysis.run_facts(run, RUN)

    def rows():
        return {(r["kernel"], r["config"]): r for r in analysis.rows(run, analysis.run_figures(RUN), facts)
                if r.get("error_pct") is not None}

    now = rows()
    monkeypatch.setattr(Figures, "register_bank_floor", property(lambda self: None))
    off = rows()
    assert set(now) == set(off) and len(now) == 190
    assert all(now[k]["predicted_gflops"] <= off[k]["predicted_gflops"] * (1 + 1e-9) for k in now)
    moved = [k for k in now if now[k]["predicted_gflops"] < off[k]["predicted_gflops"] * (1 - 1e-6)]
    e_now, e_off = (np.array([d[k]["error_pct"] for k in moved]) for d in (now, off))
    assert len(moved) >= 30
    assert np.mean(np.abs(e_now)) < np.mean(np.abs(e_off)) - 1.5 and np.mean(e_now) < np.mean(e_off) - 2.5
    untransposed = [i for i, k in enumerate(moved) if '"a_transposed": "no"' in k[1] and k[0] == "double_buffer"]
    assert len(untransposed) >= 10 and np.mean(e_now[untransposed]) < np.mean(e_off[untransposed]) - 4.0
    mape = [np.mean([abs(d[k]["error_pct"]) for k in d]) for d in (now, off)]
    assert mape[0] < mape[1] - 0.3
    choices = ("a_transposed", "b_layout", "frag_width", "load_width", "thread_tile", "double_buffer")
    plain = [k for k in now if k[0] == "double_buffer" and not any(c in k[1] for c in choices)]
    assert plain and not set(plain) & set(moved)  # the kernel's own choices: calibrate's rate binds, as before
