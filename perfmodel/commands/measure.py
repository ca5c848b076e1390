"""`perfmodel validate`, `perfmodel bench` and `perfmodel calibrate` (GPU only; pycuda is imported when they start)."""
from __future__ import annotations

from pathlib import Path

from ..measure import calibrate as _calibrate
from ..measure import fleet as _fleet_mod
from ..measure import validate as _validate


def _fleet(a) -> dict:
    return dict(gpus=a.gpus, ray=a.ray, mixed=a.mixed_gpus)


def validate(a) -> int:
    if a.shapes or a.resume:
        return _validate.validate_shapes(a.shapes or "all", seed=a.seed, out=Path(a.out) if a.out else None,
                                         resume=Path(a.resume) if a.resume else None, plan_only=a.plan_only,
                                         sample=_validate.SHAPE_RANDOM if a.sample is None else a.sample, **_fleet(a))
    return _validate.validate(Path(a.out) if a.out else None, quick=a.quick, seed=a.seed, ncu=a.ncu, variants=a.variants,
                              **_fleet(a))


def bench(a) -> int:
    if a.resume:
        return _validate.validate_shapes(resume=Path(a.resume), plan_only=a.plan_only, **_fleet(a))
    return _validate.validate_shapes(a.shapes, out=Path(a.out) if a.out else None, bench=True, holdout=a.holdout, **_fleet(a))


def calibrate(a) -> int:
    if a.gpus is not None or a.ray is not None:
        return _fleet_mod.calibrate_fleet(Path(a.out) if a.out else None, **_fleet(a))
    return _calibrate.calibrate(Path(a.out) if a.out else None)
