"""The split_k timing and counter records (results/archive/split-k-costs-20261126-h100-sxm.json,
ncu-split-k-*-20261126-h100-sxm.json.xz) read back on the CPU the way docs/model.md quotes them, the two
benchmarks' refusals of malformed cases, and ncu_choices.py's check of configurations against the device file
before it compiles them."""
import contextlib
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import split_k_costs  # noqa: E402

ARCHIVE = ROOT / "results" / "archive"
RECORD = ARCHIVE / "split-k-costs-20261126-h100-sxm.json"


def _fit(rows):
    kt = np.array([r[0] for r in rows], dtype=float)
    per_tile, fixed = np.polyfit(kt, [r[1] for r in rows], 1)
    return fixed, per_tile * 1e3


def test_record_is_verified_and_complete():
    res = json.loads(RECORD.read_text())
    assert len(res["reduction"]) == 36 and all(r["verified"] for r in res["reduction"])
    assert 1.5 < res["second_launch_us"] < 3.5
    for r in res["reduction"]:  # the whole pair is never faster than its main kernel by more than the timing spread
        assert r["whole"]["median_us"] > r["main"]["median_us"] - 1.0


def test_measured_fixed_parts_as_the_docs_quote_them():
    """The short-slice configuration's main kernel: 17.3 us + 7,631 ns per k-tile; the one-wave 512 x 512
    control: 15.4 + 1,487 (docs/model.md, 'Where the model misses')."""
    res = json.loads(RECORD.read_text())
    by = {}
    for r in res["reduction"]:
        cfg = split_k_costs.KernelConfig.make("split_k", **r["params"])
        kt = math.ceil(math.ceil(r["K"] / r["slices"]) / cfg.bk)
        by.setdefault((cfg.label(), r["M"], r["N"]), []).append((kt, r["main"]["median_us"]))
    fixed, per = _fit(by[("split_k(bm=64,bn=128,bk=16,tm=8,tn=8,splits=8)", 512, 2304)])
    assert fixed == pytest.approx(17.3, abs=0.05) and per == pytest.approx(7631, abs=1)
    fixed, per = _fit(by[("split_k(bm=128,bn=128,bk=8,tm=8,tn=16,splits=16)", 512, 512)])
    assert fixed == pytest.approx(15.4, abs=0.05) and per == pytest.approx(1487, abs=1)


def test_ncu_fits_count_every_slice_of_the_grid():
    """Stall cycles per warp of a block divide by the grid's warps with its slices: the issued instructions
    per warp and k-tile ('selected') are then the same at every K, and the fixed long-scoreboard wait of
    64 x 128 x 16 is the 1,308 cycles the docs quote."""
    files = sorted(ARCHIVE.glob("ncu-split-k-512-2304-*-20261126-h100-sxm.json.xz"))
    assert len(files) == 3
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert split_k_costs.ncu_fits(files) == 0
    rows = [ln.split("|")[1:-1] for ln in buf.getvalue().splitlines() if ln.startswith("| split_k(bm=64,bn=128,bk=16")]
    per_k = [float(c[4].replace(",", "")) / int(c[2]) for c in rows if c[2].strip().isdigit()]
    assert len(per_k) == 3 and max(per_k) / min(per_k) < 1.05
    fit = next(c for c in rows if "fixed" in c[2])
    fixed_long = float(fit[5].split("+")[0].replace(",", ""))
    assert fixed_long == pytest.approx(1308, abs=1)


@pytest.mark.parametrize("script,arg", [("split_k_costs.py", "--case=1,2:splits=4"), ("split_k_costs.py", "--kscale=0"),
                                        ("split_k_costs.py", "--case=8,8,8:bm=7"), ("flush_state.py", "--case=8,8:naive:"),
                                        ("flush_state.py", "--case=8,8,8:nokernel:")])
def test_malformed_cases_are_refused_in_one_line(script, arg):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), arg], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "error:" in r.stderr.splitlines()[-1]


def test_ncu_choices_refuses_what_the_device_cannot_run_before_compiling():
    import ncu_choices

    from perfmodel.devices import load_device

    h100 = load_device("h100-sxm")
    bad = ncu_choices.misfits(["async_pipeline:", "async_pipeline:bk=32,stages=3"], h100)
    assert len(bad) == 1 and bad[0].startswith("async_pipeline:bk=32,stages=3: does not fit h100-sxm")
    assert "static limit" in bad[0]
    assert ncu_choices.misfits(["async_pipeline:bk=32,stages=3"], None) == []


def test_compare_predicts_the_reduction_launched_as_the_record_was():
    """--compare takes the record's launch of reduce_splits (its reduction_launch), else --launch, and refuses a
    record that says neither: the 2026-11-26 H100 record launched it the usual way, which the model charges
    sm_90's measured programmatic saving more than a programmatic launch."""
    res = json.loads(RECORD.read_text())
    assert "reduction_launch" not in res
    with pytest.raises(ValueError, match="--launch"):
        split_k_costs.record_launch(res, None)
    assert split_k_costs.record_launch(res, "stream") == "stream"
    assert split_k_costs.record_launch(dict(res, reduction_launch="programmatic"), None) == "programmatic"
    with pytest.raises(ValueError, match="says its reduction was launched 'programmatic'"):
        split_k_costs.record_launch(dict(res, reduction_launch="programmatic"), "stream")

    def reductions(launch):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert split_k_costs.compare(RECORD, launch) == 0
        rows = [ln.split("|") for ln in buf.getvalue().splitlines() if ln.startswith("| split_k(")]
        return np.array([float(c[6].split("/")[1]) for c in rows if len(c) == 8])  # the first table's rows

    from perfmodel.devices import load_device

    saving = load_device("h100-sxm").latency.programmatic_launch_saving_us
    stream, programmatic = reductions("stream"), reductions("programmatic")
    assert len(stream) == 36
    assert np.allclose(stream - programmatic, saving, atol=0.011)


def test_compare_without_a_launch_is_refused_in_one_line():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "split_k_costs.py"), "--compare", str(RECORD)],
                       capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "pass --launch stream" in r.stderr.splitlines()[-1]
