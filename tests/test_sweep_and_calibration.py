import json
import random
from pathlib import Path

import pytest

from perfmodel import KernelConfig, UserError, load_device, predict
from perfmodel.catalogue import ParamProbe, get_kernel
from perfmodel.cli import main
from perfmodel.devices import attach_calibration
from perfmodel.catalogue import VALUES, choice_combos, enumerate_configs, get_kernel, tiled_kernels
from perfmodel.model.figures import Figures

ROOT = Path(__file__).resolve().parent.parent
CALIB = [p for p in [ROOT / "results" / "reference-calibration-h100-sxm.toml"] if p.exists()]


def test_probe_and_config_agree_on_every_check():
    rng = random.Random(3)
    dev = load_device("a100")
    for _ in range(400):
        kid = rng.choice(tiled_kernels())
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
    valid, why, total = enumerate_configs(dev, ("double_buffer",), choices=False)
    assert len(valid) + sum(why.values()) == total == 5 ** 5
    assert all(not c.violations() and not c.device_violations(dev) for c in valid)
    # with its design choices: each tile combination once per combination double_buffer names (catalogue.choice_combos)
    valid, why, total = enumerate_configs(dev, ("double_buffer",))
    assert len(valid) + sum(why.values()) == total == 5 ** 5 * len(choice_combos(get_kernel("double_buffer")))
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
    ms = predict(F(dev), cfg, 4096, registers=128)
    assert ds.figures == "datasheet" and ms.figures.startswith("measured")
    # the calibrated outer-product FFMA rate is below peak, so the prediction must drop
    assert ms.ffma_issue_cycles > 1.0 and ms.gflops < ds.gflops
    assert ms.gflops <= max(m.ffma_outer_GFLOPS_by_warps_per_sm.values()) * 1.0001


def test_calibration_errors(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        attach_calibration(load_device("h100-sxm"), tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[measured]\ngpu = 'x'\ndate = 'today'\nfp32_GFLOPS = -3\n")
    with pytest.raises(UserError, match="measured.fp32_GFLOPS"):
        attach_calibration(load_device("h100-sxm"), bad)
    with pytest.raises(UserError, match="no \\[measured\\]"):
        Figures(load_device("h100-sxm"), calibrated=True)


def F(dev):
    """The device's calibrated figures."""
    return Figures(dev, calibrated=True)


def _cal(name):
    path = ROOT / "results" / ("reference-calibration-h100-sxm.toml" if "133331" in name else f"archive/{name}")
    if not path.exists():
        pytest.skip(f"{name} not recorded")
    return attach_calibration(load_device("h100-sxm"), path)


def test_tile_burst_arrives_through_the_measured_l2_port(monkeypatch):
    """With a measured L2->SM port, a single-buffered block's exposed load phase is the mixed L2/DRAM
    latency plus the SM's burst (b blocks x tile bytes) over the port (not over the SM's 1/132 share
    of the L2 bandwidth), or its DRAM bytes at the SM's share of the DRAM rate where that is longer,
    plus two shared-memory latencies (store, barrier, first load). (The flush's write-back, which adds to
    the DRAM bytes, is left out here: tests/test_dram_stream.py checks it.)"""
    from perfmodel.model import terms

    monkeypatch.setattr(terms, "FLUSH_WRITEBACK", False)
    dev = _cal("calibration-20261122-110015-h100-sxm.toml")
    port = dev.measured.l2_sm_port_bytes_per_clock
    share = dev.measured.l2_bandwidth_GBps * 1e9 / (1980e6 * dev.compute.sm_count)
    assert port > 4 * share  # one SM alone (119.8 B/clk) vs its share under full load (27 B/clk)
    cfg = KernelConfig.make("bank_conflict_free")
    p = predict(F(dev), cfg, 4096, registers=120, clock_MHz=1980)
    lat = F(dev).effective.latency
    lv = {t.level: t.bytes for t in p.traffic}
    tiles = p.waves.blocks * 4096 / cfg.bk
    b = p.occupancy.blocks_per_sm
    hit = 1 - lv["dram"] / lv["l2"]
    mem_lat = hit * lat.l2_latency_cycles + (1 - hit) * lat.dram_latency_cycles
    # DRAM serves A's k-tile walk at p.dram_rate of its stream rate (memory.dram_row_segment_efficiency)
    dram_bpc = dev.measured.dram_bandwidth_GBps * 1e9 * p.dram_rate / (1980e6 * dev.compute.sm_count)
    t_dram = b * lv["dram"] / tiles / dram_bpc / p.littles_law[3].achievable_fraction
    burst = b * lv["l2"] / tiles / port
    assert p.dram_rate < 1 and 0.9 * burst < t_dram < 1.1 * burst  # here the two are within 10 % of each other
    assert p.exposed_latency_cycles == pytest.approx(mem_lat + max(burst, t_dram) + 2 * lat.smem_latency_cycles, rel=1e-9)
    # the same device without the port figure falls back to the share: a longer exposed phase
    no_port = dev.model_copy(update=dict(measured=dev.measured.model_copy(update=dict(l2_sm_port_bytes_per_clock=None))))
    q = predict(F(no_port), cfg, 4096, registers=120, clock_MHz=1980)
    assert q.exposed_latency_cycles > p.exposed_latency_cycles + 0.5 * burst


def test_l1tex_pipe_carries_the_tile_loads_too():
    """The smem term counts shared wavefronts plus the tile's global loads (tile bytes / 128 B per
    block): one L1TEX data pipe serves both."""
    from perfmodel.model.smem_banks import smem_counts

    dev = load_device("h100-sxm")
    cfg = KernelConfig.make("smem_tiled")  # 32x32x32: 8 KB tile, one block of 1024 threads, no conflicts to hide
    p = predict(dev, cfg, 4096, registers=32, clock_MHz=1980)
    _, lds_w, _, sts_w = smem_counts(cfg)
    b = p.occupancy.blocks_per_sm
    frac = p.littles_law[1].achievable_fraction
    ldg_w = (cfg.bm + cfg.bn) * cfg.bk * 4 / 128
    assert p.cycles_per_tile["smem"] == pytest.approx(b * (lds_w + sts_w + ldg_w) / (128 / 128) / frac)


def test_sweep_cache_returns_what_a_fresh_enumeration_returns(tmp_path, monkeypatch):
    from perfmodel.model import Problem, predict_batch, smem_banks
    from perfmodel.sweep import cached_enumeration

    monkeypatch.setenv("PERFMODEL_CACHE", str(tmp_path))
    dev = load_device("v100")
    kernels = ("tiled_2d_float4", "warp_tiled")
    fresh = enumerate_configs(dev, kernels)
    first = cached_enumeration(dev, kernels)
    files = list(tmp_path.glob("sweep-configs-*.json"))
    assert len(files) == 1
    second = cached_enumeration(dev, kernels)  # from the file
    assert first == fresh and second[0] == fresh[0] and second[1] == fresh[1] and second[2] == fresh[2]
    # another device (other limits) is another entry
    cached_enumeration(load_device("k620"), kernels)
    assert len(list(tmp_path.glob("sweep-configs-*.json"))) == 2
    # a damaged entry is recomputed, not trusted
    files[0].write_text("{not json")
    assert cached_enumeration(dev, kernels)[0] == fresh[0]
    # shared-memory counts from the disk cache equal simulated ones
    cfgs = fresh[0][:300]
    path = tmp_path / "smem.json"
    smem_banks.smem_counts.cache_clear()
    want = smem_banks.smem_counts_many(cfgs)
    smem_banks.save_disk_cache(path)
    smem_banks.smem_counts.cache_clear()
    smem_banks.load_disk_cache(path)
    assert smem_banks.smem_counts_many(cfgs) == want
    a = predict_batch(dev, cfgs, Problem(2048, 2048, 2048))
    smem_banks.smem_counts.cache_clear()
    b = predict_batch(dev, cfgs, Problem(2048, 2048, 2048))
    assert (a.gflops == b.gflops).all()


def test_fetch_rate_by_warps_table():
    """The newer calibration measures 1-32 warps per SM; the model interpolates in log2(warps)."""
    dev = _cal("calibration-20261122-114343-h100-sxm.toml")
    t = {int(w): {int(b): v for b, v in tab.items()} for w, tab in dev.measured.issue_rate_by_loop_bytes_by_warps.items()}
    assert sorted(t) == [1, 2, 4, 8, 16, 32]
    for w in t:
        assert F(dev).fetch_rate(65536, w) == pytest.approx(t[w][65536])
    import math

    frac = math.log2(12) - 3  # 12 warps lie 0.585 of the way from 8 to 16 in log2
    assert F(dev).fetch_rate(65536, 12) == pytest.approx(t[8][65536] + frac * (t[16][65536] - t[8][65536]))
    assert F(dev).fetch_rate(65536, 64) == pytest.approx(t[32][65536])  # clamped
    # one warp alone: ~1 instruction per clock from a small loop, far less once the loop outgrows the caches
    assert 0.8 < t[1][8192] <= 1.01 and t[1][262144] < 0.3


def test_instruction_fetch_ceiling_from_the_calibration():
    """calibrate measures the issue rate of an unrolled FFMA loop by its code size at 4 and 16 warps
    per SM; the model interpolates it and never issues faster than that for a tile loop of that size."""
    dev = _cal("calibration-20261122-111814-h100-sxm.toml")
    t16 = {float(k): v for k, v in dev.measured.issue_rate_by_loop_bytes.items()}
    t4 = {float(k): v for k, v in dev.measured.issue_rate_by_loop_bytes_4_warps.items()}
    assert F(dev).fetch_rate(8192, 16) == pytest.approx(t16[8192])
    assert F(dev).fetch_rate(8192, 4) == pytest.approx(t4[8192])
    assert F(dev).fetch_rate(8192, 2) == pytest.approx(t4[8192])  # clamped to the measured warp range
    assert F(dev).fetch_rate(8192, 8) == pytest.approx((t4[8192] + t16[8192]) / 2)  # halfway in log2(warps)
    assert F(dev).fetch_rate(10**6, 16) == pytest.approx(t16[262144])  # held beyond the largest loop
    # small loops issue at ~4 warp instructions per clock; past the instruction caches far less
    assert F(dev).fetch_rate(8192, 4) > 3.5 and F(dev).fetch_rate(200_000, 4) < 1.0
    assert Figures(load_device("h100-sxm")).fetch_rate(200_000, 4) == float("inf")  # no calibration, no limit
    no_fetch = dev.model_copy(update=dict(measured=dev.measured.model_copy(
        update=dict(issue_rate_by_loop_bytes=None, issue_rate_by_loop_bytes_4_warps=None))))
    big = KernelConfig.make("tiled_2d", bm=128, bn=32, bk=64, tm=8, tn=16)  # ~11k instructions per tile loop
    small = KernelConfig.make("double_buffer")
    kw = dict(registers=255, clock_MHz=1980)
    pb = predict(F(dev), big, 4096, **kw)
    assert pb.gflops < 0.6 * predict(F(no_fetch), big, 4096, **kw).gflops
    assert pb.issue.loop_code_bytes > 100e3 and pb.issue.fetch_rate_per_sm < 2.0
    assert pb.bound == "issue" and pb.reason.startswith("instruction fetch")
    assert predict(F(no_fetch), big, 4096, **kw).issue.fetch_rate_per_sm is None
    kw["registers"] = 128
    assert predict(F(dev), small, 4096, **kw).gflops == pytest.approx(predict(F(no_fetch), small, 4096, **kw).gflops)


def test_smem_fed_outer_product_sets_the_ffma_rate_of_tiled_kernels():
    """Kernels whose fragments come from shared memory take the FFMA rate of the outer product fed by
    four LDS.128 per k step (less those four issue slots, which the issue term counts); the others keep
    the FFMA-only rate. With 4 warps per SM the loads' latency shows: the factor is far higher."""
    dev = _cal("calibration-20261122-115141-h100-sxm.toml")
    m = dev.measured
    peak = dev.peak_fp32_GFLOPS(m.sm_clock_MHz)
    for w in (4, 32):
        fed = float(F(dev).ffma_issue_factor([w], smem_fed=[True])[0])
        plain = float(F(dev).ffma_issue_factor([w], smem_fed=[False])[0])
        assert fed == pytest.approx(peak / m.smem_outer_GFLOPS_by_warps_per_sm[str(w)] - 4 / 64)
        assert plain == pytest.approx(peak / m.ffma_outer_GFLOPS_by_warps_per_sm[str(w)])
    assert float(F(dev).ffma_issue_factor([4], smem_fed=[True])[0]) > 1.15 * float(F(dev).ffma_issue_factor([4], smem_fed=[False])[0])
    kw = dict(clock_MHz=1980)
    p = predict(F(dev), KernelConfig.make("tiled_2d"), 4096, registers=174, **kw)  # 8 warps, 1 block per SM
    fed8 = float(F(dev).ffma_issue_factor([p.occupancy.warps_per_sm], smem_fed=[True])[0])
    assert p.ffma_issue_cycles == pytest.approx(fed8)
    q = predict(F(dev), KernelConfig.make("coalesced"), 4096, registers=32, **kw)  # no shared memory
    assert q.ffma_issue_cycles == pytest.approx(float(F(dev).ffma_issue_factor([q.occupancy.warps_per_sm])[0]))


def test_pipe_overlap_from_the_spread_microbenchmark():
    """With calibrate's spread measurement the compute phase of a tiled kernel is max(I, S) + e x min(I, S),
    e recomputed here by hand from the recorded table: (time - max) / min of the microbenchmark's loop,
    averaged over the three spreads. e falls with resident warps; tiled kernels then take the FFMA-only
    rate; one-element kernels are untouched; a calibration without the table keeps the old path."""
    dev = _cal("calibration-20261122-120609-h100-sxm.toml")
    m = dev.measured
    per_clk = dev.compute.sm_count * m.sm_clock_MHz * 1e-3
    for w in (4, 8, 16, 32):
        c = dev.peak_fp32_GFLOPS(m.sm_clock_MHz) / m.ffma_outer_GFLOPS_by_warps_per_sm[str(w)]
        issue = (64 * c + 4) * w / 4
        vals = []
        for sb, wf in (("1", 12), ("2", 20), ("4", 36)):
            t = 64 * w * 64 / (m.smem_outer_GFLOPS_by_spread[sb][str(w)] / per_clk)
            s = wf * w / (m.smem_bandwidth_bytes_per_clock_per_sm / 128)
            vals.append((t - max(issue, s)) / min(issue, s))
        assert float(F(dev).pipe_overlap(w)) == pytest.approx(min(1.0, max(0.0, sum(vals) / 3)))
    e = [float(F(dev).pipe_overlap(w)) for w in (2, 4, 8, 16, 32, 64)]
    assert e[0] == e[1] and e[-1] == e[-2]  # clamped to the measured 4..32 warps
    assert 0.4 < e[1] < 0.9 and e[1] > e[2] > e[3] > 0 and e[4] < 0.1  # about 0.6 / 0.2 / 0.06 / 0.05
    kw = dict(clock_MHz=1980)
    p = predict(F(dev), KernelConfig.make("tiled_2d"), 4096, registers=174, **kw)  # 8 warps, 1 block per SM
    assert p.pipe_overlap == pytest.approx(float(F(dev).pipe_overlap(8)))
    assert p.ffma_issue_cycles == pytest.approx(float(F(dev).ffma_issue_factor([8])[0]))  # FFMA-only rate
    cyc = p.cycles_per_tile
    compute = max(cyc["issue"], cyc["smem"]) + p.pipe_overlap * min(cyc["issue"], cyc["smem"])
    assert cyc["latency"] == pytest.approx(compute + p.exposed_latency_cycles)
    old = _cal("calibration-20261122-115141-h100-sxm.toml")  # no spread table: max(I, S), smem-fed FFMA rate
    assert F(old).pipe_overlap(8) is None
    assert predict(F(old), KernelConfig.make("tiled_2d"), 4096, registers=174, **kw).pipe_overlap == 0.0
    no_spread = dev.model_copy(update=dict(measured=m.model_copy(update=dict(smem_outer_GFLOPS_by_spread=None))))
    q = KernelConfig.make("coalesced")  # no shared memory: no overlap term, same prediction either way
    assert predict(F(dev), q, 4096, registers=32, **kw).gflops == pytest.approx(predict(F(no_spread), q, 4096, registers=32, **kw).gflops)
    assert predict(F(dev), q, 4096, registers=32, **kw).pipe_overlap == 0.0
    assert p.gflops < predict(F(no_spread), KernelConfig.make("tiled_2d"), 4096, registers=174, **kw).gflops


def test_thread_tile_size_scales_the_ffma_rate():
    """calibrate's 16x8 outer product (128 accumulators) sets the FFMA rate of 128-output threads at the
    warps it was measured at; 64 or fewer outputs keep the 8x8 rate; between, log2 interpolation; above
    the measured warps its ratio to the 8x8 rate is carried over."""
    dev = _cal("calibration-20261122-125959-h100-sxm.toml")
    m = dev.measured
    peak = dev.peak_fp32_GFLOPS(m.sm_clock_MHz)
    f = lambda w, acc: float(F(dev).ffma_issue_factor([w], accumulators=[acc])[0])  # noqa: E731
    for w in (4, 8):
        assert f(w, 128) == pytest.approx(peak / m.ffma_outer_16x8_GFLOPS_by_warps_per_sm[str(w)])
        assert f(w, 64) == f(w, 16) == pytest.approx(peak / m.ffma_outer_GFLOPS_by_warps_per_sm[str(w)])
        assert f(w, 128) < f(w, 96) < f(w, 64)
    ratio8 = m.ffma_outer_GFLOPS_by_warps_per_sm["8"] / m.ffma_outer_16x8_GFLOPS_by_warps_per_sm["8"]
    assert f(16, 128) == pytest.approx(peak / m.ffma_outer_GFLOPS_by_warps_per_sm["16"] * ratio8)
    assert f(8, 256) == f(8, 128)
    old = _cal("calibration-20261122-120609-h100-sxm.toml")  # no 16x8 figure: no scaling
    assert float(F(old).ffma_issue_factor([8], accumulators=[128])[0]) == float(F(old).ffma_issue_factor([8])[0])
    kw = dict(clock_MHz=1980)
    big, small = KernelConfig.make("double_buffer", bm=64, bn=128, bk=8, tm=16, tn=8), KernelConfig.make("double_buffer")
    assert predict(F(dev), big, 4096, registers=255, **kw).ffma_issue_cycles == pytest.approx(f(8, 128))
    assert predict(F(dev), small, 4096, registers=128, **kw).ffma_issue_cycles == pytest.approx(f(16, 64))


def test_thread_tile_size_scales_the_pipe_overlap():
    """calibrate's 16x8 outer product fed from shared memory (128 FFMAs per 6 LDS.128, 16 wavefronts)
    gives e for 128-output threads at 4 and 8 warps, recomputed here by hand; between 64 and 128
    outputs e is scaled in log2; 64 or fewer keep the 8x8 figure."""
    dev = _cal("calibration-20261122-131417-h100-sxm.toml")
    m = dev.measured
    per_clk = dev.compute.sm_count * m.sm_clock_MHz * 1e-3
    for w in (4, 8):
        c16 = float(F(dev).ffma_issue_factor([w], accumulators=[128])[0])
        issue = (128 * c16 + 6) * w / 4
        t = 128 * w * 64 / (m.smem_outer_16x8_GFLOPS_by_warps_per_sm[str(w)] / per_clk)
        s = 16 * w / (m.smem_bandwidth_bytes_per_clock_per_sm / 128)
        e16 = (t - max(issue, s)) / min(issue, s)
        assert float(F(dev).pipe_overlap(w, accumulators=128)) == pytest.approx(e16, rel=1e-6)
        assert float(F(dev).pipe_overlap(w, accumulators=64)) == pytest.approx(float(F(dev).pipe_overlap(w)))
        lo, mid, hi = (float(F(dev).pipe_overlap(w, accumulators=a)) for a in (64, 96, 128))
        assert hi < mid < lo  # twice the FFMAs per load hide more of the loads
    # the calibration records only warp counts whose blocks all fit (no mislabelled two-round points)
    assert max(int(k) for k in m.smem_outer_GFLOPS_by_warps_per_sm) == 16
    assert max(int(k) for k in m.ffma_outer_GFLOPS_by_warps_per_sm) == 24


def test_single_buffered_load_phase_from_the_tile_loop():
    """calibrate's single-buffered tile loop: X_b = (time - time without loads) at b blocks over the same
    at one block, at r_b = compute without loads / that phase; recomputed here. With it the model
    exposes X x (latency + one block's tile through the port) + the two shared-memory latencies for a
    single-buffered kernel: the co-resident blocks' bursts do not add up. Double-buffered and
    uncalibrated predictions are untouched."""
    dev = _cal("calibration-20261122-133331-h100-sxm.toml")
    m = dev.measured
    full, bare = m.tile_loop_cycles_by_ksteps_by_blocks, m.tile_loop_no_load_cycles_by_ksteps_by_blocks
    lone = full["32"]["1"] - bare["32"]["1"]
    x4 = (full["32"]["4"] - bare["32"]["4"]) / lone
    assert float(F(dev).tile_exposure(4, bare["32"]["4"] / lone)) == pytest.approx(x4)
    assert float(F(dev).tile_exposure(1, 3.0)) == pytest.approx(1.0)
    assert 0.5 < x4 < 0.9 and abs(float(F(dev).tile_exposure(2, 10.0)) - 1.0) < 0.1  # 4 long-compute blocks drift apart
    assert float(F(dev).tile_exposure(8, 1e6)) == pytest.approx(x4)  # clamped to the measured blocks and r
    kw = dict(clock_MHz=1980)
    cfg = KernelConfig.make("tiled_1d")  # 2 blocks of 16 warps, 4 KB tiles, single buffer
    p = predict(F(dev), cfg, 4096, registers=48, **kw)
    tiles = p.waves.blocks * (4096 / cfg.bk)
    l2 = next(lv.bytes for lv in p.traffic if lv.level == "l2")
    phase = _mem_latency(dev, p) + l2 / tiles / m.l2_sm_port_bytes_per_clock  # one block's tile, not two
    compute = p.cycles_per_tile["latency"] - p.exposed_latency_cycles
    x = float(F(dev).tile_exposure(p.occupancy.blocks_per_sm, compute / phase))
    assert p.exposed_latency_cycles == pytest.approx(x * phase + 2 * F(dev).effective.latency.smem_latency_cycles)
    assert p.load_phase_share == pytest.approx(x)
    no_tile = dev.model_copy(update=dict(measured=m.model_copy(update=dict(tile_loop_cycles_by_ksteps_by_blocks=None))))
    q = predict(F(no_tile), cfg, 4096, registers=48, **kw)
    assert q.load_phase_share is None and q.exposed_latency_cycles > p.exposed_latency_cycles  # b x burst before
    db = KernelConfig.make("double_buffer")
    assert predict(F(dev), db, 4096, registers=128, **kw).load_phase_share is None


def _mem_latency(dev, p):
    """The model's global-load latency for a prediction: L2 and DRAM latency mixed by the DRAM share."""
    from perfmodel.model.terms import mem_latency

    by = {lv.level: lv.bytes for lv in p.traffic}
    lat = F(dev).effective.latency
    return float(mem_latency(by["dram"], by["l2"], lat.l2_latency_cycles, lat.dram_latency_cycles)[0])


def test_every_kernel_gets_its_top_built_and_an_optimistic_closed_form_is_scaled():
    """sweep.refine_set adds each kernel's top PER_KERNEL (own choices) to the closed form's top; and
    sweep.kernel_scale scales a kernel's unbuilt configurations by the median binary/closed-form ratio of
    its built ones where that is below 1 (the closed form had put async_pipeline's unbuilt tiles above the
    binaries' picks), leaving kernels whose binaries agree or beat the closed form alone."""
    import numpy as np

    from perfmodel.catalogue import enumerate_configs
    from perfmodel.sweep import PER_KERNEL, kernel_scale, refine_set

    dev = load_device("h100-sxm")
    configs, _, _ = enumerate_configs(dev, ("async_pipeline", "warp_tiled"), choices=False)
    is_async = np.array([c.kernel == "async_pipeline" for c in configs])
    closed = np.where(is_async, 2.0, 1.0) + np.arange(len(configs)) * 1e-9  # async fills the closed form's top
    idx = refine_set(configs, closed, 5)
    assert sum(configs[i].kernel == "warp_tiled" for i in idx) == PER_KERNEL and len(set(idx)) == len(idx) == 5 + PER_KERNEL
    binary = closed.copy()
    binary[[i for i in idx if is_async[i]]] *= 0.4  # the binaries say async is slower than its closed form
    binary[[i for i in idx if not is_async[i]]] *= 1.1  # and warp_tiled faster
    scale = kernel_scale(configs, closed, binary, set(idx))
    assert np.allclose(scale[[i for i in range(len(configs)) if i not in idx and is_async[i]]], 0.4)
    assert np.all(scale[~is_async] == 1.0) and np.all(scale[idx] == 1.0)
