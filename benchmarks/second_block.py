"""What a second resident block buys tiled_2d: the shipped kernel (one block an SM: 174-188 registers on
sm_90) against the same source built for two blocks (benchmarks/ab/05_tiled_2d_min_blocks.cu:
__launch_bounds__(NT, 2), 128 registers), predicted and measured.

  python3 benchmarks/second_block.py predict DEVICE CALIBRATION [SPEC ...]  # CPU, nvcc: the model's GFLOPS of both builds
  python3 benchmarks/second_block.py time OUT.json [SPEC ...]                 # GPU: both builds timed, interleaved, verified

SPEC is `tiled_2d[:k=v,...]` (default: tiled_2d's defaults and bk = 16); sizes M = N = K of
SECOND_BLOCK_SIZES (default 2048,4096,8192). `predict` builds both binaries for the device of the
calibration and predicts each from its own facts (registers, spills, k-tile loop); `time` takes three
interleaved rounds of each and cuBLAS once per size and prints medians."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from perfmodel.catalogue import KernelConfig

ROOT = Path(__file__).resolve().parent.parent
VARIANT = ROOT / "benchmarks" / "ab" / "05_tiled_2d_min_blocks.cu"
SIZES = [int(s) for s in os.environ.get("SECOND_BLOCK_SIZES", "2048,4096,8192").split(",")]
DEFAULT_SPECS = ["tiled_2d", "tiled_2d:bk=16"]


def parse(spec: str) -> KernelConfig:
    kernel, _, rest = spec.partition(":")
    if kernel != "tiled_2d":
        raise SystemExit(f"{spec}: only tiled_2d has a two-block build here")
    kw = {}
    for kv in filter(None, rest.split(",")):
        k, v = kv.split("=")
        kw[k] = int(v)
    return KernelConfig.make(kernel, **kw)


def variant_facts(cfg: KernelConfig, compute_capability: str):
    """BuildFacts of the two-block build, read from its own cubin as facts.compiled reads the shipped one."""
    from perfmodel import facts
    from perfmodel.measure import build, sass, toolchain

    tc = build.toolchain_for(compute_capability)
    cubin, report = tc.compile(VARIANT, cfg.label(), build.defines(cfg), build.arch_of(compute_capability),
                               ROOT / "kernels")
    use = toolchain.resource_usage(report)
    f = sass.facts_of_cubin(cubin) or {}
    return facts.BuildFacts(registers=use["registers"], registers_source=f"{tc.label}, two-block build (spills {use['spill_stores']} B)",
                            local_bytes=use["stack_frame"], local_tile_bytes=sass.local_bytes_per_tile(f, cfg) if use["stack_frame"] else None,
                            program=f.get("loop_program"), edge_program=f.get("edge_loop_program"), origin="compiler")


def predict_mode(device: str, calibration: str, specs: list[str]) -> int:
    from perfmodel import facts
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import predict

    fig = Figures.load(device, calibration)
    cc = fig.device.compute_capability
    print(f"| configuration | build | registers | spills | blocks/SM | {' | '.join(f'{s}³ GFLOPS' for s in SIZES)} |")
    print("|---|---|---|---|---|" + "---|" * len(SIZES))
    for spec in specs:
        cfg = parse(spec)
        builds = {"shipped": facts.for_config(cfg, cc), "two-block": variant_facts(cfg, cc)}
        gf = {}
        for name, b in builds.items():
            ps = [predict(fig, cfg, S, S, S, build=b) for S in SIZES]
            gf[name] = [p.gflops for p in ps]
            print(f"| {cfg.label()} | {name} | {b.registers} | {b.local_bytes} B | {ps[0].occupancy.blocks_per_sm} | "
                  + " | ".join(f"{g:,.0f}" for g in gf[name]) + " |")
        print(f"| {cfg.label()} | two-block / shipped | | | | " + " | ".join(f"{a / b:.3f}" for a, b in zip(gf['two-block'], gf['shipped'])) + " |")
    return 0


def time_mode(out: str, specs: list[str]) -> int:
    from perfmodel.measure import build
    from perfmodel.measure.gpu import Gpu, Problem, measure_point
    from perfmodel.paths import data_dir

    if Path(out).exists():
        raise SystemExit(f"{out} exists: a new file only")
    gpu = Gpu()
    rows = []
    for spec in specs:
        cfg = parse(spec)
        bins = {"shipped": gpu.cubin(cfg),
                "two-block": gpu.compiler.compile(VARIANT.read_text(), options=build.NVCC_FLAGS + build.defines(cfg), arch=gpu.arch,
                                                  include_dirs=[str(data_dir("kernels"))], no_extern_c=True)}
        for S in SIZES:
            prob = Problem(gpu, S, S, S)
            cub = measure_point(gpu, prob, None, "second_block", rep_ms=100)
            res = {name: [] for name in bins}
            for _ in range(3):  # interleaved against drift
                for name, b in bins.items():
                    gpu._modules.clear()
                    m = measure_point(gpu, prob, cfg, "second_block", rep_ms=100, cubin=b)
                    if not m.verified:
                        raise SystemExit(f"{cfg.label()} {name} at {S}: not verified ({m.verification})")
                    res[name].append(m)
            for name, ms in res.items():
                g = sorted(m.gflops_median for m in ms)
                rows.append(dict(config=cfg.label(), build=name, size=S, registers=ms[0].registers, spill_bytes=ms[0].spill_bytes,
                                 driver_blocks_per_sm=ms[0].driver_blocks_per_sm, gflops=[m.gflops_median for m in ms],
                                 gflops_median=g[1], cublas_gflops=cub.gflops_median))
                print(f"{cfg.label()} {name:9s} {S:5d} regs {ms[0].registers} spills {ms[0].spill_bytes} B blocks/SM "
                      f"{ms[0].driver_blocks_per_sm}: {g[1]:,.0f} GFLOPS (rounds {g[0]:,.0f}-{g[2]:,.0f}), cuBLAS {cub.gflops_median:,.0f}",
                      flush=True)
    Path(out).write_text(json.dumps(dict(sizes=SIZES, rows=rows), indent=1))
    print("| configuration | size | shipped | two-block | ratio |")
    print("|---|---|---|---|---|")
    for spec in specs:
        lab = parse(spec).label()
        for S in SIZES:
            a = next(r for r in rows if r["config"] == lab and r["size"] == S and r["build"] == "shipped")
            b = next(r for r in rows if r["config"] == lab and r["size"] == S and r["build"] == "two-block")
            print(f"| {lab} | {S} | {a['gflops_median']:,.0f} | {b['gflops_median']:,.0f} | {b['gflops_median'] / a['gflops_median']:.3f} |")
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("predict", "time"):
        print("usage: second_block.py predict DEVICE CALIBRATION [SPEC ...] | time OUT.json [SPEC ...]", file=sys.stderr)
        return 2
    if argv[0] == "predict":
        if len(argv) < 3:
            print("usage: second_block.py predict DEVICE CALIBRATION [SPEC ...]", file=sys.stderr)
            return 2
        return predict_mode(argv[1], argv[2], argv[3:] or DEFAULT_SPECS)
    if len(argv) < 2:
        print("usage: second_block.py time OUT.json [SPEC ...]", file=sys.stderr)
        return 2
    return time_mode(argv[1], argv[2:] or DEFAULT_SPECS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
