"""How long does a lone block's k-tile load wait when its lines come from DRAM for the first time? (CPU; reads
two records of benchmarks/ncu_stall_pcs.py on the lent H200, results/archive/ncu-stall-pcs-20261130-h200-512-*.json:
one block on each of 16 SMs, M = N = 512, K = 1024, profiled after ncu's flush and, with --warm, as the second of
two launches with A and B in the L2.)

Per configuration, over its k-tiles (ceil(K / bk)):
  premium     (SM cycles after the flush - SM cycles warm) / k-tiles (sm__cycles_elapsed: clock-free)
  waits       the share of the warps' samples on the long scoreboard (waiting for a global load's registers)
              times the SM cycles, per k-tile, after the flush and warm
  window      where the binary prefetches into registers (schedule.load_use_window of its k-tile loop, built
              here: a toolchain is needed): the FFMAs between a load and the first instruction that waits for
              it, as a share of the loop's, times the warm k-tile's cycles less its wait; the wait a first
              touch takes is then window + the flushed wait
  table       the calibration's DRAM pointer chase times the device file's loaded ratio at the lines of the
              whole tile (one block per SM: (bm + bn) x bk x 4 / 128), terms.loaded_dram_latency
  model       the DRAM latency today's model gives the one-wave problem (predict.traffic: the pointer chase,
              loaded for A's share at the lines the DRAM serves)

    python3 benchmarks/first_touch_wait.py [CALIBRATION]
      (default results/20261129-160257-h200-bench-all/calibration.toml, the calibration the flush-state
      expectations used)"""
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = ROOT / "results" / "archive"
RECORDS = {state: ARCHIVE / f"ncu-stall-pcs-20261130-h200-512-{state}.json" for state in ("flushed", "warm")}
CALIBRATION = ROOT / "results" / "20261129-160257-h200-bench-all" / "calibration.toml"


def measured() -> list[dict]:
    """Per configuration of the two records: k-tiles, SM cycles and long-scoreboard shares, flushed and warm."""
    from perfmodel.catalogue import KernelConfig

    recs = {s: json.loads(p.read_text()) for s, p in RECORDS.items()}
    assert recs["warm"]["warm"] and not recs["flushed"]["warm"]
    out = []
    for spec, fl in recs["flushed"]["configs"].items():
        wm = recs["warm"]["configs"][spec]
        kernel, _, rest = spec.partition(":")
        cfg = KernelConfig.make(kernel, **{k: int(v) for k, v in (kv.split("=") for kv in rest.split(",") if kv)})
        K = recs["flushed"]["K"]
        ktiles = -(-K // cfg.bk)
        row = dict(spec=spec, config=cfg, ktiles=ktiles, M=recs["flushed"]["M"], N=recs["flushed"]["N"], K=K)
        for state, v in (("flushed", fl), ("warm", wm)):
            row[f"cycles_{state}"] = v["cycles"]
            row[f"long_sb_{state}"] = v["by_reason"].get("stall_long_sb", 0.0) / v["total_samples"]
        row["premium"] = (row["cycles_flushed"] - row["cycles_warm"]) / ktiles
        for state in ("flushed", "warm"):
            row[f"wait_{state}"] = row[f"long_sb_{state}"] * row[f"cycles_{state}"] / ktiles
        out.append(row)
    return out


def table_latency(fig, cfg) -> float:
    """The loaded DRAM latency at the whole tile's lines, one block per SM (terms.loaded_dram_latency)."""
    from perfmodel.model import terms as T

    lat = fig.effective.latency
    lines = (cfg.bm + cfg.bn) * cfg.bk * T.FLOAT / T.WAVEFRONT_BYTES
    return float(T.loaded_dram_latency(lat.dram_latency_cycles, lines, lat.dram_latency_ratio_by_lines_in_flight))


def model_latency(fig, row) -> float:
    """The load latency today's model gives the problem (all its blocks in one wave: DRAM's, predict.traffic)."""
    from perfmodel.model.predict import Problem, predict_batch

    bt = predict_batch(fig, [row["config"]], Problem(row["M"], row["N"], row["K"]))
    return float(bt.traffic.mem_latency[0])


def window_share(cfg):
    """schedule.load_use_window of the binary's k-tile loop; None without a toolchain or a register prefetch."""
    from perfmodel import facts
    from perfmodel.model.schedule import load_use_window

    bf = facts.compiled(cfg, "9.0")
    return None if bf is None else load_use_window(bf.program)


def main(calibration: Path = CALIBRATION) -> int:
    from perfmodel import Figures

    fig = Figures.load("h200", str(calibration))
    print(f"one block per SM on 16 SMs, 512 x 512 x 1024, SM cycles per k-tile (calibration {calibration.relative_to(ROOT)})")
    print(f"{'configuration':52s} {'premium':>8s} {'wait fl':>8s} {'wait warm':>9s} {'window':>7s} {'1st-touch':>9s} "
          f"{'table':>6s} {'model':>6s}")
    for row in measured():
        cfg = row["config"]
        share = window_share(cfg)
        if share is not None:
            compute = row["cycles_warm"] / row["ktiles"] - row["wait_warm"]
            window = share * compute
            touch = f"{window + row['wait_flushed']:9.0f}"
            win = f"{window:7.0f}"
        else:
            touch, win = f"{'-':>9s}", f"{'-':>7s}"
        print(f"{cfg.label()[:52]:52s} {row['premium']:8.0f} {row['wait_flushed']:8.0f} {row['wait_warm']:9.0f} {win} {touch} "
              f"{table_latency(fig, cfg):6.0f} {model_latency(fig, row):6.0f}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and not Path(sys.argv[1]).is_file()):
        print("usage: python3 benchmarks/first_touch_wait.py [CALIBRATION.toml]  (a calibration file that exists)",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1]).resolve() if len(sys.argv) == 2 else CALIBRATION))
