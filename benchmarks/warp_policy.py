"""Which ready warp a warp scheduler issues from: loose round-robin (the warps of a scheduler take
turns and finish together) or greedy-then-oldest (one warp issues until it stalls, so the warps finish
one after another). model.schedule replays a k-tile loop under one of these rules; this measures the
GPU's (benchmarks/sched/warp_policy.cu: one block on one SM, W warps per scheduler, each warp times its
own loop with clock64).

  python3 benchmarks/warp_policy.py measure [OUT.json]   # GPU: per warp start/end clocks, 5 rounds

Per scheduler (warp slot % 4) and loop, 'finish spread' = (last end - first end) / (last end - first
start): about 0 when the warps take turns, about (W - 1) / W when each runs to the end before the next.
'solo' is a warp's own time divided by a lone warp's (W for turns, 1 for greedy)."""
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "benchmarks" / "sched" / "warp_policy.cu"
LOOPS = ["policy_free", "policy_dep"]
WARPS = [1, 2, 4, 8]  # per scheduler
ROUNDS = 5
ITERS = 20000


def measure(path=None) -> int:
    from perfmodel.measure.gpu import Gpu

    gpu = Gpu()
    drv = gpu.drv
    cubin = gpu.compiler.compile(SRC.read_text(), options=["-O3"], arch=gpu.arch, no_extern_c=True)
    mod = drv.module_from_buffer(cubin)
    sink = drv.mem_alloc(4)
    raw, rows = [], []
    for name in LOOPS:
        f = mod.get_function(name)
        solo = None
        for w in WARPS:
            warps = 4 * w
            out = np.zeros(4 * warps, dtype=np.int64)
            dev = drv.mem_alloc(out.nbytes)
            spreads, durs = [], []
            for r in range(ROUNDS):
                f(dev, np.int32(ITERS), sink, block=(32 * warps, 1, 1), grid=(1, 1))
                gpu.sync()
                drv.memcpy_dtoh(out, dev)
                t = out.reshape(warps, 4)
                raw.append(dict(loop=name, warps_per_scheduler=w, round=r, t0=t[:, 0].tolist(), t1=t[:, 1].tolist(),
                                slot=t[:, 2].tolist(), sm=t[:, 3].tolist()))
                for s in range(4):
                    m = t[:, 2] % 4 == s
                    t0, t1 = t[m, 0], t[m, 1]
                    if len(t0) == 0:
                        continue
                    spreads.append(float((t1.max() - t1.min()) / max(t1.max() - t0.min(), 1)))
                    durs.append(float(np.mean(t1 - t0)))
            d = float(np.median(durs))
            solo = d if w == 1 else solo
            rows.append(dict(loop=name, warps_per_scheduler=w, finish_spread=float(np.median(spreads)),
                             finish_spread_min=float(min(spreads)), finish_spread_max=float(max(spreads)),
                             cycles_per_warp=d, solo=d / solo, expected_spread_if_greedy=(w - 1) / w))
    doc = dict(gpu=gpu.name, iters=ITERS, rounds=ROUNDS, summary=rows, raw=raw)
    if path:
        Path(path).write_text(json.dumps(doc, indent=1))
    print(f"{gpu.name}: per scheduler, median over {ROUNDS} rounds x 4 schedulers")
    print(f"{'loop':<12} {'W':>2} {'finish spread':>22} {'greedy would be':>16} {'warp time / lone warp':>22}")
    for r in rows:
        print(f"{r['loop']:<12} {r['warps_per_scheduler']:>2} {r['finish_spread']:>8.3f} ({r['finish_spread_min']:.3f}-"
              f"{r['finish_spread_max']:.3f}) {r['expected_spread_if_greedy']:>16.3f} {r['solo']:>22.2f}")
    return 0


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "measure"
    if mode != "measure":
        sys.exit(f"unknown mode {mode!r}: measure")
    sys.exit(measure(sys.argv[2] if len(sys.argv) > 2 else None))
