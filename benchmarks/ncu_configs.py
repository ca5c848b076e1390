"""Launch chosen configurations once at 4096^3 for ncu (GPU only). Prints 'kernel LABEL' before each.
   ncu --clock-control none -k regex:sgemm --metrics ... python3 benchmarks/ncu_configs.py"""

from perfmodel import KernelConfig
from perfmodel.measure.gpu import Gpu, Problem

CONFIGS = [
    ("double_buffer", dict(bm=128, bn=128, bk=8, tm=8, tn=8)),
    ("double_buffer", dict(bm=128, bn=128, bk=16, tm=8, tn=8)),
    ("double_buffer", dict(bm=128, bn=256, bk=16, tm=16, tn=8)),
    ("tiled_2d", dict(bm=128, bn=128, bk=8, tm=8, tn=8)),
    ("warp_tiled", {}),
]
S = 4096
gpu = Gpu()
prob = Problem(gpu, S, S, S)
for k, p in CONFIGS:
    cfg = KernelConfig.make(k, **p)
    fn = gpu.function(cfg)
    print(f"kernel {cfg.label().replace(' ', '')} regs={fn.num_regs}", flush=True)
    gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, S, S, S)()
    gpu.sync()
