"""What a wave of blocks pays for writing its C tiles, by the store pattern (GPU only; run from the
repository root). Writes JSON to OUT and prints a table last.

Every block waits a fixed number of SM cycles (a clock64 spin, no memory traffic), then writes one
128 x 128 float tile (64 KiB) of its own with 256 threads in one of the ladder's epilogue patterns:

  f4_rows    float4 stores, a warp's lanes 16 B apart (512 contiguous bytes: double_buffer's and
             warp_tiled's quadrant/fragment stores; every 32-byte sector written whole)
  f1_rows    scalar stores, a warp's lanes 4 B apart (128 contiguous bytes; sectors whole)
  f4_gap32   float4 stores, lanes 32 B apart (tiled_2d_float4 with TN = 8: half of each sector pair per
             store, 2 x the sectors of the data)
  f1_gap32   scalar stores, lanes 32 B apart (tiled_2d with TN = 8: every lane its own sector, 8 x)
  f1_gap16   scalar stores, lanes 16 B apart (the float4 stores of f4_rows as the guarded edge body and the
             scalar inner body write them: four scalars, q = 0..3 in turn; two lanes a sector, 4 x)

Dynamic shared memory holds the grid to 1 (or 2) blocks per SM; `waves` full waves of SMs x blocks
run back to back. The same kernel without the stores gives the spin's time, so

    exposed cycles per wave = (time with stores - time without) x SM clock / waves

is what the stores add to every wave, whatever the kernel computed before them: zero where the
blocks' stores drain while the next wave's blocks already run. Timed as validate times an SGEMM
(L2 flushed before each repetition, median of the repetitions).

    python3 benchmarks/store_burst.py OUT.json [--spin 20000,40000] [--waves 16] [--blocks 1,2]

The same question asked of real kernels (CPU only), from `benchmarks/ncu_choices.py --mnk M,N,K` summaries:
the cycles each warp of a block waits on its global stores (the `lg_throttle` and `drain` stall reasons:
stalled warps per issue-active cycle x issue-active cycles, over the blocks and their warps), beside the
store burst the model charges a block (model.predict.lone_block_store_cycles):

    python3 benchmarks/store_burst.py --ncu results/archive/ncu-stores-*.json.xz"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

SRC = r"""
extern "C" __global__ void burst(float* c, long long spin, int pattern, int store) {
    extern __shared__ float hold[];  // only sizes the block's shared memory (blocks per SM)
    long long t0 = clock64();
    while (clock64() - t0 < spin) { }
    if (!store) return;
    float* tile = c + (size_t)blockIdx.x * 16384;  // 128 x 128 floats per block
    int t = threadIdx.x;
    float v = (float)t + hold[0] * 0.0f;
    if (pattern == 0) {         // f4_rows: 16 float4 per thread, a warp writes 512 contiguous bytes
        float4* p = reinterpret_cast<float4*>(tile);
        #pragma unroll
        for (int i = 0; i < 16; ++i) p[i * 256 + t] = make_float4(v, v, v, v);
    } else if (pattern == 1) {  // f1_rows: 64 floats per thread, a warp writes 128 contiguous bytes
        #pragma unroll
        for (int i = 0; i < 64; ++i) tile[i * 256 + t] = v;
    } else if (pattern == 2) {  // f4_gap32: lane l writes floats 8l..8l+3, then 8l+4..8l+7 (TN = 8)
        float4* p = reinterpret_cast<float4*>(tile);
        #pragma unroll
        for (int i = 0; i < 8; ++i) {
            p[(i * 256 + t) * 2] = make_float4(v, v, v, v);
            p[(i * 256 + t) * 2 + 1] = make_float4(v, v, v, v);
        }
    } else if (pattern == 3) {  // f1_gap32: lane l writes float 8l + j, j = 0..7 (TN = 8)
        #pragma unroll
        for (int i = 0; i < 8; ++i) {
            #pragma unroll
            for (int j = 0; j < 8; ++j) tile[(i * 256 + t) * 8 + j] = v;
        }
    } else {                    // f1_gap16: f4_rows' float4s as four scalars, lane l floats 4l + q, q = 0..3
        #pragma unroll
        for (int i = 0; i < 16; ++i) {
            #pragma unroll
            for (int q = 0; q < 4; ++q) tile[(i * 256 + t) * 4 + q] = v;
        }
    }
}
"""
PATTERNS = {"f4_rows": (0, 1.0), "f1_rows": (1, 1.0), "f4_gap32": (2, 2.0), "f1_gap32": (3, 8.0), "f1_gap16": (4, 4.0)}  # id, sectors per data sector
TILE_BYTES = 128 * 128 * 4


def ints(text: str, least: int = 1) -> list[int]:
    """A comma-separated list of integers of at least `least` (an argparse type)."""
    try:
        vals = [int(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers")
    if not vals or min(vals) < least:
        raise argparse.ArgumentTypeError(f"{text!r}: give integers of at least {least}")
    return vals


def check_run_args(ap: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """The checks a timed run's arguments share with store_chain.py: a new OUT, two or more waves, 1 or 2 blocks an SM."""
    if a.out.exists():
        ap.error(f"{a.out} exists; results are never overwritten")
    if a.waves < 2:
        ap.error(f"--waves {a.waves}: at least 2")
    if any(b not in (1, 2) for b in a.blocks):
        ap.error(f"--blocks {a.blocks}: 1 or 2 blocks per SM")


def ncu_table(files: list[Path]) -> int:
    import lzma
    import math

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from perfmodel.catalogue import KernelConfig
    from perfmodel.devices import load_device
    from perfmodel.model.gstores import SECTOR, c_store_sectors

    own = load_device("h100-sxm").memory.store_bytes_per_clock_per_sm
    print("| M x N x K | configuration | blocks | warps a block | store sectors a block | lg_throttle + drain per issue | "
          "cycles each warp waits on stores, a block | the model's burst (cycles) |")
    print("|---|---|---|---|---|---|---|---|")
    for f in files:
        text = lzma.open(f, "rt").read() if f.suffix == ".xz" else f.read_text()
        d = json.loads(text)
        M, N, K = d["M"], d["N"], d["K"]
        for label, v in d["kernels"].items():
            kernel, _, args = label.partition("(")
            kw = {k: (int(x) if x.isdigit() else x) for k, x in (a.split("=") for a in args.rstrip(")").split(",") if a)}
            cfg = KernelConfig.make(kernel, **kw)
            blocks = math.ceil(M / cfg.bm) * math.ceil(N / cfg.bn)
            warps = cfg.threads // 32
            ratio = sum(v.get(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio", 0.0) for r in ("lg_throttle", "drain"))
            waits = ratio * v["smsp__issue_active.sum"] / blocks / warps
            sectors = v["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] / blocks
            burst = c_store_sectors(cfg) * SECTOR / own  # the sector bytes of its C tile at the SM's store rate
            print(f"| {M} x {N} x {K} | {label} | {blocks} | {warps} | {sectors:,.0f} | {ratio:.2f} | {waits:,.0f} | {burst:,.0f} |")
    return 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--ncu":
        files = [Path(x) for x in sys.argv[2:]]
        missing = [str(f) for f in files if not f.exists()]
        if not files or missing:
            print(f"store_burst.py --ncu: give ncu_choices.py summaries (JSON, or .json.xz); not found: {', '.join(missing) or 'none given'}", file=sys.stderr)
            return 2
        return ncu_table(files)
    ap = argparse.ArgumentParser(description="The exposed cost of a wave's C stores, by store pattern (GPU machine).")
    ap.add_argument("out", type=Path, help="JSON file to write (must not exist)")
    ap.add_argument("--spin", type=ints, default=[20000, 40000], help="SM cycles each block waits before its stores")
    ap.add_argument("--waves", type=int, default=16, help="full waves per launch (default 16)")
    ap.add_argument("--blocks", type=ints, default=[1, 2], help="blocks per SM (1 or 2)")
    a = ap.parse_args()
    check_run_args(ap, a)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from perfmodel.measure.gpu import Gpu
    from perfmodel.measure.timing import do_bench, summarize

    gpu = Gpu()
    drv = gpu.drv
    fn = gpu.compiler.SourceModule(SRC, no_extern_c=True, options=["-O3"]).get_function("burst")
    smem_per_sm = gpu.dev.get_attribute(drv.device_attribute.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
    clock_mhz = gpu.dev.get_attribute(drv.device_attribute.CLOCK_RATE) / 1e3
    sms = gpu.sm_count
    buf = drv.mem_alloc(2 * a.waves * sms * TILE_BYTES)
    rows = []
    for b in a.blocks:
        smem = (smem_per_sm // b) - 2048  # one block's share less the reserved kilobyte (and slack): b per SM
        fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
        grid = a.waves * sms * b
        for spin in a.spin:
            def run(pattern, store):
                return lambda: fn(buf, np.int64(spin), np.int32(pattern), np.int32(store), block=(256, 1, 1), grid=(grid, 1, 1), shared=smem)
            base = summarize(do_bench(run(0, 0), gpu.flush, gpu.event, gpu.sync, 10.0, 60.0)[0])
            for name, (pid, ratio) in PATTERNS.items():
                t = summarize(do_bench(run(pid, 1), gpu.flush, gpu.event, gpu.sync, 10.0, 60.0)[0])
                extra_us = (t["median_ms"] - base["median_ms"]) * 1e3
                cyc = extra_us * clock_mhz / a.waves
                rows.append(dict(blocks_per_sm=b, spin_cycles=spin, pattern=name, sector_ratio=ratio, waves=a.waves,
                                 grid=grid, no_store_us=base["median_ms"] * 1e3, store_us=t["median_ms"] * 1e3,
                                 store_q10_us=t["q10_ms"] * 1e3, store_q90_us=t["q90_ms"] * 1e3,
                                 exposed_cycles_per_wave=cyc,
                                 sector_bytes_per_sm_per_wave=b * TILE_BYTES * ratio))
                print(f"  {b} block(s)/SM spin {spin} {name}: {t['median_ms'] * 1e3:.1f} us", file=sys.stderr, flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(dict(device=gpu.name, sm_count=sms, clock_MHz=clock_mhz, rows=rows), indent=1))
    print(f"{gpu.name}, {sms} SMs, {clock_mhz:.0f} MHz; 64 KiB tile per block, {a.waves} waves")
    print("| blocks/SM | spin cycles | pattern | sectors / data | no stores (us) | with stores (us) | exposed cycles per wave | sector bytes per exposed cycle |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        rate = r["sector_bytes_per_sm_per_wave"] / r["exposed_cycles_per_wave"] if r["exposed_cycles_per_wave"] > 0 else float("inf")
        print(f"| {r['blocks_per_sm']} | {r['spin_cycles']} | {r['pattern']} | {r['sector_ratio']:.0f} | {r['no_store_us']:.1f} | "
              f"{r['store_us']:.1f} | {r['exposed_cycles_per_wave']:.0f} | {rate:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
