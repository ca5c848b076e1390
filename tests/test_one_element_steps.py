"""benchmarks/one_element_steps.py on the CPU: the coalesced points of the first H100 and H200 shape runs, the
model's cycles a k step beside the measured ones, as docs/model.md ("One-element kernels: the waits of the
binary's loop") quotes them: one block an SM in one wave within 10 %, grids of more than a wave
0.90-1.22 of the model (its median 6 % fast), two blocks an SM in one wave about a fifth too slow."""
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import one_element_steps as oes  # noqa: E402

RUNS = ("results/20261123-185325-h100-sxm-shapes-all", "results/20261123-222023-h200-shapes-all")


def test_the_k_steps_the_docs_quote():
    rows = [r for rd in RUNS for r in oes.rows(str(ROOT / rd), "coalesced")]
    assert len(rows) == 90 and all(r["from_binary"] and abs(r["steps"] - 16 / 3) < 1e-9 for r in rows)
    ratio = {k: np.array([r["measured"] / r["busiest"] for r in rows if sel(r)]) for k, sel in (
        ("lone", lambda r: r["full_waves"] == 0 and r["resident"] <= 1),
        ("shared", lambda r: r["full_waves"] == 0 and r["resident"] > 1),
        ("waves", lambda r: r["full_waves"] > 0))}
    assert [len(v) for v in ratio.values()] == [14, 6, 70]
    assert np.all(np.abs(ratio["lone"] - 1) < 0.1)
    assert np.all((ratio["waves"] > 0.88) & (ratio["waves"] < 1.25)) and 1.0 < np.median(ratio["waves"]) < 1.1
    assert np.all((ratio["shared"] > 0.75) & (ratio["shared"] < 0.85))


def test_a_missing_run_is_refused_in_one_line():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "one_element_steps.py"), "/nonexistent"],
                       capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "nonexistent" in r.stderr
