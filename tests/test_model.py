import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from perfmodel import KernelConfig, kernel_ids, load_device, predict, predict_batch, shipped_devices
from perfmodel.model.smem_banks import smem_counts, wavefronts
from perfmodel.model.terms import dram_bytes, l2_to_sm_bytes, tile_line_bytes
from perfmodel.catalogue import enumerate_configs, get_kernel, runs_on
from perfmodel.facts import BuildFacts
from perfmodel.model import Problem

DEVICES = sorted(shipped_devices())


@pytest.mark.parametrize("kernel,dev", [(k, d) for k in kernel_ids() for d in DEVICES
                                        if runs_on(get_kernel(k), load_device(d).compute_capability)])
def test_every_kernel_on_every_device_predicts_with_explanation(dev, kernel):
    d = load_device(dev)
    p = predict(d, KernelConfig.make(kernel), 4096)
    assert 0 < p.gflops <= p.peak_GFLOPS
    for lv in p.traffic:
        assert p.gflops <= lv.ceiling_GFLOPS * (1 + 1e-9)
    assert p.gflops <= p.issue.issue_ceiling_GFLOPS * (1 + 1e-9)
    assert p.bound in p.cycles_per_tile and p.reason


def test_bank_conflicts_from_first_principles():
    assert wavefronts(np.arange(32)) == 1                 # 32 consecutive words: one per bank
    assert wavefronts(np.zeros(32)) == 1                  # broadcast
    assert wavefronts(np.arange(32) * 2) == 2             # stride 2: two words per bank
    assert wavefronts(np.arange(32) * 32) == 32            # stride 32: all in bank 0
    assert wavefronts(np.arange(32) * 4, 4) == 4          # LDS.128, 512 contiguous bytes: 4 quarter-warps x 128 B
    assert wavefronts(np.zeros(32), 4) == 2               # LDS.128 broadcast: lane pairs agree -> per half-warp
    # LDS.128 is served per quarter-warp (8 lanes) unless lane pairs n, n^1 (or n, n^2) agree:
    # 4 distinct float4 on lanes 0-3, repeated: pairs differ -> 4 quarters of 64 B, 4 wavefronts
    assert wavefronts((np.arange(32) % 4) * 4, 4) == 4
    # the same 4 float4 with each lane pair agreeing (lanes 2j, 2j+1): served per half-warp -> 2
    assert wavefronts(((np.arange(32) // 2) % 4) * 4, 4) == 2
    # tn = 16: 8 lanes 64 B apart hit 2 bank groups 4 deep -> 4 per quarter, 16 per instruction
    assert wavefronts((np.arange(32) % 8) * 16, 4) == 16
    # quadrant layout ([sgemm-notes] V2), 128-bit reads served per half-warp: per k a warp reads A at one
    # float4 per half-warp (2 wavefronts per LDS.128) and B at 8 contiguous float4 = 128 B per
    # half-warp... x 2 halves of 256 B -> 4 wavefronts: (2*2 + 2*4) / 4 LDS.128 = 3 per instruction.
    # ncu on the H100 counts 4.54e8 shared wavefronts for double_buffer at 4096^3; this model 4.53e8
    # (test_smem_wavefronts_match_recorded_ncu checks every ladder kernel against the recorded run).
    lds_i, lds_w, _, _ = smem_counts(KernelConfig.make("bank_conflict_free"))
    assert lds_w / lds_i == pytest.approx(12 / 4)
    # without the split, each thread's B float4 pair is 32 B apart: 16 lanes x 2 float4 over 512 B -> 4
    lds_i2, lds_w2, _, _ = smem_counts(KernelConfig.make("tiled_2d_float4"))
    assert lds_w2 > lds_w


def test_smem_wavefronts_match_recorded_ncu():
    """Every tiled ladder kernel's shared-memory wavefronts within 2 % of ncu's counter in the recorded
    run (warp_tiled's lanes 0-3 spread its B reads over four quarter-warps: half-warp phases gave 0.68x)."""
    import json
    from pathlib import Path

    from perfmodel.model.smem_banks import smem_counts as sc
    from perfmodel.model.terms import grid

    run = Path(__file__).resolve().parent.parent / "results" / "20261122-102443-h100-sxm" / "ncu.json"
    counters = json.loads(run.read_text())["kernels"]
    checked = 0
    for k in ("smem_tiled", "tiled_1d", "tiled_2d", "tiled_2d_float4", "bank_conflict_free", "double_buffer", "warp_tiled"):
        cfg = KernelConfig.make(k)
        _, _, blocks, tiles = grid(4096, 4096, 4096, cfg.bm, cfg.bn, cfg.bk)
        _, lds_w, _, sts_w = sc(cfg)
        model = (lds_w + sts_w) * blocks * tiles
        assert model == pytest.approx(counters[k]["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"], rel=0.02), k
        checked += 1
    assert checked == 7


def test_traffic_first_principles():
    # L2->SM: (M*N*K/bn + M*N*K/bm) floats + C once
    M = N = K = 4096
    assert l2_to_sm_bytes(M, N, K, 128, 128) == 4 * (2 * M * N * K / 128 + M * N)
    # everything fits in a 50 MB L2 -> compulsory traffic only: A + B + C
    assert dram_bytes(1024, 1024, 1024, 128, 128, 264, 50 * 2**20) == 4 * 3 * 1024 * 1024


def test_intensity_keeps_the_factor_two_of_an_fma():
    # [gemm-theory] drops it; we do not: flops = 2*M*N*K
    p = predict(load_device("rtx2070s"), KernelConfig.make("tiled_2d"), 1024)
    l2 = next(lv for lv in p.traffic if lv.level == "l2")
    assert l2.intensity_flop_per_byte == pytest.approx(2 * 1024**3 / l2.bytes)


def test_compiler_registers_change_occupancy():
    d = load_device("h100-sxm")
    cfg = KernelConfig.make("double_buffer")
    assert predict(d, cfg, 4096, registers=127).occupancy.blocks_per_sm == 2
    assert predict(d, cfg, 4096, registers=139).occupancy.blocks_per_sm == 1


def test_a_batch_row_does_not_depend_on_the_other_rows():
    """Rows of one batch are independent: configs with the compiler's registers beside estimated ones,
    one problem shape per row, in two different orders, give each row what it gets alone."""
    d = load_device("a100")
    cfgs = [KernelConfig.make(k) for k in kernel_ids()]
    builds = [BuildFacts(registers=96) if i % 2 else BuildFacts() for i in range(len(cfgs))]
    dims = [(512 + 256 * i, 4096 - 128 * i, 1024 + 64 * i) for i in range(len(cfgs))]
    prob = Problem(*(list(x) for x in zip(*dims)))
    fwd = predict_batch(d, cfgs, prob, builds=builds)
    rev = predict_batch(d, cfgs[::-1], Problem(*(list(x)[::-1] for x in zip(*dims))), builds=builds[::-1])
    for i, c in enumerate(cfgs):
        alone = predict_batch(d, [c], Problem(*dims[i]), builds=[builds[i]])
        assert fwd.gflops[i] == alone.gflops[0] == rev.gflops[len(cfgs) - 1 - i]
        assert fwd.resources.registers[i] == (96 if i % 2 else alone.resources.registers[0])


_CONFIGS = {}


def _valid(dev):
    if dev not in _CONFIGS:
        _CONFIGS[dev] = enumerate_configs(load_device(dev), ("tiled_2d", "double_buffer", "warp_tiled"))[0]
    return _CONFIGS[dev]


@settings(max_examples=60, deadline=None)
@given(dev=st.sampled_from(DEVICES), idx=st.integers(0, 10**6), M=st.integers(1, 9000), N=st.integers(1, 9000),
       K=st.integers(1, 9000))
def test_property_finite_and_under_every_ceiling(dev, idx, M, N, K):
    d = load_device(dev)
    cfgs = _valid(dev)
    cfg = cfgs[idx % len(cfgs)]
    p = predict(d, cfg, M, N, K)
    assert math.isfinite(p.gflops) and p.gflops >= 0 and math.isfinite(p.time_s) and p.time_s > 0
    assert p.gflops <= p.peak_GFLOPS * (1 + 1e-9)
    for lv in p.traffic:
        assert p.gflops <= lv.ceiling_GFLOPS * (1 + 1e-9)


def _scaled(d, section, field, factor):
    sec = getattr(d, section).model_copy(update={field: getattr(getattr(d, section), field) * factor})
    return d.model_copy(update={section: sec})


@settings(max_examples=60, deadline=None)
@given(dev=st.sampled_from(DEVICES), idx=st.integers(0, 10**6), S=st.sampled_from([256, 1000, 2048, 4096]),
       f=st.floats(1.01, 4.0))
def test_property_not_slower_with_more_bandwidth_or_clock(dev, idx, S, f):
    d = load_device(dev)
    cfg = _valid(dev)[idx % len(_valid(dev))]
    base = predict(d, cfg, S).gflops
    assert predict(_scaled(d, "memory", "dram_bandwidth_GBps", f), cfg, S).gflops >= base * (1 - 1e-9)
    assert predict(_scaled(d, "memory", "l2_bandwidth_GBps", f), cfg, S).gflops >= base * (1 - 1e-9)
    clock = d.compute.sm_clock_boost_MHz
    assert predict(d, cfg, S, clock_MHz=clock * f).gflops >= base * (1 - 1e-9)


def test_local_frames_live_in_l1_or_share_the_l2_with_dram():
    """Local traffic at the L1 rate while the resident frames fit beside shared memory; otherwise the
    L2 holds L2 bytes / (all SMs' frames) of it and DRAM the rest, each at the SM's bandwidth share."""
    dev = load_device("h100-sxm")
    cfg = KernelConfig.make("warp_tiled", bm=256, bn=256, bk=16, tm=4, tn=8, wm=32, wn=64, wn_iter=2)  # 1024 threads
    small = predict(dev, cfg, 4096, build=BuildFacts(registers=64, local_bytes=16, local_tile_bytes=100.0), clock_MHz=1980)
    big = predict(dev, cfg, 4096, build=BuildFacts(registers=64, local_bytes=712, local_tile_bytes=3620.0), clock_MHz=1980)
    b = small.occupancy.blocks_per_sm
    assert b == big.occupancy.blocks_per_sm == 1
    # 16 B x 1024 threads fit in L1 beside 33 KB of shared memory: 100 B x 1024 threads at 128 B/clk = 800 cycles
    assert small.cycles_per_tile["local"] == pytest.approx(800.0)
    # 712 B x 1024 threads x 132 SMs = 96.2 MB of frames, 52.4 MB of L2: 54.48 % in L2, the rest in DRAM, each at
    # the SM's share at 1980 MHz (L2 7300 GB/s: 27.93 B/clk; DRAM 3352 GB/s: 12.83 B/clk):
    # 3620 B x 1024 x (0.5448 / 27.93 + 0.4552 / 12.83) = 203,875 cycles
    assert big.cycles_per_tile["local"] == pytest.approx(203_875, rel=1e-4)


def test_local_frames_of_a_small_grid_stay_in_the_l2():
    """Frames exist only for the blocks that run: the same 712 B frames on a 512 x 512 output (four
    256 x 256 blocks, one per SM) are 4 x 1024 x 712 B = 2.9 MB, which the 52.4 MB L2 holds whole. Only
    four SMs run blocks, so each draws 132 / 4 of its even L2 share (3620 B x 1024 threads / 27.93 B/clk /
    33 = 4,022 cycles) and its own paths bind: half the bytes loaded through the port (the L1 line rate,
    128 B/clk, without a calibration), half stored at the SM's 28.8 B/clk, 3620 x 1024 x (0.5 / 128 +
    0.5 / 28.8) = 78,836 cycles (at 4096 the 132 SMs' frames overflow the L2 and every SM is busy: the
    share with DRAM's makes it 203,875, the test above; tests/test_local_paths.py has the rule)."""
    dev = load_device("h100-sxm")
    cfg = KernelConfig.make("warp_tiled", bm=256, bn=256, bk=16, tm=4, tn=8, wm=32, wn=64, wn_iter=2)
    build = BuildFacts(registers=64, local_bytes=712, local_tile_bytes=3620.0)
    p = predict(dev, cfg, 512, 512, 4096, build=build, clock_MHz=1980)
    assert p.cycles_per_tile["local"] == pytest.approx(3620 * 1024 * (0.5 / 128 + 0.5 / 28.8), rel=1e-4)
    assert p.cycles_per_tile["local"] > 3620 * 1024 / (7300e9 / 1980e6 / 132) / 33
    assert "in L2" in p.resources.local_traffic and "DRAM" not in p.resources.local_traffic


def test_a_spilled_loop_waits_for_its_local_loads_where_the_frames_live():
    """A local load (LDL) that misses L1 waits for the L2 (or DRAM): the simulated compute phase of a
    loop whose FFMAs need an LDL's result takes L1's latency (33 cycles on the H100) where the frames
    fit in L1, the L2's (372) where only the L2 holds them (a small grid), and the mix by share where
    DRAM holds the rest (54.48 % L2 at 4096: 0.5448 x 372 + 0.4552 x 657 = 501.7)."""
    dev = load_device("h100-sxm")
    cfg = KernelConfig.make("warp_tiled", bm=256, bn=256, bk=16, tm=4, tn=8, wm=32, wn=64, wn_iter=2)
    n = 1024  # FFMAs per thread per k-tile: 256 x 256 x 16 / 1024 threads
    program = dict(id="test-ldl-then-ffma", cls="L" + "F" * n, wide=[1] + [0] * n, deps=[[]] + [[1]] + [[] for _ in range(n - 1)])

    def batch(M, N, frame):
        build = BuildFacts(registers=64, local_bytes=frame, local_tile_bytes=4.0, program=program)
        return predict_batch(dev, [cfg], Problem(M, N, 4096), builds=[build], clock_MHz=1980)

    fits, small, big = batch(4096, 4096, 16), batch(512, 512, 712), batch(4096, 4096, 712)
    assert fits.local.latency[0] == 33
    assert small.local.latency[0] == pytest.approx(372)
    assert big.local.latency[0] == pytest.approx(0.5448 * 372 + 0.4552 * 657, rel=1e-3)
    s = [x.compute.scheduled[0] for x in (fits, small, big)]
    assert s[0] < s[1] < s[2]


def test_smem_littles_law_counts_wavefronts_in_flight():
    """Little's law for shared memory compares wavefronts. tiled_2d 64x16x32, 4x4 on the H100: 64 threads
    (2 warps), 16 blocks per SM (64 registers). Per tile each warp issues 32 k steps x 2 LDS (one A
    fragment of 4 rows 512 B apart, one B fragment): 128 LDS per block, 768 wavefronts by the bank
    simulation, 6 per load. In flight: 16 blocks x 2 warps x 2 loads per k step x 6 = 384 wavefronts
    >= 29 needed (latency 29 x 1 wavefront per clock): no throttle. The smem term is then the pipe's
    wavefronts at 1 per clock: 16 x (768 LDS + 80 STS + (64 + 16) x 32 x 4 B / 128 B of tile loads)."""
    dev = load_device("h100-sxm")
    cfg = KernelConfig.make("tiled_2d", bm=64, bn=16, bk=32, tm=4, tn=4)
    p = predict(dev, cfg, 4096, registers=64)
    row = next(r for r in p.littles_law if r.level == "smem")
    assert p.occupancy.blocks_per_sm == 16 and p.resources.warps_per_block == 2
    assert row.needed_in_flight == 29 and row.available_in_flight == pytest.approx(384)
    assert row.achievable_fraction == 1.0
    assert p.cycles_per_tile["smem"] == pytest.approx(16 * (768 + 80 + 80))


ARCHIVE = Path(__file__).resolve().parents[1] / "results" / "archive"


def test_the_lines_a_tile_touches():
    """tiled_2d's 128 x 128 x 8 tile: 128 A rows of 32 B (one line each) and 8 B rows of 512 B (4 lines
    each) = 160 lines for 8 KB of sectors; with bk = 32 every A row is a whole line and the lines are the
    sectors; 64 x 64 x 8 (tiled_1d's default): 64 + 8 x 2 = 80 lines for 4 KB."""
    assert tile_line_bytes(128, 128, 8) == 160 * 128
    assert tile_line_bytes(128, 128, 32) == (128 + 128) * 32 * 4
    assert tile_line_bytes(64, 64, 8) == 80 * 128
    assert tile_line_bytes(256, 128, 8) == 288 * 128


def test_lone_blocks_that_load_at_once_pay_for_their_lines_unused_sectors():
    """One block per SM, every SM loading at once: tiled_2d's default at 4096 (174 registers, one block
    per SM) adds (160 x 128 - 8,192) B / 27.93 B per clock (7.3 TB/s over 132 SMs at 1,980 MHz) = 440
    cycles to its load phase; at 1024 its 64 blocks load on 64 of the 132 SMs, so each SM has 132/64 of
    the share; with a bk = 32 tile (whole lines) nothing is added, and two blocks per SM (tiled_2d_float4,
    whose blocks drift apart) add nothing either."""
    dev = load_device("h100-sxm")
    share = 7300e9 / 1980e6 / 132
    t2d = KernelConfig.make("tiled_2d", bm=128, bn=128, bk=8, tm=8, tn=8)
    p = predict(dev, t2d, 4096, build=BuildFacts(registers=174), clock_MHz=1980)
    assert p.occupancy.blocks_per_sm == 1
    assert p.lockstep_extra_cycles == pytest.approx((160 * 128 - 8192) / share, rel=1e-6)
    small = predict(dev, t2d, 1024, build=BuildFacts(registers=174), clock_MHz=1980)
    assert small.lockstep_extra_cycles == pytest.approx((160 * 128 - 8192) / share * 64 / 132, rel=1e-6)
    whole = predict(dev, KernelConfig.make("tiled_2d", bm=128, bn=128, bk=32, tm=8, tn=8), 4096,
                    build=BuildFacts(registers=174), clock_MHz=1980)
    assert whole.occupancy.blocks_per_sm == 1 and whole.lockstep_extra_cycles == 0
    two = predict(dev, KernelConfig.make("tiled_2d_float4", bm=128, bn=128, bk=8, tm=8, tn=8), 4096,
                  build=BuildFacts(registers=128), clock_MHz=1980)
    assert two.occupancy.blocks_per_sm == 2 and two.lockstep_extra_cycles == 0
    # at 1024 its 64 blocks are one partial wave, one per SM, started together: they pay it
    partial = predict(dev, KernelConfig.make("tiled_2d_float4", bm=128, bn=128, bk=8, tm=8, tn=8), 1024,
                      build=BuildFacts(registers=128), clock_MHz=1980)
    assert partial.waves.full_waves == 0 and partial.waves.tail_blocks_per_sm == 1
    assert partial.lockstep_extra_cycles == pytest.approx((160 * 128 - 8192) / share * 64 / 132, rel=1e-6)
    assert p.exposed_latency_cycles > p.lockstep_extra_cycles


def test_the_unused_sector_rate_lies_within_what_the_h100_measured():
    """The term charges an extra line (one a warp touches for fewer than its four sectors) at the SM's
    L2 share: 128 B / 27.93 B per clock = 4.6 cycles on the H100. The recorded tile-lines benchmarks
    (two H100s) measured, per extra line over a contiguous tile of the same bytes, a lone block per SM,
    from the L2: tiled_2d's 160-line tile 5.0-6.7 cycles, a 256 x 8 A tile's 288 lines 2.7-2.8, and
    tiled_2d's tile with rows 2 KB apart 3.0. The model's rate must stay inside what was measured."""
    recs = [json.loads((ARCHIVE / f"tile-lines-20261124-h100-sxm-{i}.json").read_text()) for i in (3, 4)]

    def exposed(rec, p, b=1, ks=8):
        c = rec["cycles_per_tile"]
        return c[f"l2|{p}|{b}|{ks}|1"]["median"] - c[f"l2|{p}|{b}|{ks}|0"]["median"]

    rates = []
    for rec in recs:
        rates.append((exposed(rec, 3) - exposed(rec, 0)) / (160 - 64))
        rates.append((exposed(rec, 4) - exposed(rec, 5)) / (288 - 96))
    sh = recs[1]["sharing"]
    pitch512 = sh["3|1073741824|512|1"]["median"] - sh["3|1073741824|512|0"]["median"]
    contiguous = sh["0|1073741824|4096|1"]["median"] - sh["0|1073741824|4096|0"]["median"]
    rates.append((pitch512 - contiguous) / (160 - 64))
    model = 128 / (7300e9 / 1980e6 / 132)
    assert min(rates) <= model <= max(rates)
    assert 2.5 < min(rates) and max(rates) < 7.0
