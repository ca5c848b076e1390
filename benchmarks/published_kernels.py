"""The published points' own tiled kernels (published/sgemm.toml, `[point.binary]`) run on the local GPU and
predicted for it: does the catalogue kernel's loop with the source binary's registers (how
`perfmodel accuracy --published` predicts them) predict those kernels where they can be measured?

  python3 benchmarks/published_kernels.py predict REPOS_DIR DEVICE CALIBRATION  # CPU, nvcc: the predictions, before measuring
  python3 benchmarks/published_kernels.py time REPOS_DIR OUT.json               # GPU: each kernel at 4096^3, verified, timed
  python3 benchmarks/published_kernels.py score REPOS_DIR DEVICE CALIBRATION RECORD.json  # CPU, nvcc: predicted vs measured

REPOS_DIR holds a clone of each source repository as for benchmarks/published_binaries.py. Each kernel is
built for the GPU's architecture from its source file at the pinned commit (the same wrapper), launched
with the grid, block and argument order of the source's own runner (LAUNCH below), alpha = 1 and beta = 0
into a zeroed C, checked against a float64 product (the shape's sampled rows and columns) and timed like
validate's points (L2 flushed between launches). `score` predicts each with the figures of DEVICE and
CALIBRATION three ways: with the catalogue kernel's facts; with the source binary's registers and stack
(as the GPU's build reported them, in the record) in place of the catalogue's; and by the published
points' rule (published.source_build: the source's registers only where its k-tile loop, in this
machine's build for the same architecture, is unrolled)."""
from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import published_binaries as pb  # noqa: E402

SIZE = 4096
# (source id, entry) -> (argument order, block, grid as (dimension, tile) for x and y), from each source's runner
SIBOEHM = "M N K alpha A B beta C"
LAUNCH = {
    ("vlejd-a100-pcie", "sgemm_shared_mem_block<32>"): (SIBOEHM, (1024, 1), (("M", 32), ("N", 32))),
    ("vlejd-a100-pcie", "sgemm1DBlocktiling<64, 64, 8, 8>"): (SIBOEHM, (512, 1), (("N", 64), ("M", 64))),
    ("vlejd-a100-pcie", "sgemm2DBlocktiling<128, 128, 8, 8, 8>"): (SIBOEHM, (256, 1), (("N", 128), ("M", 128))),
    ("vlejd-a100-pcie", "sgemmVectorize<128, 128, 8, 8, 8>"): (SIBOEHM, (256, 1), (("N", 128), ("M", 128))),
    ("vlejd-a100-pcie", "sgemmAutotuned<128, 128, 16, 8, 8>"): (SIBOEHM, (256, 1), (("N", 128), ("M", 128))),
    ("vlejd-a100-pcie", "sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>"): (SIBOEHM, (128, 1), (("N", 128), ("M", 128))),
    ("swayam-a100", "sgemm_shared_mem_kernel_1D_TB<32u>"): ("M N K A B C alpha beta", (1024, 1), (("N", 32), ("M", 32))),
    ("swayam-a100", "shared_mem_1D_block_tiling_1D_TB<64, 64, 8, 8>"): (SIBOEHM, (512, 1), (("N", 64), ("M", 64))),
    ("swayam-a100", "shared_mem_2D_block_tiling_1D_TB<128, 128, 8, 8, 8>"): (SIBOEHM, (256, 1), (("N", 128), ("M", 128))),
    ("annanyapr-rtx4090", "gemm_2D_blocktiling"): (SIBOEHM, (64, 1), (("M", 64), ("N", 64))),
    ("leonyz-rtx4060-laptop", "sgemm_shared_mem_block<32>"): (SIBOEHM, (1024, 1), (("M", 32), ("N", 32))),
    ("leonyz-rtx4060-laptop", "sgemm1DBlocktiling<64, 64, 8, 8>"): (SIBOEHM, (512, 1), (("N", 64), ("M", 64))),
    ("leonyz-rtx4060-laptop", "sgemm2DBlocktiling<128, 128, 8, 8, 8>"): (SIBOEHM, (256, 1), (("N", 128), ("M", 128))),
    ("tingwei-rtx3070ti", "sgemm_shared_kernel"): ("A B C M N K alpha beta", (16, 16), (("N", 16), ("M", 16))),
    ("tingwei-rtx3070ti", "sgemm_tile2d_kernel"): ("A B C M N K alpha beta", (16, 16), (("N", 128), ("M", 128))),
    ("tingwei-rtx3070ti", "sgemm_register_kernel"): ("A B C M N K alpha beta", (16, 16), (("N", 128), ("M", 128))),
    ("tingwei-rtx3070ti", "sgemm_float4_kernel"): ("A B C M N K alpha beta", (16, 16), (("N", 128), ("M", 128))),
    ("tingwei-rtx3070ti", "sgemm_float4_tuning_kernel<128, 64, 8, 8, 16>"): ("A B C M N K alpha beta", (16, 8), (("N", 128), ("M", 64))),
}


def points():
    """The published points LAUNCH covers, one per (source, entry): (point, source)."""
    from perfmodel.published import load

    data = load()
    src = {s.id: s for s in data.source}
    seen, out = set(), []
    for pt in data.point:
        key = (pt.source, pt.binary.entry)
        if key in LAUNCH and key not in seen:
            seen.add(key)
            out.append((pt, src[pt.source]))
    return out


def _nvcc() -> str:
    """The local nvcc, or exit naming what is missing."""
    return pb.the_nvcc() or sys.exit("needs nvcc (the CUDA toolkit)")


def time_mode(repos: Path, out: Path) -> int:
    from perfmodel.measure.gpu import Gpu, Problem
    from perfmodel.measure.timing import do_bench, summarize

    if out.exists():
        raise SystemExit(f"{out} exists: a new file only")
    gpu = Gpu()
    arch = gpu.arch
    prob = Problem(gpu, SIZE, SIZE, SIZE)
    nvcc, rows = _nvcc(), []
    with tempfile.TemporaryDirectory(prefix="published-") as tmp:
        for j, (pt, s) in enumerate(points(), 1):
            b = pt.binary
            tree = pb.checkout(repos, s.repository, s.commit, Path(tmp))
            cubin, entries = pb.compile_module(nvcc, tree, b, arch=arch)
            mangled, regs, spills, _ = entries[b.entry]
            fn = gpu.drv.module_from_buffer(cubin).get_function(mangled)
            order, block, ((gx, tx), (gy, ty)) = LAUNCH[(pt.source, b.entry)]
            dims = dict(M=SIZE, N=SIZE, K=SIZE)
            vals = dict(M=np.int32(SIZE), N=np.int32(SIZE), K=np.int32(SIZE), alpha=np.float32(1.0), beta=np.float32(0.0),
                        A=prob.A, B=prob.B, C=prob.C)
            args = [vals[a] for a in order.split()]
            grid = (math.ceil(dims[gx] / tx), math.ceil(dims[gy] / ty))

            def run(fn=fn, args=args, grid=grid, block=block):
                fn(*args, block=(block[0], block[1], 1), grid=grid)

            gpu.drv.memset_d32(prob.C, 0, SIZE * SIZE)  # beta = 0 still reads C: zero, not NaN
            run()
            gpu.sync()
            ok, err, how = prob.verify()
            row = dict(source=pt.source, row=pt.row, entry=b.entry, kernel=pt.kernel, config=pt.config, size=SIZE, arch=arch,
                       registers=regs, spill_bytes=spills, verified=bool(ok), rel_error=None if math.isnan(err) else err)
            if ok:
                times, warm, obs = do_bench(run, gpu.flush, gpu.event, gpu.sync)
                t = summarize(times)
                row.update(median_ms=t["median_ms"], gflops=2.0 * SIZE**3 / (t["median_ms"] * 1e-3) * 1e-9,
                           q10_ms=t["q10_ms"], q90_ms=t["q90_ms"], launches=len(times))
            rows.append(row)
            print(f"[{j}] {pt.source} {b.entry}: {regs} registers, {'%.0f GFLOPS' % row['gflops'] if ok else 'NOT VERIFIED ' + how}",
                  flush=True)
    out.write_text(json.dumps(dict(size=SIZE, gpu=gpu.name, rows=rows), indent=1))
    return 0


def predictions(device: str, calibration: str, built: dict) -> list[dict]:
    """Each kernel's predictions with DEVICE and CALIBRATION's figures: the catalogue kernel's facts; those
    with the registers and stack of `built[(source, entry)]` = (registers, spill bytes, loop FFMAs), the
    build for the device's architecture, in place of the catalogue's; and as `perfmodel accuracy
    --published` predicts (published.source_build: the source's registers where its k-tile loop is
    unrolled, else the catalogue's facts)."""
    from dataclasses import replace

    from perfmodel import facts, published
    from perfmodel.catalogue import KernelConfig
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import predict

    fig = Figures.load(device, calibration)
    cc = fig.device.compute_capability
    out = []
    for pt, _ in points():
        key = (pt.source, pt.binary.entry)
        if key not in built:
            continue
        regs, spills, loop = built[key]
        cfg = KernelConfig.make(pt.kernel, **pt.config)
        cat = facts.for_config(cfg, cc)
        own = replace(cat, registers=regs, local_bytes=spills, local_tile_bytes=None)
        here = pt.model_copy(update={"binary": pt.binary.model_copy(update=dict(registers=regs, spill_bytes=spills, loop_ffma=loop))})
        rule = published.source_build(cat, here, cfg)
        out.append(dict(source=pt.source, entry=pt.binary.entry, config=cfg.label(), registers=regs, loop_ffma=loop,
                        catalogue_registers=cat.registers, rule_registers=rule.registers,
                        catalogue=predict(fig, cfg, SIZE, SIZE, SIZE, build=cat).gflops,
                        source_registers=predict(fig, cfg, SIZE, SIZE, SIZE, build=own).gflops,
                        published_rule=predict(fig, cfg, SIZE, SIZE, SIZE, build=rule).gflops))
    return out


def built_for(repos: Path, arch: str) -> dict:
    """{(source, entry): (registers, spill bytes, loop FFMAs)} of this machine's builds for `arch`."""
    nvcc, built = _nvcc(), {}
    with tempfile.TemporaryDirectory(prefix="published-") as tmp:
        for pt, s in points():
            tree = pb.checkout(repos, s.repository, s.commit, Path(tmp))
            _, regs, spills, loop = pb.compile_module(nvcc, tree, pt.binary, arch=arch)[1][pt.binary.entry]
            built[(pt.source, pt.binary.entry)] = (regs, spills, loop)
    return built


def _arch(device: str) -> str:
    from perfmodel.devices import load_device
    from perfmodel.measure.build import arch_of

    return f"sm_{arch_of(load_device(device).compute_capability)}"


def predict_mode(repos: Path, device: str, calibration: str) -> int:
    """The predictions before any measurement, with the registers of this machine's build for the device."""
    arch = _arch(device)
    print(f"| source | kernel | catalogue configuration | registers (source / catalogue), {arch} | predicted, catalogue's facts | predicted, source's registers |")
    print("|---|---|---|---|---|---|")
    for r in predictions(device, calibration, built_for(repos, arch)):
        print(f"| {r['source']} | {r['entry']} | {r['config']} | {r['registers']} / {r['catalogue_registers']} | "
              f"{r['catalogue']:,.0f} | {r['source_registers']:,.0f} |")
    return 0


def score_mode(repos: Path, device: str, calibration: str, record: Path) -> int:
    """The record against the predictions; registers and stack from the record (the GPU's own build), the
    k-tile loop's FFMAs from this machine's build for the same architecture."""
    rec = json.loads(record.read_text())
    meas = {(r["source"], r["entry"]): r for r in rec["rows"] if r["verified"]}
    for r in rec["rows"]:
        if not r["verified"]:
            print(f"not verified: {r['source']} {r['entry']} (relative error {r['rel_error']})")
    here = built_for(repos, rec["rows"][0]["arch"])
    for k, m in meas.items():
        if here[k][:2] != (m["registers"], m["spill_bytes"]):
            raise SystemExit(f"{k}: this machine's build differs from the record's ({here[k][:2]} against {m['registers']}, {m['spill_bytes']})")
    rows = predictions(device, calibration, {k: here[k] for k in meas})
    cols = ("catalogue", "source_registers", "published_rule")
    errs = {k: [] for k in cols}
    print("| source | kernel | catalogue configuration | registers (source / catalogue) | source loop FFMAs | measured GFLOPS | "
          "catalogue's facts | source's registers | published points' rule |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        g = meas[(r["source"], r["entry"])]["gflops"]
        e = {k: 100.0 * (r[k] / g - 1.0) for k in cols}
        for k in cols:
            errs[k].append(e[k])
        print(f"| {r['source']} | {r['entry']} | {r['config']} | {r['registers']} / {r['catalogue_registers']} | {r['loop_ffma']} | "
              f"{g:,.0f} | " + " | ".join(f"{r[k]:,.0f} ({e[k]:+.1f} %)" for k in cols) + " |")
    for k, v in errs.items():
        a = np.abs(v)
        print(f"{k}: MAPE {a.mean():.1f} % (median {np.median(a):.1f} %, bias {np.mean(v):+.1f} %) over {len(v)} kernels")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "time":
        return time_mode(Path(argv[1]), Path(argv[2]))
    if len(argv) >= 4 and argv[0] == "predict":
        return predict_mode(Path(argv[1]), argv[2], argv[3])
    if len(argv) >= 5 and argv[0] == "score":
        return score_mode(Path(argv[1]), argv[2], argv[3], Path(argv[4]))
    print("usage: published_kernels.py predict REPOS_DIR DEVICE CALIBRATION | time REPOS_DIR OUT.json | "
          "score REPOS_DIR DEVICE CALIBRATION RECORD.json", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
