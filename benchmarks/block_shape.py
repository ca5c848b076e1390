"""One block of 8 warps against two blocks of 4 warps per SM, same work per SM (GPU; one-off check behind
the top-1 misses). calibrate's single-buffered tile loop and its double-buffered twin (next tile's
global loads before the k steps, stored after them, one barrier per tile), 16 KB of tile and the same
FFMAs per SM per iteration either way, with and without the global loads; prints cycles per iteration.
    python3 benchmarks/block_shape.py"""
from pathlib import Path

import numpy as np

from perfmodel.measure.gpu import Gpu

gpu = Gpu()
drv = gpu.drv
src = (Path(__file__).resolve().parent.parent / "perfmodel" / "measure" / "microbench.cu").read_text()
cubin = gpu.compiler.compile(src, options=["-O3"], arch=gpu.arch, no_extern_c=True)
mod = drv.module_from_buffer(cubin)
sms = gpu.sm_count
out, cyc = drv.mem_alloc(64), drv.mem_alloc(8 * 4096)
region = 32 << 20
buf = drv.mem_alloc(region)
drv.memset_d32(buf, 0, region // 4)
for name in ("tile_loop", "tile_loop_db"):
    fn = mod.get_function(name)
    for ks in (8, 16, 32):
        row = []
        for blocks, threads in ((1, 256), (2, 128)):
            fits = gpu.blocks_per_sm(cubin, name, threads)
            if fits < blocks:
                row.append(f"{blocks}x{threads // 32} warps: does not fit")
                continue
            t = {}
            for loads in (1, 0):
                args = (buf, np.uint32(region // 16 - 1), np.int32(4), np.int32(ks))
                fn(*args, np.int32(10), np.int32(loads), cyc, out, block=(threads, 1, 1), grid=(sms * blocks, 1))
                fn(*args, np.int32(300), np.int32(loads), cyc, out, block=(threads, 1, 1), grid=(sms * blocks, 1))
                gpu.sync()
                cc = np.zeros(sms * blocks, np.int64)
                drv.memcpy_dtoh(cc, cyc)
                t[loads] = float(np.median(cc))
            row.append(f"{blocks}x{threads // 32} warps: {t[1]:.0f} (no loads {t[0]:.0f}, exposed {t[1] - t[0]:.0f})")
        print(f"{name:13s} {ks:2d} k steps: " + "; ".join(row), flush=True)
