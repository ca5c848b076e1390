"""What a lone block's load phase exposes, by how its tile is loaded (GPU machine).

A single-buffered k-tile loop of 256-thread blocks (benchmarks/tile/lines.cu), 8 KB per tile, loaded as
float4 or scalar words from one contiguous 8 KB or from tiled_2d's 128 x 8 A and 8 x 128 B tiles, walked
along K as tiled_2d walks them (rows 4096 floats apart: 160 cache lines instead of 64, an A line serving
four k-tiles), timed per block with clock64 with and without the global loads; the difference is the
exposed load phase. 1 and 2 blocks per SM, 8 and 32 k steps, from a 32 MB region (L2-resident on an
H100) and a 1 GB one (the blocks' A rows and the contiguous tiles stream from DRAM), median over the
blocks of 5 rounds.

    python3 benchmarks/tile_lines.py OUT.json
"""
import json
import sys
from pathlib import Path

import numpy as np

SRC = Path(__file__).resolve().parent / "tile" / "lines.cu"
PATTERNS = {0: "float4, contiguous (64 lines)", 1: "scalar, contiguous (64 lines)",
            2: "scalar, tiled_2d's A and B (160 lines)", 3: "float4, tiled_2d's A and B (160 lines)"}
REGIONS = {"l2": 32 << 20, "dram": 1 << 30}
ROUNDS = 5


def main(out: Path) -> int:
    from perfmodel.measure.gpu import Gpu

    gpu = Gpu()
    drv = gpu.drv
    cubin = gpu.compiler.compile(SRC.read_text(), options=["-O3"], arch=gpu.arch, no_extern_c=True)
    mod = drv.module_from_buffer(cubin)
    f = {p: mod.get_function(f"tile_lines_{p}") for p in PATTERNS}
    sms = gpu.sm_count
    res = {}
    for region_name, region in REGIONS.items():
        buf = drv.mem_alloc(region)
        drv.memset_d32(buf, 0, region // 4)
        mask = np.uint32(region // 4 - 1)
        cyc = drv.mem_alloc(8 * sms * 2)
        out_buf = drv.mem_alloc(4)
        for p in PATTERNS:
            for b in (1, 2):
                if b > gpu.blocks_per_sm(cubin, f"tile_lines_{p}", 256):
                    continue
                for ks in (8, 32):
                    for loads in (0, 1):
                        vals = []
                        for _ in range(ROUNDS):
                            args = (buf, mask, np.int32(ks))
                            f[p](*args, np.int32(10), np.int32(loads), cyc, out_buf, block=(256, 1, 1), grid=(sms * b, 1))
                            f[p](*args, np.int32(200), np.int32(loads), cyc, out_buf, block=(256, 1, 1), grid=(sms * b, 1))
                            gpu.sync()
                            cc = np.zeros(sms * b, np.int64)
                            drv.memcpy_dtoh(cc, cyc)
                            vals.append(float(np.median(cc)))
                        res[f"{region_name}|{p}|{b}|{ks}|{loads}"] = dict(median=float(np.median(vals)), min=min(vals), max=max(vals))
        buf.free()
    out.write_text(json.dumps(dict(gpu=gpu.name, sm_count=sms, cycles_per_tile=res), indent=1))
    print(table(res))
    return 0


def table(res: dict) -> str:
    rows = ["| region | tile load | blocks/SM | k steps | without loads | with loads | exposed (range over rounds) |",
            "|---|---|---|---|---|---|---|"]
    for key in res:
        region, p, b, ks, loads = key.split("|")
        if loads != "1":
            continue
        full, bare = res[key], res[f"{region}|{p}|{b}|{ks}|0"]
        rows.append(f"| {region} | {PATTERNS[int(p)]} | {b} | {ks} | {bare['median']:.0f} | {full['median']:.0f} | "
                    f"{full['median'] - bare['median']:.0f} ({full['min'] - bare['max']:.0f}-{full['max'] - bare['min']:.0f}) |")
    return "\n".join(rows)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print(table(json.loads(Path(sys.argv[2]).read_text())["cycles_per_tile"]))
        sys.exit(0)
    sys.exit(main(Path(sys.argv[1])))
