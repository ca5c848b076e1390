"""GPU tests (marker `gpu`): correctness of every kernel on odd sizes, the cuBLAS baseline, and the
model's occupancy against the driver's cuOccupancyMaxActiveBlocksPerMultiprocessor."""
import pytest

from perfmodel import KernelConfig, kernel_ids, load_device, predict

pytestmark = pytest.mark.gpu

SIZES = [(1, 1, 1), (31, 31, 31), (129, 257, 67), (256, 256, 256), (100, 36, 513)]


@pytest.fixture(scope="module")
def gpu():
    from perfmodel.measure.gpu import Gpu

    return Gpu()


@pytest.fixture(autouse=True)
def _gpu_context_current(request):
    """The module's Gpu's context current while a test uses it: the in-process `sweep --measure` and
    `choose --measure` tests open a Gpu of their own, whose context stays current after them, and a
    function the module's Gpu loaded earlier is an invalid handle in another context."""
    if "gpu" not in request.fixturenames:
        yield
        return
    g = request.getfixturevalue("gpu")
    g.ctx.push()
    try:
        yield
    finally:
        g.ctx.pop()


@pytest.fixture(scope="module")
def device(gpu):
    from perfmodel.measure.detect import match_shipped

    return load_device(match_shipped(gpu.name, gpu.cc) or "h100-sxm")


@pytest.mark.parametrize("kernel", kernel_ids())
@pytest.mark.parametrize("M,N,K", SIZES)
def test_kernel_correct_on_odd_sizes(gpu, kernel, M, N, K):
    from perfmodel.measure.gpu import Problem

    cfg = KernelConfig.make(kernel)
    prob = Problem(gpu, M, N, K, seed=3)
    fn = gpu.function(cfg)
    prob.poison()
    gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, M, N, K)()
    gpu.sync()
    ok, err, how = prob.verify()
    assert ok, f"{cfg.label()} {M}x{N}x{K}: {how}"
    assert fn.local_size_bytes == 0, "register spills"


@pytest.fixture(scope="module")
def variant_cubins(gpu, device):
    """Every design-choice combination at default tiles (validate --variants' plan) and, for the kernels
    whose default tiles refuse float4 loads, a valid float4 configuration; compiled in parallel."""
    from perfmodel.measure.gpu import compile_all
    from perfmodel.measure.validate import variant_configs

    cfgs, _ = variant_configs(device)
    cfgs += [KernelConfig.make("tiled_1d", bk=32, load_width=4), KernelConfig.make("warp_tiled", load_width=1, frag_width=1, bk=8)]
    return [(c, cub) for c, cub in zip(cfgs, compile_all(gpu, {c.label(): c for c in cfgs}).values())]


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (129, 257, 67), (100, 36, 513)])
def test_design_choices_correct_on_odd_sizes(gpu, variant_cubins, M, N, K):
    """Every design choice through the guarded edge body (odd sizes) and, at 129 x 257, interior blocks too."""
    from perfmodel.measure.gpu import Problem

    wrong = _wrong_results(gpu, Problem(gpu, M, N, K, seed=5), variant_cubins)
    assert not wrong, f"{len(wrong)} of {len(variant_cubins)} wrong at {M}x{N}x{K}: " + "; ".join(wrong[:5])


def _wrong_results(gpu, prob, built) -> list[str]:
    """Each (config, cubin) launched once on the poisoned problem and verified: one line per wrong result."""
    wrong = []
    for cfg, cub in built:
        assert cub is not None, f"{cfg.label()} did not compile"
        fn = gpu.function(cfg, cub)
        prob.poison()
        gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, prob.M, prob.N, prob.K)()
        gpu.sync()
        ok, err, how = prob.verify()
        if not ok:
            wrong.append(f"{cfg.label()}: {how}")
    return wrong


def test_verification_rejects_wrong_results(gpu):
    from perfmodel.measure.gpu import Problem

    prob = Problem(gpu, 64, 64, 64)
    prob.poison()  # nothing written: NaN must never pass
    ok, _, how = prob.verify()
    assert not ok and "NaN" in how
    gpu.drv.memset_d32(prob.C, 0, 64 * 64)  # zeros: wrong values must fail
    ok, err, _ = prob.verify()
    assert not ok and err > 0.9


@pytest.mark.parametrize("M,N,K", [(129, 257, 67), (1024, 1024, 1024)])
def test_cublas_baseline_verifies(gpu, M, N, K):
    from perfmodel.measure.gpu import Problem, measure_point

    prob = Problem(gpu, M, N, K)
    m = measure_point(gpu, prob, None, "baseline", rep_ms=5, warmup_ms=2)
    assert m.verified and m.rel_frobenius_error < 1e-5, m


def _occupancy_configs(device):
    from perfmodel.measure.validate import sweep_sample

    return [KernelConfig.make(k) for k in kernel_ids()] + sweep_sample(device, total=20, seed=1)


def test_model_occupancy_matches_driver(gpu, device):
    mismatches = []
    for cfg in _occupancy_configs(device):
        cub = gpu.cubin(cfg)
        fn = gpu.function(cfg, cub)
        driver = gpu.driver_blocks_per_sm(cfg, cub)
        model = predict(device, cfg, 4096, registers=fn.num_regs).occupancy.blocks_per_sm
        if driver != model:
            mismatches.append(f"{cfg.label()} regs={fn.num_regs}: model {model}, driver {driver}")
    assert not mismatches, "\n".join(mismatches)


def test_devices_detect_cli_names_the_shipped_file(capsys):
    from perfmodel.cli import main

    assert main(["devices", "detect"]) == 0
    out = capsys.readouterr().out
    assert "->" in out and ("h100-sxm" in out or "h200" in out or ".toml" in out)


def test_calibrate_figures_are_physical(gpu, device):
    """Every microbenchmark lands where physics allows: nothing above the datasheet peak or the
    schedulers' issue limit, the port above the SM's share, big loops no faster than small ones."""
    from perfmodel.measure.calibrate import run_microbenchmarks

    res = run_microbenchmarks(gpu, log=lambda *a: None)
    clock = res["sm_clock_MHz"] or device.compute.sm_clock_boost_MHz
    peak = device.peak_fp32_GFLOPS(clock)
    assert 0.8 * peak < res["fp32_GFLOPS"] <= 1.01 * peak
    assert res["ffma_outer_GFLOPS"] <= res["fp32_GFLOPS"] * 1.01
    for w, v in res["smem_outer_GFLOPS_by_warps_per_sm"].items():  # loads only take issue slots away
        assert 0.5 * res["ffma_outer_GFLOPS_by_warps_per_sm"][w] < v <= 1.02 * res["ffma_outer_GFLOPS_by_warps_per_sm"][w]
    for w, v in res["ffma_outer_16x8_GFLOPS_by_warps_per_sm"].items():  # same FFMA pipe, within 20 % of the 8x8 rate
        assert 0.8 * res["ffma_outer_GFLOPS_by_warps_per_sm"][w] < v <= 1.01 * res["fp32_GFLOPS"]
    share = res["l2_bandwidth_GBps"] * 1e9 / (clock * 1e6 * device.compute.sm_count)
    assert share < res["l2_sm_port_bytes_per_clock"] <= 256  # one SM alone beats its share; 256 B/clk is 2x the L1 width
    sched = device.compute.warp_schedulers_per_sm * device.compute.issue_per_scheduler_per_clock
    for warps, table in res["issue_rate_by_loop_bytes_by_warps"].items():
        rates = [v for _, v in sorted((int(k), v) for k, v in table.items())]
        assert max(rates) <= min(sched, int(warps)) * 1.01 and min(rates) > 0  # a warp issues at most 1/clk
        assert rates[-1] <= rates[0] * 1.02  # a 256 KB loop never issues faster than an 8 KB one
    phase = [v for _, v in sorted((int(k), v) for k, v in res["tile_load_cycles_by_bytes"].items())]
    assert phase == sorted(phase) and phase[0] > res["l2_latency_cycles"]
    full, bare = res["tile_loop_cycles_by_ksteps_by_blocks"], res["tile_loop_no_load_cycles_by_ksteps_by_blocks"]
    for ks in full:  # loads only add time; a lone block exposes at least the L2 latency; more blocks, more compute
        assert all(full[ks][b] > bare[ks][b] for b in full[ks])
        assert full[ks]["1"] - bare[ks]["1"] > 0.8 * res["l2_latency_cycles"]
        assert [bare[ks][b] for b in sorted(bare[ks], key=int)] == sorted(bare[ks].values())
    for table in ("ffma_outer_GFLOPS_by_warps_per_sm", "smem_outer_GFLOPS_by_warps_per_sm"):  # only counts that fit
        assert max(int(w) for w in res[table]) <= 32


def test_sweep_measure_reports_the_rank(tmp_path, monkeypatch, capsys):
    from perfmodel.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--device", "h100-sxm", "--kernel", "double_buffer", "--size", "512", "--measure", "2",
                 "--sample", "2"]) == 0
    out = capsys.readouterr().out
    assert "measured best:" in out and "model rank" in out
    runs = list((tmp_path / "results").glob("*-tune/raw.json"))
    assert len(runs) == 1


def test_sweep_measure_overlap_measures_exactly_the_overlapping_configs(tmp_path, monkeypatch, capsys):
    """--measure-overlap times the model's first and every configuration faster than it in at least 5 % of
    the draws (Ranking.intervals), nothing else, into a *-tune-overlap folder."""
    import json

    import numpy as np

    from perfmodel.cli import main
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import Problem
    from perfmodel.sweep import rank

    rk = rank(Figures.load("h100-sxm"), Problem(512, 512, 512), ["tiled_1d"], sass_top=0)
    shown = [int(i) for i in rk.order[:200]]
    p = rk.intervals(shown)["p_beats_first"]
    want = {rk.configs[i].label() for j, i in enumerate(shown) if j == 0 or p[j] >= 0.05}
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--device", "h100-sxm", "--kernel", "tiled_1d", "--size", "512", "--sass", "0",
                 "--measure-overlap"]) == 0
    runs = list((tmp_path / "results").glob("*-tune-overlap/raw.json"))
    assert len(runs) == 1
    ms = json.loads(runs[0].read_text())["measurements"]
    from perfmodel.catalogue import KernelConfig

    got = {KernelConfig.make(m["kernel"], **m["config"]).label() for m in ms if m["kernel"] != "cublas"}
    assert got == want and 1 < len(want) < len(rk.configs)
    assert all(m["verified"] for m in ms) and np.isfinite([m["gflops_median"] for m in ms]).all()


def test_choose_measure_times_the_pick_beside_cublas(tmp_path, monkeypatch, capsys):
    import json

    from perfmodel.choose import choose
    from perfmodel.cli import main
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import Problem

    ch, _ = choose(Figures.load("h100-sxm"), Problem(512, 512, 512), sass_top=0)
    monkeypatch.chdir(tmp_path)
    assert main(["choose", "--device", "h100-sxm", "--size", "512", "--sass", "0", "--measure"]) == 0
    runs = list((tmp_path / "results").glob("*-choose/raw.json"))
    assert len(runs) == 1
    ms = json.loads(runs[0].read_text())["measurements"]
    assert sorted(m["kernel"] for m in ms) == sorted(["cublas", ch.pick.config.kernel])
    assert all(m["verified"] for m in ms)


@pytest.mark.parametrize("kernel,extra", [("split_k", {}), ("split_k_fused", {}), ("split_k_fused", {"ragged": "inner4"}),
                                          ("coalesced_split_k", {}), ("coalesced_split_k", {"bm": 4, "bn": 32})])
@pytest.mark.parametrize("M,N,K", [(256, 256, 4096), (129, 257, 1000), (100, 36, 77), (1, 1, 1), (3, 4097, 4093)])
def test_split_k_correct_and_bit_identical_on_every_run(gpu, kernel, extra, M, N, K):
    """split_k, split_k_fused and coalesced_split_k over interior (256^2 x 4096) and ragged shapes, at several splits
    (more than k-tiles too): verified, and two runs give the same bits (the partials are summed in slice order; the
    fused kernel's counters only pick which block sums)."""
    import numpy as np

    from perfmodel.measure.gpu import Problem

    prob = Problem(gpu, M, N, K, seed=7)
    for splits in (2, 3, 7, 32, 64):
        cfg = KernelConfig.make(kernel, splits=splits, **extra)
        fn = gpu.function(cfg)
        run = gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, M, N, K)
        outs = []
        for _ in range(2):
            prob.poison()
            run()
            gpu.sync()
            ok, err, how = prob.verify()
            assert ok, f"{cfg.label()} {M}x{N}x{K}: {how}"
            outs.append(gpu.drv.from_device(prob.C, (M, N), np.float32))
        assert np.array_equal(outs[0], outs[1]), f"{cfg.label()} {M}x{N}x{K}: two runs differ"


@pytest.mark.parametrize("M,N,K", [(256, 256, 4096), (129, 257, 1000), (1, 4096, 4096)])
def test_split_k_programmatic_launch_gives_the_usual_launchs_bits(gpu, M, N, K):
    """On sm_90 and newer the launcher launches split_k's second kernel programmatically (it waits for the main
    kernel's grid in its first instruction): the same C, bit for bit, as the usual launch, run after run."""
    import numpy as np

    from perfmodel.measure.gpu import Problem
    from perfmodel.measure.launch import programmatic_supported

    assert gpu.programmatic is programmatic_supported(gpu.cc)
    if not gpu.programmatic:
        pytest.skip(f"compute capability {gpu.cc}: no programmatic dependent launch (sm_90 and newer)")
    prob = Problem(gpu, M, N, K, seed=17)
    cfg = KernelConfig.make("split_k", splits=16)
    outs = []
    try:
        for programmatic in (False, True):
            gpu.programmatic = programmatic
            run = gpu.launcher(cfg, gpu.function(cfg), prob.A, prob.B, prob.C, M, N, K)
            for _ in range(1 if not programmatic else 50):  # back to back: each waits for its own main kernel
                prob.poison()
                run()
            gpu.sync()
            ok, err, how = prob.verify()
            assert ok, f"{cfg.label()} {M}x{N}x{K} ({'programmatic' if programmatic else 'usual'} launch): {how}"
            outs.append(gpu.drv.from_device(prob.C, (M, N), np.float32))
    finally:
        gpu.programmatic = programmatic_supported(gpu.cc)
    assert np.array_equal(outs[0], outs[1]), f"{M}x{N}x{K}: the programmatic launch's C differs from the usual launch's"


@pytest.mark.parametrize("M,N,K", [(256, 256, 4096), (129, 257, 1000), (1, 4096, 4096), (3, 4097, 4093)])
def test_split_k_fused_gives_split_k_s_bits(gpu, M, N, K):
    """The fused kernel's sums are step 10's second kernel's, in the same order: the same C bit for bit, at the
    same tiles and slices, and again after many launches (the counters reset themselves)."""
    import numpy as np

    from perfmodel.measure.gpu import Problem

    prob = Problem(gpu, M, N, K, seed=13)
    for params in ({"splits": 4}, {"splits": 32, "bm": 16, "bn": 256, "bk": 16, "tm": 8, "tn": 8}):
        outs = []
        for kernel in ("split_k", "split_k_fused"):
            cfg = KernelConfig.make(kernel, **params)
            run = gpu.launcher(cfg, gpu.function(cfg), prob.A, prob.B, prob.C, M, N, K)
            for _ in range(1 if kernel == "split_k" else 20):
                prob.poison()
                run()
            gpu.sync()
            ok, err, how = prob.verify()
            assert ok, f"{cfg.label()} {M}x{N}x{K}: {how}"
            outs.append(gpu.drv.from_device(prob.C, (M, N), np.float32))
        assert np.array_equal(outs[0], outs[1]), f"{params} {M}x{N}x{K}: split_k_fused's C differs from split_k's"


@pytest.mark.parametrize("M,N,K", [(512, 512, 1024), (129, 257, 67), (100, 36, 513), (1, 1, 1)])
def test_async_pipeline_correct_at_every_depth(gpu, M, N, K):
    """async_pipeline's ring of 2, 3 and 4 buffers, interior (512^2 x 1024) and through the edge body
    (cp.async of 4 bytes with zeros beyond the matrix), and a tile shape other than the default."""
    from perfmodel.measure.gpu import Problem

    prob = Problem(gpu, M, N, K, seed=11)
    cfgs = [KernelConfig.make("async_pipeline", stages=s) for s in (2, 3, 4)]
    cfgs.append(KernelConfig.make("async_pipeline", bm=64, bn=128, bk=16, tm=4, tn=4, wm=32, wn=64, wn_iter=2, stages=3))
    for cfg in cfgs:
        fn = gpu.function(cfg)
        prob.poison()
        gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, M, N, K)()
        gpu.sync()
        ok, err, how = prob.verify()
        assert ok, f"{cfg.label()} {M}x{N}x{K}: {how}"


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (256, 256, 250), (256, 256, 5), (300, 260, 1001), (257, 255, 256), (129, 257, 67),
                                   (256, 256, 1004), (260, 264, 1004), (256, 256, 12), (256, 256, 4)])
def test_inner_body_correct_on_ragged_sizes(gpu, M, N, K):
    """ragged = inner and inner4 (kernels/outer_f4.cuh, INNER_BODY) of every kernel with the choice, at default
    and larger tiles: blocks inside C with K not a multiple of bk (250, 1001, 1004), K below bk (5, 12, 4), odd
    K or N (unaligned rows: inner4 runs the edge body there), alongside edge blocks (300 x 260, 257 x 255,
    260 x 264) and with none (256 x 256); split_k with several slices."""
    from perfmodel.measure.gpu import Problem, compile_all

    cfgs = []
    for r in ("inner", "inner4"):
        cfgs += [KernelConfig.make(k, ragged=r) for k in ("tiled_2d_float4", "bank_conflict_free", "double_buffer")]
        cfgs += [KernelConfig.make("double_buffer", bm=128, bn=256, bk=16, tm=16, tn=8, ragged=r),
                 KernelConfig.make("double_buffer", bm=64, bn=128, bk=32, tm=8, tn=4, thread_tile="contiguous", a_transposed="no",
                                   frag_width=1, ragged=r),
                 KernelConfig.make("tiled_2d_float4", load_width=1, ragged=r)]
        cfgs += [KernelConfig.make(k, splits=s, bk=16, ragged=r) for s in (2, 3, 7) for k in ("split_k", "split_k_fused")]
    cubins = compile_all(gpu, {c.label(): c for c in cfgs})
    wrong = _wrong_results(gpu, Problem(gpu, M, N, K, seed=11), [(c, cubins[c.label()]) for c in cfgs])
    assert not wrong, f"{len(wrong)} of {len(cfgs)} wrong at {M}x{N}x{K}: " + "; ".join(wrong)
