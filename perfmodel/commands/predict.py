"""`perfmodel predict`."""
from __future__ import annotations

from .. import facts
from ..catalogue import CHOICE_NAMES, PARAM_NAMES, KernelConfig
from ..explain import render
from ..model.figures import Figures
from ..model.predict import predict


def run(a) -> int:
    fig = Figures.load(a.device, a.calibration, force=a.force_calibration, figures=a.figures)
    cfg = KernelConfig.make(a.kernel, **{k: getattr(a, k) for k in PARAM_NAMES + CHOICE_NAMES})
    cfg.check_device(fig.device)
    if a.registers:
        build = facts.given(a.registers, "--registers")
    else:  # the compiler's facts where the local nvcc can target this architecture
        build = facts.for_config(cfg, fig.device.compute_capability, estimate=a.estimate)
    p = predict(fig, cfg, a.M, a.N, a.K, build=build, clock_MHz=a.clock, width_parts=True)
    print(p.model_dump_json(indent=2) if a.json else render(p))
    return 0
