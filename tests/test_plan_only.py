"""`perfmodel bench|validate --resume RUN --plan-only`: a run stopped while it ranked the corpus gets its plan
finished on the CPU (no GPU), from the same draft the GPU machine wrote; the bench run
results/20261126-231709-h100-sxm-bench-all was finished so. Replayed here from its plan.json with the last
shape taken out of the draft: the shapes planned before stay as they were, and the last gets the pick
today's ranking makes (which the run's own pick matched until the rankings changed)."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel import facts
from perfmodel.measure.records import Plan, PlanDraft
from perfmodel.measure.validate import DRAFT

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "results" / "20261126-231709-h100-sxm-bench-all"


def _perfmodel(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "perfmodel", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture()
def draft_run(tmp_path):
    """The run's plan as the draft it was while its last shape was still to rank."""
    plan = Plan.model_validate_json((RUN / "plan.json").read_text())
    names = list(dict.fromkeys(p.shape for p in plan.points))
    last = names[-1]
    draft = PlanDraft(**{k: getattr(plan, k) for k in Plan.model_fields if k != "points"},
                      points=[p for p in plan.points if p.shape != last], sample=0, planned=names[:-1])
    out = tmp_path / RUN.name
    out.mkdir()
    shutil.copy(RUN / "calibration.toml", out / "calibration.toml")
    (out / DRAFT).write_text(draft.model_dump_json(indent=1))
    return out, plan, last


def test_plan_only_finishes_the_plan_without_a_gpu(draft_run):
    out, plan, last = draft_run
    r = _perfmodel("bench", "--resume", str(out), "--plan-only")
    assert r.returncode == 0, r.stderr
    assert not (out / DRAFT).exists() and (out / "plan.json").is_file()
    got = Plan.model_validate_json((out / "plan.json").read_text())
    mine = [p for p in got.points if p.shape == last]
    # the last shape planned as the GPU machine planned the others: cuBLAS, the Triton peer (the draft had it), the pick
    assert [(p.group, p.kernel) for p in mine] == [("baseline", "cublas"), ("peer", "triton"), ("top", mine[-1].kernel)]
    assert got.points[:len(plan.points) - 3] == plan.points[:len(plan.points) - 3]
    if facts.can_compile("9.0"):  # with a compiler, the pick today's ranking makes with the run's calibration
        from perfmodel.catalogue import ranked_kernels
        from perfmodel.measure.validate import shape_plan
        from perfmodel.model.figures import Figures
        from perfmodel.shapes import select
        from perfmodel.sweep import SASS_TOP

        shape = next(sh for sh in select("all", None) if sh.name == last)
        fig = Figures.load(plan.environment.device_file, out / "calibration.toml")
        want = [p for p in shape_plan(fig, [shape], tune_top=1, sample=0, sass_top=SASS_TOP, kernels=ranked_kernels())
                if p.group == "top"]
        assert json.loads(mine[-1].model_dump_json()) == json.loads(want[0].model_dump_json())
    assert "perfmodel bench --resume" in r.stdout


def test_plan_only_refuses_what_it_cannot_do(draft_run, tmp_path):
    out, _, _ = draft_run
    for args, says in ((["bench", "--plan-only"], "name it with --resume RUN"),
                       (["bench", "--resume", str(RUN), "--plan-only"], "is already planned"),
                       (["validate", "--resume", str(out), "--plan-only", "--gpus", "0"], "takes no --gpus")):
        r = _perfmodel(*args)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert (out / DRAFT).exists()  # nothing was planned by the refused calls
