"""Score the recorded points of a shape run that stopped before its last point (plan.json and its log,
points.jsonl or points.jsonl.xz, no raw.json): the points it holds, in plan order, go to a raw.json in a
temporary copy of the run (its calibration.toml beside it), which `perfmodel accuracy` or `perfmodel
report` (give it --out: the copy goes when the command ends) then reads with the options given. The run
itself is not touched; `perfmodel validate --resume RUN` on its GPU measures the rest.

    python benchmarks/score_stopped.py RUN accuracy|report [options ...]"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from perfmodel.measure.records import Plan, Run, measurement_key
from perfmodel.measure.validate import _recorded


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] not in ("accuracy", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    run, command, rest = Path(argv[0]), argv[1], argv[2:]
    if not (run / "plan.json").is_file():
        print(f"error: {run} holds no plan.json (not a shape run)", file=sys.stderr)
        return 2
    plan = Plan.model_validate_json((run / "plan.json").read_text())
    recorded = {measurement_key(m): m for m in _recorded(run / "points.jsonl")}
    held = [recorded[p.key()] for p in plan.points if p.key() in recorded]
    print(f"{run}: {len(held)} of {len(plan.points)} planned points recorded", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / run.name
        copy.mkdir()
        if (run / "calibration.toml").is_file():
            shutil.copy(run / "calibration.toml", copy / "calibration.toml")
        (copy / "raw.json").write_text(Run(environment=plan.environment, device_toml=plan.device_toml,
                                           measurements=held).model_dump_json(indent=1))
        return subprocess.call([sys.executable, "-m", "perfmodel", command, str(copy), *rest])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
