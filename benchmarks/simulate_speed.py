"""The loop simulation's speed (a benchmark, not a test): every schedule.simulate call that replaying recorded
runs makes, timed over repeated passes (median and spread), and with --against REV the same calls through
perfmodel/model/schedule.py as it stood at git revision REV: both times, and whether every result is
bit-identical (a change meant only to make it faster must give the same floats).
    python3 benchmarks/simulate_speed.py [--runs RUN,RUN] [--repeat 3] [--against REV]     (CPU)"""
import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = ("20261122-131742-h100-sxm-seed8", "20261124-021220-h100-sxm-shapes-small", "20261123-182805-h200-seed11")


def calls_of(runs: list[Path]) -> list:
    """(program, args, kwargs) of every simulate call that scoring the runs makes (each device's reference
    calibration, else the run's own, as `perfmodel accuracy` scores them), in one process."""
    from perfmodel.accuracy import score
    from perfmodel.model import schedule

    calls, real = [], schedule.simulate

    def keep(program, *a, **k):
        calls.append((program, a, k))
        return real(program, *a, **k)

    schedule.simulate = keep
    try:
        score(runs, "measured", None, ROOT / "results", own_fallback=True, workers=1)
    finally:
        schedule.simulate = real
    return calls


def timed(fn, calls, repeat: int):
    """Seconds of each pass over the calls, and the last pass's results."""
    secs, out = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = [fn(p, *a, **k) for p, a, k in calls]
        secs.append(time.perf_counter() - t0)
    return secs, out


def spread(xs) -> str:
    xs = sorted(xs)
    return f"median {statistics.median(xs):.2f} s, min {xs[0]:.2f}, max {xs[-1]:.2f} (n={len(xs)})"


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default=",".join(RUNS), help="recorded runs under results/ (comma-separated)")
    ap.add_argument("--repeat", type=int, default=3, help="timed passes over the calls")
    ap.add_argument("--against", help="a git revision: time its schedule.py on the same calls and compare results")
    a = ap.parse_args(argv)
    runs = [ROOT / "results" / r for r in a.runs.split(",")]
    missing = [str(r) for r in runs if not r.is_dir()]
    if missing or a.repeat < 1:
        ap.error(f"no recorded run {', '.join(missing)}" if missing else "--repeat takes 1 or more")
    from perfmodel.model import schedule

    print(f"collecting the simulate calls of {len(runs)} runs ...", file=sys.stderr, flush=True)
    calls = calls_of(runs)
    secs, now = timed(schedule.simulate, calls, a.repeat)
    print(f"{len(calls)} calls; this tree: {spread(secs)}")
    if a.against:
        try:
            src = subprocess.run(["git", "show", f"{a.against}:perfmodel/model/schedule.py"], cwd=ROOT, check=True,
                                 capture_output=True, text=True).stdout
        except subprocess.CalledProcessError as e:
            ap.error(f"--against {a.against}: {e.stderr.strip() or 'git show failed'}")
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "schedule_then.py"
            path.write_text(src)
            spec = importlib.util.spec_from_file_location("schedule_then", path)
            then = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(then)
        secs_then, before = timed(then.simulate, calls, a.repeat)
        same = sum(x == y for x, y in zip(now, before))
        print(f"{a.against}: {spread(secs_then)}; results bit-identical: {same} of {len(calls)}")
        return 0 if same == len(calls) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
