"""The L1TEX data stage's work for the tile kernels' global loads (CPU; nvcc or the compiler wheels for
the build facts): per configuration of a `benchmarks/ncu_choices.py --global-loads` record, the model's
wavefronts per global load (model.predict.tile_load_lines: one per distinct 128-byte line a warp's load
touches) beside ncu's (LSU data-stage wavefronts less the shared-memory ones, per global load
instruction), the data stage's measured utilisation (all its wavefronts over the SMs' elapsed cycles),
and the model's time at the record's size (reference calibration of the H100 SXM, the binary's build
facts) with and without the data stage's returns of the global loads (ldg_returns) beside ncu's
kernel time.

    PYTHONPATH=. python3 benchmarks/ldg_wavefronts.py results/archive/ncu-global-loads-20261126-h100-sxm.json"""
import importlib
import json
import sys
from pathlib import Path
from unittest import mock

import numpy as np

from perfmodel import facts
from perfmodel.devices import load_device
from perfmodel.model.figures import Figures
from perfmodel.model.predict import Problem, ldg_returns, predict_batch, tile_load_lines

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ncu_choices import parse  # noqa: E402

P = importlib.import_module("perfmodel.model.predict")  # the module: perfmodel.model exports its predict function by that name
CALIBRATION = "results/reference-calibration-h100-sxm.toml"


def rows(record: dict) -> list[dict]:
    M, N, K = record["M"], record["N"], record["K"]
    fig = Figures.load("h100-sxm", CALIBRATION)
    sms = load_device("h100-sxm").compute.sm_count
    out = []
    for label, v in record["kernels"].items():
        kernel, _, rest = label.partition("(")
        cfg = parse(kernel + ":" + rest.rstrip(")"))
        ld = v["smsp__inst_executed_op_global_ld.sum"]
        data, shared = v["l1tex__data_pipe_lsu_wavefronts.sum"], v["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]
        build = facts.for_config(cfg, "9.0")
        p = predict_batch(fig, [cfg], Problem(M, N, K), builds=[build])
        with mock.patch.object(P, "ldg_returns", lambda c: 0.0):  # the model without the returns
            p0 = predict_batch(fig, [cfg], Problem(M, N, K), builds=[build])
        out.append(dict(config=label, model=float(np.mean(tile_load_lines(cfg))), ncu=(data - shared) / ld,
                        returns=ldg_returns(cfg), utilisation=data / sms / v["sm__cycles_elapsed.avg"],
                        predicted_us=float(p.time_s[0]) * 1e6, without_us=float(p0.time_s[0]) * 1e6, ncu_us=v["gpu__time_duration.sum"] / 1e3))
    return out


def main(path: str) -> None:
    record = json.loads(Path(path).read_text())
    print(f"{record['M']} x {record['N']} x {record['K']}, H100 SXM, reference calibration\n")
    print("| configuration | wavefronts per global load: model / ncu | ratio | extra per warp and k-tile | data stage busy | ncu time (us) | predicted without / with the returns |")
    print("|---|---|---|---|---|---|---|")
    rs = rows(record)
    for r in rs:
        print(f"| {r['config']} | {r['model']:.2f} / {r['ncu']:.2f} | {r['ncu'] / r['model']:.3f} | {r['returns']:.1f} | "
              f"{r['utilisation']:.2f} | {r['ncu_us']:,.0f} | {r['without_us']:,.0f} ({(r['ncu_us'] / r['without_us'] - 1) * 100:+.1f} %) / "
              f"{r['predicted_us']:,.0f} ({(r['ncu_us'] / r['predicted_us'] - 1) * 100:+.1f} %) |")
    ratio = [r["ncu"] / r["model"] for r in rs]
    e0 = [abs(r["ncu_us"] / r["without_us"] - 1) * 100 for r in rs]
    e1 = [abs(r["ncu_us"] / r["predicted_us"] - 1) * 100 for r in rs]
    print(f"\n(percent: the measured time over the predicted, less one; mean absolute {np.mean(e0):.1f} % without, {np.mean(e1):.1f} % with)")
    print(f"ncu / model wavefronts per global load: {min(ratio):.3f}-{max(ratio):.3f} (median {np.median(ratio):.3f}) over {len(rs)} configurations")


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_file():
        print("usage: PYTHONPATH=. python3 benchmarks/ldg_wavefronts.py NCU_GLOBAL_LOADS_JSON", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
