"""A/B timing of two sources of one kernel id at 4096 and 8192 (GPU only), same process, same data,
interleaved repetitions; prints medians and q10-q90 of each.
    python3 benchmarks/ab_kernel.py double_buffer benchmarks/ab/08_double_buffer_fragment_prefetch.cu"""
import sys
from pathlib import Path

from perfmodel import KernelConfig
from perfmodel.measure import build
from perfmodel.measure.gpu import Gpu, Problem, measure_point
from perfmodel.paths import data_dir

kernel, other = sys.argv[1], Path(sys.argv[2])
extra = sys.argv[3:]  # extra nvcc flags for the second variant, e.g. -DASSUME_INTERIOR
gpu = Gpu()
cfg = KernelConfig.make(kernel)
shipped = build.source_path(cfg)


def cubin(path: Path, flags=()) -> bytes:
    return gpu.compiler.compile(path.read_text(), options=build.NVCC_FLAGS + build.defines(cfg) + list(flags), arch=gpu.arch,
                                include_dirs=[str(data_dir("kernels"))], no_extern_c=True)


bins = {"shipped": cubin(shipped), other.name + " " + " ".join(extra): cubin(other, extra)}
for S in (4096, 8192):
    prob = Problem(gpu, S, S, S)
    cub = measure_point(gpu, prob, None, "baseline", rep_ms=100)
    res = {name: [] for name in bins}
    for rnd in range(3):  # interleave to cancel drift
        for name, b in bins.items():
            gpu._modules.clear()
            m = measure_point(gpu, prob, cfg, "ab", rep_ms=100, cubin=b)
            assert m.verified, (name, m.verification)
            res[name].append((m.gflops_median, m.registers, m.timing.q10_ms, m.timing.q90_ms))
    for name, rs in res.items():
        g = sorted(r[0] for r in rs)
        print(f"{S} {name:48} regs {rs[0][1]:3d}  GFLOPS median of 3 rounds {g[1]:9,.0f} (min {g[0]:,.0f}, max {g[2]:,.0f})"
              f"  = {100 * g[1] / cub.gflops_median:.1f} % of cuBLAS {cub.gflops_median:,.0f}")
