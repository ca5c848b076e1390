"""What the state the L2 flush leaves costs the timed kernel (GPU only; run from the repository root). Writes JSON
to $OUT (default /tmp/out) and prints a table last.

Every recorded time flushes the L2 before each repetition with a memset of a buffer twice the L2
(docs/measurement.md): the L2 is then full of dirty lines of that buffer, and it writes back each one it
evicts. A kernel that brings lines into the L2 (reads that miss, its own stores) may therefore wait for
DRAM writes that are not its own. This times each case twice, each time as validate times it (one
event pair around the launches, L2 flushed before each repetition): after the usual memset flush
("dirty"), and after the memset followed by a kernel that reads the whole flush buffer ("clean": the
dirty lines are written back before the timed launch, and the L2 holds clean lines). With --warm also a
third way, "warm": no flush at all, so a problem that fits the L2 finds its A and B there from the previous
repetition and every k-tile's loads hit the L2 (what the one-wave problems' DRAM latency costs them:
docs/model.md "One wave"). cuBLAS at the same shapes is timed the same ways. Every case is verified.

    PYTHONPATH=. python3 benchmarks/flush_state.py                      the default cases
    PYTHONPATH=. python3 benchmarks/flush_state.py --case M,N,K:kernel:key=value,... [--case ...] [--warm]"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

CASES = ["512,2304,768:split_k:bm=64,bn=128,bk=16,tm=8,tn=8,splits=8",
         "512,2304,3072:split_k:bm=64,bn=128,bk=16,tm=8,tn=8,splits=8",
         "512,2304,768:split_k:bm=128,bn=128,bk=8,tm=8,tn=8,splits=4",
         "1023,1023,1023:split_k:bm=32,bn=128,bk=4,tm=16,tn=8,splits=24",
         "768,768,768:split_k:bm=64,bn=128,bk=16,tm=8,tn=8,splits=12",
         "8192,64,4096:split_k:bm=256,bn=64,bk=8,tm=16,tn=8,splits=16",
         "512,512,512:split_k:bm=128,bn=128,bk=8,tm=8,tn=16,splits=16",
         "4096,4096,64:double_buffer:bm=128,bn=128,bk=8,tm=16,tn=8",
         "4096,4096,4096:double_buffer:bm=128,bn=128,bk=8,tm=16,tn=8",
         "8192,8192,64:double_buffer:bm=128,bn=128,bk=8,tm=16,tn=8",
         "1000,1000,1000:double_buffer:bm=128,bn=64,bk=16,tm=8,tn=4,a_transposed=no,frag_width=1,thread_tile=contiguous",
         "256,256,256:tiled_2d:"]

READ = r"""
extern "C" __global__ void read_all(const float4* __restrict__ p, long long n, float* out) {
    float s = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        s += p[i].x + p[i].y + p[i].z + p[i].w;
    if (s == 1234.5f) out[0] = s;  // never true for the zeros the memset wrote; keeps the loads
}
"""


def _case(text: str):
    """M, N, K and the configuration of one --case; ValueError naming what is wrong."""
    from perfmodel.catalogue import KernelConfig

    try:
        shape, kernel, rest = text.split(":", 2)
        M, N, K = (int(x) for x in shape.split(","))
        params = {k: (int(v) if v.isdigit() else v) for k, v in (kv.split("=") for kv in filter(None, rest.split(",")))}
        cfg = KernelConfig.make(kernel, **params)
    except Exception as e:
        raise ValueError(f"--case {text!r}: want M,N,K:kernel:key=value,... ({str(e).splitlines()[0] if str(e) else type(e).__name__})")
    if min(M, N, K) < 1:
        raise ValueError(f"--case {text!r}: M, N and K must be at least 1")
    return M, N, K, cfg


def main(cases, warm=False) -> int:
    from perfmodel.measure.gpu import Gpu, Problem
    from perfmodel.measure.timing import bench_us

    out = Path(os.environ.get("OUT", "/tmp/out"))
    out.mkdir(parents=True, exist_ok=True)
    gpu = Gpu()
    mod = gpu.compiler.SourceModule(READ, no_extern_c=True, options=["-O3"])
    read_all = mod.get_function("read_all")
    dummy = gpu.drv.mem_alloc(4)
    n4 = gpu._flush_words // 4
    import numpy as np

    def clean():
        gpu.flush()
        read_all(gpu._flush, np.int64(n4), dummy, block=(256, 1, 1), grid=(8 * gpu.sm_count, 1, 1))

    def bench(fn, flush):
        return bench_us(fn, flush, gpu.event, gpu.sync, 25.0, 100.0)

    res = dict(device=gpu.name, flush_bytes=4 * gpu._flush_words, warm=bool(warm), cases=[])
    for i, (M, N, K, cfg) in enumerate(cases):
        prob = Problem(gpu, M, N, K)
        run, ok, how = prob.launch_verified(cfg)
        cub = gpu.cublas_launcher(prob.A, prob.B, prob.C, M, N, K)
        row = dict(kernel=cfg.kernel, params=cfg.params(), config=cfg.label(), M=M, N=N, K=K, verified=bool(ok), verification=how)
        states = (("dirty", gpu.flush), ("clean", clean)) + ((("warm", lambda: None),) if warm else ())
        for name, fl in states:
            row[name] = bench(run, fl)
            row["cublas_" + name] = bench(cub, fl)
        res["cases"].append(row)
        print(f"  {i + 1}/{len(cases)} {cfg.label()} {M}x{N}x{K}: {'ok' if ok else 'WRONG'}", flush=True)
        del prob
    (out / "flush_state.json").write_text(json.dumps(res, indent=1))
    print(f"{gpu.name}: median us after the memset flush (dirty L2) and after memset + read (clean L2)"
          + (", and with no flush (warm L2; ratio: dirty / warm)" if warm else ""))
    print(f"  {'configuration':70} {'shape':>16} {'dirty':>9} {'clean':>9} {'ratio':>6}" + (f" {'warm':>9} {'ratio':>6}" if warm else "")
          + f"   cuBLAS {'dirty':>8} {'clean':>8} {'ratio':>6}" + (f" {'warm':>8} {'ratio':>6}" if warm else ""))
    for r in res["cases"]:
        d, c, cd, cc = (r[k]["median_us"] for k in ("dirty", "clean", "cublas_dirty", "cublas_clean"))
        ww = f" {r['warm']['median_us']:9.1f} {d / r['warm']['median_us']:6.3f}" if warm else ""
        cw = f" {r['cublas_warm']['median_us']:8.1f} {cd / r['cublas_warm']['median_us']:6.3f}" if warm else ""
        print(f"  {r['config']:70} {str(r['M']) + 'x' + str(r['N']) + 'x' + str(r['K']):>16} {d:9.1f} {c:9.1f} {d / c:6.3f}{ww}"
              f"          {cd:8.1f} {cc:8.1f} {cd / cc:6.3f}{cw} {'' if r['verified'] else 'WRONG'}")
    return 0 if all(r["verified"] for r in res["cases"]) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", metavar="M,N,K:SPEC",
                    help="a shape and a configuration, e.g. 512,2304,768:split_k:splits=8 (default: twelve cases)")
    ap.add_argument("--warm", action="store_true", help="also time each case with no flush between repetitions")
    a = ap.parse_args()
    try:
        cases = [_case(c) for c in (a.case or CASES)]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(cases, warm=a.warm))
