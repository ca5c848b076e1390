"""What the last partial wave of a grid costs (GPU): configurations with 2, 3, 4 and 6 resident blocks per SM,
each at grids of 0.5 to 3 waves (N = 4 block columns, K = 2048, M chosen for the number of blocks), beside
cuBLAS; every point verified and timed as validate times it. benchmarks/block_dispatch.py shows where the
blocks of a last partial wave go on the GPU (the slots that free first, several to an SM); these points show
what that costs real kernels, and `perfmodel accuracy RUN` replays them with any version of the model's waves
term. Writes results/<date>-<device>-tail-waves/raw.json (a perfmodel Run, group `tail_waves`) and prints a
table last: per configuration, the time at each share of a wave.

    python benchmarks/tail_waves.py
    python benchmarks/tail_waves.py --sms 132   (the SMs the shapes are planned for; default the H100's)
    python benchmarks/tail_waves.py --config SPEC:B [--config SPEC:B ...] --tag TAG
        other configurations (kernel:key=value,...) with their resident blocks per SM B, into
        results/<date>-<device>-TAG"""
from __future__ import annotations

import argparse
import math
import sys

from perfmodel.catalogue import KernelConfig

from grid_measure import measure_shapes

# (configuration, resident blocks per SM that nvcc 13.0's sm_90 build allows: `perfmodel predict ... --json`)
CONFIGS = [(dict(kernel="double_buffer", bm=128, bn=128, bk=8, tm=16, tn=8), 2),
           (dict(kernel="tiled_2d_float4"), 2),
           (dict(kernel="warp_tiled"), 2),
           (dict(kernel="tiled_1d"), 2),
           (dict(kernel="double_buffer", bm=64, bn=128, bk=8, tm=8, tn=8), 3),
           (dict(kernel="tiled_2d", bm=64, bn=64, bk=8, tm=4, tn=4), 4),
           (dict(kernel="double_buffer", bm=64, bn=64, bk=8, tm=8, tn=8), 6)]
WAVES = (0.5, 1.0, 1.06, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0)
COLUMNS = 4  # block columns: N = 4 x bn
K = 2048


def shape(cfg: KernelConfig, b: int, waves: float, sms: int) -> tuple[int, int, int]:
    """M x N x K whose grid is COLUMNS block columns (times split_k's slices) and about waves x sms x b blocks
    (rows rounded up)."""
    slices = cfg.params().get("splits", 1)
    rows = max(1, math.ceil(waves * sms * b / (COLUMNS * slices)))
    return rows * cfg.bm, COLUMNS * cfg.bn, K


def parse_config(text: str) -> tuple[dict, int]:
    """kernel:key=value,...:B -> (the configuration's fields, B)."""
    spec, _, b = text.rpartition(":")
    kernel, _, kv = spec.partition(":")
    fields = dict(kernel=kernel)
    for item in filter(None, kv.split(",")):
        k, _, v = item.partition("=")
        fields[k] = int(v) if v.lstrip("-").isdigit() else v
    return fields, int(b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--config", action="append", help="kernel:key=value,...:B (B: its resident blocks per SM)")
    ap.add_argument("--tag", default="tail-waves")
    a = ap.parse_args()
    configs = [parse_config(c) for c in a.config] if a.config else CONFIGS
    plan: dict = {}
    for spec, b in configs:
        cfg = KernelConfig.make(**spec)
        for w in WAVES:
            s = shape(cfg, b, w, a.sms)
            plan.setdefault(s, []).append(cfg)
    _, ms = measure_shapes(a.tag, "tail_waves", sorted(plan), plan)
    got = {(m.kernel, json_key(m.config), m.M, m.N, m.K): m for m in ms if m.kernel != "cublas"}
    print(f"{'configuration':58} {'b':>2} {'driver b':>8} " + " ".join(f"{w:>7.2f}" for w in WAVES) + "  (us; share of a wave)")
    for spec, b in configs:
        cfg = KernelConfig.make(**spec)
        cells, driver = [], set()
        for w in WAVES:
            m = got.get((cfg.kernel, json_key(cfg.params()), *shape(cfg, b, w, a.sms)))
            ok = m is not None and m.verified and m.timing
            cells.append(f"{m.timing.median_ms * 1e3:7.1f}" if ok else f"{'failed':>7}")
            if m is not None and m.driver_blocks_per_sm:
                driver.add(m.driver_blocks_per_sm)
        print(f"{cfg.label():58} {b:>2} {','.join(map(str, sorted(driver))):>8} " + " ".join(cells))
    return 0


def json_key(params: dict) -> str:
    return ",".join(f"{k}={params[k]}" for k in sorted(params))


if __name__ == "__main__":
    sys.exit(main())
