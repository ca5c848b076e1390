"""The `ragged` design choice measured in pairs (GPU): each configuration on a ragged shape with ragged =
edge (every block on a size the interior body cannot take runs the guarded edge body) and with inner and
inner4 (the blocks inside C run an unchecked inner body, scalar or float4; kernels/outer_f4.cuh,
INNER_BODY) where they can pay (catalogue.idle_choice).

    python benchmarks/ragged_twins.py [--shapes CLASS] [--top N] [--resume RUN]

Per corpus shape of the class (default ragged; hold-out shapes left out) where the choice can pay
(catalogue.idle_choice): cuBLAS, and for the model's top N tiles of the kernels that have the choice
(sweep.rank, the top re-predicted from their binaries) and each such kernel's default tiles, the
configuration with each ragged value (its group: `edge`, `inner`, `inner4`) that is not idle there,
tiles where the choice is idle left out. Writes a shape run, results/<date>-<device>-shapes-<class>-twins/ (plan.json,
then `perfmodel validate --resume` measures it: every point verified, points.jsonl, raw.json, the report
with its error per group); `--resume RUN` goes on with an unfinished one."""
from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from perfmodel.catalogue import KernelConfig, get_kernel, idle_choice, tiled_kernels
from perfmodel.devices import shipped_devices
from perfmodel.errors import UserError
from perfmodel.measure.records import Plan, PlannedPoint
from perfmodel.model.figures import Figures
from perfmodel.model.predict import Problem
from perfmodel.shapes import select
from perfmodel.sweep import rank

TOP = 6
SASS_TOP = 10
RAGGED = ("edge", "inner", "inner4")


def twin_kernels() -> list[str]:
    """The tiled kernels with the `ragged` choice (kernels/manifest.toml)."""
    return [k for k in tiled_kernels() if "ragged" in get_kernel(k).choices]


def twin_points(fig: Figures, shapes, top: int = TOP, sass_top: int = SASS_TOP) -> list[PlannedPoint]:
    """The planned points: per shape where the choice can pay, cuBLAS, then per tiles (the model's top
    `top` distinct tiles of twin_kernels(), then each kernel's defaults) the edge twin and each inner one that can pay."""
    pts = []
    kernels = twin_kernels()

    def can_pay(kernel: str, params: dict, sh) -> bool:  # an inner twin of these tiles is not idle here
        return any(not idle_choice(KernelConfig.make(kernel, **params, ragged=r), sh.M, sh.N, sh.K) for r in RAGGED[1:])

    for sh in shapes:
        dims = dict(shape=sh.name, M=sh.M, N=sh.N, K=sh.K)
        rk = rank(fig, Problem(sh.M, sh.N, sh.K), kernels, sass_top=sass_top)
        bases: list[tuple[str, dict]] = []
        for i in rk.order:
            c = rk.configs[int(i)]
            base = (c.kernel, {k: v for k, v in c.params().items() if k != "ragged"})
            if base not in bases and can_pay(*base, sh):
                bases.append(base)
            if len(bases) == top:
                break
        for k in kernels:
            d = KernelConfig.make(k)
            base = (k, {p: v for p, v in d.params().items() if p != "ragged"})
            if base not in bases and can_pay(*base, sh):
                bases.append(base)
        if not bases:
            print(f"  {sh.name}: aligned for every configuration ranked (the choice is idle); not measured", flush=True)
            continue
        pts.append(PlannedPoint(group="baseline", kernel="cublas", config={}, **dims))
        for kernel, params in bases:
            for r in RAGGED:
                c = KernelConfig.make(kernel, **params, ragged=r)
                if r == "edge" or not idle_choice(c, sh.M, sh.N, sh.K):
                    pts.append(PlannedPoint(group=r, kernel=kernel, config=c.params(), **dims))
        print(f"  planned {sh.name}: {len(bases)} tiles, each with every ragged value that can pay", flush=True)
    return pts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="ragged", help="corpus class or all (default ragged)")
    ap.add_argument("--top", type=int, default=TOP, help=f"the model's top tiles per shape (default {TOP})")
    ap.add_argument("--resume", help="an unfinished run of this script")
    a = ap.parse_args(argv)
    from perfmodel.measure import validate
    from perfmodel.measure.detect import match_shipped

    if a.resume:
        return subprocess.run([sys.executable, "-m", "perfmodel", "validate", "--resume", a.resume]).returncode
    site = validate._Here()
    name = match_shipped(site.name, site.cc)
    if name is None:
        raise UserError(f"{site.name} is not a shipped device")
    started = datetime.now(timezone.utc)
    out = Path.cwd() / "results" / f"{started:%Y%m%d-%H%M%S}-{name}-shapes-{a.shapes.replace('_', '-')}-twins"
    if out.exists():
        raise UserError(f"{out} exists; results are never overwritten")
    out.mkdir(parents=True)
    print("calibrating (microbenchmarks) ...", flush=True)
    (out / "calibration.toml").write_text(site.calibration(name))
    fig = Figures.load(name, out / "calibration.toml")
    pts = twin_points(fig, select(a.shapes, False), a.top)
    plan = Plan(shapes=a.shapes, seed=0, environment=site.environment(name, started),
                device_toml=validate.device_toml(shipped_devices()[name]), points=pts)
    (out / "plan.json").write_text(plan.model_dump_json(indent=1))
    del site  # `perfmodel validate --resume` measures it, in a process of its own
    return subprocess.run([sys.executable, "-m", "perfmodel", "validate", "--resume", str(out)]).returncode


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
