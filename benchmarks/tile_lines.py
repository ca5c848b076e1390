"""What a lone block's load phase exposes, by how its tile is loaded (GPU machine).

A single-buffered k-tile loop of 256-thread blocks (benchmarks/tile/lines.cu), 8 KB per tile, loaded as
float4 or scalar words from one contiguous 8 KB or from tiled_2d's 128 x 8 A and 8 x 128 B tiles, walked
along K as tiled_2d walks them (rows 4096 floats apart: 160 cache lines instead of 64, an A line serving
four k-tiles); and with float4 loads a 256 x 8 A tile (12 KB, 288 lines) and a bk = 32 tile whose rows
are whole lines (32 KB, 256 lines), each beside a contiguous tile of its bytes, timed per block with clock64 with and without the global loads; the difference is the
exposed load phase. 1 and 2 blocks per SM, 8 and 32 k steps, from a 32 MB region (L2-resident on an
H100) and a 1 GB one (the blocks' A rows and the contiguous tiles stream from DRAM), median over the
blocks of 5 rounds.

The second table (`sharing`): one block per SM, from the L2, with every block addressing block
blockIdx.x % groups's data (1: every SM asks for the same lines at once; 32: as a 4096-wide problem's
block row shares its A panel) and rows 4096 or 512 floats apart (the strided tiles).

    python3 benchmarks/tile_lines.py OUT.json
"""
import json
import sys
from pathlib import Path

import numpy as np

SRC = Path(__file__).resolve().parent / "tile" / "lines.cu"
PATTERNS = {0: "float4, contiguous (64 lines)", 1: "scalar, contiguous (64 lines)",
            2: "scalar, tiled_2d's A and B (160 lines)", 3: "float4, tiled_2d's A and B (160 lines)",
            4: "float4, 256 x 8 A and 8 x 128 B (12 KB, 288 lines)", 5: "float4, contiguous 12 KB (96 lines)",
            6: "float4, 128 x 32 A and 32 x 128 B (32 KB, 256 whole lines)", 7: "float4, contiguous 32 KB (256 lines)"}
REGIONS = {"l2": 32 << 20, "dram": 1 << 30}
# the sharing table: every SM loads at once, its block addressing the tile of block blockIdx.x % groups
SHARING_PATTERNS = (0, 3, 6, 7)
SHARING_GROUPS = (1, 4, 32, 1 << 30)
SHARING_PITCHES = (4096, 512)
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
                            vals.append(_round(drv, gpu, f[p], (buf, mask, np.int32(ks)), loads, 1 << 30, 4096, cyc, out_buf, sms * b))
                        res[f"{region_name}|{p}|{b}|{ks}|{loads}"] = dict(median=float(np.median(vals)), min=min(vals), max=max(vals))
        if region_name == "l2":
            shared = {}
            for p in SHARING_PATTERNS:
                for groups in SHARING_GROUPS:
                    for pitch in SHARING_PITCHES:
                        if pitch != 4096 and p in (0, 5, 7):
                            continue
                        for loads in (0, 1):
                            vals = [_round(drv, gpu, f[p], (buf, mask, np.int32(8)), loads, groups, pitch, cyc, out_buf, sms)
                                    for _ in range(ROUNDS)]
                            shared[f"{p}|{groups}|{pitch}|{loads}"] = dict(median=float(np.median(vals)), min=min(vals), max=max(vals))
        buf.free()
    out.write_text(json.dumps(dict(gpu=gpu.name, sm_count=sms, cycles_per_tile=res, sharing=shared), indent=1))
    print(table(res))
    print(sharing_table(shared))
    return 0


def _round(drv, gpu, fn, args, loads, groups, pitch, cyc, out_buf, blocks) -> float:
    """One round: 10 then 200 iterations (the second timed), median cycles per tile over the blocks."""
    for iters in (10, 200):
        fn(*args, np.int32(iters), np.int32(loads), np.uint32(groups), np.uint32(pitch), cyc, out_buf,
           block=(256, 1, 1), grid=(blocks, 1))
    gpu.sync()
    cc = np.zeros(blocks, np.int64)
    drv.memcpy_dtoh(cc, cyc)
    return float(np.median(cc))


def _exposed(full: dict, bare: dict) -> str:
    """Cycles the loads add: the medians' difference, and its range over the rounds."""
    return (f"{full['median'] - bare['median']:.0f} ({full['min'] - bare['max']:.0f}-"
            f"{full['max'] - bare['min']:.0f})")


def sharing_table(res: dict) -> str:
    rows = ["| tile load (one block per SM, 8 k steps, L2-resident) | distinct tiles at once | row pitch (floats) | exposed (range over rounds) |",
            "|---|---|---|---|"]
    for key in (k for k in res if k.endswith("|1")):
        p, groups, pitch, _ = key.split("|")
        rows.append(f"| {PATTERNS[int(p)]} | {'every block its own' if int(groups) >= 1 << 30 else groups} | {pitch} | "
                    f"{_exposed(res[key], res[key[:-1] + '0'])} |")
    return "\n".join(rows)


def table(res: dict) -> str:
    rows = ["| region | tile load | blocks/SM | k steps | without loads | with loads | exposed (range over rounds) |",
            "|---|---|---|---|---|---|---|"]
    for key in (k for k in res if k.endswith("|1")):
        region, p, b, ks, _ = key.split("|")
        full, bare = res[key], res[key[:-1] + "0"]
        rows.append(f"| {region} | {PATTERNS[int(p)]} | {b} | {ks} | {bare['median']:.0f} | {full['median']:.0f} | "
                    f"{_exposed(full, bare)} |")
    return "\n".join(rows)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        data = json.loads(Path(sys.argv[2]).read_text())
        print(table(data["cycles_per_tile"]))
        if "sharing" in data:
            print(sharing_table(data["sharing"]))
        sys.exit(0)
    sys.exit(main(Path(sys.argv[1])))
