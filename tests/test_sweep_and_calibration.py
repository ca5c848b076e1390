import json
import random
from pathlib import Path

import pytest

from perfmodel import KernelConfig, UserError, load_device, predict
from perfmodel.catalogue import ParamProbe, get_kernel
from perfmodel.cli import main
from perfmodel.devices import attach_calibration
from perfmodel.sweep import TILED, VALUES, enumerate_configs

ROOT = Path(__file__).resolve().parent.parent
CALIB = sorted((ROOT / "results").glob("calibration-*.toml"))


def test_probe_and_config_agree_on_every_check():
    rng = random.Random(3)
    dev = load_device("a100")
    for _ in range(400):
        kid = rng.choice(TILED)
        spec = get_kernel(kid)
        params = {p: rng.choice(VALUES[p]) for p in spec.params}
        probe = ParamProbe(spec, params)
        cfg = KernelConfig.unchecked(kid, **params)
        assert probe.violations() == cfg.violations()
        if not probe.violations():
            assert probe.device_violations(dev) == cfg.device_violations(dev)
            assert probe.config() == cfg


def test_enumeration_counts_add_up():
    dev = load_device("rtx2070s")
    valid, why, total = enumerate_configs(dev, ("double_buffer",))
    assert len(valid) + sum(why.values()) == total == 5 ** 5
    assert all(not c.violations() and not c.device_violations(dev) for c in valid)


def test_sweep_cli_text_json_csv(capsys):
    assert main(["sweep", "--device", "v100", "--kernel", "double_buffer", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "configurations considered" in out and "first violate" in out
    assert main(["sweep", "--device", "v100", "--kernel", "warp_tiled", "--top", "4", "--json", "--size", "2048"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["M"] == 2048 and len(data["top"]) == 4
    g = [r["gflops"] for r in data["top"]]
    assert g == sorted(g, reverse=True) and data["valid"] + sum(data["invalid_by_constraint"].values()) == data["considered"]
    assert main(["sweep", "--device", "v100", "--kernel", "tiled_2d", "--top", "2", "--csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("rank,kernel")
    assert main(["sweep", "--device", "v100", "--kernel", "naive"]) == 2


@pytest.mark.skipif(not CALIB, reason="no calibration recorded")
def test_calibration_changes_the_figures_the_model_uses():
    dev = attach_calibration(load_device("h100-sxm"), CALIB[-1])
    m = dev.measured
    assert m.gpu.startswith("NVIDIA H100") and m.ffma_outer_GFLOPS < dev.peak_fp32_GFLOPS()
    cfg = KernelConfig.make("double_buffer")
    ds = predict(dev, cfg, 4096, registers=128)
    ms = predict(dev, cfg, 4096, registers=128, figures="measured")
    assert ds.figures == "datasheet" and ms.figures.startswith("measured")
    # the calibrated outer-product FFMA rate is below peak, so the prediction must drop
    assert ms.ffma_issue_cycles > 1.0 and ms.gflops < ds.gflops
    assert ms.gflops <= m.ffma_outer_GFLOPS_by_warps_per_sm["32"] * 1.0001


def test_calibration_errors(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        attach_calibration(load_device("h100-sxm"), tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[measured]\ngpu = 'x'\ndate = 'today'\nfp32_GFLOPS = -3\n")
    with pytest.raises(UserError, match="measured.fp32_GFLOPS"):
        attach_calibration(load_device("h100-sxm"), bad)
    with pytest.raises(UserError, match="no \\[measured\\]"):
        load_device("h100-sxm").with_measured()
