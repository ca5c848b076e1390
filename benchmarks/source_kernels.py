"""A published source's one-element kernels, as its author wrote them, timed beside the catalogue's naive kernel
on the local GPU at a few rows of A (GPU; cupy compiles with NVRTC), to tell whether a published table's speed
at M = 1-8 belongs to the kernel or to the GPU it ran on.

    python3 benchmarks/source_kernels.py OUT.json [--ms 1,2,4,8] [--ns 4096,8448] [--k 4096] [--reps 7]
    python3 benchmarks/source_kernels.py --table OUT.json      (CPU) the table again from a recorded file

The source is vlejd/MASK_SGEMM_CUDA at 91a5e317f846b8763d57572c7314db084741d8c0 (src/kernels/1_naive.cuh and
src/kernels/2_kernel_global_mem_coalesce.cuh, MIT licence, Copyright (c) 2023 Simon Boehm), whose README gives
the A100-PCIe figures in published/sgemm.toml. Its kernel bodies are below unchanged (only the headers NVRTC
cannot read are left out and `uint` is declared); the variants change one thing each:

    src_naive            the source's naive kernel (no __restrict__: plain LDG, nvcc unrolls its k loop 4 times)
    src_naive_restrict   the same with A and B `const float* __restrict__` (read-only LDG.E.CONSTANT, still 4)
    src_naive_unroll16   the same as src_naive with `#pragma unroll 16` (plain LDG, 16 k steps of loads a pass)
    src_coalesced        the source's coalesced kernel (BLOCKSIZE 32)
    naive                the catalogue's naive kernel (kernels/01_naive.cu, bm = bn = 32)

Every launch uses the source's grid: naive dim3(ceil(M/32), ceil(N/32)) blocks of dim3(32, 32) (the catalogue's:
ceil(N/32) x ceil(M/32) blocks of 1,024 threads, the same threads on the same elements). Each point is verified
against float64 numpy (C = A B, alpha 1, beta 0), then timed as the source times it: one untimed launch, then
cudaEvents around 50 back-to-back launches, repeated `--reps` times; the record keeps every repeat, the table
gives the median and the spread (min-max) in GFLOPS and the SM cycles per k step at the observed clock.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LAUNCHES = 50

SRC_NAIVE = r"""
__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A,
                            const float *B, float beta, float *C) {
  const uint x = blockIdx.x * blockDim.x + threadIdx.x;
  const uint y = blockIdx.y * blockDim.y + threadIdx.y;

  // if statement is necessary to make things work under tile quantization
  if (x < M && y < N) {
    float tmp = 0.0;
    for (int i = 0; i < K; ++i) {
      tmp += A[x * K + i] * B[i * N + y];
    }
    // C = α*(A@B)+β*C
    C[x * N + y] = alpha * tmp + beta * C[x * N + y];
  }
}
"""

SRC_COALESCED = r"""
template <const uint BLOCKSIZE>
__global__ void sgemm_global_mem_coalesce(int M, int N, int K, float alpha,
                                          const float *A, const float *B,
                                          float beta, float *C) {
  const int cRow = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);
  const int cCol = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);

  // if statement is necessary to make things work under tile quantization
  if (cRow < M && cCol < N) {
    float tmp = 0.0;
    for (int i = 0; i < K; ++i) {
      tmp += A[cRow * K + i] * B[i * N + cCol];
    }
    C[cRow * N + cCol] = alpha * tmp + beta * C[cRow * N + cCol];
  }
}
template __global__ void sgemm_global_mem_coalesce<32>(int, int, int, float, const float *, const float *, float, float *);
"""

PRELUDE = "typedef unsigned int uint;\n"


def variants() -> dict[str, str]:
    """Kernel name -> CUDA source (the source's bodies and the one-line changes the module docstring lists)."""
    restrict = SRC_NAIVE.replace("const float *A,", "const float *__restrict__ A,").replace(
        "const float *B,", "const float *__restrict__ B,")
    unroll = SRC_NAIVE.replace("for (int i = 0; i < K; ++i)", '_Pragma("unroll 16") for (int i = 0; i < K; ++i)')
    assert restrict != SRC_NAIVE and unroll != SRC_NAIVE
    catalogue = (ROOT / "kernels" / "01_naive.cu").read_text()
    return {"src_naive": PRELUDE + SRC_NAIVE, "src_naive_restrict": PRELUDE + restrict,
            "src_naive_unroll16": PRELUDE + unroll, "src_coalesced": PRELUDE + SRC_COALESCED,
            "naive": catalogue}


def ints(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise SystemExit(f"source_kernels.py: {text!r} is not a comma-separated list of positive integers")
    return out


def measure(out_path: Path, ms: list[int], ns: list[int], k: int, reps: int) -> dict:
    import cupy as cp

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    srcs = variants()
    fns = {}
    for name, src in srcs.items():
        if name == "naive":
            mod = cp.RawModule(code=src, options=(f"-I{ROOT / 'kernels'}", "-DBM=32", "-DBN=32"))
            fns[name] = mod.get_function("sgemm")
        elif name == "src_coalesced":
            mod = cp.RawModule(code=src, options=(), name_expressions=["sgemm_global_mem_coalesce<32>"])
            fns[name] = mod.get_function("sgemm_global_mem_coalesce<32>")
        else:
            mod = cp.RawModule(code=src, options=(), name_expressions=["sgemm_naive"])
            fns[name] = mod.get_function("sgemm_naive")
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(dev.id)
        clock = lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)  # noqa: E731
    except Exception:  # noqa: BLE001 - the clock is a help for the table, not the measurement
        clock = lambda: None  # noqa: E731
    rec = {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
           "sms": props["multiProcessorCount"], "cupy": cp.__version__,
           "source": "vlejd/MASK_SGEMM_CUDA@91a5e317f846b8763d57572c7314db084741d8c0",
           "launches_per_repeat": LAUNCHES, "points": []}
    rng = np.random.default_rng(0)
    total = len(ms) * len(ns) * len(fns)
    done = 0
    t0 = time.time()
    for N in ns:
        for M in ms:
            a = rng.uniform(-1, 1, (M, k)).astype(np.float32)
            b = rng.uniform(-1, 1, (k, N)).astype(np.float32)
            ref = a.astype(np.float64) @ b.astype(np.float64)
            dA, dB = cp.asarray(a), cp.asarray(b)
            for name, fn in fns.items():
                dC = cp.zeros((M, N), cp.float32)
                if name == "naive":
                    grid, block = ((N + 31) // 32, (M + 31) // 32), (1024,)
                    args = (dA, dB, dC, np.int32(M), np.int32(N), np.int32(k))
                elif name == "src_coalesced":
                    grid, block = ((M + 31) // 32, (N + 31) // 32), (1024,)
                    args = (np.int32(M), np.int32(N), np.int32(k), np.float32(1), dA, dB, np.float32(0), dC)
                else:
                    grid, block = ((M + 31) // 32, (N + 31) // 32), (32, 32)
                    args = (np.int32(M), np.int32(N), np.int32(k), np.float32(1), dA, dB, np.float32(0), dC)
                fn(grid, block, args)
                cp.cuda.Device().synchronize()
                err = float(np.max(np.abs(cp.asnumpy(dC).astype(np.float64) - ref)) / max(1.0, np.max(np.abs(ref))))
                ok = err < 1e-4
                times, clocks = [], []
                for _ in range(reps):
                    fn(grid, block, args)
                    s, e = cp.cuda.Event(), cp.cuda.Event()
                    s.record()
                    for _ in range(LAUNCHES):
                        fn(grid, block, args)
                    e.record()
                    e.synchronize()
                    clocks.append(clock())
                    times.append(cp.cuda.get_elapsed_time(s, e) / LAUNCHES)
                rec["points"].append({"kernel": name, "M": M, "N": N, "K": k, "grid": list(grid), "block": list(block),
                                      "verified": ok, "rel_err": err, "ms": times, "sm_clock_mhz": clocks})
                done += 1
                print(f"  {done}/{total} {name} {M}x{N}x{k}: {np.median(times):.4f} ms "
                      f"({'ok' if ok else 'FAILED'}; {time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    out_path.write_text(json.dumps(rec, indent=1) + "\n")
    return rec


def table(rec: dict) -> str:
    lines = [f"{rec['gpu']} ({rec['sms']} SMs), {rec['source']}, {rec['launches_per_repeat']} launches a repeat",
             "| kernel | M x N x K | blocks | verified | GFLOPS median (min-max) | SM cycles per k step |",
             "|---|---|---|---|---|---|"]
    for p in rec["points"]:
        ms = np.asarray(p["ms"], float)
        g = 2.0 * p["M"] * p["N"] * p["K"] / (ms * 1e-3) / 1e9
        clk = [c for c in p["sm_clock_mhz"] if c]
        cyc = f"{np.median(ms) * 1e-3 * np.median(clk) * 1e6 / p['K']:,.0f}" if clk else "-"
        lines.append(f"| {p['kernel']} | {p['M']}x{p['N']}x{p['K']} | {p['grid'][0] * p['grid'][1]} | "
                     f"{'yes' if p['verified'] else 'NO'} | {np.median(g):,.1f} ({g.min():,.1f}-{g.max():,.1f}) | {cyc} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="source_kernels.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", help="JSON record to write (a new file), or with --table the record to read")
    ap.add_argument("--table", action="store_true", help="print the table of a recorded file (no GPU)")
    ap.add_argument("--ms", default="1,2,4,8")
    ap.add_argument("--ns", default="4096,8448")
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args(argv)
    path = Path(a.out)
    if a.table:
        if not path.is_file():
            raise SystemExit(f"source_kernels.py: {path} is not a file (give a record written by this script)")
        try:
            rec = json.loads(path.read_text())
            print(table(rec))
        except (ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"source_kernels.py: {path} is not a record of this script ({e})")
        return 0
    if path.exists():
        raise SystemExit(f"source_kernels.py: {path} exists; records are never overwritten (give a new name)")
    if a.k < 1 or a.reps < 1:
        raise SystemExit("source_kernels.py: --k and --reps must be positive integers")
    rec = measure(path, ints(a.ms), ints(a.ns), a.k, a.reps)
    print(table(rec))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
