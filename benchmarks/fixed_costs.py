"""What a launch costs before any tile work, and how one block's k-tile time depends on how many blocks
share the GPU (GPU only; run from the repository root). Writes JSON to $OUT (default /tmp/out) and
prints a table last.

1. launch: an empty kernel (256 threads per block) timed exactly as validate times an SGEMM (L2 flushed
   before each repetition, one event pair around the launch), at 1, SMs, 8 x SMs and 64 x SMs blocks:
   the fixed cost of the timing window, and what dispatching blocks adds.
2. store: a kernel whose blocks each write one BM x BN tile of C (256 threads, float stores, the
   ladder's epilogue pattern) at 1 and SMs blocks: what writing C costs after the last FFMA.
3. blocks: the ladder's default double_buffer, tiled_2d_float4 and warp_tiled at M = BM, N = BN x nb,
   K = 8192 for nb = 1 .. 4 x SMs: milliseconds per k-tile of one block, against the blocks in the grid.
    PYTHONPATH=. python3 benchmarks/fixed_costs.py [--quick]"""
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

from perfmodel import KernelConfig
from perfmodel.measure.gpu import Gpu, Problem
from perfmodel.measure.timing import bench_us

OUT = Path(os.environ.get("OUT", "/tmp/out"))
OUT.mkdir(parents=True, exist_ok=True)
quick = "--quick" in sys.argv
gpu = Gpu()
sms = gpu.sm_count
SRC = r"""
extern "C" __global__ void empty(float* c) {}
extern "C" __global__ void store_tile(float* c, int n, int per_thread) {
    // each thread writes per_thread floats, a warp's stores coalesced (128 B), as the ladder's epilogue
    float* base = c + (size_t)blockIdx.x * blockDim.x * per_thread;
    for (int i = 0; i < per_thread; ++i) base[i * blockDim.x + threadIdx.x] = (float)i;
}
"""
mod = gpu.compiler.SourceModule(SRC, no_extern_c=True, options=["-O3"])
empty, store = mod.get_function("empty"), mod.get_function("store_tile")
buf = gpu.drv.mem_alloc(64 * 1024 * 1024 * 4)


def bench(fn):
    return bench_us(fn, gpu.flush, gpu.event, gpu.sync, 10.0, 60.0)


res = dict(device=gpu.name, sm_count=sms, launch={}, store={}, blocks=[])
for nb in (1, sms, 8 * sms, 64 * sms):
    res["launch"][nb] = bench(lambda nb=nb: empty(buf, block=(256, 1, 1), grid=(nb, 1, 1)))
for per_thread in (16, 64):  # 256 threads x 16 floats = a 64x64 tile; x 64 = a 128x128 tile
    for nb in (1, sms):
        res["store"][f"{per_thread}x{nb}"] = bench(lambda nb=nb, p=per_thread: store(buf, np.int32(0), np.int32(p),
                                                                                   block=(256, 1, 1), grid=(nb, 1, 1)))
K = 2048 if quick else 8192
counts = sorted({1, 4, 16, 33, 66, 99, sms, sms + 12, 2 * sms, 4 * sms})
for kernel in ("double_buffer", "tiled_2d_float4", "warp_tiled"):
    cfg = KernelConfig.make(kernel)
    for nb in counts:
        M, N = cfg.bm, cfg.bn * nb
        prob = Problem(gpu, M, N, K)
        run, ok, _ = prob.launch_verified(cfg)
        t = bench(run)
        per_sm = math.ceil(nb / sms)
        res["blocks"].append(dict(kernel=kernel, config=cfg.label(), blocks=nb, M=M, N=N, K=K, verified=bool(ok),
                                  us_per_ktile=t["median_us"] / (K / cfg.bk) / per_sm, **t))
        print(f"  {kernel} {nb} blocks: {t['median_us']:.1f} us", file=sys.stderr, flush=True)
        del prob
(OUT / "fixed_costs.json").write_text(json.dumps(res, indent=1))
print(f"{res['device']}, {sms} SMs; median us (q10-q90)")
for nb, t in res["launch"].items():
    print(f"launch empty kernel, {nb:>6} blocks: {t['median_us']:7.2f} ({t['q10_us']:.2f}-{t['q90_us']:.2f})")
for k, t in res["store"].items():
    print(f"store tile {k:>10}: {t['median_us']:7.2f} ({t['q10_us']:.2f}-{t['q90_us']:.2f})")
for r in res["blocks"]:
    print(f"{r['kernel']:16s} {r['blocks']:4d} blocks  K={K}: {r['median_us']:9.1f} us, {r['us_per_ktile'] * 1e3:7.1f} ns per k-tile "
          f"per block-slot  {'ok' if r['verified'] else 'NOT VERIFIED'}")
