"""Does a DRAM-resident tile burst add up over resident blocks? (GPU; one-off check behind the model's
load phase.) Runs calibrate's single-buffered tile loop (8 KB tile per 4-warp block, 8 k steps) with
1-4 blocks per SM on an L2-resident region (32 MB) and on a DRAM-resident one (2 GB, every address
fresh), with and without the global loads, and prints the exposed load phase (time - time without
loads) per block count. The model's old load phase grew by b x tile / (SM's share of DRAM bandwidth)
for DRAM traffic.
    python3 benchmarks/tile_loop_dram.py"""
from pathlib import Path

import numpy as np

from perfmodel.measure.gpu import Gpu

gpu = Gpu()
drv = gpu.drv
src = (Path(__file__).resolve().parent.parent / "perfmodel" / "measure" / "microbench.cu").read_text()
cubin = gpu.compiler.compile(src, options=["-O3"], arch=gpu.arch, no_extern_c=True)
fn = drv.module_from_buffer(cubin).get_function("tile_loop")
sms = gpu.sm_count
out, cyc = drv.mem_alloc(64), drv.mem_alloc(8 * 4096)
for label, region in (("L2-resident 32 MB", 32 << 20), ("DRAM-resident 2 GB", 2 << 30)):
    buf = drv.mem_alloc(region)
    drv.memset_d32(buf, 0, region // 4)
    row = []
    for ks in (8, 32):
        t = {}
        for b in (1, 2, 3, 4):
            for loads in (1, 0):
                args = (buf, np.uint32(region // 16 - 1), np.int32(4), np.int32(ks))
                fn(*args, np.int32(10), np.int32(loads), cyc, out, block=(128, 1, 1), grid=(sms * b, 1))
                fn(*args, np.int32(200), np.int32(loads), cyc, out, block=(128, 1, 1), grid=(sms * b, 1))
                gpu.sync()
                cc = np.zeros(sms * b, np.int64)
                drv.memcpy_dtoh(cc, cyc)
                t[(b, loads)] = float(np.median(cc))
        print(f"{label}, {ks} k steps: exposed load phase by blocks/SM: "
              + ", ".join(f"{b}: {t[(b, 1)] - t[(b, 0)]:.0f}" for b in (1, 2, 3, 4))
              + "; compute " + ", ".join(f"{b}: {t[(b, 0)]:.0f}" for b in (1, 2, 3, 4)), flush=True)
    buf.free()
