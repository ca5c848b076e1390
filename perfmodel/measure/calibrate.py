"""`perfmodel calibrate`: microbenchmark the local GPU and write a device file whose [measured]
section holds the figures (each named "measured by perfmodel calibrate on DATE on GPU")."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import tomli_w

from ..devices import load_device, shipped_devices
from ..errors import UserError
from .detect import match_shipped
from .gpu import Gpu
from .nvml import NvmlSampler


def _chase_ring(n_elems: int, stride_elems: int, rng) -> np.ndarray:
    """A random cyclic permutation over n/stride slots spaced `stride` apart (one line each)."""
    slots = np.arange(0, n_elems, stride_elems, dtype=np.uint32)
    order = rng.permutation(len(slots))
    nxt = np.zeros(n_elems, dtype=np.uint32)
    ring = slots[order]
    nxt[ring] = np.roll(ring, -1)
    return nxt


FFMA_LOOP_SCALE = 1  # the FFMA-rate loops' iterations, a multiple of 2,000 (run_microbenchmarks)
ROUNDS = 3


def event_timed(gpu, fn, reps: int = 5) -> float:
    """Seconds of one call of fn (a kernel launch): one untimed call, then the median of `reps` calls, each
    between two events (the launch included)."""
    drv = gpu.drv
    s, e = drv.Event(), drv.Event()
    fn()
    gpu.sync()
    ts = []
    for _ in range(reps):
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(e.time_since(s) * 1e-3)
    return float(np.median(ts))


def microbench_module(gpu):
    """calibrate's microbenchmarks (microbench.cu) built for this GPU: (cubin, loaded module)."""
    src = Path(__file__).with_name("microbench.cu").read_text()
    cubin = gpu.compiler.compile(src, options=["-O3"], arch=gpu.arch, no_extern_c=True)
    return cubin, gpu.drv.module_from_buffer(cubin)


def run_microbenchmarks(gpu, log=print) -> dict:
    drv = gpu.drv
    cubin, mod = microbench_module(gpu)

    def fitting(name, counts=(1, 2, 4, 6, 8)):
        """The blocks-per-SM counts (128 threads each) whose blocks all stay resident: a count above
        what registers allow would run in two rounds and be labelled with warps that never coexisted
        (ffma_outer's 80 registers fit 6 blocks, the shared-memory-fed loops' ~100 fit 4)."""
        cap = gpu.blocks_per_sm(cubin, name, 128)
        return [n for n in counts if n <= cap]

    f = {n: mod.get_function(n) for n in ("ffma_independent", "ffma_outer", "ffma_latency", "chase_global", "chase_smem",
                                            "smem_bandwidth", "read_bandwidth", "tile_phase", "l2_sm_port", "ffma_outer_smem",
                                            "ffma_outer_smem_sb", "ffma_outer_16x8",
                                            "ffma_outer_smem_16x8", "tile_loop")}
    out = drv.mem_alloc(64)
    cyc = drv.mem_alloc(8 * 4096)
    sms = gpu.sm_count
    res = {}

    def timed(fn, reps=5):
        return event_timed(gpu, fn, reps)

    try:
        sampler = NvmlSampler()
    except Exception:
        sampler = None

    # FP32 throughput (and the SM clock under that load, from NVML)
    blocks, threads = sms * 8, 256
    iters = 4000
    if sampler:
        sampler.start()
    t = timed(lambda: f["ffma_independent"](out, np.int32(iters), block=(threads, 1, 1), grid=(blocks, 1)))
    clock = sampler.stop() if sampler else {}
    res["fp32_GFLOPS"] = blocks * threads * iters * 16 * 8 * 2 / t * 1e-9
    res["sm_clock_MHz"] = clock.get("sm_clock_MHz_median")
    # FFMA_LOOP_SCALE: each event-timed 2,000-iteration launch also holds about 9 us that are not the loop (0
    # iterations timed the same way on an H200), so the rates read 10 / 6 / 3 / 2 % below the loop's own at 4 / 8
    # / 16 / 24 warps per SM; 16 x the iterations reads the loop's own. The model's figures were measured at 1
    # (docs/measurement.md, "The FFMA-rate launches' fixed time")
    iters_o = 2000 * FFMA_LOOP_SCALE
    t = timed(lambda: f["ffma_outer"](out, np.int32(iters_o), block=(threads, 1, 1), grid=(sms * 2, 1)))
    res["ffma_outer_GFLOPS"] = sms * 2 * threads * iters_o * 64 * 2 / t * 1e-9
    # The FFMA rates of the GEMM inner loop by resident warps (128-thread blocks, n per SM, only counts
    # whose blocks all fit): the outer product from registers (8x8 and 16x8), fed from shared memory
    # (8x8 by four LDS.128 per k step, 16x8 by six), and the 8x8 one with its B reads spread 1, 2, 4 x
    # 16 B apart (12, 20, 36 wavefronts per warp per k step against the same 64 FFMAs: the shared pipe
    # from half busy to the bottleneck). Back-to-back calibrations differed by up to 18 % on single
    # points, so every table is measured in ROUNDS interleaved rounds and the median kept.
    def rate(name, n, iters, flop_per_iter, *extra):
        tb = timed(lambda: f[name](out, np.int32(iters), *extra, block=(128, 1, 1), grid=(sms * n, 1)))
        return sms * n * 128 * iters * flop_per_iter / tb * 1e-9

    tables = {"ffma_outer_GFLOPS_by_warps_per_sm": ("ffma_outer", (1, 2, 4, 6, 8), iters_o, 128),
              "ffma_outer_16x8_GFLOPS_by_warps_per_sm": ("ffma_outer_16x8", (1, 2), iters_o // 2, 256),
              "smem_outer_16x8_GFLOPS_by_warps_per_sm": ("ffma_outer_smem_16x8", (1, 2), iters_o // 16, 8 * 256),
              "smem_outer_GFLOPS_by_warps_per_sm": ("ffma_outer_smem", (1, 2, 4, 6, 8), iters_o // 8, 8 * 128)}
    tables.update({f"spread {sb}": ("ffma_outer_smem_sb", (1, 2, 4, 8), iters_o // 8, 8 * 128, np.int32(sb)) for sb in (1, 2, 4)})
    rounds = [{key: {str(4 * n): rate(name, n, it, fl, *extra) for n in fitting(name, counts)}
               for key, (name, counts, it, fl, *extra) in tables.items()} for _ in range(ROUNDS)]
    med = {key: {w: float(np.median([r[key][w] for r in rounds])) for w in rounds[0][key]} for key in tables}
    by_spread = {sb: med.pop(f"spread {sb}") for sb in ("1", "2", "4")}
    res.update(med)
    res["smem_outer_GFLOPS_by_spread"] = by_spread
    by_warps, by_warps_16, by_warps_16s, by_warps_smem = (med[k] for k in list(tables)[:4])
    spread = max((max(r[k][w] for r in rounds) - min(r[k][w] for r in rounds)) / med_w
                 for k, row in {**med, **{f"spread {sb}": v for sb, v in by_spread.items()}}.items() for w, med_w in row.items())
    log(f"  FFMA-rate tables: median of {ROUNDS} rounds (largest spread between rounds {100 * spread:.1f} %)")
    log("  outer product fed from shared memory, B reads spread 1/2/4 x 16 B, by warps/SM: " + "; ".join(
        f"{sb}: " + ", ".join(f"{w}: {v:,.0f}" for w, v in row.items()) for sb, row in by_spread.items()))
    log("  8x8 outer product fed from shared memory, by resident warps/SM: "
        + ", ".join(f"{w}: {v:,.0f}" for w, v in by_warps_smem.items()))
    log("  16x8 outer product by resident warps/SM: " + ", ".join(f"{w}: {v:,.0f}" for w, v in by_warps_16.items())
        + "; fed from shared memory: " + ", ".join(f"{w}: {v:,.0f}" for w, v in by_warps_16s.items()))
    log("  8x8 outer product by resident warps/SM: " + ", ".join(f"{w}: {v:,.0f}" for w, v in by_warps.items()))
    log(f"  FP32: independent chains {res['fp32_GFLOPS']:,.0f} GFLOPS, 8x8 outer product {res['ffma_outer_GFLOPS']:,.0f} GFLOPS, "
        f"SM clock {res['sm_clock_MHz']} MHz")

    # dependent FFMA latency
    n = 1000
    f["ffma_latency"](out, cyc, np.int32(n), block=(1, 1, 1), grid=(1, 1))
    gpu.sync()
    c = np.zeros(1, np.int64)
    drv.memcpy_dtoh(c, cyc)
    res["fma_latency_cycles"] = float(c[0]) / (n * 64)

    # latencies by pointer chase: L2 (8 MB ring: misses a 256 KB L1, fits L2), DRAM (1 GiB ring); the L2 ring
    # walked a second time: a line the L2 has served before (what a GEMM's tile loads wait: model.terms.tile_l2_latency)
    rng = np.random.default_rng(0)
    for keys, nbytes in ((("l2_latency_cycles", "l2_reread_latency_cycles"), 8 << 20), (("dram_latency_cycles",), 1 << 30)):
        ring = _chase_ring(nbytes // 4, 32, rng)  # 128-byte lines
        d = drv.to_device(ring)
        steps = 20000
        for key in keys:
            f["chase_global"](d, np.int32(steps), out, cyc, block=(1, 1, 1), grid=(1, 1))
            gpu.sync()
            drv.memcpy_dtoh(c, cyc)
            res[key] = float(c[0]) / steps
        d.free()
    ring = _chase_ring(1024, 1, rng)
    d = drv.to_device(ring)
    f["chase_smem"](d, np.int32(20000), out, cyc, block=(32, 1, 1), grid=(1, 1))
    gpu.sync()
    drv.memcpy_dtoh(c, cyc)
    res["smem_latency_cycles"] = float(c[0]) / 20000
    log(f"  latency (cycles): FFMA {res['fma_latency_cycles']:.1f}, shared {res['smem_latency_cycles']:.1f}, "
        f"L2 {res['l2_latency_cycles']:.0f} (read again {res['l2_reread_latency_cycles']:.0f}), DRAM {res['dram_latency_cycles']:.0f}")

    # shared-memory bandwidth, bytes/clock/SM (clock64 per block, 1 block of 1024 threads per SM)
    iters_s = 2000
    f["smem_bandwidth"](out, cyc, np.int32(iters_s), block=(1024, 1, 1), grid=(sms, 1))
    gpu.sync()
    cc = np.zeros(sms, np.int64)
    drv.memcpy_dtoh(cc, cyc)
    res["smem_bandwidth_bytes_per_clock_per_sm"] = 1024 * iters_s * 8 * 16 / float(np.median(cc))

    # load phase of a tile (LDG -> STS -> barrier) with one 256-thread block on every SM at once
    region = 32 << 20
    buf = drv.mem_alloc(region)
    drv.memset_d32(buf, 0, region // 4)
    phase = {}
    for f4 in (1, 2, 4, 8):
        f["tile_phase"](buf, np.int32(f4), np.int32(20), np.uint32(region // 16 - 1), cyc, out, block=(256, 1, 1), grid=(sms, 1))  # warm
        f["tile_phase"](buf, np.int32(f4), np.int32(400), np.uint32(region // 16 - 1), cyc, out, block=(256, 1, 1), grid=(sms, 1))
        gpu.sync()
        cc = np.zeros(sms, np.int64)
        drv.memcpy_dtoh(cc, cyc)
        phase[str(256 * 16 * f4)] = float(np.median(cc))
    # L2 -> SM bandwidth of one SM alone (its port): one 1024-thread block, L2-resident 8 MB region
    iters_p, mask = 2000, (8 << 20) // 16 - 1
    f["l2_sm_port"](buf, np.uint32(mask), np.int32(50), cyc, out, block=(1024, 1, 1), grid=(1, 1))  # warm
    ports = []
    for _ in range(5):
        f["l2_sm_port"](buf, np.uint32(mask), np.int32(iters_p), cyc, out, block=(1024, 1, 1), grid=(1, 1))
        gpu.sync()
        cc = np.zeros(1, np.int64)
        drv.memcpy_dtoh(cc, cyc)
        ports.append(1024 * 128 * iters_p / float(cc[0]))
    res["l2_sm_port_bytes_per_clock"] = float(np.median(ports))
    log(f"  L2 -> one SM alone: {res['l2_sm_port_bytes_per_clock']:.1f} B/clk (median of 5, {min(ports):.1f}-{max(ports):.1f})")
    # a single-buffered k-tile loop (8 KB tile per 4-warp block, 8 or 32 k steps of the shared-memory-fed
    # outer product) with 1-4 blocks per SM, with and without the global loads: how much of a lone
    # block's exposed load phase b blocks still expose (1 in lockstep, less as they drift apart)
    full, bare = {}, {}
    fits = gpu.blocks_per_sm(cubin, "tile_loop", 128)
    for ks in (8, 32):
        full[str(ks)], bare[str(ks)] = {}, {}
        for b in range(1, min(4, fits) + 1):
            for loads, table in ((1, full), (0, bare)):
                args = (buf, np.uint32(region // 16 - 1), np.int32(4), np.int32(ks))
                f["tile_loop"](*args, np.int32(10), np.int32(loads), cyc, out, block=(128, 1, 1), grid=(sms * b, 1))  # warm
                f["tile_loop"](*args, np.int32(200), np.int32(loads), cyc, out, block=(128, 1, 1), grid=(sms * b, 1))
                gpu.sync()
                cc = np.zeros(sms * b, np.int64)
                drv.memcpy_dtoh(cc, cyc)
                table[str(ks)][str(b)] = float(np.median(cc))
    res["tile_loop_cycles_by_ksteps_by_blocks"] = full
    res["tile_loop_no_load_cycles_by_ksteps_by_blocks"] = bare
    for ks in full:
        lone = full[ks]["1"] - bare[ks]["1"]
        log(f"  single-buffered tile loop, {ks} k steps: exposed load phase by blocks/SM (cycles, share of one block's): "
            + ", ".join(f"{b}: {full[ks][b] - bare[ks][b]:.0f} ({(full[ks][b] - bare[ks][b]) / lone:.2f})" for b in full[ks])
            + "; compute " + ", ".join(f"{b}: {bare[ks][b]:.0f}" for b in bare[ks]))
    buf.free()
    res["tile_load_cycles_by_bytes"] = phase
    log("  tile load phase (cycles, one block per SM on all SMs): " + ", ".join(f"{b} B: {v:.0f}" for b, v in phase.items()))

    # instruction fetch: issue rate of a loop of n independent FFMAs (16 B of code each) by the loop's
    # code size, one block of 1-32 warps per SM on every SM; flat while the loop fits the SM's
    # instruction caches (median over SMs of each block's own clock64 count)
    ic_src = Path(__file__).with_name("icache.cu").read_text()
    sizes = (512, 1024, 2048, 4096, 6144, 8192, 10240, 12288, 16384)
    with ThreadPoolExecutor(max_workers=8) as pool:
        cubins = list(pool.map(lambda n: gpu.compiler.compile(ic_src, options=["-O3", f"-DBODY={n}"], arch=gpu.arch,
                                                              no_extern_c=True), sizes))
    by_warps = {}
    for warps in (1, 2, 4, 8, 16, 32):
        rates = {}
        for n, cub in zip(sizes, cubins):
            fn = drv.module_from_buffer(cub).get_function("icache_loop")
            iters = max(8, (1 << 19) // n)
            fn(out, cyc, np.int32(2), block=(32 * warps, 1, 1), grid=(sms, 1))  # warm (loads the module)
            fn(out, cyc, np.int32(iters), block=(32 * warps, 1, 1), grid=(sms, 1))
            gpu.sync()
            cc = np.zeros(sms, np.int64)
            drv.memcpy_dtoh(cc, cyc)
            rates[str(16 * n)] = warps * n / (float(np.median(cc)) / iters)  # warp instructions per clock per SM
        by_warps[str(warps)] = rates
        log(f"  issue rate by loop code size, {warps} warps/SM (warp instr/clk/SM): "
            + ", ".join(f"{int(b) // 1024} KB: {v:.2f}" for b, v in rates.items()))
    res["issue_rate_by_loop_bytes_by_warps"] = by_warps

    # DRAM bandwidth: 4 GiB read once; L2: 16 MiB read 200 times
    for key, nbytes, reps in (("dram_bandwidth_GBps", 4 << 30, 1), ("l2_bandwidth_GBps", 16 << 20, 200)):
        buf = drv.mem_alloc(nbytes)
        drv.memset_d32(buf, 0, nbytes // 4)
        n4 = np.uint64(nbytes // 16)
        t = timed(lambda: f["read_bandwidth"](buf, n4, np.int32(reps), out, block=(512, 1, 1), grid=(sms * 4, 1)))
        res[key] = nbytes * reps / t * 1e-9
        buf.free()
    log(f"  bandwidth: shared {res['smem_bandwidth_bytes_per_clock_per_sm']:.1f} B/clk/SM, L2 {res['l2_bandwidth_GBps']:,.0f} GB/s, "
        f"DRAM {res['dram_bandwidth_GBps']:,.0f} GB/s")
    return res


def _rounded(v):
    """Calibrated figures to 6 significant digits (tables of them alike)."""
    return {str(k): _rounded(x) for k, x in v.items()} if isinstance(v, dict) else float(f"{float(v):.6g}")


def measured_toml(device_name: str, gpu_name: str, res: dict) -> str:
    """The shipped device file with a [measured] section appended (written by a TOML writer)."""
    base = shipped_devices()[device_name].read_text().rstrip() + "\n"
    date = datetime.now(timezone.utc).date().isoformat()
    table = dict(gpu=gpu_name, date=date, **{k: _rounded(v) for k, v in res.items() if v is not None and v != {}})
    return (base + "\n# Figures measured by perfmodel calibrate (microbenchmarks in perfmodel/measure/microbench.cu).\n"
            + tomli_w.dumps({"measured": table}))


def calibrate(out: Path | None = None) -> int:
    """Microbenchmark the local GPU into a calibration file (default results/calibration-DATE-DEVICE.toml)."""
    gpu = Gpu()
    name = match_shipped(gpu.name, gpu.cc)
    if not name:
        raise UserError(f"{gpu.name} has no shipped device file; run `perfmodel devices detect` first")
    date = datetime.now(timezone.utc)
    out = out or Path("results") / f"calibration-{date:%Y%m%d-%H%M%S}-{name}.toml"
    if out.exists():
        raise UserError(f"{out} exists; calibration files are never overwritten")
    print(f"calibrating {gpu.name} ({name}) ...")
    t0 = time.time()
    res = run_microbenchmarks(gpu)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(measured_toml(name, gpu.name, res))
    dev = load_device(str(out))
    print(f"wrote {out} in {time.time() - t0:.0f} s")
    ds = load_device(name)
    rows = [("sm_clock_MHz", ds.compute.sm_clock_boost_MHz), ("fp32_GFLOPS", ds.peak_fp32_GFLOPS()),
            ("ffma_outer_GFLOPS", ds.peak_fp32_GFLOPS()), ("dram_bandwidth_GBps", ds.memory.dram_bandwidth_GBps),
            ("l2_bandwidth_GBps", ds.memory.l2_bandwidth_GBps),
            ("smem_bandwidth_bytes_per_clock_per_sm", ds.memory.smem_bandwidth_bytes_per_clock_per_sm),
            ("fma_latency_cycles", ds.latency.fma_latency_cycles), ("smem_latency_cycles", ds.latency.smem_latency_cycles),
            ("l2_latency_cycles", ds.latency.l2_latency_cycles),
            ("l2_reread_latency_cycles", ds.latency.l2_reread_latency_cycles or ds.latency.l2_latency_cycles),
            ("dram_latency_cycles", ds.latency.dram_latency_cycles)]
    print(f"{'figure':40} {'datasheet':>12} {'measured':>12} {'ratio':>7}")
    for k, v in rows:
        m = getattr(dev.measured, k)
        if m is not None:
            print(f"{k:40} {v:12,.1f} {m:12,.1f} {m / v:7.3f}")
    return 0
