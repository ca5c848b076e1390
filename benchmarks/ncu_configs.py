"""Launch chosen configurations once at 4096^3 for ncu (GPU only). Prints 'kernel LABEL' before each.
   ncu --clock-control none -k regex:sgemm --metrics ... python3 benchmarks/ncu_configs.py [top10]
   top10: the model's top ten of the first four tuning runs (all double_buffer)
   subwave: the default double_buffer, tiled_2d_float4 and warp_tiled at M = BM, N = BN x nb, K = 8192 for
   nb = 66 (half the H100's SMs hold one block) and nb = 528 (four per SM): what one block per SM lacks
   fewwarps: tiled_2d and tiled_1d blocks of 2 to 16 warps (configurations of the recorded shape runs that the
   model predicts 15-75 % fast with one block per SM) at M = BM, N = BN x 66, K = 8192: where the cycles of a
   lone block of few warps go (stall reasons per issued instruction)
   scalar: benchmarks/row_alignment.py's four configurations at M = N = 2048, K = 1024 (nothing ragged) with
   ragged = edge (the interior body, float4 loads) and inner (the same k-tiles, scalar loads): what scalar
   global loads cost (stall reasons, L1 requests and sectors of the global loads)
   capped: tiled_2d configurations of the accuracy set at the register cap (255), with and without spills, that
   the model predicts 2-131 % fast at 4096^3 (model.md, "Where the model misses"): where their cycles go
   (stall reasons, local-memory sectors and hits, instruction-fetch stalls)
   smallbk: the same double_buffer and tiled_2d_float4 tiles at bk = 4, 8 and 16 (the model predicts bk = 4
   configurations 7-16 % fast over the recorded runs): DRAM and L2 bytes and stall reasons per k-tile depth
   latency: packed configurations (three to eight blocks an SM) of the H100 shape runs whose latency term's replay
   (its global loads' latency, blocks in step) binds, five that schedule.LATENCY_APART (the same replay with the blocks
   apart) moves further from the recorded measurement and two it moves closer: whether their time is the in-step
   replay's or the apart one's (issue activity against the room each replay leaves, stall reasons)
   depth: four configurations of benchmarks/ktile_depth.py at M = N = 4096, K = 64 (3.9 waves of 8 or 4 k-tiles),
   where double_buffer and tiled_2d_float4 cost 2-5 us a wave more than the model and warp_tiled does not:
   active SM cycles against elapsed, global store sectors, L2 writes, DRAM bytes
   packed: warp_tiled configurations of the H100 shape runs with three to eight blocks an SM that the model predicts
   11-17 % slow (its replay keeps the blocks' warps in step), beside the ladder's warp_tiled, double_buffer and
   tiled_2d_float4, at 4096^3: stall reasons per issued instruction, shared wavefronts, issue and FMA-pipe activity
   localarrays: 256 x 256 tiles of 1,024 threads at 64 registers and of 512 threads at 32 (their accumulators in
   local memory, frames of 0.7-3.6 KB a thread), which the model predicts 40-63 % slow: local-memory sectors
   and L1 hits, L2 and DRAM bytes against the frames the model places in L2 and DRAM"""
import sys

from perfmodel import KernelConfig
from perfmodel.measure.gpu import Gpu, Problem

CONFIGS = [
    ("double_buffer", dict(bm=128, bn=128, bk=8, tm=8, tn=8)),
    ("double_buffer", dict(bm=128, bn=128, bk=16, tm=8, tn=8)),
    ("double_buffer", dict(bm=128, bn=256, bk=16, tm=16, tn=8)),
    ("tiled_2d", dict(bm=128, bn=128, bk=8, tm=8, tn=8)),
    ("warp_tiled", {}),
]
TOP10 = [("double_buffer", dict(bm=bm, bn=bn, bk=bk, tm=tm, tn=8)) for bm, bn, bk, tm in (
    (128, 256, 16, 8), (128, 256, 16, 16), (256, 128, 16, 8), (256, 128, 16, 16), (128, 256, 8, 16),
    (64, 256, 16, 16), (128, 128, 16, 16), (256, 128, 8, 16), (128, 128, 8, 16), (64, 256, 8, 16))]
CAPPED = [("tiled_2d", dict(bk=bk, bm=bm, bn=bn, tm=tm, tn=tn)) for bk, bm, bn, tm, tn in (
    (32, 128, 32, 4, 16), (16, 256, 32, 4, 16), (64, 128, 64, 8, 8), (32, 128, 128, 8, 8),
    (64, 32, 32, 16, 2), (64, 128, 32, 8, 16), (64, 128, 16, 8, 8), (32, 16, 64, 8, 4))]
if sys.argv[1:] == ["top10"]:
    CONFIGS = TOP10
if sys.argv[1:] == ["capped"]:
    CONFIGS = CAPPED
SMALLBK = [(k, dict(bm=bm, bn=bn, bk=bk, tm=tm, tn=8)) for k, bm, bn, tm in (
    ("double_buffer", 128, 32, 16), ("double_buffer", 128, 64, 16), ("tiled_2d_float4", 128, 32, 16)) for bk in (4, 8, 16)]
if sys.argv[1:] == ["smallbk"]:
    CONFIGS = SMALLBK
LOCALARRAYS = [("tiled_2d_float4", dict(bm=256, bn=256, bk=16, tm=8, tn=8)),
               ("bank_conflict_free", dict(bm=256, bn=256, bk=16, tm=8, tn=8)),
               ("warp_tiled", dict(bm=256, bn=256, bk=16, tm=4, tn=8, wm=64, wn=32, wn_iter=2)),
               ("warp_tiled", dict(bm=256, bn=256, bk=16, tm=4, tn=4, wm=32, wn=64, wn_iter=1)),
               ("warp_tiled", dict(bm=256, bn=256, bk=16, tm=8, tn=8, wm=32, wn=128, wn_iter=2)),
               ("warp_tiled", dict(bm=256, bn=256, bk=8, tm=4, tn=16, wm=64, wn=64, wn_iter=2))]
if sys.argv[1:] == ["localarrays"]:
    CONFIGS = LOCALARRAYS
PACKED = [("warp_tiled", dict(bm=bm, bn=bn, bk=bk, tm=tm, tn=tn, wm=wm, wn=wn, wn_iter=it)) for bm, bn, bk, tm, tn, wm, wn, it in (
    (64, 64, 16, 4, 4, 64, 16, 2), (128, 64, 16, 4, 8, 64, 32, 1), (64, 128, 32, 8, 4, 32, 64, 2),
    (64, 128, 16, 4, 4, 64, 32, 4), (16, 128, 16, 4, 4, 16, 128, 2))] + [("warp_tiled", {}), ("double_buffer", {}),
                                                                        ("tiled_2d_float4", {})]
if sys.argv[1:] == ["packed"]:
    CONFIGS = PACKED
LATENCY = [("tiled_2d", dict(bm=64, bn=64, bk=64, tm=8, tn=4)), ("tiled_2d", dict(bm=32, bn=64, bk=64, tm=4, tn=16)),
           ("double_buffer", dict(bm=128, bn=32, bk=8, tm=8, tn=16)), ("double_buffer", dict(bm=128, bn=32, bk=8, tm=16, tn=8)),
           ("async_pipeline", dict(bm=64, bn=128, bk=4, stages=2, tm=8, tn=4, wm=32, wn=128, wn_iter=4)),
           ("double_buffer", dict(bm=128, bn=64, bk=16, tm=8, tn=8)),
           ("warp_tiled", dict(bm=64, bn=64, bk=16, tm=4, tn=4, wm=64, wn=16, wn_iter=2))]
if sys.argv[1:] == ["latency"]:
    CONFIGS = LATENCY
FEW = [("tiled_2d", dict(bm=64, bn=16, bk=64, tm=2, tn=8)), ("tiled_2d", dict(bm=128, bn=16, bk=32, tm=4, tn=8)),
       ("tiled_2d", dict(bm=32, bn=16, bk=64, tm=4, tn=1)), ("tiled_2d", dict(bm=16, bn=32, bk=64, tm=2, tn=2)),
       ("tiled_2d", dict(bm=64, bn=32, bk=64, tm=8, tn=2)), ("tiled_1d", dict(bm=64, bn=64, bk=8, tm=8)),
       ("tiled_2d_float4", dict(bm=128, bn=16, bk=8, tm=16, tn=4)), ("double_buffer", dict(bm=128, bn=128, bk=8, tm=8, tn=8))]
gpu = Gpu()
if sys.argv[1:] == ["depth"]:
    for k, p in [("double_buffer", dict(bm=128, bn=128, bk=8, tm=16, tn=8)), ("double_buffer", dict(bm=64, bn=256, bk=8, tm=16, tn=8)),
                 ("tiled_2d_float4", {}), ("warp_tiled", {})]:
        cfg = KernelConfig.make(k, **p)
        fn = gpu.function(cfg)
        prob = Problem(gpu, 4096, 4096, 64)
        print(f"kernel {cfg.label().replace(' ', '')} K=64 regs={fn.num_regs}", flush=True)
        gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, 4096, 4096, 64)()
        gpu.sync()
    sys.exit(0)
if sys.argv[1:] == ["fewwarps"]:
    for k, p in FEW:
        cfg = KernelConfig.make(k, **p)
        fn = gpu.function(cfg)
        M, N, K = cfg.bm, cfg.bn * 66, 8192
        prob = Problem(gpu, M, N, K)
        print(f"kernel {cfg.label().replace(' ', '')} blocks=66 warps={cfg.threads // 32} regs={fn.num_regs}", flush=True)
        gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, M, N, K)()
        gpu.sync()
    sys.exit(0)
if sys.argv[1:] == ["scalar"]:
    sys.path.insert(0, "benchmarks")
    from row_alignment import CONFIGS as ALIGN

    prob = Problem(gpu, 2048, 2048, 1024)
    for c in ALIGN:
        for r in ("edge", "inner"):
            cfg = KernelConfig.make(**c, ragged=r)
            fn = gpu.function(cfg)
            print(f"kernel {cfg.label().replace(' ', '')} regs={fn.num_regs}", flush=True)
            gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, 2048, 2048, 1024)()
            gpu.sync()
    sys.exit(0)
if sys.argv[1:] == ["subwave"]:
    for k in ("double_buffer", "tiled_2d_float4", "warp_tiled"):
        cfg = KernelConfig.make(k)
        fn = gpu.function(cfg)
        for nb in (66, 528):
            M, N, K = cfg.bm, cfg.bn * nb, 8192
            prob = Problem(gpu, M, N, K)
            print(f"kernel {cfg.label().replace(' ', '')} blocks={nb} regs={fn.num_regs}", flush=True)
            gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, M, N, K)()
            gpu.sync()
    sys.exit(0)
S = 4096
prob = Problem(gpu, S, S, S)
for k, p in CONFIGS:
    cfg = KernelConfig.make(k, **p)
    fn = gpu.function(cfg)
    print(f"kernel {cfg.label().replace(' ', '')} regs={fn.num_regs}", flush=True)
    gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, S, S, S)()
    gpu.sync()
