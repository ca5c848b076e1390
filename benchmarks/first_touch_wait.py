"""How long does a k-tile load wait when its lines come from DRAM for the first time? (CPU; reads two records of
benchmarks/ncu_stall_pcs.py, one after ncu's flush and one with --warm, the second of two launches with A and B in the
L2. Default: the lent H200's results/archive/ncu-stall-pcs-20261130-h200-512-*.json, one block on each of 16 SMs,
M = N = 512, K = 1024; `--pair FLUSHED WARM` reads another pair, e.g. the one-wave grids of two or three blocks an SM
at 2048 x 2048 x 1024 and 1536 x 1536 x 1024.)

Per configuration, over its k-tiles (ceil(K / bk)):
  premium     (SM cycles after the flush - SM cycles warm) / k-tiles (sm__cycles_elapsed: clock-free)
  waits       the share of the warps' samples on the long scoreboard (waiting for a global load's registers)
              times the SM cycles, per k-tile, after the flush and warm
  window      where the binary prefetches into registers (schedule.load_use_window of its k-tile loop, built
              here: a toolchain is needed): the FFMAs between a load and the first instruction that waits for
              it, as a share of the loop's, times the warm k-tile's cycles less its wait; the wait a first
              touch takes is then window + the flushed wait
  blocks/SM   the blocks each SM holds at once in the model (predict's waves: resident)
  table       the calibration's DRAM pointer chase times the device file's loaded ratio at the lines of the
              resident blocks' whole tiles (blocks/SM x (bm + bn) x bk x 4 / 128), terms.loaded_dram_latency
  model       the DRAM latency today's model gives the one-wave problem (predict.traffic: the pointer chase,
              loaded for A's share at the lines the DRAM serves)

    python3 benchmarks/first_touch_wait.py [--pair FLUSHED.json WARM.json] [--calibration FILE]
      (default calibration: results/20261129-160257-h200-bench-all/calibration.toml, the one the flush-state
      expectations used)"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
ARCHIVE = ROOT / "results" / "archive"
RECORDS = {state: ARCHIVE / f"ncu-stall-pcs-20261130-h200-512-{state}.json" for state in ("flushed", "warm")}
CALIBRATION = ROOT / "results" / "20261129-160257-h200-bench-all" / "calibration.toml"


def measured(records: dict = RECORDS) -> list[dict]:
    """Per configuration of the two records ({"flushed": path, "warm": path}): k-tiles, SM cycles and
    long-scoreboard shares, flushed and warm."""
    from ncu_choices import parse  # the records' configurations are ncu_choices.py's kernel:key=value specs

    recs = {s: json.loads(p.read_text()) for s, p in records.items()}
    if not (recs["warm"].get("warm") and recs["flushed"].get("warm") is False):
        raise ValueError("want a record without --warm, then one with it (ncu_stall_pcs.py)")
    if any(recs["warm"][d] != recs["flushed"][d] for d in "MNK"):
        raise ValueError("the two records are of different problem sizes")
    out = []
    for spec, fl in recs["flushed"]["configs"].items():
        wm = recs["warm"]["configs"][spec]
        cfg = parse(spec)
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


def batch(fig, row):
    """The model's prediction of the record's problem, with the binary's facts where a toolchain here builds it
    (its registers set the blocks an SM holds), else the estimate (facts.for_config)."""
    from perfmodel import facts
    from perfmodel.model.predict import Problem, predict_batch

    cfg = row["config"]
    return predict_batch(fig, [cfg], Problem(row["M"], row["N"], row["K"]), builds=[facts.for_config(cfg, "9.0")])


def resident(fig, row) -> int:
    """The blocks an SM holds at once in the model for the record's problem (predict's waves)."""
    return int(batch(fig, row).waves.resident[0])


def table_latency(fig, cfg, blocks: int = 1) -> float:
    """The loaded DRAM latency at the lines of `blocks` whole tiles a SM (terms.loaded_dram_latency)."""
    from perfmodel.model import terms as T

    lat = fig.effective.latency
    lines = blocks * (cfg.bm + cfg.bn) * cfg.bk * T.FLOAT / T.WAVEFRONT_BYTES
    return float(T.loaded_dram_latency(lat.dram_latency_cycles, lines, lat.dram_latency_ratio_by_lines_in_flight))


def model_latency(fig, row) -> float:
    """The load latency today's model gives the problem (all its blocks in one wave: DRAM's, predict.traffic)."""
    return float(batch(fig, row).traffic.mem_latency[0])


def window_share(cfg):
    """schedule.load_use_window of the binary's k-tile loop; None without a toolchain or a register prefetch."""
    from perfmodel import facts
    from perfmodel.model.schedule import load_use_window

    bf = facts.compiled(cfg, "9.0")
    return None if bf is None else load_use_window(bf.program)


def main(records: dict = RECORDS, calibration: Path = CALIBRATION) -> int:
    from perfmodel import Figures

    fig = Figures.load("h200", str(calibration))
    rows = measured(records)
    print(f"{rows[0]['M']} x {rows[0]['N']} x {rows[0]['K']}, SM cycles per k-tile (calibration {calibration})")
    print(f"{'configuration':52s} {'blocks/SM':>9s} {'premium':>8s} {'wait fl':>8s} {'wait warm':>9s} {'window':>7s} "
          f"{'1st-touch':>9s} {'table':>6s} {'model':>6s}")
    for row in rows:
        cfg = row["config"]
        share = window_share(cfg)
        if share is not None:
            compute = row["cycles_warm"] / row["ktiles"] - row["wait_warm"]
            window = share * compute
            touch = f"{window + row['wait_flushed']:9.0f}"
            win = f"{window:7.0f}"
        else:
            touch, win = f"{'-':>9s}", f"{'-':>7s}"
        b = resident(fig, row)
        print(f"{cfg.label()[:52]:52s} {b:9d} {row['premium']:8.0f} {row['wait_flushed']:8.0f} {row['wait_warm']:9.0f} {win} "
              f"{touch} {table_latency(fig, cfg, b):6.0f} {model_latency(fig, row):6.0f}")
    return 0


if __name__ == "__main__":
    import argparse

    sys.path.insert(0, str(ROOT))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", nargs=2, type=Path, metavar=("FLUSHED", "WARM"), help="two ncu_stall_pcs.py records")
    ap.add_argument("--calibration", type=Path, default=CALIBRATION, help="a calibration file of the GPU that measured them")
    a = ap.parse_args()
    pair = dict(zip(("flushed", "warm"), a.pair)) if a.pair else RECORDS
    for p in [a.calibration, *pair.values()]:
        if not p.is_file():
            print(f"error: {p}: no such file (want two ncu_stall_pcs.py records and a calibration file)", file=sys.stderr)
            sys.exit(2)
    try:
        sys.exit(main(pair, a.calibration))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
