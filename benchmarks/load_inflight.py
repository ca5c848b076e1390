"""How many global loads an SM keeps in flight (GPU; cupy compiles with NVRTC): the request rate of warp-wide
coalesced 4-byte loads (one 128-byte line a warp load, as the coalesced kernel's B row) against the loads each
warp has outstanding. One block per SM of W warps (4-32); each warp issues U independent loads (1-32) of lines it
never reused in the pass, waits for them, and repeats; the loads come from an 8 MB buffer resident in the L2
(`l2`: `ld.global.cg`, the L1 bypassed; `l1miss`: `ld.global.nc` through the L1, which they miss) or from 16 KB
resident in the L1 (`l1`: `ld.global.nc`, as the coalesced kernel loads, every load a hit), or from DRAM (`dram`,
asked for with --levels: `ld.global.cg` over a 4 GB buffer, each warp walking a region of its own, the L2 flushed
before the timed launch, so every load is a line no one read since: as B's lines stream to a kernel for a few rows).
Requests per clock per SM = the warps' loads over the SM cycles of the timed loop (clock64, median over the SMs);
Little's law gives the loads in flight as rate x latency, and where the rate stops growing with W x U the SM has
reached the most it keeps in flight (or its pipe's rate).

    python3 benchmarks/load_inflight.py OUT.json [--warps 4,8,16,32] [--unroll 1,2,4,8,16,32] [--levels l2,l1miss,l1,dram]
    python3 benchmarks/load_inflight.py --table OUT.json      (CPU) the table again from a recorded file
    python3 benchmarks/load_inflight.py --dram-ratio CALIBRATION.toml OUT.json ...
        (CPU) the DRAM wait against the lines in flight per SM as a multiple of the calibration's pointer chase
        (latency.dram_latency_ratio_by_lines_in_flight of a device file): per count of lines the median
        cycles a pass over every recorded DRAM run with that many lines a SM and at most MAX_UNROLL_RATIO loads
        a warp, up to MAX_LINES_RATIO lines (beyond, the DRAM bandwidth bounds the wait: the model's dram term)
"""
import argparse
import json
import lzma
import sys

import numpy as np

SRC = r"""
template <int U, int LV>  // LV 0: L2 (.cg), 1: through the L1, missing it (.nc), 2: L1 hits (.nc), 3: DRAM (.cg)
__device__ __forceinline__ void run(const float* __restrict__ buf, unsigned mask, int passes, long long* rec, float* sink,
                                    unsigned dram_stride) {
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    // a pass's U loads are lines line, line + S, ..., each at a constant offset from one address (one instruction
    // a load); line stays in the buffer's first half so the last offset (at most 31 S lines) stays inside it
    const unsigned S = LV == 3 ? dram_stride : (LV == 2 ? 1u : 37u);  // lines between a pass's loads
    const unsigned half = mask >> 1;
    unsigned line = (blockIdx.x * 977u + warp * 131u) & half;
    // DRAM: each warp walks a region of its own (the buffer's lines over the grid's warps), wrapping inside it, so no
    // line is read twice within the 4 GB a pass of the whole grid would have to move before it came round again
    const unsigned region = LV == 3 ? (mask + 1u) / (gridDim.x * warps) : 0u, base = region * (blockIdx.x * warps + warp);
    if (LV == 3) line = 0u;
    float acc = 0.0f;
    __syncthreads();
    long long t0 = clock64();
#pragma unroll 1
    for (int p = 0; p < passes; ++p) {  // one pass at a time: a warp has U loads in flight, no more
        const float* q = buf + (size_t)(LV == 3 ? base + line : line) * 32 + lane;
        float v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = (LV == 0 || LV == 3) ? __ldcg(q + u * S * 32) : __ldg(q + u * S * 32);
#pragma unroll
        for (int u = 0; u < U; ++u) acc += v[u];
        line = LV == 3 ? (line + U * S + 1u) % (region - U * S) : (line + U * S + warps * 7u) & half;
    }
    long long t1 = clock64();
    __syncthreads();
    if (acc == 12345.678f) sink[0] = acc;
    if (lane == 0) {
        long long* r = rec + 3 * (blockIdx.x * warps + warp);
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        r[0] = sm; r[1] = t0; r[2] = t1;
    }
}
"""
UNROLLS = (1, 2, 4, 8, 16, 32)
LEVELS = ("l2", "l1miss", "l1", "dram")
KERNELS = "".join(
    f'extern "C" __global__ void {lvl}_{u}(const float* buf, unsigned mask, int passes, long long* rec, float* sink, '
    f'unsigned dram_stride) {{ run<{u}, {LEVELS.index(lvl)}>(buf, mask, passes, rec, sink, dram_stride); }}\n'
    for lvl in LEVELS for u in UNROLLS)
LINES = {"l2": 8 << 20 >> 7, "l1miss": 8 << 20 >> 7, "l1": 16 << 10 >> 7, "dram": 4 << 30 >> 7}  # 128-byte lines each level walks
HEADER = f"{'level':<6} {'warps':>5} {'loads':>5} {'in flight a SM':>14} {'requests/clk/SM':>15} {'cycles/pass':>11}"


def block_spans(rec: np.ndarray, warps: int) -> np.ndarray:
    """rec: (blocks * warps, 3) = smid, start, end. Per block the span of its warps' loops (SM cycles)."""
    blocks = rec.reshape(-1, warps, 3)
    return blocks[:, :, 2].max(axis=1) - blocks[:, :, 1].min(axis=1)


def summarise(rec: np.ndarray, warps: int, unroll: int, passes: int) -> dict:
    """The median rate of a block's loads (requests a clock) and its span a pass (block_spans)."""
    span = block_spans(rec, warps)
    rate = warps * unroll * passes / span
    return dict(requests_per_clock=float(np.median(rate)), cycles_per_pass=float(np.median(span) / passes))


def read_record(path: str) -> dict:
    """A recorded file, packed (.xz) or not."""
    return json.loads((lzma.open if path.endswith(".xz") else open)(path).read())


def line(level, w, u, s) -> str:
    return f"{level:<6} {w:>5} {u:>5} {w * u:>14} {s['requests_per_clock']:>15.3f} {s['cycles_per_pass']:>11.1f}"


def table(path: str) -> int:
    d = read_record(path)
    dram = f", DRAM loads {d.get('dram_stride', 37)} lines apart" if any(r["level"] == "dram" for r in d["runs"]) else ""
    print(f"{d['device']}: {d['sms']} SMs, one block per SM, {d['passes']} passes{dram}")
    print(HEADER)
    for r in d["runs"]:
        print(line(r["level"], r["warps"], r["unroll"], summarise(np.asarray(r["records"], dtype=np.int64), r["warps"],
                                                                   r["unroll"], d["passes"])))
    return 0


MAX_UNROLL_RATIO = 16  # 32 loads a warp run slower at every stride and warp count, not explained (docs/measurement.md)
MAX_LINES_RATIO = 128  # from 256 lines a SM the requests stop at the DRAM's stream rate


def dram_ratio(calibration: str, paths: list[str]) -> dict[str, float]:
    """{lines in flight a SM: median cycles a pass / the calibration's DRAM pointer chase}, "1" = 1.0 (the
    pointer chase itself: one line in flight)."""
    import tomllib
    with open(calibration, "rb") as f:
        chase = float(tomllib.load(f)["measured"]["dram_latency_cycles"])
    by: dict[int, list[float]] = {}
    for path in paths:
        d = read_record(path)
        for r in d["runs"]:
            n = r["warps"] * r["unroll"]
            if r["level"] != "dram" or r["unroll"] > MAX_UNROLL_RATIO or n > MAX_LINES_RATIO:
                continue
            s = summarise(np.asarray(r["records"], dtype=np.int64), r["warps"], r["unroll"], d["passes"])
            by.setdefault(n, []).append(s["cycles_per_pass"])
    if not by:
        raise ValueError("error: no DRAM runs in " + ", ".join(paths))
    out = {"1": 1.0}
    out.update({str(n): round(float(np.median(v)) / chase, 3) for n, v in sorted(by.items())})
    return out


def _ints(text: str, allowed, what: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",")]
    except ValueError:
        vals = []
    if not vals or any(v not in allowed for v in vals):
        raise ValueError(f"error: --{what} takes comma-separated values of {','.join(map(str, allowed))}, not {text!r}")
    return vals


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        return table(sys.argv[2])
    if len(sys.argv) >= 4 and sys.argv[1] == "--dram-ratio":
        try:
            ratio = dram_ratio(sys.argv[2], sys.argv[3:])
        except (OSError, KeyError, ValueError) as e:
            print(f"error: {e}" if not str(e).startswith("error") else e, file=sys.stderr)
            return 2
        print("dram_latency_ratio_by_lines_in_flight = { " + ", ".join(f'"{k}" = {v}' for k, v in ratio.items()) + " }")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--warps", default="4,8,16,32", help="warps a block (4-32, multiples of 4)")
    ap.add_argument("--unroll", default="1,2,4,8,16,32", help=f"loads a warp has in flight ({','.join(map(str, UNROLLS))})")
    ap.add_argument("--levels", default=",".join(LEVELS[:3]), help=f"where the loads come from ({','.join(LEVELS)}; dram: "
                    "a 4 GB buffer, each warp a region of its own, the L2 flushed before the timed launch)")
    ap.add_argument("--dram-stride", type=int, default=37, help="dram: 128-byte lines between a pass's loads (1-128; "
                    "default 37 as the L2 level's; 128: 16 KB, a row of a 4096-wide B)")
    a = ap.parse_args()
    try:
        warps = _ints(a.warps, range(4, 33, 4), "warps")
        unrolls = _ints(a.unroll, UNROLLS, "unroll")
        levels = a.levels.split(",")
        if not 1 <= a.dram_stride <= 128:
            raise ValueError(f"error: --dram-stride takes 1 to 128 lines, not {a.dram_stride}")
        if not levels or any(v not in LEVELS for v in levels):
            raise ValueError(f"error: --levels takes comma-separated values of {','.join(LEVELS)}, not {a.levels!r}")
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    import cupy as cp

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    mod = cp.RawModule(code=SRC + KERNELS, options=("-std=c++17",))
    buf = cp.ones(max(LINES[v] for v in levels) * 32, cp.float32)
    flush = cp.zeros(2 * cp.cuda.runtime.getDeviceProperties(0)["l2CacheSize"] // 4, cp.float32)
    sink = cp.zeros(1, cp.float32)
    passes = 256
    out = dict(device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), sms=sms, passes=passes,
               dram_stride=a.dram_stride, runs=[])
    print(f"{out['device']}: {sms} SMs, one block per SM, {passes} passes")
    print(HEADER)
    for level in levels:
        for w in warps:
            for u in unrolls:
                kern = mod.get_function(f"{level}_{u}")
                rec = cp.zeros(3 * sms * w, cp.int64)
                args = (buf, np.uint32(LINES[level] - 1), np.int32(passes), rec, sink, np.uint32(a.dram_stride))
                kern((sms,), (32 * w,), args)  # warm: the lines into the L2 (and the L1); for dram the code
                if level == "dram":
                    flush.fill(1.0)  # and out of the L2 again
                kern((sms,), (32 * w,), args)
                cp.cuda.runtime.deviceSynchronize()
                r = cp.asnumpy(rec).reshape(sms * w, 3)
                s = summarise(r, w, u, passes)
                out["runs"].append(dict(level=level, warps=w, unroll=u, records=r.tolist(), **s))
                print(line(level, w, u, s), flush=True)
    with open(a.out, "x") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
