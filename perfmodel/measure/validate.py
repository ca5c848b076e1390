"""`perfmodel validate`: measure the ladder and a config sweep on the local GPU, verify every
point, time it beside cuBLAS, write a new results folder (raw.json, summary.csv/json, report)."""
from __future__ import annotations

import platform
import random
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from ..analysis import run_figures, write_derived
from ..catalogue import KernelConfig, enumerate_configs, kernel_ids, tiled_kernels
from ..devices import load_device, shipped_devices
from ..errors import UserError
from . import build
from .calibrate import measured_toml, run_microbenchmarks
from .detect import match_shipped, write_from_driver
from .gpu import Gpu, Problem, compile_all, measure_point
from .ncu import run_ncu
from .nvml import NvmlSampler
from .records import Environment, Measurement, Run

LADDER_SIZES = (1024, 2048, 4096, 8192)
SWEEP_SIZE = 4096
SWEEP_TOTAL = 104


def sweep_sample(device, total: int = SWEEP_TOTAL, seed: int = 0) -> list[KernelConfig]:
    """A fixed random sample of valid tiled configs, stratified by kernel (equal shares; a kernel with
    fewer valid configs gives all it has and the rest is shared out), defaults excluded."""
    rng = random.Random(seed)
    pools = {}
    for k in tiled_kernels():
        valid, _, _ = enumerate_configs(device, (k,))
        default = KernelConfig.make(k)
        pools[k] = [c for c in valid if c != default]
    out, left = [], total
    for i, k in enumerate(sorted(pools, key=lambda k: len(pools[k]))):
        share = min(len(pools[k]), left // (len(pools) - i))
        out += rng.sample(pools[k], share)
        left -= share
    return out


def plan(device, quick: bool, seed: int = 0):
    """[(group, cfg or None for cuBLAS, size)] in execution order (grouped by size)."""
    pts = []
    sizes = (2048,) if quick else LADDER_SIZES
    for s in sizes:
        pts.append(("baseline", None, s))
        pts += [("ladder", KernelConfig.make(k), s) for k in kernel_ids()]
    if not quick:
        pts += [("sweep", c, SWEEP_SIZE) for c in sweep_sample(device, seed=seed)]
    return pts


def _nvcc_version() -> str:
    nvcc = build.find_nvcc()
    if not nvcc:
        return "unknown"
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return out[-1] if out else "unknown"


def env_device_name(name: str) -> str:
    return Path(name).stem if Path(name).stem in shipped_devices() else name


def environment(gpu, device_file: str, started, driver: str | None = None) -> Environment:
    """What every results folder records about the machine, toolchain and flags."""
    import pycuda

    if driver is None:
        try:
            driver = NvmlSampler().driver_version()
        except Exception:
            driver = "unknown"
    return Environment(gpu_name=gpu.name, compute_capability=gpu.cc, sm_count=gpu.sm_count, l2_bytes=gpu.l2_bytes,
                       driver_version=driver, cuda_driver_api=_cuda_version(gpu.drv.get_driver_version()),
                       nvcc_version=_nvcc_version(), pycuda_version=pycuda.VERSION_TEXT,
                       nvcc_flags=build.NVCC_FLAGS + [f"-arch={gpu.arch}"], device_file=device_file,
                       hostname=platform.node(), started_utc=started.isoformat(), kernel_sources_sha256=build.sources_sha256())


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def validate(out: Path | None = None, quick: bool = False, seed: int = 0, ncu: bool = False) -> int:
    """Measure the ladder (and, unless quick, a random sample of configs) on the local GPU into a new
    results folder (default results/DATE-DEVICE[-quick][-seedN]); 1 if any point failed."""
    started = datetime.now(timezone.utc)
    root = Path.cwd() / "results"
    gpu = Gpu()
    name = match_shipped(gpu.name, gpu.cc)
    out = out or root / f"{started:%Y%m%d-%H%M%S}-{name or 'gpu'}{'-quick' if quick else ''}{f'-seed{seed}' if seed else ''}"
    if out.exists():
        raise UserError(f"{out} exists; results are never overwritten (choose another --out)")
    out.mkdir(parents=True)
    if name:
        dev_path = shipped_devices()[name]
    else:
        dev_path = write_from_driver(gpu, out / "device.toml")
        name = str(dev_path)
    device = load_device(name)
    if Path(name).stem in shipped_devices():  # device figures measured now, kept beside the raw data
        print("calibrating (microbenchmarks) ...")
        (out / "calibration.toml").write_text(measured_toml(Path(name).stem, gpu.name, run_microbenchmarks(gpu)))
    try:
        sampler = NvmlSampler()
        driver = sampler.driver_version()
    except Exception as exc:  # NVML missing: timings still valid, clock from the device file
        print(f"warning: NVML unavailable ({exc}); SM clock not sampled", file=sys.stderr)
        sampler, driver = None, "unknown"
    env = environment(gpu, env_device_name(name), started, driver)
    points = plan(device, quick, seed)
    print(f"{gpu.name} ({gpu.cc}, {gpu.sm_count} SMs) -> device file {env.device_file}; {len(points)} points -> {out}")

    # compile every distinct config in parallel (nvcc runs as subprocesses)
    cubins = compile_all(gpu, {c.label(): c for _, c, _ in points if c is not None})

    warm, rep = (10.0, 40.0) if quick else (25.0, 100.0)
    measurements, failed = [], 0
    probs: dict = {}
    for i, (group, cfg, s) in enumerate(points, 1):
        if s not in probs:
            probs.clear()
            probs[s] = Problem(gpu, s, s, s)
        cub = cubins.get(cfg.label()) if cfg else None
        if cfg is not None and cub is None:
            m = Measurement(kernel=cfg.kernel, config=cfg.params(), group=group, M=s, N=s, K=s, verified=False,
                            verification="error", error="compile failed")
        else:
            m = measure_point(gpu, probs[s], cfg, group, sampler, warm, rep, cubin=cub)
        measurements.append(m)
        failed += not m.verified
        label = "cublas" if cfg is None else cfg.label()
        res = f"{m.gflops_median:9,.0f} GFLOPS" if m.verified else f"FAILED ({m.verification}{': ' + m.error if m.error else ''})"
        print(f"  [{i:3d}/{len(points)}] {s:5d} {label:70s} {res}", flush=True)

    run = Run(environment=env, device_toml=dev_path.read_text(), measurements=measurements)
    (out / "raw.json").write_text(run.model_dump_json(indent=1))
    if ncu:
        print("profiling the ladder with ncu ...")
        probs.clear()
        run_ncu(out)
    fig = run_figures(out)
    derived = write_derived(out, out, fig)
    try:
        from ..report.reports import write_report  # matplotlib

        write_report(out, out, derived, fig.device)
    except ImportError as exc:
        print(f"warning: no plots ({exc})", file=sys.stderr)
    s = derived["summary"]
    print(f"\n{'kernel':20} {'size':>5} {'measured':>10} {'predicted':>10} {'err%':>7} {'%cuBLAS':>8}  bound")
    for r in derived["rows"]:
        if r["group"] != "sweep" and r.get("measured_gflops"):
            print(f"{r['kernel']:20} {r['M']:5d} {r['measured_gflops']:10,.0f} {r.get('predicted_gflops') or 0:10,.0f} "
                  f"{r.get('error_pct') or 0:7.1f} {r.get('pct_of_cublas') or 0:8.1f}  {r.get('bound', '')}")
    print(f"points {s['points']}, failed {s['failed']}, MAPE {s['mape_pct']:.1f} %, Spearman all {s.get('spearman_all', float('nan')):.3f}, "
          f"sweep {s.get('spearman_sweep', float('nan')):.3f}; results in {out}")
    return 1 if failed else 0
