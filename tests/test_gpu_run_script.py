"""benchmarks/gpu_run.sh refuses to start without a run named or where the project does not import: one line on
stderr, exit status 2, before anything touches a GPU."""
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_run.sh"


def _run(args, tmp_path, env=None):
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "OUT": str(tmp_path / "out"), **(env or {})})


def test_without_a_run_the_usage_names_every_run(tmp_path):
    got = _run([], tmp_path)
    assert got.returncode == 2 and got.stdout == ""
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("usage: gpu_run.sh RUN")
    runs = re.findall(r"^  ([a-z][a-z0-9-]*)\)", SCRIPT.read_text(), flags=re.M)
    assert len(runs) >= 20
    named = re.findall(r"[a-z][a-z0-9-]*", lines[0].split("one of", 1)[1].split("(", 1)[0])
    assert named == runs


def test_a_python_without_the_project_stops_it(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'tomli_w'\" >&2\nexit 1\n")
    (fake / "python3").chmod(0o755)
    got = _run(["calibrate"], tmp_path, env={"PATH": f"{fake}:{os.environ['PATH']}"})
    assert got.returncode == 2
    assert got.stderr.strip() == ("error: perfmodel does not import here (ModuleNotFoundError: No module named 'tomli_w'); "
                                  "install the project's dependencies first")
    assert not (tmp_path / "out" / "calibration.toml").exists()
