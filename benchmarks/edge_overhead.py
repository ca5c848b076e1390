"""Does edge handling cost speed on aligned sizes? Times each tiled kernel at 4096 as shipped and
compiled with -DASSUME_INTERIOR (edge path removed; valid only for aligned sizes). GPU only."""

from perfmodel import KernelConfig, kernel_ids
from perfmodel.measure import build
from perfmodel.measure.gpu import Gpu, Problem, measure_point

S = 4096
gpu = Gpu()
prob = Problem(gpu, S, S, S)
orig = build.NVCC_FLAGS
print(f"{'kernel':20} {'regs':>4} {'shipped GFLOPS':>15} {'regs':>4} {'no-edge GFLOPS':>15} {'cost %':>7}")
for k in kernel_ids()[2:]:
    cfg = KernelConfig.make(k)
    res = []
    for flags in (orig, orig + ["-DASSUME_INTERIOR"]):
        build.NVCC_FLAGS = flags
        gpu._modules.clear()
        m = measure_point(gpu, prob, cfg, "edge", rep_ms=60)
        res.append(m)
    build.NVCC_FLAGS = orig
    a, b = res
    if a.verified and b.verified:
        print(f"{k:20} {a.registers:4d} {a.gflops_median:15,.0f} {b.registers:4d} {b.gflops_median:15,.0f} "
              f"{100 * (b.gflops_median - a.gflops_median) / b.gflops_median:7.2f}")
    else:
        print(k, "verification failed", a.verification, b.verification)
