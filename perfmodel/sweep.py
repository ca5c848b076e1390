"""`perfmodel sweep`: enumerate every legal tile configuration, predict all, rank them."""
from __future__ import annotations

import itertools
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from .catalogue import KernelConfig, ParamProbe, get_kernel
from .model import smem_banks
from .model import predict_batch
from .model.occupancy import LIMITERS
from .model.terms import TERMS
from .paths import write_json_atomic

TILED = ("smem_tiled", "tiled_1d", "tiled_2d", "tiled_2d_float4", "bank_conflict_free", "double_buffer", "warp_tiled")
VALUES = {
    "bm": (16, 32, 64, 128, 256), "bn": (16, 32, 64, 128, 256), "bk": (4, 8, 16, 32, 64),
    "tm": (1, 2, 4, 8, 16), "tn": (1, 2, 4, 8, 16), "wm": (16, 32, 64, 128), "wn": (16, 32, 64, 128),
    "wn_iter": (1, 2, 4, 8),
}


def enumerate_configs(device, kernels=TILED):
    """All parameter combinations of the given kernels -> (valid configs, Counter of invalid configs
    by the first constraint they violate, number considered)."""
    valid, why, total = [], Counter(), 0
    for kid in kernels:
        spec = get_kernel(kid)
        names = [p for p in spec.params if p in VALUES]
        for combo in itertools.product(*(VALUES[n] for n in names)):
            params = dict(zip(names, combo))
            if kid == "smem_tiled" and not (params["bm"] == params["bn"] == params["bk"]):
                continue  # one parameter in effect: bm = bn = bk
            total += 1
            probe = ParamProbe(spec, params)
            problems = probe.violations() or probe.device_violations(device)
            if problems:
                why[problems[0][0]] += 1
            else:
                valid.append(probe.config())
    return valid, why, total


def _digest(paths, text: str = "") -> str:
    import hashlib

    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    h.update(text.encode())
    return h.hexdigest()


def _cache_file(kind: str, key: str) -> Path | None:
    try:
        from .measure.build import cache_dir

        return cache_dir() / f"sweep-{kind}-{key[:24]}.json"
    except OSError:  # unwritable home: no cache, same results
        return None


def cached_enumeration(device, kernels=TILED):
    """`enumerate_configs`, cached on disk (PERFMODEL_CACHE or ~/.cache/perfmodel). The key hashes
    everything the result depends on: the device's figures, the kernel list, VALUES, the kernel
    manifest and catalogue.py's checks; any change is a new entry, so a hit equals a recomputation."""
    from . import catalogue
    from .paths import data_dir

    key = _digest([catalogue.__file__, data_dir("kernels") / "manifest.toml"],
                  device.model_dump_json() + json.dumps([list(kernels), VALUES]))
    path = _cache_file("configs", key)
    if path is not None and path.exists():
        try:
            d = json.loads(path.read_text())
            configs = [KernelConfig.model_construct(**c) for c in d["valid"]]
            return configs, Counter(d["why"]), d["total"]
        except (ValueError, KeyError, TypeError):
            pass  # damaged entry: recompute and rewrite
    configs, why, total = enumerate_configs(device, kernels)
    full = {k: None for k in ("bm", "bn", "bk", "tm", "tn", "wm", "wn", "wn_iter")}
    write_json_atomic(path, dict(valid=[{**full, "kernel": c.kernel, **{k: getattr(c, k) for k in full}} for c in configs],
                                 why=dict(why), total=total))
    return configs, why, total


def _binary_inputs(job):
    from .measure.sass import binary_inputs

    return binary_inputs(*job)


def refine_with_binaries(dev, configs, bt, M, N, K, figures: str, top: int, quiet: bool = False):
    """Predicted GFLOPS with the closed form's top `top` re-predicted from their binaries: the compiler's
    registers and local frame, the prefetch share and the simulated k-tile loop (model.schedule). Compiles
    in parallel with the local nvcc (cached on disk). Returns (gflops array, set of refined indices); the
    closed form's array unchanged where no compiler can target the device."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    from .measure import build, sass

    g = np.array(bt.gflops, dtype=float)
    if top <= 0 or not sass.available() or build.arch_of(dev.compute_capability) < build.MIN_ARCH:
        if top > 0 and not quiet:
            print("note: no nvcc/nvdisasm for this device here: ranking by the closed form only", file=sys.stderr)
        return g, set()
    idx = [int(i) for i in np.argsort(-g)[:top]]
    t0 = time.perf_counter()
    res = []
    with ProcessPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
        for j, r in enumerate(pool.map(_binary_inputs, [(configs[i], dev.compute_capability) for i in idx]), 1):
            res.append(r)
            if not quiet:
                print(f"\r  compiled and simulated {j}/{len(idx)} of the top configurations ({time.perf_counter() - t0:.0f} s)",
                      end="", file=sys.stderr, flush=True)
    if not quiet:
        print(file=sys.stderr)
    keep = [(i, bi) for i, bi in zip(idx, res) if bi is not None]
    if not keep:
        return g, set()
    rb = predict_batch(dev, [configs[i] for i, _ in keep], M, N, K, registers=[bi["registers"] for _, bi in keep],
                       local_bytes=[bi["local_bytes"] for _, bi in keep], figures=figures,
                       prefetch=[1.0 if bi["prefetch"] is None else bi["prefetch"] for _, bi in keep],
                       local_tile_bytes=[np.nan if bi["local_tile_bytes"] is None else bi["local_tile_bytes"] for _, bi in keep],
                       programs=[bi["program"] for _, bi in keep])
    for k, (i, _) in enumerate(keep):
        g[i] = rb.gflops[k]
    return g, {i for i, _ in keep}


def cmd_sweep(a) -> int:
    from .cli import _size
    from .devices import load_device
    from .errors import UserError

    from .devices import attach_calibration

    dev = load_device(a.device)
    figures = "datasheet"
    if a.calibration:
        dev, figures = attach_calibration(dev, a.calibration), "measured"
    kernels = a.kernel or list(TILED)
    for k in kernels:
        get_kernel(k)
        if k not in TILED:
            raise UserError(f"sweep covers the tiled kernels ({', '.join(TILED)}); '{k}' has no tile parameters to sweep")
    M, N, K = _size(a)
    t0 = time.perf_counter()
    configs, why, total = cached_enumeration(dev, kernels)
    smem_banks.load_disk_cache(_cache_file("smem", smem_banks.code_hash()))
    bt = predict_batch(dev, configs, M, N, K, figures=figures)
    smem_banks.save_disk_cache(_cache_file("smem", smem_banks.code_hash()))
    dt = time.perf_counter() - t0
    if a.measure:  # fail on a machine without a GPU before compiling anything
        from .measure.gpu import _import_pycuda

        _import_pycuda()
    gflops, refined = refine_with_binaries(dev, configs, bt, M, N, K, figures, a.sass, quiet=bool(a.json or a.csv))
    order = np.argsort(-gflops)
    peak = dev.peak_fp32_GFLOPS()
    rows = []
    for rank, i in enumerate(order[: a.top], 1):
        c = configs[i]
        rows.append(dict(rank=rank, kernel=c.kernel, **{k: getattr(c, k) for k in ("bm", "bn", "bk", "tm", "tn", "wm", "wn", "wn_iter")},
                         threads=c.threads, registers_est=int(bt.extra["regs"][i]), gflops=round(float(gflops[i]), 1),
                         from_binary=i in refined, pct_of_peak=round(float(gflops[i] / peak * 100), 2), blocks_per_sm=int(bt.blocks_per_sm[i]),
                         occupancy_pct=round(float(bt.occupancy[i] * 100), 1), limiter=LIMITERS[int(bt.limiter[i])],
                         bound=TERMS[int(bt.bound[i])]))
    if a.measure:
        from .measure.tune import measure_sweep  # GPU path

        return measure_sweep(dev, configs, gflops, M, N, K, a.measure, sample=a.sample, seed=a.seed)
    if a.json:
        print(json.dumps(dict(device=dev.name, M=M, N=N, K=K, considered=total, valid=len(configs),
                              invalid_by_constraint=dict(why), seconds=dt, top=rows), indent=2))
        return 0
    if a.csv:
        import csv

        w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["rank"])
        w.writeheader()
        w.writerows(rows)
        return 0
    print(f"{dev.name} ({figures} figures), M={M} N={N} K={K}: {total} configurations considered, {len(configs)} valid, "
          f"{total - len(configs)} invalid; predicted in {dt:.2f} s"
          + (f"; the top {len(refined)} re-predicted from their binaries (compiler registers, simulated k-tile loop; "
             f"marked b)" if refined else ""))
    for name, n in why.most_common():
        print(f"  invalid: {n:6d} first violate {name}")
    print(f"{'#':>3} {'kernel':18} {'bm':>4} {'bn':>4} {'bk':>3} {'tm':>3} {'tn':>3} {'wm':>4} {'wn':>4} {'wni':>3} "
          f"{'GFLOPS':>9} {'%peak':>6} {'occ%':>5} {'limiter':>13} {'bound':>8}")
    for r in rows:
        f = lambda v: "-" if v is None else str(v)  # noqa: E731
        print(f"{r['rank']:3d} {r['kernel']:18} {r['bm']:4d} {r['bn']:4d} {f(r['bk']):>3} {f(r['tm']):>3} {f(r['tn']):>3} "
              f"{f(r['wm']):>4} {f(r['wn']):>4} {f(r['wn_iter']):>3} {r['gflops']:9,.0f} {r['pct_of_peak']:6.1f} "
              f"{r['occupancy_pct']:5.1f} {r['limiter']:>13} {r['bound']:>8}{' b' if r['from_binary'] else ''}")
    return 0
