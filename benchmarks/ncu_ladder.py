"""Launch each ladder kernel once at 4096^3 (for ncu to profile). GPU only.
   ncu --clock-control none -k regex:sgemm ... python3 benchmarks/ncu_ladder.py [SIZE]"""
import sys

from perfmodel import KernelConfig, kernel_ids
from perfmodel.measure.gpu import Gpu, Problem

S = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
gpu = Gpu()
prob = Problem(gpu, S, S, S)
for k in kernel_ids():
    cfg = KernelConfig.make(k)
    fn = gpu.function(cfg)
    gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, S, S, S)()
    gpu.sync()
    print(k, "regs", fn.num_regs, flush=True)
