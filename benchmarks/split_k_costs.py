"""What split_k's second kernel costs (GPU only; run from the repository root). Writes JSON to $OUT (default
/tmp/out) and prints a table last.

1. second launch: an empty kernel, and two empty kernels back to back, each timed as validate times an
   SGEMM (L2 flushed before each repetition, one event pair around the launches): what a second launch
   adds to the timed window (latency.second_launch_us).
2. reduction: split_k at shapes where it pays, timed whole (the kernel, then reduce_splits) and without
   the reduction, beside what the model's reduction_seconds predicts for the difference.
    PYTHONPATH=. python3 benchmarks/split_k_costs.py"""
import json
import math
import os
from pathlib import Path

import numpy as np

from perfmodel import KernelConfig, load_device
from perfmodel.catalogue import split_slices
from perfmodel.measure.detect import match_shipped
from perfmodel.measure.gpu import Gpu, Problem
from perfmodel.measure.timing import do_bench, summarize
from perfmodel.model.predict import reduction_seconds

OUT = Path(os.environ.get("OUT", "/tmp/out"))
OUT.mkdir(parents=True, exist_ok=True)
gpu = Gpu()
device = load_device(match_shipped(gpu.name, gpu.cc) or "h100-sxm")
mod = gpu.compiler.SourceModule('extern "C" __global__ void empty(float* c) {}', no_extern_c=True, options=["-O3"])
empty = mod.get_function("empty")
buf = gpu.drv.mem_alloc(1 << 20)


def bench(fn):
    times, _, _ = do_bench(fn, gpu.flush, gpu.event, gpu.sync, 10.0, 60.0)
    s = summarize(times)
    return dict(median_us=s["median_ms"] * 1e3, q10_us=s["q10_ms"] * 1e3, q90_us=s["q90_ms"] * 1e3, reps=len(times))


def one():
    empty(buf, block=(256, 1, 1), grid=(1, 1, 1))


def two():
    one()
    empty(buf, block=(256, 1, 1), grid=(1, 1, 1))


def two_wide():
    one()
    empty(buf, block=(256, 1, 1), grid=(4 * gpu.sm_count, 1, 1))


res = dict(device=gpu.name, device_file=device.name, launch={}, reduction=[])
for name, fn in (("one empty", one), ("two empty", two), ("empty + empty of 4 x SMs blocks", two_wide)):
    res["launch"][name] = bench(fn)
res["second_launch_us"] = res["launch"]["two empty"]["median_us"] - res["launch"]["one empty"]["median_us"]

CASES = [(512, 512, 16384, dict(splits=8)), (256, 256, 65536, dict(bm=64, bn=64, splits=16)),
         (1024, 1024, 16384, dict(splits=3)), (128, 1024, 65536, dict(bm=64, splits=12)),
         (2048, 2048, 2048, dict(splits=2)), (4096, 4096, 1024, dict(splits=4))]
for M, N, K, params in CASES:
    cfg = KernelConfig.make("split_k", **params)
    prob = Problem(gpu, M, N, K)
    fn = gpu.function(cfg)
    whole = gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, M, N, K)
    prob.poison()
    whole()
    gpu.sync()
    ok, _, how = prob.verify()
    slices = int(split_slices(K, cfg.bk, cfg.k_splits)[0])
    work = gpu.workspace(4 * slices * M * N)
    grid = (math.ceil(N / cfg.bn), math.ceil(M / cfg.bm), slices)
    args = (prob.A, prob.B, work, np.int32(M), np.int32(N), np.int32(K))
    t_whole, t_main = bench(whole), bench(lambda: fn(*args, block=(cfg.threads, 1, 1), grid=grid))
    model = float(reduction_seconds(device, M, N, slices, device.compute.sm_clock_boost_MHz * 1e6)) * 1e6
    res["reduction"].append(dict(config=cfg.label(), M=M, N=N, K=K, slices=slices, verified=bool(ok), verification=how,
                                 whole=t_whole, main=t_main, reduction_us=t_whole["median_us"] - t_main["median_us"],
                                 model_without_second_launch_us=model))
    del prob
(OUT / "split_k_costs.json").write_text(json.dumps(res, indent=1))
print(f"{gpu.name}: median us (q10-q90)")
for name, t in res["launch"].items():
    print(f"  {name:34} {t['median_us']:7.2f} ({t['q10_us']:.2f}-{t['q90_us']:.2f})")
print(f"  second launch adds {res['second_launch_us']:.2f} us")
print("  config                                          shape                slices   whole     main   reduction  model*")
for r in res["reduction"]:
    print(f"  {r['config']:47} {r['M']}x{r['N']}x{r['K']:<7} {r['slices']:>4} {r['whole']['median_us']:8.1f} "
          f"{r['main']['median_us']:8.1f} {r['reduction_us']:8.2f} {r['model_without_second_launch_us']:8.2f} "
          f"{'ok' if r['verified'] else 'WRONG'}")
print("  * the model's reduction_seconds with this device file (second_launch_us as the file has it)")
