"""Measure a kernel's whole search space on corpus shapes (GPU), once, for the comparison of model-guided
tuning with Kernel Tuner's strategies (benchmarks/kernel_tuner_compare.py, CPU).

    python benchmarks/kernel_tuner_space.py --kernel split_k --shapes NAME[,NAME...] [--out RUN] [--seconds S]

Every valid configuration of the kernel (catalogue.enumerate_configs on the detected device, its own design
choices) on every shape, each verified and timed (do_bench, budgets --warmup-ms/--rep-ms), beside cuBLAS.
Writes results/<date>-<device>-space-<kernel>/: raw.json.xz (a perfmodel Run, group 'space'), and per shape
kernel_tuner/<shape>.json.xz, a Kernel Tuner cache file (packed; problem_size (N, M, K) as `perfmodel sweep
--kernel-tuner` writes it) (objective time in ms, GFLOP/s as a metric; a
configuration that failed is a RuntimeFailedConfig), which Kernel Tuner's simulation mode replays. A shape
finished is written at once; `--out RUN` of an unfinished run measures only the shapes it lacks."""
from __future__ import annotations

import argparse
import json
import lzma
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from perfmodel.catalogue import VALUES, enumerate_configs, get_kernel
from perfmodel.devices import load_device, shipped_devices
from perfmodel.measure import build
from perfmodel.measure.detect import match_shipped
from perfmodel.measure.gpu import Gpu, Problem, compile_all, measure_compiled, measure_point
from perfmodel.measure.nvml import NvmlSampler
from perfmodel.measure.records import Measurement, Run, pack_record
from perfmodel.measure.validate import device_toml
from perfmodel.measure.worker import environment
from perfmodel.shapes import corpus

KT_KERNEL = "sgemm"  # the kernel's function name in every source


def tune_params(kernel: str) -> dict:
    """{parameter: values} of the kernel's search space, in the manifest's parameter order."""
    return {p: list(VALUES[p]) for p in get_kernel(kernel).params}


def cache_entry(params: dict, m: Measurement, keys: list[str]) -> dict:
    e = {k: params[k] for k in keys}
    if m.verified:
        e.update(time=m.timing.median_ms, times=m.timing.times_ms, **{"GFLOP/s": m.gflops_median},
                 compile_time=0.0, verification_time=0.0, benchmark_time=sum(m.timing.times_ms), strategy_time=0,
                 framework_time=0.0, timestamp=datetime.now(timezone.utc).isoformat())
    else:
        e.update(time="RuntimeFailedConfig", compile_time=0.0, verification_time=0.0, benchmark_time=0.0, strategy_time=0,
                 framework_time=0.0, timestamp=datetime.now(timezone.utc).isoformat())
    return e


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--shapes", required=True, help="corpus shape names, separated by commas")
    ap.add_argument("--out", help="results folder (default results/<date>-<device>-space-<kernel>); an unfinished one is continued")
    ap.add_argument("--warmup-ms", type=float, default=10.0)
    ap.add_argument("--rep-ms", type=float, default=40.0)
    ap.add_argument("--seconds", type=float, default=1e9, help="stop after the shape that ends past this many seconds")
    a = ap.parse_args(argv)
    by_name = {s.name: s for s in corpus()}
    names = a.shapes.split(",")
    for n in names:
        if n not in by_name:
            print(f"error: no corpus shape '{n}'", file=sys.stderr)
            return 2
    t0 = time.time()
    gpu = Gpu()
    dev = match_shipped(gpu.name, gpu.cc)
    device = load_device(dev)
    started = datetime.now(timezone.utc)
    out = Path(a.out) if a.out else Path("results") / f"{started:%Y%m%d-%H%M%S}-{dev}-space-{a.kernel.replace('_', '-')}"
    (out / "kernel_tuner").mkdir(parents=True, exist_ok=True)
    configs, _, _ = enumerate_configs(device, (a.kernel,), choices=False)
    keys = list(tune_params(a.kernel))
    print(f"{gpu.name}: {len(configs)} configurations of {a.kernel} x {len(names)} shapes -> {out}", flush=True)
    binaries = {}  # one build per binary: split_k's splits is a launch parameter
    for c in configs:
        binaries.setdefault(tuple(build.defines(c)), c)
    built = compile_all(gpu, {c.label(): c for c in binaries.values()})
    cubins = {c.label(): built[binaries[tuple(build.defines(c))].label()] for c in configs}
    try:
        sampler = NvmlSampler()
    except Exception:
        sampler = None
    for name in names:
        cache_file = out / "kernel_tuner" / f"{name}.json.xz"
        part = out / f"points-{name}.jsonl"
        if cache_file.exists():
            continue
        sh = by_name[name]
        prob = Problem(gpu, sh.M, sh.N, sh.K)
        ms = [measure_point(gpu, prob, None, "baseline", sampler, a.warmup_ms, a.rep_ms).model_copy(update={"shape": name})]
        cache = {}
        for i, c in enumerate(configs, 1):
            m = measure_compiled(gpu, prob, c, "space", sampler, a.warmup_ms, a.rep_ms, cubins).model_copy(update={"shape": name})
            ms.append(m)
            params = c.params()
            cache[",".join(str(params[k]) for k in keys)] = cache_entry(params, m, keys)
            if i % 50 == 0 or i == len(configs):
                print(f"  {name}: {i}/{len(configs)} ({time.time() - t0:.0f} s)", flush=True)
        part.write_text("".join(m.model_dump_json() + "\n" for m in ms))
        cache_file.write_bytes(lzma.compress(json.dumps(dict(
            device_name=gpu.name, kernel_name=KT_KERNEL, problem_size=[sh.N, sh.M, sh.K], tune_params_keys=keys,
            tune_params=tune_params(a.kernel), objective="time", cache=cache), indent=0).encode(), preset=9))
        best = max((m for m in ms[1:] if m.verified), key=lambda m: m.gflops_median)
        print(f"  {name}: best {best.gflops_median:,.0f} GFLOPS {best.config}, cuBLAS {ms[0].gflops_median:,.0f}; "
              f"{sum(not m.verified for m in ms)} failed", flush=True)
        del prob
        if time.time() - t0 > a.seconds:
            break
    if all((out / "kernel_tuner" / f"{n}.json.xz").exists() for n in names):
        allm = [Measurement.model_validate_json(line) for n in names for line in (out / f"points-{n}.jsonl").read_text().splitlines()]
        run = Run(environment=environment(gpu, dev, started), device_toml=device_toml(shipped_devices()[dev]), measurements=allm)
        (out / "raw.json").write_text(run.model_dump_json(indent=1))
        pack_record(out)
        for n in names:
            (out / f"points-{n}.jsonl").unlink()
    print(f"{'shape':28} {'configs':>7} {'best GFLOPS':>12}")
    for n in names:
        f = out / "kernel_tuner" / f"{n}.json.xz"
        if f.exists():
            c = json.loads(lzma.decompress(f.read_bytes()))["cache"]
            ok = [v["GFLOP/s"] for v in c.values() if isinstance(v["time"], float)]
            print(f"{n:28} {len(c):7d} {max(ok):12,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
