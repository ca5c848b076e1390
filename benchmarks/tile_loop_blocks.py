"""Calibrate's k-tile loops (perfmodel/measure/microbench.cu: tile_loop, single-buffered, and tile_loop_db, one
barrier per tile with the next tile's loads in flight over the k steps) at every block count an SM holds, not
only the 1-4 calibrate measures, at 4, 8 and 32 k steps per tile: cycles per tile with and without the global
loads, with 4-warp blocks and with one-warp blocks, the exposed load phase (their difference) and its share of one block's. GPU only.

    python3 benchmarks/tile_loop_blocks.py OUT.json

Each block: 4 warps (an 8 KB tile per iteration) or one warp (2 KB: up to the 7-9 blocks an SM holds, as the
one-warp blocks of the small-tile configurations the model predicts fast), from an L2-resident 32 MB region (L1 bypassed), as calibrate's.
Prints a table per loop and k steps; writes every measurement to OUT.json."""
import json
import sys
from pathlib import Path

import numpy as np

from perfmodel.measure.calibrate import microbench_module
from perfmodel.measure.gpu import Gpu

ROUNDS = 3


def main(out_path: str) -> int:
    gpu = Gpu()
    drv = gpu.drv
    cubin, mod = microbench_module(gpu)
    sms = gpu.sm_count
    region = 32 << 20
    buf = drv.mem_alloc(region)
    drv.memset_d32(buf, 0, region // 4)
    out = drv.mem_alloc(4 * 64)
    res = {"gpu": gpu.name, "sm_count": sms, "sm_clock_MHz_note": "cycles are SM clocks (clock64)", "loops": {}}
    for name, threads in (("tile_loop", 128), ("tile_loop_db", 128), ("tile_loop", 32), ("tile_loop_db", 32)):
        fn = mod.get_function(name)
        fits = gpu.blocks_per_sm(cubin, name, threads)
        key = f"{name}/{threads}"
        res["loops"][key] = {"threads": threads, "blocks_per_sm_max": fits, "by_ksteps": {}}
        for ks in (4, 8, 32):
            rows = {}
            for b in range(1, fits + 1):
                cyc = drv.mem_alloc(8 * sms * b)
                vals = {1: [], 0: []}
                for _ in range(ROUNDS):
                    for loads in (1, 0):
                        args = (buf, np.uint32(region // 16 - 1), np.int32(4), np.int32(ks))
                        fn(*args, np.int32(10), np.int32(loads), cyc, out, block=(threads, 1, 1), grid=(sms * b, 1))  # warm
                        fn(*args, np.int32(200), np.int32(loads), cyc, out, block=(threads, 1, 1), grid=(sms * b, 1))
                        gpu.sync()
                        cc = np.zeros(sms * b, np.int64)
                        drv.memcpy_dtoh(cc, cyc)
                        vals[loads].append(float(np.median(cc)))
                cyc.free()
                full, bare = float(np.median(vals[1])), float(np.median(vals[0]))
                rows[str(b)] = dict(full=full, bare=bare, exposed=full - bare, full_rounds=vals[1], bare_rounds=vals[0])
            lone = rows["1"]["exposed"]
            for r in rows.values():
                r["share_of_one_block"] = r["exposed"] / lone if lone > 0 else None
            res["loops"][key]["by_ksteps"][str(ks)] = rows
            print(f"{name}, {threads} threads per block, {ks} k steps per tile: blocks/SM: cycles per tile with loads / without / exposed (share of one block's)")
            for b, r in rows.items():
                print(f"  {b:>2}: {r['full']:8.0f} {r['bare']:8.0f} {r['exposed']:7.0f} ({r['share_of_one_block']:.2f})", flush=True)
    buf.free()
    Path(out_path).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    raise SystemExit(main(sys.argv[1]))
