"""Judge every model version on the same recorded measurements (CPU only).

For each commit that changed the model, check it out into a temporary worktree and recompute MAPE,
median APE, Spearman (all points, sweep) and the sweep's top-1 gap from the recorded run's raw.json,
with datasheet figures and (where that version supports it) the run's calibration.
    python3 benchmarks/model_history.py results/20261122-093721-h100-sxm
    python3 benchmarks/model_history.py RUN [CALIBRATION.toml]   (default: the run's own calibration.toml)"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMITS = [  # versions before 342bfc2 cannot read today's device files (new fields, extra=forbid): their rows say so
    ("b452116", "first model: datasheet terms, max() of throughputs, blocks hide each other's latency"),
    ("195ab92", "+ calibrated FFMA issue factor, lockstep blocks, local-memory term, nvcc LDS merging"),
    ("83cb1d9", "+ lockstep load phase: latency + burst transfer after the compute phase"),
    ("e09e9f5", "+ 128-bit shared accesses per half-warp (ncu-checked), FFMA rate by resident warps"),
    ("342bfc2", "final model of the first session (launch-bounds cap, local arrays, SASS prefetch share)"),
    ("cc16332", "+ 128-bit shared loads per quarter-warp unless lane pairs share addresses (ncu: all 7 within 1 %)"),
    ("2d64990", "+ an SM's tile burst through its measured L2->SM port (119.8 B/clk), not its 1/132 share"),
    ("43b01cb", "+ one L1TEX pipe for shared, global-load and in-L1 local wavefronts"),
    ("06342c3", "+ instruction-fetch ceiling by tile-loop code size (calibrated at 4 and 16 warps/SM)"),
    ("5eb8dd0", "+ local traffic from the binary's loop (SASS) where the frames live (L1, or L2 share + DRAM)"),
    ("f8dc72c", "+ fetch rates interpolated over 1-32 measured warps/SM"),
    ("3ff9791", "+ FFMA rate of the shared-memory-fed outer product for tiled kernels"),
    ("HEAD", "current"),
]
PROBE = r'''
import json, sys
from perfmodel.analysis import load_run, rows, summary
from perfmodel.devices import load_device
run = load_run(sys.argv[1])
dev = load_device("h100-sxm")
out = {}
try:
    table = rows(run, dev, "datasheet")
except TypeError:
    table = rows(run, dev)
out["datasheet"] = summary(table)
if len(sys.argv) > 2:
    from perfmodel.devices import attach_calibration
    cal = sys.argv[2]
    try:
        from perfmodel.devices import Measured
        import tomllib, tempfile
        # a newer calibration holds figures an older model version does not know (and does not use):
        # hand that version only the [measured] keys its schema has
        known = set(Measured.model_fields)
        text = open(cal).read()
        head, _, meas = text.partition("[measured]")
        keep = [ln for ln in meas.splitlines() if not ln.strip() or ln.lstrip().startswith("#") or ln.split("=")[0].strip() in known]
        tmp = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
        tmp.write(head + "[measured]\n" + "\n".join(keep) + "\n")
        tmp.close()
        cal = tmp.name
    except ImportError:
        pass
    try:
        out["measured"] = summary(rows(run, attach_calibration(dev, cal), "measured"))
    except Exception as exc:
        out["measured"] = {"error": f"{type(exc).__name__}: {exc}"[:120]}
print(json.dumps(out))
'''


def main():
    run = Path(sys.argv[1]).resolve()
    cal = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else run / "calibration.toml"
    print(f"recorded run: {run.name}; measured figures from {cal.relative_to(ROOT)}\n")
    print("| model version | change | figures | MAPE | median APE | Spearman all | Spearman sweep | top-1 gap |")
    print("|---|---|---|---|---|---|---|---|")
    for commit, what in COMMITS:
        with tempfile.TemporaryDirectory() as tmp:
            wt = Path(tmp) / "wt"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(wt), commit], check=True,
                           capture_output=True)
            try:
                r = subprocess.run([sys.executable, "-c", PROBE, str(run), str(cal)], cwd=wt, capture_output=True, text=True,
                                   env={"PYTHONPATH": str(wt), "PATH": "/usr/bin:/bin"})
                if r.returncode != 0:
                    print(f"| {commit} | {what} | - | failed: {r.stderr.strip().splitlines()[-1][:80]} | | | | |")
                    continue
                res = json.loads(r.stdout)
                for fig, s in res.items():
                    if "error" in s:
                        print(f"| {commit} | {what} | {fig} | n/a ({s['error'][:60]}) | | | | |")
                        continue
                    print(f"| {commit} | {what} | {fig} | {s['mape_pct']:.1f} % | {s['median_ape_pct']:.1f} % | "
                          f"{s.get('spearman_all', float('nan')):.3f} | {s.get('spearman_sweep', float('nan')):.3f} | "
                          f"{s.get('sweep_top1_gap_pct', float('nan')):.1f} % |")
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(wt)], capture_output=True)


if __name__ == "__main__":
    main()
