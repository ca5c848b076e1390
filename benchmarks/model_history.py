"""Judge every model version on the same recorded measurements (CPU only).

For each commit that changed the model, check it out into a temporary worktree and recompute MAPE,
median APE, Spearman (all points, sweep) and the sweep's top-1 gap from the recorded run's raw.json,
with datasheet figures and (where that version supports it) the run's calibration.
    python3 benchmarks/model_history.py results/20261122-093721-h100-sxm"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMITS = [
    ("b452116", "first model: datasheet terms, max() of throughputs, blocks hide each other's latency"),
    ("195ab92", "+ calibrated FFMA issue factor, lockstep blocks, local-memory term, nvcc LDS merging"),
    ("83cb1d9", "+ lockstep load phase: latency + burst transfer after the compute phase"),
    ("e09e9f5", "+ 128-bit shared accesses per half-warp (ncu-checked), FFMA rate by resident warps"),
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
    try:
        from perfmodel.devices import attach_calibration
        out["measured"] = summary(rows(run, attach_calibration(dev, sys.argv[2]), "measured"))
    except Exception as exc:
        out["measured"] = {"error": f"{type(exc).__name__}: {exc}"[:120]}
print(json.dumps(out))
'''


def main():
    run = Path(sys.argv[1]).resolve()
    cal = run / "calibration.toml"
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
