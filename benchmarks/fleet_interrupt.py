"""A shape run on several GPUs interrupted and resumed, on the GPU machine (`bash benchmarks/gpu_run.sh
interrupt CLASS LIST`): `perfmodel validate --shapes CLASS --gpus LIST` is started; once a quarter of its
planned points are recorded one worker process is killed (SIGKILL, in the middle of a point), once half are
recorded the whole run is killed (SIGKILL to its process group: coordinator and workers), and then
`perfmodel validate --resume RUN --gpus LIST` finishes it. The log as it stood when the run was killed is
kept beside the run (`interrupted.jsonl.xz`) and `interruption.json` says what was killed when and what the
check found: every point recorded before the kill is in the finished record unchanged, every planned point
is recorded exactly once, and the resumed run measured only the points missing.

    python benchmarks/fleet_interrupt.py --shapes CLASS --gpus 0,1 [--worker-at 0.25] [--run-at 0.5]
    python benchmarks/fleet_interrupt.py --check RUN      # the check again, on the CPU, from the files
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from perfmodel.measure.records import Measurement, Plan, measurement_key

ROOT = Path(__file__).resolve().parent.parent


def _lines(path: Path) -> list[str]:
    """The complete lines of a points log (plain or .xz; a last line cut short by the kill is left out)."""
    text = lzma.decompress(path.read_bytes()).decode() if path.suffix == ".xz" else path.read_text()
    out = []
    for line in text.splitlines():
        try:
            Measurement.model_validate_json(line)
            out.append(line)
        except ValueError:
            continue
    return out


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        f = task / "children"
        if f.exists():
            kids += [int(x) for x in f.read_text().split()]
    return kids


def _workers(pid: int) -> list[int]:
    """The coordinator's measuring worker processes (spawned children that are not the resource tracker)."""
    out = []
    for k in _children(pid):
        try:
            cmd = Path(f"/proc/{k}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "spawn_main" in cmd and "resource_tracker" not in cmd:
            out.append(k)
    return out


def check(run: Path) -> dict:
    """What the finished record holds against the log as it stood at the kill."""
    plan = Plan.model_validate_json((run / "plan.json").read_text())
    planned = [p.key() for p in plan.points]
    before = _lines(run / "interrupted.jsonl.xz")
    final_log = run / "points.jsonl.xz" if (run / "points.jsonl.xz").exists() else run / "points.jsonl"
    after = _lines(final_log)
    keys_after = [measurement_key(Measurement.model_validate_json(x)) for x in after]
    keys_before = [measurement_key(Measurement.model_validate_json(x)) for x in before]
    after_set = set(after)
    return dict(planned=len(planned), recorded_before_kill=len(before), recorded_after_resume=len(after),
                distinct_after_resume=len(set(keys_after)),
                measured_by_resume=len(after) - len(before),
                missing_before_kill=len(set(planned) - set(keys_before)),
                before_kept_unchanged=sum(x in after_set for x in before),
                log_prefix_unchanged=after[:len(before)] == before,
                every_planned_once=sorted(map(repr, keys_after)) == sorted(map(repr, planned)),
                verified=sum(Measurement.model_validate_json(x).verified for x in after))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", help="the corpus class to measure")
    ap.add_argument("--gpus", default="0,1")
    ap.add_argument("--worker-at", type=float, default=0.25, help="share of the planned points recorded when a worker is killed")
    ap.add_argument("--run-at", type=float, default=0.5, help="share recorded when the whole run is killed")
    ap.add_argument("--check", metavar="RUN", help="only check RUN (interrupted.jsonl.xz against its finished record)")
    a = ap.parse_args(argv)
    if a.check:
        print(json.dumps(check(Path(a.check)), indent=1))
        return 0
    if not a.shapes:
        ap.error("give --shapes CLASS (or --check RUN)")
    before = set((ROOT / "results").iterdir())
    cmd = [sys.executable, "-m", "perfmodel", "validate", "--shapes", a.shapes, "--gpus", a.gpus]
    t0 = time.time()
    with open(os.environ.get("OUT", "/tmp") + "/interrupt-first.log", "w") as logf:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        run = None
        events = dict(command=" ".join(cmd[1:]))
        while proc.poll() is None:
            time.sleep(0.2)
            if run is None:
                new = [p for p in (ROOT / "results").iterdir() if p not in before and p.is_dir()]
                run = new[0] if new else None
                continue
            if not (run / "plan.json").exists():
                continue
            total = len(Plan.model_validate_json((run / "plan.json").read_text()).points)
            log = run / "points.jsonl"
            n = len(_lines(log)) if log.exists() else 0
            if "worker_killed" not in events and n >= a.worker_at * total:
                ws = _workers(proc.pid)
                if ws:
                    os.kill(ws[0], signal.SIGKILL)
                    events["worker_killed"] = dict(pid=ws[0], of_workers=len(ws), recorded=n, planned=total,
                                                   at_s=round(time.time() - t0, 1))
                    print(f"killed worker process {ws[0]} (one of {len(ws)}) at {n}/{total} points", flush=True)
            if "run_killed" not in events and "worker_killed" in events and n >= a.run_at * total:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                n = len(_lines(log))
                events["run_killed"] = dict(recorded=n, planned=total, at_s=round(time.time() - t0, 1))
                print(f"killed the run (process group {proc.pid}) at {n}/{total} points", flush=True)
    if run is None or "run_killed" not in events:
        print(f"the run ended before it was killed (rc {proc.returncode}); see $OUT/interrupt-first.log", file=sys.stderr)
        return 1
    (run / "interrupted.jsonl.xz").write_bytes(lzma.compress((run / "points.jsonl").read_bytes()))
    t1 = time.time()
    resume = [sys.executable, "-m", "perfmodel", "validate", "--resume", str(run), "--gpus", a.gpus]
    with open(os.environ.get("OUT", "/tmp") + "/interrupt-resume.log", "w") as logf:
        rc = subprocess.call(resume, cwd=ROOT, stdout=logf, stderr=subprocess.STDOUT)
    events["resumed"] = dict(command=" ".join(resume[1:]).replace(str(ROOT) + "/", ""), rc=rc, wall_s=round(time.time() - t1, 1))
    events["check"] = check(run)
    (run / "interruption.json").write_text(json.dumps(events, indent=1) + "\n")
    print(json.dumps(events, indent=1))
    c = events["check"]
    ok = c["every_planned_once"] and c["log_prefix_unchanged"] and c["before_kept_unchanged"] == c["recorded_before_kill"]
    print(f"{run.name}: planned {c['planned']}, recorded before the kill {c['recorded_before_kill']}, measured by the resumed run "
          f"{c['measured_by_resume']}, every planned point once: {c['every_planned_once']}, the log before the kill kept "
          f"unchanged: {c['log_prefix_unchanged']} -> {'OK' if ok else 'FAILED'}")
    return 0 if ok and rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
