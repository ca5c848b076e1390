"""When a block's cp.async copies land while its warps stream shared loads: a microbenchmark of async_pipeline's
two-stage ring with nothing else in it. GPU machine (CuPy, nvidia-ml-py; sm_80 or newer).

One block an SM (on every SM, or on `--blocks` of them; `--per-sm` b puts b on each) repeats `rounds` times what a ring does for one k-tile: every thread issues `copies` 16-byte copies
(cp.async.cg, the interior body's) of the block's next tile (from an L2-resident region of its own, or with
`--cold-mb` the next of a region larger than the L2: from DRAM) and commits them, runs a
compute phase of `ksteps` steps, each step `lds` shared loads of 16 bytes a lane (ld.shared.v4, a warp's 512 bytes
contiguous: four wavefronts) for the next step and `ffma` FFMAs on the previous step's, then waits for the copies and
meets the block's barrier. Each configuration is timed four ways: a two-stage ring (cp.async.wait_group 0: this
round's copies land within one phase), a three-stage ring (wait_group 1 and two buffers: within two phases), the
phase alone (no copies) and the copies alone (no phase), in SM clocks a round; two-stage minus three-stage is what a
two-stage ring exposes of its copies' landing. Prints a table, writes every timing as JSON (never over an existing
file). With `--cold-mb`, a plan in which some configuration's rounds copy no more bytes than the L2 holds is refused
before anything is timed (one line, exit 2): the warm-up run would leave its tiles in the L2.

    python3 benchmarks/copy_landing.py OUT.json [--warps 4,8] [--copies 6,2] [--lds 0,1,2,3,4,8] [--ffma 16]
                                                 [--ksteps 64] [--rounds 1024] [--reps 7] [--cold-mb 0] [--blocks 0]
                                                 [--per-sm 1]

`--copies` gives the copies a thread for each `--warps` entry (6 with 4 warps: a 12 KB tile, as async_pipeline
64 x 32 x 32; 2 with 8 warps: 8 KB, as 64 x 64 x 16).
"""
import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Optional

SRC = r'''
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void copy_landing(const float* __restrict__ src, float* out, int rounds, int copies, int ksteps,
                                        int ring, int tiles) {
    // ring 0: no copies (the phase alone); 2: wait for this round's copies before the barrier (a two-stage ring:
    // one phase to land them); 3: for the previous round's (a three-stage ring: two phases), alternate buffers
    extern __shared__ __align__(16) float sm[];     // [2 x copy destination: copies x threads x 4 floats][4 KB read region]
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nt = blockDim.x;
    const float* rd = sm + 2 * copies * nt * 4;
    // tiles == gridDim.x: each block copies its own tile every round (L2-resident after round one); more: each round
    // a tile of a region larger than the L2, in turn (the copies read DRAM, as a k-tile loop's first touch does)
    float acc[8], v[LDS > 0 ? 4 * LDS : 4];
    #pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = 0.0f;
    #pragma unroll
    for (int i = 0; i < (LDS > 0 ? 4 * LDS : 4); ++i) v[i] = 0.5f;
    for (int r = 0; r < rounds; ++r) {
        float* dst = sm + (ring == 3 ? (r & 1) : 0) * copies * nt * 4;
        const float* s = src + (size_t)((r * gridDim.x + blockIdx.x) % tiles) * copies * nt * 4;
        if (ring) {
            for (int j = 0; j < copies; ++j)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst + (j * nt + tid) * 4)),
                             "l"(s + (j * nt + tid) * 4));
            asm volatile("cp.async.commit_group;");
        }
        for (int k = 0; k < ksteps; ++k) {
            float w[LDS > 0 ? 4 * LDS : 4];
            #pragma unroll
            for (int l = 0; l < LDS; ++l) {         // the next step's fragments, loaded while this step's FFMAs run
                const float* p = rd + ((((k * LDS + l) * 8 + warp) * 32 + lane) * 4 & 1023);
                asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(w[4 * l]), "=f"(w[4 * l + 1]),
                             "=f"(w[4 * l + 2]), "=f"(w[4 * l + 3]) : "r"(smem_addr(p)));
            }
            #pragma unroll
            for (int f = 0; f < FFMA; ++f) acc[f & 7] = fmaf(acc[f & 7], v[(2 * f) % (LDS > 0 ? 4 * LDS : 4)],
                                                             v[(2 * f + 1) % (LDS > 0 ? 4 * LDS : 4)]);
            #pragma unroll
            for (int i = 0; i < 4 * LDS; ++i) v[i] = w[i];
        }
        if (ring == 2) asm volatile("cp.async.wait_group 0;");
        if (ring == 3) asm volatile("cp.async.wait_group 1;");
        __syncthreads();
    }
    asm volatile("cp.async.wait_group 0;");
    float t = 0.0f;
    #pragma unroll
    for (int i = 0; i < 8; ++i) t += acc[i];
    if (t == 1234.5f) out[0] = t + sm[tid];        // never true: keeps the loads, the FFMAs and the copies
}
'''


def _ints(text: str, name: str) -> list[int]:
    try:
        v = [int(x) for x in text.split(",")]
    except ValueError:
        v = []
    if not v or any(x < 0 for x in v):
        print(f"error: --{name} {text!r}: give whole numbers of 0 or more separated by commas, e.g. 0,1,2", file=sys.stderr)
        sys.exit(2)
    return v


def plan(warps: list[int], copies: list[int], blocks: list[int], per_sm: list[int], sms: int, cold_mb: int, rounds: int):
    """The configurations in the order they run: (warps, copies a thread, grid, blocks an SM, tile bytes, source tiles,
    bytes a timed run copies from distinct tiles). A block copies tile (round * grid + block) % tiles in turn, so a
    run touches min(tiles, rounds * grid) tiles."""
    out = []
    for (w, c), g, b in ((wc, g, b) for b in per_sm for g in blocks for wc in zip(warps, copies)):
        grid = (min(g, sms) if g else sms) * b  # the busy SMs, b blocks each (the scheduler spreads a grid over the SMs)
        tile = c * 32 * w * 16
        tiles = max(grid, cold_mb * 2**20 // tile)
        out.append((w, c, grid, b, tile, tiles, min(tiles, rounds * grid) * tile))
    return out


def l2_resident(configs: list, cold_mb: int, l2_bytes: int) -> Optional[str]:
    """With --cold-mb, the first configuration whose timed run copies no more bytes than the L2 holds (the warm-up
    run leaves them there: its copies would come from the L2, not DRAM), as one line naming it and what would do;
    None where every run walks more than the L2 (or without --cold-mb, whose tiles are meant to stay there)."""
    if not cold_mb:
        return None
    for w, c, grid, b, tile, tiles, touched in configs:
        if touched <= l2_bytes:
            least = l2_bytes // (grid * tile) + 1
            return (f"{grid} blocks of {w} warps copying {tile // 1024} KB a round touch {touched / 2**20:.0f} MiB in "
                    f"their rounds, no more than the {l2_bytes / 2**20:.0f} MiB L2: their copies would not come from DRAM; "
                    f"give --rounds {least} or more (or more blocks)")
    return None


def main(out: Path, warps: list[int], copies: list[int], lds: list[int], ffma: int, ksteps: int, rounds: int, reps: int,
         cold_mb: int, blocks: list[int], per_sm: list[int] = (1,)) -> None:
    import cupy as cp
    import pynvml

    sms = cp.cuda.Device(0).attributes["MultiProcessorCount"]
    configs = plan(warps, copies, blocks, per_sm, sms, cold_mb, rounds)
    why = l2_resident(configs, cold_mb, cp.cuda.Device(0).attributes["L2CacheSize"])
    if why:
        print(f"error: {why}", file=sys.stderr)
        sys.exit(2)
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    grid = sms
    name = pynvml.nvmlDeviceGetName(h)
    o = cp.zeros(1, dtype=cp.float32)
    rows = []

    def timed(kern, threads, args, shared):
        kern((grid,), (threads,), args, shared_mem=shared)  # warm-up: the regions into the L2
        cp.cuda.Device().synchronize()
        per, clocks = [], []
        for _ in range(reps):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            kern((grid,), (threads,), args, shared_mem=shared)
            e1.record()
            e1.synchronize()
            mhz = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
            per.append(cp.cuda.get_elapsed_time(e0, e1) * 1e-3 * mhz * 1e6 / rounds)
            clocks.append(mhz)
        return statistics.median(per), min(per), max(per), statistics.median(clocks)

    for w, c, grid, b, tile, tiles, touched in configs:
        threads = 32 * w
        src = cp.ones(tiles * tile // 4, dtype=cp.float32)
        shared = 2 * c * threads * 16 + 4096
        for n in lds:
            kern = cp.RawKernel(SRC, "copy_landing", options=("-std=c++17", f"-DLDS={n}", f"-DFFMA={ffma}"))
            a = (src, o, cp.int32(rounds), cp.int32(c))
            two = timed(kern, threads, a + (cp.int32(ksteps), cp.int32(2), cp.int32(tiles)), shared)
            three = timed(kern, threads, a + (cp.int32(ksteps), cp.int32(3), cp.int32(tiles)), shared)
            phase = timed(kern, threads, a + (cp.int32(ksteps), cp.int32(0), cp.int32(tiles)), shared)
            alone = timed(kern, threads, a + (cp.int32(0), cp.int32(2), cp.int32(tiles)), shared)
            r = dict(warps=w, copies_per_thread=c, tile_bytes=c * threads * 16, lds_per_step=n, ffma_per_step=ffma,
                     ksteps=ksteps, rounds=rounds, lds_per_ffma=n / ffma, source_tiles=tiles, cold_mb=cold_mb, blocks=grid, per_sm=b,
                     touched_MiB=touched / 2**20,
                     two_stage_clocks=two[0], two_stage_range=two[1:3], three_stage_clocks=three[0],
                     three_stage_range=three[1:3], phase_clocks=phase[0], phase_range=phase[1:3],
                     copies_clocks=alone[0], copies_range=alone[1:3], sm_clock_MHz=two[3],
                     excess_two=two[0] - max(phase[0], alone[0]), excess_three=three[0] - max(phase[0], alone[0]))
            rows.append(r)
            print(f"{grid} blocks ({b} an SM) of {w} warps, {r['tile_bytes'] // 1024} KB, {n} shared loads per {ffma} FFMAs: two-stage {two[0]:.0f}, "
                  f"three-stage {three[0]:.0f}, phase {phase[0]:.0f}, copies {alone[0]:.0f} clocks a round", flush=True)
    with open(out, "x") as f:
        json.dump(dict(gpu=name, sms=sms, reps=reps, rows=rows), f, indent=1)
    print("\n| blocks | an SM | warps | tile | shared loads a step (per FFMA) | two-stage | three-stage | phase alone | copies alone | "
          "two over three (clocks a round) |")
    print("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['blocks']} | {r.get('per_sm', 1)} | {r['warps']} | {r['tile_bytes'] // 1024} KB | {r['lds_per_step']} ({r['lds_per_ffma']:.3f}) | "
              f"{r['two_stage_clocks']:.0f} | {r['three_stage_clocks']:.0f} | {r['phase_clocks']:.0f} | "
              f"{r['copies_clocks']:.0f} | {r['two_stage_clocks'] - r['three_stage_clocks']:.0f} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--warps", default="4,8")
    ap.add_argument("--copies", default="6,2")
    ap.add_argument("--lds", default="0,1,2,3,4,8")
    ap.add_argument("--ffma", type=int, default=16)
    ap.add_argument("--ksteps", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--blocks", default="0",
                    help="blocks in the grid, one an SM, comma-separated (0, the default: one on every SM)")
    ap.add_argument("--per-sm", default="1",
                    help="blocks on each busy SM at once, comma-separated (1, the default)")
    ap.add_argument("--cold-mb", type=int, default=0,
                    help="copy from a region of this many MiB, a tile a round in turn (larger than the L2: from DRAM); "
                         "0 (default): each block its own L2-resident tile")
    a = ap.parse_args()
    ws, cs, ls = _ints(a.warps, "warps"), _ints(a.copies, "copies"), _ints(a.lds, "lds")
    if len(ws) != len(cs) or any(w < 1 or w > 32 for w in ws) or any(c < 1 for c in cs):
        print(f"error: --warps {a.warps!r} and --copies {a.copies!r}: as many entries each, warps 1-32, copies 1 or more",
              file=sys.stderr)
        sys.exit(2)
    if a.ffma < 1 or a.ffma > 64 or any(n > 16 for n in ls):
        print(f"error: --lds {a.lds!r}, --ffma {a.ffma}: shared loads a step 0-16, FFMAs a step 1-64", file=sys.stderr)
        sys.exit(2)
    if any(2 * c * 32 * w * 16 + 4096 > 48 * 1024 for w, c in zip(ws, cs)):
        print("error: two tiles of copies x threads x 16 B plus 4 KB must fit 48 KB of shared memory", file=sys.stderr)
        sys.exit(2)
    if a.out.exists():
        print(f"error: {a.out} exists: results are never overwritten; give a new file", file=sys.stderr)
        sys.exit(2)
    if a.ksteps < 1 or a.rounds < 1 or a.reps < 1:
        print("error: --ksteps, --rounds and --reps: 1 or more", file=sys.stderr)
        sys.exit(2)
    if a.cold_mb < 0 or a.cold_mb > 4096:
        print(f"error: --cold-mb {a.cold_mb}: 0 (L2-resident tiles) or a region of up to 4096 MiB", file=sys.stderr)
        sys.exit(2)
    bs = _ints(a.blocks, "blocks")
    ps = _ints(a.per_sm, "per-sm")
    if any(b < 1 or b > 16 or b * (2 * c * 32 * w * 16 + 4096) > 200 * 1024 or b * w > 32 for b in ps for w, c in zip(ws, cs)):
        print(f"error: --per-sm {a.per_sm!r}: 1-16 blocks an SM, their warps at most 32 and their shared memory at most 200 KB",
              file=sys.stderr)
        sys.exit(2)
    main(a.out, ws, cs, ls, a.ffma, a.ksteps, a.rounds, a.reps, a.cold_mb, bs, ps)
