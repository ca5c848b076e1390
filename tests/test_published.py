"""The published measurements of other GPU generations (published/sgemm.toml): the file keeps its own
rule (sources pinned to a commit, every point's kernel a catalogue kernel, at least three generations and
30 points), bad files get one-line errors, and the model's accuracy on them is scored (no GPU)."""
import tomllib
from pathlib import Path

import pytest

from perfmodel import published
from perfmodel.devices import load_device
from perfmodel.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "published" / "sgemm.toml"
# the model's MAPE over the published points: 32.5 % when first scored; 37.9 % once the L1 term counted
# only the lanes inside the problem (the A100-PCIe's naive points at M = 1-8 turned from 51-79 % slow to
# 80-186 % fast); 28.0 % with the A100's L2 latency of both partitions and its DRAM latency from a
# published pointer chase (docs/model.md "Published measurements"); 25.5 % once an FFMA held the 16-lane
# FP32 pipe of GA100 two clocks in the replay; 24.6 % with the L1 tag stage's published four lines a clock
# where no rate was measured; 23.9 % once a one-element kernel's warp kept a line per unrolled k step in
# flight; 23.7 % with each point's registers those of the source's own binary (its occupancy) rather than
# the catalogue kernel's; 23.2 % once a one-element kernel's warps queued at the L1 between their waits; 34.5 %
# over 42 points once a Tesla T4's six (czhao-dev/cuda-matmul-optimizer: coalesced and smem_tiled at 256-4096, the
# first Turing points) entered by the file's rule, predicted +76 to +126 %; 34.6 % once the store phases counted
# only the elements inside C (six A100 points of 1-8 rows a little faster); 28.8 % once a warp's memory instruction
# held the pipe two clocks on Turing's 16 load/store units (the T4's six +34 to +106 %). The goal is 12 %. This
# guards against getting worse while it is not met.
MAPE_CEILING_PCT = 30.0


def test_the_file_meets_its_inclusion_rule():
    data = published.load(FILE)
    gens = {load_device(s.device).generation for s in data.source}
    assert len(data.point) >= 30 and len(gens) >= 3
    excluded = {"siboehm/SGEMM_CUDA", "wangzyon/NVIDIA_SGEMM_PRACTICE", "leimao/CUDA-GEMM-Optimization",
                "EnigmaHuang/my_CUDA_SGEMM", "sylvia-ymlin/CUDA-Kernel-Optimization", "zkh2016/sgemm",
                "zhaocc1106/cuxx-programing"}
    assert not {s.repository for s in data.source} & excluded
    assert all(p.measured_gflops > 0 for p in data.point)
    assert "Hopper" not in FILE.read_text() and not any(load_device(s.device).compute_capability == "9.0" for s in data.source)


def test_time_is_turned_into_gflops():
    p = published.Point(source="s", row="r", kernel="naive", config={}, M=4096, N=4096, K=4096, time_ms=27.39)
    assert p.measured_gflops == pytest.approx(2 * 4096**3 / 27.39e-3 / 1e9)


@pytest.mark.parametrize("edit,says", [
    (lambda t: t.replace("gflops = 290.7", "gflops = 290.7\ntime_ms = 4.0"), "both gflops and time_ms"),
    (lambda t: t.replace('source = "vlejd-a100-pcie"\nrow = "1: Naive"', 'source = "nobody"\nrow = "1: Naive"'), "names source 'nobody'"),
    (lambda t: t.replace('device = "rtx4090"', 'device = "rtx9999"'), "'rtx9999' is not a shipped device"),
    (lambda t: t.replace("config = { bm = 64, bn = 64, bk = 8, tm = 8, tn = 8 }", "config = { bm = 64, bn = 64, bk = 8, tm = 7, tn = 8 }"), "tm=7"),
    (lambda t: t.replace('commit = "91a5e317f846b8763d57572c7314db084741d8c0"', 'commit = "main"'), "commit"),
    (lambda t: t.replace('arch = "sm_86"', 'arch = "ampere"', 1), "arch"),
    (lambda t: t.replace("registers = 127", "registers = 300", 1), "registers"),
])
def test_a_bad_file_gets_one_line(tmp_path, edit, says):
    bad = tmp_path / "bad.toml"
    bad.write_text(edit(FILE.read_text()))
    with pytest.raises(UserError) as e:
        published.load(bad)
    assert says in str(e.value) and "\n" not in str(e.value)


@pytest.fixture(scope="module")
def scored():
    return published.score(FILE)


def test_every_point_is_predicted_from_the_binary(scored):
    rows, summ = scored
    assert len(rows) == len(tomllib.loads(FILE.read_text())["point"])
    assert all(r.predicted_gflops > 0 and r.figures == "datasheet" for r in rows)
    # the registers are the source's own binary's (compiled by benchmarks/published_binaries.py), not the estimate
    assert all(r.registers_source.startswith("the source's kernel ") and "sm_" in r.registers_source for r in rows)
    gens = {load_device(s.device).generation for s in published.load(FILE).source}
    assert set(summ["by_generation"]) == gens and {"sm_75", "sm_80", "sm_86", "sm_89"} <= gens


def test_a_point_holds_the_blocks_its_own_binary_allows():
    # the RTX 4060 Laptop's tiled_2d 128x128x8 8x8: the source's kernel takes 128 registers (two blocks of 256
    # threads in the SM's 64 K), the catalogue's of the same tiling 164 (one block); predicted 3,048 GFLOPS with
    # one block (-57 % against the 7,141 measured), 4,704 with the source's two (-34 %)
    from perfmodel import facts
    from perfmodel.catalogue import KernelConfig
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import predict

    data = published.load(FILE)
    pt = next(p for p in data.point if p.source == "leonyz-rtx4060-laptop" and p.kernel == "tiled_2d")
    assert pt.binary.registers == 128 and pt.binary.spill_bytes == 0
    fig = Figures.load("rtx4060-laptop", figures="auto")
    cfg = KernelConfig.make(pt.kernel, **pt.config)
    catalogue = facts.for_config(cfg, fig.device.compute_capability)
    own = published.source_build(catalogue, pt)
    assert catalogue.registers > 128 and own.registers == 128 and own.program is catalogue.program
    one, two = (predict(fig, cfg, pt.M, pt.N, pt.K, build=b) for b in (catalogue, own))
    assert int(one.occupancy.blocks_per_sm) == 1 and int(two.occupancy.blocks_per_sm) == 2
    assert two.gflops > 1.3 * one.gflops


def test_accuracy_on_published_points_is_no_worse_than_when_first_scored(scored):
    _, summ = scored
    assert summ["overall"]["points"] >= 30
    assert summ["overall"]["mape_pct"] <= MAPE_CEILING_PCT, summ["overall"]


def test_ga100s_16_lane_pipe_keeps_single_buffered_kernels_off_the_fp32_peak(scored):
    # the A100-PCIe's tiled_2d_float4 (two rows) and warp_tiled, all single-buffered, measured 12.8-13.5
    # TFLOPS: predicted at the FP32 pipe (18.4 TFLOPS, +37 to +44 %) while the replay let an FFMA issue every
    # clock on a 16-lane scheduler, 15.4-15.5 TFLOPS (+14 to +20 %) with the pipe held two clocks (the rest
    # is the 250 W board's clock, docs/model.md "The 16-lane FP32 pipe")
    rows, _ = scored
    pts = [r for r in rows if r.device == "a100-pcie" and r.kernel in ("tiled_2d_float4", "warp_tiled")]
    assert len(pts) == 3
    assert all(0 < r.error_pct < 25 for r in pts), [(r.kernel, r.error_pct) for r in pts]
    assert all(r.predicted_gflops < 0.85 * 19_492 for r in pts)  # below 85 % of the A100's FP32 peak


def test_the_naive_kernel_at_k_4092_is_not_held_to_a_line_per_clock(scored):
    # the A100 naive point at 4092^3 (each warp's A load: 32 lines in 8 banks, 4 words each) measured 876
    # GFLOPS, three times the 291 at 4096 (32 words in one bank) on the A100-PCIe: at a line per clock it was
    # predicted 294 (-66 %); at the tag stage's published 4 lines per clock +34 % (the H100 sustains 3.2)
    rows, _ = scored
    odd = [r for r in rows if r.kernel == "naive" and r.K == 4092]
    even = [r for r in rows if r.kernel == "naive" and r.K == 4096 and r.M == 4096 and r.device == "a100-pcie"]
    assert len(odd) == 1 and len(even) == 1
    assert 0 < odd[0].error_pct < 40 and odd[0].predicted_gflops > 3 * even[0].predicted_gflops, odd[0]


def test_intervals_on_published_points_cover_what_they_claim(scored):
    """Each source's points are scored with the model's residual taken from the other sources' points only
    (published.score: leave one source out), so the check is of points the spread did not see: 85-95 %
    inside the 90 % interval and 40-60 % inside the 50 % (88.9 % and 50.0 % when introduced; 66.7 % and
    13.9 % with the recorded H100 residuals, which know nothing of other generations)."""
    c = scored[1]["intervals"]
    assert c["points"] == len(scored[0])
    assert 85.0 <= c["inside_90_pct"] <= 95.0 and 40.0 <= c["inside_50_pct"] <= 60.0


def test_a_coalesced_warp_keeps_lines_not_words_in_flight(scored):
    # the RTX 3070 Ti's 16 x 16 coalesced kernel at 4096^3 measured 1,395 GFLOPS: DRAM-bound at 806 (-42 %)
    # while a warp kept 16 bytes in flight, 1,435 (+3 %) with a 128-byte line per unrolled k step
    # (docs/model.md, "One-element kernels: the lines a warp keeps in flight")
    rows, _ = scored
    pt = [r for r in rows if r.device == "rtx3070ti" and r.kernel == "coalesced"]
    assert len(pt) == 1 and abs(pt[0].error_pct) < 10 and pt[0].bound != "dram", pt[0]


def test_the_table_shows_each_points_registers_and_blocks(capsys):
    from perfmodel.cli import main

    assert main(["accuracy", "--published"]) == 0
    out = capsys.readouterr().out
    assert "| registers (blocks/SM) |" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("| leonyz-rtx4060-laptop | rtx4060-laptop | kernel 5"))
    assert "| 128 (2) |" in line


def test_published_points_written_and_grouped_as_the_table_scores_them(tmp_path, capsys, scored):
    """`accuracy --published --points FILE --by KEYS`: every point in the CSV as the table scores it, the
    groups' figures their points' errors; the file is written once (the same path again is refused, the first kept)."""
    import csv
    import json

    import numpy as np

    from perfmodel.cli import main

    out = tmp_path / "published.csv"
    assert main(["accuracy", "--published", "--by", "generation,kernel", "--points", str(out), "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == list(published.POINT_FIELDS)
    assert len(rows) == len(scored[0]) == j["summary"]["overall"]["points"]
    assert [(r["source"], r["row"]) for r in rows] == [(s.source, s.row) for s in scored[0]]
    meas, pred, err = (np.array([float(r[k]) for r in rows]) for k in ("measured_gflops", "predicted_gflops", "error_pct"))
    assert np.allclose(err, 100 * (pred - meas) / meas)
    assert np.allclose(err, [s.error_pct for s in scored[0]])
    assert all(float(r["q05_gflops"]) <= float(r["predicted_gflops"]) <= float(r["q95_gflops"]) for r in rows)
    assert sum(g["points"] for g in j["by"]) == len(rows)
    for g in j["by"]:
        e = err[[r["generation"] == g["group"]["generation"] and r["kernel"] == g["group"]["kernel"] for r in rows]]
        assert (len(e), np.mean(np.abs(e)), np.mean(e)) == (g["points"], pytest.approx(g["mape_pct"]), pytest.approx(g["bias_pct"]))
    # the per-generation groups hold the table's per-generation points
    by_gen = {}
    for g in j["by"]:
        by_gen.setdefault(g["group"]["generation"], []).append(g["points"])
    assert {k: sum(v) for k, v in by_gen.items()} == {k: v["points"] for k, v in j["summary"]["by_generation"].items()}
    before = out.read_text()
    assert main(["accuracy", "--published", "--points", str(out)]) == 2
    assert out.read_text() == before
    capsys.readouterr()
    assert main(["accuracy", "--published", "--by", "source"]) == 0
    text = capsys.readouterr().out
    assert f"by source (share: of the summed absolute error of all {len(rows)} points)" in text
    assert "| czhao-t4 | 6 |" in text


def test_a_source_loop_that_steps_k_keeps_the_catalogue_facts():
    # the sources' tiled_2d 128x128x8 kernels built for sm_90 keep their k-step loop rolled (64 FFMAs a pass
    # against 512 a k-tile, 96-106 registers): their registers come with another loop, so the point keeps the
    # catalogue kernel's facts; unrolled (512, as every published point's build is) it takes the source's
    from perfmodel import facts
    from perfmodel.catalogue import KernelConfig

    data = published.load(FILE)
    pt = next(p for p in data.point if p.source == "vlejd-a100-pcie" and p.kernel == "tiled_2d")
    assert pt.binary.loop_ffma == 512 and pt.binary.registers == 127
    cat = facts.for_config(KernelConfig.make(pt.kernel, **pt.config), "8.0")
    assert published.source_build(cat, pt).registers == 127
    rolled = pt.model_copy(update={"binary": pt.binary.model_copy(update=dict(loop_ffma=64, registers=96))})
    kept = published.source_build(cat, rolled)
    assert kept.registers == cat.registers and "rolls its k-tile loop (64 FFMAs a pass, 512 a k-tile)" in kept.registers_source


def test_turings_load_store_units_take_the_t4_points_down(scored):
    # the T4's coalesced and smem_tiled points (one-wavefront 4-byte loads: broadcasts and 16 contiguous words)
    # measured 451-683 GFLOPS, predicted 781-1,430 (+76 to +126 %) while a load took one clock of the pipe; at two
    # clocks on Turing's 16 load/store units (model.schedule.lsu_pipe_clocks) +34 to +106 %, every point slower
    # than before and still above its measurement (docs/model.md, "Turing's load/store units")
    rows, _ = scored
    t4 = [r for r in rows if r.device == "t4"]
    assert len(t4) == 6
    assert all(30 < r.error_pct < 110 for r in t4), [(r.kernel, r.M, r.error_pct) for r in t4]
    assert sum(r.error_pct for r in t4) / 6 < 65
