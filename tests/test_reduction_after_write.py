"""split_k's reduction right behind the kernel that wrote its partials: the Hopper figures measured by
benchmarks/reduce_after_write.py, and what model.predict.reduction_seconds makes of them."""
import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfmodel import load_device
from perfmodel.devices import MEASURED_HERE, load_generation
from perfmodel.facts import ESTIMATED
from perfmodel.model.figures import Figures
from perfmodel.model.predict import reduction_seconds, second_launch_us

ROOT = Path(__file__).resolve().parent.parent
RECORDS = sorted((ROOT / "results" / "archive").glob("reduce-after-write-20261127-h100-sxm-*.json"))
MARGINAL = sorted((ROOT / "results" / "archive").glob("reduce-after-write-202612*-h200-marginal.json"))  # --marginal
HZ = 1.98e9


def _bench():
    spec = importlib.util.spec_from_file_location("reduce_after_write", ROOT / "benchmarks" / "reduce_after_write.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _t(dev, part_bytes, s):
    """reduction_seconds (us) for partials of part_bytes in s slices."""
    return float(reduction_seconds(dev, 1, part_bytes / (4.0 * s), np.array([float(s)]), HZ)[0]) * 1e6


def test_the_hopper_figures_are_what_the_records_give():
    """sm_90's reduction floor is `reduce_after_write.py --fit` of the H200's two --marginal runs (what the
    reduction adds to a window that already holds its writer), its written-resident bytes the fit of the three
    H100 runs, which the marginal runs give too; both are this project's measurements, so datasheet figures
    leave them out."""
    assert len(RECORDS) == 3 and len(MARGINAL) == 2
    bench = _bench()
    fit = bench.fit([json.loads(p.read_text()) for p in RECORDS])
    fit_m = bench.fit([json.loads(p.read_text()) for p in MARGINAL])
    gen = load_generation("sm_90")
    assert gen.latency["reduction_floor_us_by_slices"] == fit_m["reduction_floor_us_by_slices"]
    assert gen.memory["l2_written_resident_bytes"] == fit["l2_written_resident_bytes"] == fit_m["l2_written_resident_bytes"]
    for key in ("memory.l2_written_resident_bytes", "latency.reduction_floor_us_by_slices"):
        assert key in MEASURED_HERE and "benchmarks/reduce_after_write.py" in gen.sources[key]
    # about half the L2, and the floor grows with the slices (each thread's chain of one load a slice)
    dev = load_device("h100-sxm")
    assert 0.4 < dev.memory.l2_written_resident_bytes / dev.memory.l2_bytes < 0.6
    floors = [v for _, v in sorted((int(k), v) for k, v in dev.latency.reduction_floor_us_by_slices.items())]
    assert np.all(np.diff(floors) > 0) and floors[0] > second_launch_us(dev)
    ds = Figures.load("h100-sxm", figures="datasheet").effective
    assert ds.latency.reduction_floor_us_by_slices is None and ds.memory.l2_written_resident_bytes is None


def test_the_reduction_takes_the_measured_floor_and_the_resident_share():
    dev = load_device("h100-sxm")
    mem, floor = dev.memory, dev.latency.reduction_floor_us_by_slices
    l2_bw, dram_bw = mem.l2_bandwidth_GBps * 1e3, mem.dram_bandwidth_GBps * 1e3  # bytes per us
    # no bytes to speak of: the floor at each measured slice count, linear between and beyond them
    for k, v in floor.items():
        assert _t(dev, 64.0, int(k)) == pytest.approx(v, abs=0.01)
    assert floor["8"] < _t(dev, 64.0, 12) < floor["16"]
    assert _t(dev, 64.0, 128) == pytest.approx(floor["64"] + 64 * (floor["64"] - floor["32"]) / 32, abs=0.01)
    assert float(reduction_seconds(dev, 1, 1024, np.array([1.0]), HZ)[0]) == 0.0
    # partials the L2 still holds: read at its bandwidth with C (4 slices: C is a quarter of them)
    r, s = mem.l2_written_resident_bytes, 4
    assert _t(dev, 0.5 * r, s) - floor["4"] == pytest.approx(1.25 * 0.5 * r / l2_bw, rel=1e-6)
    # beyond the resident bytes the rest come from DRAM; partials larger than the L2 all do
    x = 0.5 * (mem.l2_bytes - r)
    assert _t(dev, r + x, s) - floor["4"] == pytest.approx(1.25 * r / l2_bw + 1.25 * x / dram_bw, rel=1e-6)
    big = 2.0 * mem.l2_bytes
    assert _t(dev, big, s) - floor["4"] == pytest.approx(1.25 * big / dram_bw, rel=1e-6)


def test_where_nobody_measured_it_the_second_launch_and_the_whole_l2_stand():
    """Without the measured figures (another generation, or datasheet figures) the reduction is the second
    launch, one load latency and the partials at the L2 bandwidth while the whole L2 holds them."""
    dev = load_device("h100-sxm")
    bare = dev.model_copy(update=dict(
        latency=dev.latency.model_copy(update=dict(reduction_floor_us_by_slices=None)),
        memory=dev.memory.model_copy(update=dict(l2_written_resident_bytes=None))))
    mem, lat = bare.memory, bare.latency
    part = 0.8 * mem.l2_bytes
    want = second_launch_us(bare) + lat.l2_latency_cycles / HZ * 1e6 + 1.25 * part / (mem.l2_bandwidth_GBps * 1e3)
    assert _t(bare, part, 4) == pytest.approx(want, rel=1e-6)
    # the measured figures make that reduction's bytes slower: 0.8 of the L2 is beyond the resident bytes
    fixed = want - 1.25 * part / (mem.l2_bandwidth_GBps * 1e3)
    assert _t(dev, part, 4) - dev.latency.reduction_floor_us_by_slices["4"] > 1.5 * (_t(bare, part, 4) - fixed)


def test_what_the_reduction_adds_behind_its_writer_is_less_than_its_own_pair():
    """The H200's two --marginal records (two leases, a day apart): `--fit` takes writer + reduction less the
    writer alone (each in one event pair). Each run alone gives floors within 0.1 us of the other's, and
    0.2-1.0 us under the H100 runs' pair around the reduction alone at every slice count, with the same 24.0 MB
    the L2 keeps."""
    bench = _bench()
    recs = [json.loads(p.read_text()) for p in MARGINAL]
    assert all(r["marginal"] and len(r["rows"]) == 108 for r in recs)
    assert all("pair" in row and "writer" in row for r in recs for row in r["rows"])
    first, second = (bench.fit([r])["reduction_floor_us_by_slices"] for r in recs)
    assert first == {"2": 2.83, "4": 3.32, "8": 3.73, "16": 4.32, "32": 5.49, "64": 7.67}
    assert second == {"2": 2.91, "4": 3.28, "8": 3.67, "16": 4.32, "32": 5.44, "64": 7.59}
    assert max(abs(first[k] - second[k]) for k in first) <= 0.1
    pair = bench.fit([json.loads(p.read_text()) for p in RECORDS])["reduction_floor_us_by_slices"]
    for k, v in load_generation("sm_90").latency["reduction_floor_us_by_slices"].items():
        assert 0.2 < pair[k] - v < 1.0


def test_the_model_against_the_records_it_comes_from():
    """The H200's --marginal records (216 rows: two runs, 18 sizes, 2-64 slices; what the reduction adds behind
    its writer, pair - writer) beside reduction_seconds with the Hopper generation's figures (the benchmark's
    model_us): centred and mostly within 25 %."""
    bench = _bench()
    err = []
    for p in MARGINAL:
        rec = json.loads(p.read_text())
        err += [m / bench.write_us(r) - 1.0 for r, m in zip(rec["rows"], bench.model_us(rec))]
    err = np.asarray(err)
    assert len(err) == 216
    assert abs(np.median(err)) < 0.04 and np.mean(np.abs(err) <= 0.25) > 0.85


def test_predict_says_what_the_reduction_holds():
    """`predict` accounts for split_k's reduction: its fixed part and where it comes from, and how much of
    the partials it reads from the L2 (the parts reduction_seconds adds up)."""
    from perfmodel.catalogue import KernelConfig
    from perfmodel.explain import render
    from perfmodel.model.predict import predict

    cfg = KernelConfig.make("split_k", splits=8)
    for figures, measured in (("auto", True), ("datasheet", False)):
        fig = Figures.load("h100-sxm", figures=figures)
        p = predict(fig, cfg, 1024, 1024, 16384)
        assert p.reduction_fixed_measured is measured and p.reduction_partials_MB == pytest.approx(4 * 8 * 1024 * 1024 / 1e6)
        dev = fig.effective
        # today's launcher launches the second kernel programmatically on sm_90: the generation's measured
        # saving comes off its floor (datasheet figures leave both out)
        saving = dev.latency.programmatic_launch_saving_us if measured else None
        assert (saving is not None) is measured and p.reduction_programmatic_saving_us == (saving or 0.0)
        assert p.reduction_fixed_us == pytest.approx(
            dev.latency.reduction_floor_us_by_slices["8"] - saving if measured else
            second_launch_us(dev) + dev.latency.l2_latency_cycles / (p.sm_clock_MHz * 1e6) * 1e6, rel=1e-6)
        text = render(p)
        if measured:  # 33.6 MB of partials: the 24.0 MB the L2 keeps, the rest from DRAM
            assert p.reduction_l2_MB == pytest.approx(dev.memory.l2_written_resident_bytes / 1e6)
            assert (f"measured on this SM generation, less {saving:.2f} us that launching it programmatically saves "
                    "(set up while the main kernel runs; measured on this SM generation); "
                    "24.0 of the 33.6 MB of partials read from the L2") in text
            # a run that launched it the usual way (every run recorded before the launch was) pays the whole floor
            usual = predict(fig, cfg, 1024, 1024, 16384, build=replace(ESTIMATED, reduction_launch="stream"))
            assert usual.reduction_fixed_us == pytest.approx(dev.latency.reduction_floor_us_by_slices["8"], rel=1e-6)
            assert usual.reduction_programmatic_saving_us == 0.0 and "programmatically" not in render(usual)
            assert usual.reduction_us - p.reduction_us == pytest.approx(saving, rel=1e-6)
        else:  # nobody measured what the L2 keeps: all of it while it fits
            assert p.reduction_l2_MB == pytest.approx(p.reduction_partials_MB)
            assert "a second launch and one load latency" in text and "all 33.6 MB of partials read from the L2" in text
    one = predict(Figures.load("h100-sxm"), KernelConfig.make("double_buffer"), 1024)
    assert one.reduction_us == 0.0 and one.reduction_partials_MB == 0.0 and "Split-K" not in render(one)


H100_MARGINAL = sorted((ROOT / "results" / "archive").glob("reduce-after-write-20261205-h100-sxm-marginal-*.json"))


def test_a_slow_writer_leaves_its_row_out_of_the_fit():
    """In a --marginal row pair - writer is too small when the writer alone was timed slow, and the least over
    records would keep it: the first H100 run's row at 8 slices and 12 MB had the writer's median at 30.7 us
    (6.8 us at the other slice counts) and pair - writer at -18.4 us. writer_disturbed leaves such rows out; the
    H200's records have none, so their fit (the generation's floors) is the same either way."""
    bench = _bench()
    first = json.loads(H100_MARGINAL[0].read_text())
    slow = [(r["slices"], round(r["partial_bytes"] / 1e6)) for r in first["rows"] if bench.writer_disturbed(r, first["rows"])]
    assert (8, 12) in slow and len(slow) == 2
    row = next(r for r in first["rows"] if (r["slices"], round(r["partial_bytes"] / 1e6)) == (8, 12))
    assert bench.write_us(row) < 0
    assert not any(bench.writer_disturbed(r, rec["rows"]) for p in MARGINAL for rec in [json.loads(p.read_text())]
                   for r in rec["rows"])
    # without the rule this run's 8-slice line would start at the negative row's level
    assert bench.fit([first])["reduction_floor_us_by_slices"]["8"] > 3.0


def test_the_h100_gives_the_h200s_floors():
    """Three --marginal runs on a lent H100 (2026-12-05, after the expectation in
    memory-checks-expected-20261205-h100-sxm.txt: within 0.4 us of sm_90's floors, measured on the H200, at every
    slice count): --fit of the three is 0.10-0.21 us above them, with the same 24.0 MB the L2 keeps of the
    partials, so the floors are the generation's figure, not the H200's."""
    assert len(H100_MARGINAL) == 3
    bench = _bench()
    fit = bench.fit([json.loads(p.read_text()) for p in H100_MARGINAL])
    gen = load_generation("sm_90")
    diff = {k: fit["reduction_floor_us_by_slices"][k] - v for k, v in gen.latency["reduction_floor_us_by_slices"].items()}
    assert all(0.0 < d < 0.4 for d in diff.values()), diff
    assert fit["l2_written_resident_bytes"] == gen.memory["l2_written_resident_bytes"]
