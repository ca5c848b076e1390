"""Predictions with and without the load queue of lone blocks' scalar tile loads (terms.load_queue_cycles), written
before measuring them (CPU; each configuration's registers and loop from the local nvcc build):

    python3 benchmarks/load_queue_predictions.py --calibration FILE --mn 704,4096 --ks 4096,16384 SPEC ...

SPEC as benchmarks/ktile_depth.py takes it (kernel:key=value,...); M = N = each of --mn, K = each of --ks. Prints one
markdown table: blocks an SM, the queue's cycles a k-tile, GFLOPS and time with the term and without it."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ncu_choices import parse  # noqa: E402

from perfmodel import facts  # noqa: E402
from perfmodel.model import terms as T  # noqa: E402
from perfmodel.model.figures import Figures  # noqa: E402
from perfmodel.model.predict import predict  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--device", default="h200")
    ap.add_argument("--calibration", required=True)
    ap.add_argument("--mn", default="704,4096")
    ap.add_argument("--ks", default="4096,16384")
    a = ap.parse_args()
    fig = Figures.load(a.device, calibration=a.calibration)
    mns, ks = [int(x) for x in a.mn.split(",")], [int(x) for x in a.ks.split(",")]
    print(f"# python3 benchmarks/load_queue_predictions.py --device {a.device} --calibration {a.calibration} "
          f"--mn {a.mn} --ks {a.ks} {' '.join(a.specs)}")
    print("| configuration | M = N | K | blocks an SM (last wave) | queue cycles a k-tile | GFLOPS | ms | without the queue: GFLOPS | ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    real = T.load_queue_cycles
    for spec in a.specs:
        cfg = parse(spec)
        build = facts.for_config(cfg, fig.effective.compute_capability)
        for mn in mns:
            for k in ks:
                p = predict(fig, cfg, mn, mn, k, build=build)
                T.load_queue_cycles = lambda w, n, table, burst: np.zeros(np.shape(n))
                try:
                    q = predict(fig, cfg, mn, mn, k, build=build)
                finally:
                    T.load_queue_cycles = real
                print(f"| {cfg.label()} | {mn} | {k} | {p.waves.tail_blocks_per_sm if p.waves.tail_blocks_per_sm else p.occupancy.blocks_per_sm} | "
                      f"{p.load_queue_cycles:,.0f} | {p.gflops:,.0f} | {p.time_s * 1e3:.3f} | {q.gflops:,.0f} | {q.time_s * 1e3:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
