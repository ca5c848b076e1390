"""Every model change of a session judged on the same recorded measurements with one calibration (CPU only).

Checks each commit out into a temporary worktree and runs today's benchmarks/accuracy_table.py against
that commit's perfmodel, with the calibration reduced to the [measured] keys that version knows (a
newer figure cannot be used by a model that predates it). Prints, per commit, the MAPE over every
recorded point, the MAPE of each run, the mean Spearman over the validate runs' sweeps, and the top-1
gaps of the validate samples and tuning runs.
    python3 benchmarks/session_history.py [CALIBRATION.toml]"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAL = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "results" / "calibration-20261122-133331-h100-sxm.toml").resolve()
COMMITS = [
    ("636bdfb", "start of session 3 (end of session 2)"),
    ("37e7174", "+ pipe overlap e(w) x min(issue, smem) (spread microbenchmark); FFMA-only rate for tiled kernels"),
    ("4becda7", "+ FFMA rate of the 16x8 outer product for 128-output threads"),
    ("d9bedc9", "+ shared-memory Little's law in wavefronts, not load instructions"),
    ("02e22d3", "+ pipe overlap of the 16x8 shared-memory-fed loop"),
    ("fb4cf63", "+ single-buffered load phase from the measured tile loop: one block's burst, share X(b) exposed"),
    ("d510767", "end of session 3 (same predictions as fb4cf63)"),
    ("9189b8a", "session 4: + compute phase simulated from the binary's k-tile loop (model.schedule) where its SASS is known"),
]
KEYS = "from perfmodel.devices import Measured; print(' '.join(Measured.model_fields))"


def main():
    print(f"measured figures: {CAL.name}; runs and points as benchmarks/accuracy_table.py\n")
    print("| model version | change | all points MAPE (median) | MAPE per run | Spearman sweep (mean of validate runs) | top-1 gaps |")
    print("|---|---|---|---|---|---|")
    for commit, what in COMMITS:
        with tempfile.TemporaryDirectory() as tmp:
            wt = Path(tmp) / "wt"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(wt), commit], check=True, capture_output=True)
            try:
                env = {"PYTHONPATH": str(wt), "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(Path.home())}
                known = set(subprocess.run([sys.executable, "-c", KEYS], cwd=wt, env=env, capture_output=True, text=True,
                                           check=True).stdout.split())
                head, _, meas = CAL.read_text().partition("[measured]")
                keep = [ln for ln in meas.splitlines() if not ln.strip() or ln.lstrip().startswith("#") or ln.split("=")[0].strip() in known]
                cal = Path(tmp) / CAL.name
                cal.write_text(head + "[measured]\n" + "\n".join(keep) + "\n")
                r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "accuracy_table.py"), str(cal)], cwd=wt, env=env,
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"| {commit} | {what} | failed: {r.stderr.strip().splitlines()[-1][:80]} | | | |")
                    continue
                rows = [ln.split("|")[1:-1] for ln in r.stdout.splitlines() if "| measured |" in ln]
                runs = [(c[0].strip(), float(c[3].strip(" %")), float(c[6]), float(c[7].split("%")[0])) for c in rows]
                m = re.search(r"points, measured figures: MAPE ([\d.]+) %, median APE ([\d.]+) %", r.stdout)
                val = [x for x in runs if "-tune" not in x[0]]
                print(f"| {commit} | {what} | {m.group(1)} % ({m.group(2)} %) | " + " / ".join(f"{x[1]:.1f}" for x in runs)
                      + f" | {sum(x[2] for x in val) / len(val):.3f} | " + " / ".join(f"{x[3]:.1f}" for x in runs) + " |")
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(wt)], capture_output=True)
    print("\nruns in order: " + ", ".join(x[0] for x in runs))


if __name__ == "__main__":
    main()
