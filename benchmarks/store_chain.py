"""What a warp pays when it overwrites the registers of a global store it just issued (GPU only for the
timings; run from the repository root). Writes JSON to OUT and prints a table last.

An SGEMM epilogue stores C from the accumulator registers, and nvcc often writes a register an earlier
store (STG) reads before that store has left the SM: the write must wait until the store has read its
registers (a write-after-read on the scoreboard), so the warp's next stores queue behind it
(measure.sass.store_reuse_writes counts such writes). This microbenchmark times that wait alone.

Every block waits a fixed number of SM cycles (a clock64 spin, no memory traffic), then each thread
stores 32 float4 (512 contiguous bytes a warp a store, sectors whole) from a ring of D float4 registers:
it stores all D, overwrites all D (one FADD a register: the write-after-read on each), and goes round
32 / D times (`#pragma unroll 1`: the loop-carried registers keep the ring in the same registers).

    D = 1    every store's registers are overwritten right after it: the warp's stores go one at a time
    D = 0    one register set stored 32 times, never overwritten: the store burst alone (the control)

(At D = 32 the loop runs once and nvcc rebuilds the values a few register sets at a time just before
their stores, itself a chain: `--sass` shows what each build holds.)

Dynamic shared memory holds the grid to 1 (or 2) blocks per SM; `waves` full waves of SMs x blocks run
back to back. The same kernel without the stores gives the spin's time, so

    exposed cycles per wave = (time with stores - time without) x SM clock / waves

and (D = 1's - D = 0's) / 32 is what each store whose registers are overwritten at once adds to a
warp's epilogue beyond the burst. With --busy B, B more warps a block issue shared-memory loads (LDS.128;
with --busy-load global, four coalesced LDG.128 an iteration from a 1 MiB buffer the L2 holds) from the
end of the spin until every store warp has issued its stores, as the warps of an SGEMM block
still in its k-tile loop keep the SM's memory-instruction queue busy while another block stores C.
Timed as validate times an SGEMM (L2 flushed before each repetition, median of the repetitions, the
10 % and 90 % quantiles beside it).

    python3 benchmarks/store_chain.py OUT.json [--ring 0,1,2,4,8,32] [--warps 4,8] [--blocks 1,2]
                                               [--busy B [--busy-load global]] [--spin 20000] [--waves 16]
    python3 benchmarks/store_chain.py --table OUT.json      (the table of a recorded run, no GPU)

The builds' SASS, with this machine's nvcc and nvdisasm (no GPU): stores, writes that reuse a store's
registers (over the whole listing, the busy warps' path included: compare each depth with ring 0's),
registers a thread, per ring depth:

    python3 benchmarks/store_chain.py --sass [--ring ...] [--arch sm_90]"""
import argparse
import json
import sys
from pathlib import Path
from typing import Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from store_burst import check_run_args, ints  # noqa: E402

STORES = 32  # float4 stores a thread
SRC = r"""
#ifndef RING
#define RING 1
#endif
#if RING == 0
#define SETS 1  // ring 0: one register set, stored 32 times and never overwritten
#else
#define SETS RING
#endif
#ifndef BUSY_GLOBAL
#define BUSY_GLOBAL 0
#endif
extern "C" __global__ void chain(float4* c, long long spin, int store, int store_warps, const float4* __restrict__ src) {
    extern __shared__ float hold[];  // sizes the block's shared memory (blocks per SM); hold[0] counts finished store warps
    __shared__ float4 lds_src[256];
    const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) hold[0] = 0.0f;
    if (threadIdx.x < 256) lds_src[threadIdx.x] = make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    long long t0 = clock64();
    while (clock64() - t0 < spin) { }
    if (!store) return;
    if (warp >= store_warps) {  // a busy warp: shared-memory loads until every store warp has issued its stores
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
        volatile float* flag = hold;
        int i = lane;
        while (*flag < (float)store_warps) {
#if BUSY_GLOBAL  // four coalesced float4 loads a lane from a 1 MiB buffer (L2-resident), 512 B a warp each
            const int base = ((blockIdx.x * 32 + warp) * 128 + (i & ~31) * 4) & 65535;
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                float4 x = src[(base + u * 32 + lane) & 65535];
                acc.x += x.x; acc.y += x.y; acc.z += x.z; acc.w += x.w;
            }
#else
            float4 x = lds_src[i & 255];
            acc.x += x.x; acc.y += x.y; acc.z += x.z; acc.w += x.w;
#endif
            i += 33;
        }
        if (acc.x + acc.y + acc.z + acc.w == 1.0f) c[0] = acc;  // never true: keeps the loads
        return;
    }
    float4* p = c + (size_t)blockIdx.x * %(stores)d * store_warps * 32 + threadIdx.x;
    const int stride = store_warps * 32;
    float v = (float)threadIdx.x + hold[1] * 0.0f;
    float4 r[SETS];
    #pragma unroll
    for (int j = 0; j < SETS; ++j) r[j] = make_float4(v + j, v + j + 0.25f, v + j + 0.5f, v + j + 0.75f);
    #pragma unroll 1
    for (int i = 0; i < %(stores)d / SETS; ++i) {
        #pragma unroll
        for (int j = 0; j < SETS; ++j) p[(i * SETS + j) * stride] = r[j];
#if RING > 0
        #pragma unroll
        for (int j = 0; j < SETS; ++j) { r[j].x += 1.0f; r[j].y += 1.0f; r[j].z += 1.0f; r[j].w += 1.0f; }
#endif
    }
    __syncwarp();
    if (lane == 0) atomicAdd(hold, 1.0f);
}
""" % dict(stores=STORES)


def depths(text: str) -> list[int]:
    return ints(text, least=0)


def sass_counts(ring: int, arch: str) -> dict:
    """Build the kernel for one ring depth with this machine's nvcc and read its SASS: STG count, writes
    that reuse a store's registers (sass.store_reuse_writes over the whole listing), registers a thread."""
    import re
    import subprocess
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from perfmodel.measure import sass, toolchain

    nvcc, dis = toolchain.find_nvcc(), sass.find_nvdisasm()
    if nvcc is None or dis is None:
        raise SystemExit("store_chain.py --sass: needs nvcc and nvdisasm on this machine")
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / "chain.cu", Path(tmp) / "chain.cubin"
        src.write_text(SRC)
        r = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-O3", f"-DRING={ring}", "-Xptxas", "-v", "-o", str(cubin), str(src)],
                           capture_output=True, text=True, check=True)
        regs = int(re.search(r"Used (\d+) registers", r.stderr).group(1))
        listing = subprocess.run([dis, *sass.DISASM_ARGS, str(cubin)], capture_output=True, text=True, check=True).stdout
    lines = listing.splitlines()
    stg = sum(1 for op, _, _ in sass._instructions(lines) if op.startswith("STG"))
    return dict(ring=ring, stg=stg, reuse_writes=len(sass.store_reuse_writes(lines)), registers=regs)


def extra_per_store(rows: list[dict]) -> list[Optional[float]]:
    """Per row, its exposed cycles a wave beyond those of ring 0 (the same blocks an SM, store and busy
    warps) over the stores a thread makes: what each store of a warp adds; None without that control."""
    out = []
    for r in rows:
        key = (r["blocks_per_sm"], r["warps"], r.get("busy_warps", 0), r.get("busy_load"))
        free = next((x for x in rows if (x["blocks_per_sm"], x["warps"], x.get("busy_warps", 0), x.get("busy_load")) == key
                     and x["ring"] == 0), None)
        out.append(None if free is None else (r["exposed_cycles_per_wave"] - free["exposed_cycles_per_wave"]) / STORES)
    return out


def table(d: dict) -> None:
    rows = d["rows"]
    print(f"{d['device']}, {d['sm_count']} SMs, {d['clock_MHz']:.0f} MHz; {d['stores_per_thread']} float4 stores a thread, "
          f"{rows[0]['waves']} waves, spin {rows[0]['spin_cycles']} cycles")
    print("| blocks/SM | store warps | busy warps | ring depth | no stores (us) | with stores (us, q10-q90) | "
          "exposed cycles per wave | beyond ring 0's, per store a warp |")
    print("|---|---|---|---|---|---|---|---|")
    for r, extra in zip(rows, extra_per_store(rows)):
        busy = f"{r.get('busy_warps', 0)}" + (f" ({r['busy_load']})" if r.get("busy_load") else "")
        print(f"| {r['blocks_per_sm']} | {r['warps']} | {busy} | {r['ring']} | {r['no_store_us']:.1f} | "
              f"{r['store_us']:.1f} ({r['store_q10_us']:.1f}-{r['store_q90_us']:.1f}) | {r['exposed_cycles_per_wave']:.0f} | "
              f"{'' if extra is None else f'{extra:.1f}'} |")


def main() -> int:
    ap = argparse.ArgumentParser(description="The cost of overwriting a global store's registers right after it (GPU machine).")
    ap.add_argument("out", type=Path, nargs="?", help="JSON file to write (must not exist)")
    ap.add_argument("--ring", type=depths, default=[0, 1, 2, 4, 8, 32], help="float4 register sets a thread stores from (divisors of 32; 0: one set, never overwritten)")
    ap.add_argument("--warps", type=ints, default=[4, 8], help="warps a block")
    ap.add_argument("--blocks", type=ints, default=[1, 2], help="blocks per SM (1 or 2)")
    ap.add_argument("--spin", type=int, default=20000, help="SM cycles each block waits before its stores")
    ap.add_argument("--waves", type=int, default=16, help="full waves per launch (default 16)")
    ap.add_argument("--busy", type=int, default=0, help="warps a block that issue shared-memory loads while the others store (default 0)")
    ap.add_argument("--busy-load", choices=("shared", "global"), default="shared",
                    help="what the busy warps load: shared memory (LDS.128) or a 1 MiB global buffer (LDG.128, L2-resident)")
    ap.add_argument("--table", type=Path, metavar="JSON", help="only print the table of a recorded run (no GPU)")
    ap.add_argument("--sass", action="store_true", help="only build each ring depth here and count its stores and reuse writes")
    ap.add_argument("--arch", default="sm_90", help="the architecture --sass builds for (default sm_90)")
    a = ap.parse_args()
    if any(d < 0 or (d and STORES % d) for d in a.ring):
        ap.error(f"--ring {a.ring}: each depth must divide {STORES}, or be 0")
    if a.sass:
        print("| ring depth | STG | writes reusing a store's registers (whole listing) | registers |")
        print("|---:|---:|---:|---:|")
        for d in a.ring:
            c = sass_counts(d, a.arch)
            print(f"| {d} | {c['stg']} | {c['reuse_writes']} | {c['registers']} |")
        return 0
    if a.table:
        if not a.table.exists():
            ap.error(f"--table {a.table}: no such file")
        table(json.loads(a.table.read_text()))
        return 0
    if a.busy < 0:
        ap.error(f"--busy {a.busy}: 0 or more warps")
    if a.out is None:
        ap.error("give OUT (a JSON file to write), or --sass")
    check_run_args(ap, a)
    if any(w + a.busy > 32 for w in a.warps):
        ap.error(f"--warps {a.warps} with --busy {a.busy}: at most 32 warps a block in all")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from perfmodel.measure.gpu import Gpu
    from perfmodel.measure.timing import do_bench, summarize

    gpu = Gpu()
    drv = gpu.drv
    busy_global = int(a.busy_load == "global")
    fns = {d: gpu.compiler.SourceModule(SRC, no_extern_c=True, options=["-O3", f"-DRING={d}", f"-DBUSY_GLOBAL={busy_global}"]).get_function("chain")
           for d in a.ring}
    src = drv.mem_alloc(65536 * 16)
    drv.memset_d32(src, 0, 65536 * 4)
    smem_per_sm = gpu.dev.get_attribute(drv.device_attribute.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
    clock_mhz = gpu.dev.get_attribute(drv.device_attribute.CLOCK_RATE) / 1e3
    sms = gpu.sm_count
    buf = drv.mem_alloc(2 * a.waves * sms * max(a.warps) * 32 * STORES * 16)
    rows = []
    for b in a.blocks:
        smem = (smem_per_sm // b) - 2048  # one block's share less the reserved kilobyte (and slack): b per SM
        static = max(f.get_attribute(drv.function_attribute.SHARED_SIZE_BYTES) for f in fns.values())  # the loads' source
        grid = a.waves * sms * b
        for w in a.warps:
            def run(d, store):
                fn = fns[d]
                fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, smem - static)
                return lambda: fn(buf, np.int64(a.spin), np.int32(store), np.int32(w), src, block=(32 * (w + a.busy), 1, 1),
                                  grid=(grid, 1, 1), shared=smem - static)
            base = summarize(do_bench(run(a.ring[0], 0), gpu.flush, gpu.event, gpu.sync, 10.0, 60.0)[0])
            for d in a.ring:
                t = summarize(do_bench(run(d, 1), gpu.flush, gpu.event, gpu.sync, 10.0, 60.0)[0])
                extra_us = (t["median_ms"] - base["median_ms"]) * 1e3
                rows.append(dict(blocks_per_sm=b, warps=w, busy_warps=a.busy, busy_load=a.busy_load if a.busy else None, ring=d, spin_cycles=a.spin, waves=a.waves, grid=grid,
                                 no_store_us=base["median_ms"] * 1e3, no_store_q10_us=base["q10_ms"] * 1e3,
                                 no_store_q90_us=base["q90_ms"] * 1e3, store_us=t["median_ms"] * 1e3,
                                 store_q10_us=t["q10_ms"] * 1e3, store_q90_us=t["q90_ms"] * 1e3,
                                 exposed_cycles_per_wave=extra_us * clock_mhz / a.waves))
                print(f"  {b} block(s)/SM, {w} warps, ring {d}: {t['median_ms'] * 1e3:.1f} us", file=sys.stderr, flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(dict(device=gpu.name, sm_count=sms, clock_MHz=clock_mhz, stores_per_thread=STORES,
                                     spin_cycles=a.spin, waves=a.waves, source=SRC, rows=rows), indent=1))
    table(json.loads(a.out.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
