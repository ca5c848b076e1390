"""benchmarks/copy_landing.py (a ring's k-tile with nothing else in it): its refusals, its kernel built where a local
nvcc is, and what its recorded H100 runs say (docs/model.md, "Where the model misses": async_pipeline's two-stage
ring on few warps)."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "copy_landing.py"
ARCHIVE = ROOT / "results" / "archive"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


@pytest.mark.parametrize("args, says", [
    (["--lds", "17"], "shared loads a step 0-16"),
    (["--lds", "x"], "--lds 'x'"),
    (["--warps", "4,8", "--copies", "6"], "as many entries each"),
    (["--warps", "4", "--copies", "12"], "must fit 48 KB"),
    (["--cold-mb", "-1"], "--cold-mb -1"),
    (["--ksteps", "0"], "1 or more"),
    (["--per-sm", "0"], "1-16 blocks an SM"),
    (["--warps", "8", "--copies", "2", "--per-sm", "8"], "1-16 blocks an SM"),
])
def test_bad_arguments_give_one_line_and_exit_2(tmp_path, args, says):
    p = _run(str(tmp_path / "never.json"), *args)
    assert p.returncode == 2 and says in p.stderr and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert not (tmp_path / "never.json").exists()


def test_an_existing_file_is_never_overwritten(tmp_path):
    out = tmp_path / "there.json"
    out.write_text("{}")
    p = _run(str(out))
    assert p.returncode == 2 and "never overwritten" in p.stderr and out.read_text() == "{}"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no local nvcc")
@pytest.mark.parametrize("lds", [0, 3])
def test_the_kernel_builds_with_its_copies_waits_and_shared_loads(tmp_path, lds):
    src = re.search(r"SRC = r'''(.*?)'''", SCRIPT.read_text(), re.S).group(1)
    (tmp_path / "k.cu").write_text(src)
    ptx = tmp_path / "k.ptx"
    subprocess.run(["nvcc", "-ptx", "-arch=sm_90", f"-DLDS={lds}", "-DFFMA=16", "-o", str(ptx), str(tmp_path / "k.cu")],
                   check=True, capture_output=True)
    text = ptx.read_text()
    assert "cp.async.cg.shared.global" in text and "cp.async.wait_group 0" in text and "cp.async.wait_group 1" in text
    assert ("ld.shared.v4.f32" in text) == (lds > 0)


def _rows(name):
    return json.loads((ARCHIVE / name).read_text())["rows"]


def test_with_copies_the_l2_serves_a_two_stage_ring_exposes_nothing():
    """Twelve configurations (4 warps and 12 KB, 8 warps and 8 KB; 0-0.5 shared loads per FFMA): the two-stage ring
    within 1 % of the three-stage one (22-45 clocks faster a round)."""
    rows = _rows("copy-landing-second-20261207-h100-sxm.json")
    assert len(rows) == 12
    assert all(r["two_stage_clocks"] <= r["three_stage_clocks"] * 1.01 for r in rows)


def test_with_copies_from_dram_a_two_stage_ring_waits_for_the_landing():
    """The copies alone 1,585-1,589 clocks a round (12 KB, 4 warps), 1,400-1,412 (8 KB, 8 warps); the only
    configuration whose three-stage round is shorter than the copies alone (4 warps, 32 steps, no shared loads) runs
    its two-stage ring at least 200 clocks slower, every other within 1 %."""
    rows = _rows("copy-landing-cold-k32-20261207-h100-sxm.json") + _rows("copy-landing-cold-k64-20261207-h100-sxm.json")
    assert len(rows) == 12
    for r in rows:
        lo, hi = (1500, 1700) if r["warps"] == 4 else (1300, 1500)
        assert lo < r["copies_clocks"] < hi
        short = r["three_stage_clocks"] < r["copies_clocks"]
        assert short == (r["warps"] == 4 and r["ksteps"] == 32 and r["lds_per_step"] == 0)
        if short:
            assert r["two_stage_clocks"] - r["three_stage_clocks"] > 200
            assert abs(r["two_stage_clocks"] - r["copies_clocks"]) < 0.05 * r["copies_clocks"]
        else:
            assert r["two_stage_clocks"] <= r["three_stage_clocks"] * 1.01


def test_the_landing_grows_with_the_sm_s_own_bytes():
    """Copies alone from DRAM, eight steps a phase: 1,194 / 1,412 / 1,579 / 2,000 clocks a round for 4 / 8 / 12 / 20 KB
    with 4 warps, the same within 2 % with 8; on 16 SMs a 12 KB tile keeps 86 % of its landing on all 132 and an 8 KB
    one 92 %, more than the whole chip's burst would leave (75 % or less); two-stage = copies alone within 1 %."""
    rows = _rows("copy-landing-bytes-20261207-h100-sxm.json")
    land = {(r["warps"], r["tile_bytes"] // 1024): r["copies_clocks"] for r in rows}
    four = [land[(4, kb)] for kb in (4, 8, 12, 20)]
    assert all(a < b for a, b in zip(four, four[1:])) and 1100 < four[0] < 1300 and 1850 < four[-1] < 2150
    for kb in (4, 8, 20):
        assert abs(land[(8, kb)] / land[(4, kb)] - 1.0) < 0.02
    assert all(abs(r["two_stage_clocks"] / r["copies_clocks"] - 1.0) < 0.01 for r in rows)
    sms = {(r["blocks"], r["tile_bytes"] // 1024): r["copies_clocks"] for r in _rows("copy-landing-sms-20261207-h100-sxm.json")}
    for kb in (8, 12):
        full = sms[(132, kb)]
        assert all(0.8 < sms[(b, kb)] / full < 1.0 for b in (16, 32, 64))


def test_blocks_sharing_an_sm_land_their_bytes_together():
    """b blocks of T KB on every SM land in about one block's landing of b x T KB (within 15 %: 2 x 2 KB 1,142 clocks, 4 x
    4 KB 1,684 against one 16 KB block's 1,790), not in one block's landing of T KB (4 x 4 KB is 1.40 x one 4 KB block's
    1,207); one block's landing of 2-16 KB rises with the bytes and matches the fourth run's at 4 and 8 KB within 1 %."""
    one = {r["tile_bytes"] // 1024: r["copies_clocks"] for r in _rows("copy-landing-base-20261207-h100-sxm.json")}
    assert [one[k] for k in (2, 4, 8, 16)] == sorted(one.values())
    fourth = {r["tile_bytes"] // 1024: r["copies_clocks"] for r in _rows("copy-landing-bytes-20261207-h100-sxm.json")
              if r["warps"] == 4}
    assert all(abs(one[k] / fourth[k] - 1.0) < 0.01 for k in (4, 8))
    rows = _rows("copy-landing-per-sm-20261207-h100-sxm.json")
    got = {(r["per_sm"], r["tile_bytes"] // 1024): r["copies_clocks"] for r in rows}
    for (b, kb), clocks in got.items():
        if b > 1 and b * kb <= 16:
            assert abs(clocks / one[b * kb] - 1.0) < 0.15, (b, kb)
    for b in (4, 8):
        assert got[(b, 4)] / got[(1, 4)] > 1.3 and got[(b, 2)] / got[(1, 2)] > 1.1


def test_what_the_whole_chip_adds_grows_with_the_tile():
    """Copies alone from DRAM on 16, 33, 66 and 132 SMs: the share of the 132-SM landing kept on 33 SMs falls as the
    tile grows (4 KB 0.98, 8 KB 0.93, 16 KB 0.80), and most of what all SMs add comes past 66 (+28, +89 and +288 clocks
    at 4, 8 and 16 KB). The 2 KB row on 16 SMs reads 32 MiB that the L2 keeps between launches: 803 clocks, under the
    DRAM landing of any other row."""
    rows = _rows("copy-landing-busy-20261207-h100-sxm.json")
    land = {(r["blocks"], r["tile_bytes"] // 1024): r["copies_clocks"] for r in rows}
    assert len(land) == 16
    share = [land[(33, kb)] / land[(132, kb)] for kb in (4, 8, 16)]
    assert share == sorted(share, reverse=True) and share[0] > 0.95 and share[-1] < 0.85
    added = [land[(132, kb)] - land[(66, kb)] for kb in (4, 8, 16)]
    assert added == sorted(added) and added[-1] > 200
    assert land[(16, 2)] < 0.8 * min(v for k, v in land.items() if k != (16, 2))


def _module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("copy_landing", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_cold_run_that_the_l2_would_hold_is_refused_before_timing():
    """The busy-SM run's plan (--warps 4,4,4,4 --copies 1,2,4,8 --blocks 16,33,66,0 --cold-mb 256, 1,024 rounds) on the
    H100's 50 MiB L2: the check names exactly the row its record shows L2-resident (16 blocks of 2 KB touch 32 MiB) and
    the rounds that would take it past the L2; without that row, or with twice the rounds, it passes; tiles meant to
    stay in the L2 (no --cold-mb) are never refused."""
    from perfmodel import load_device
    mod = _module()
    l2 = load_device("h100-sxm").memory.l2_bytes
    plan = mod.plan([4, 4, 4, 4], [1, 2, 4, 8], [16, 33, 66, 0], [1], 132, 256, 1024)
    assert len(plan) == 16
    rows = _rows("copy-landing-busy-20261207-h100-sxm.json")
    assert [(p[2], p[4], p[5]) for p in plan] == [(r["blocks"], r["tile_bytes"], r["source_tiles"]) for r in rows]
    why = mod.l2_resident(plan, 256, l2)
    assert why.startswith("16 blocks of 4 warps copying 2 KB a round touch 32 MiB") and "--rounds 1601 or more" in why
    assert mod.l2_resident([p for p in plan if not (p[2] == 16 and p[4] == 2048)], 256, l2) is None
    assert mod.l2_resident(mod.plan([4], [1], [16], [1], 132, 256, 1601), 256, l2) is None
    assert mod.l2_resident(mod.plan([4], [1], [16], [1], 132, 0, 1024), 0, l2) is None
