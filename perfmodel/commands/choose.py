"""`perfmodel choose`: the model's pick over the whole catalogue, its runner-ups and why they lose;
`--measure` times the pick beside cuBLAS on the local GPU."""
from __future__ import annotations

import json
from dataclasses import asdict

from ..choose import OVERLAP, choose
from ..measure.gpu import require_gpu
from ..measure.tune import measure_sweep
from ..model.figures import Figures
from ..progress import counter
from ..model.predict import Problem


def _row(c) -> str:
    p = "" if c.rank == 1 else f"{100 * c.p_beats_pick:3.0f} %"
    return (f"{c.rank:5d} {c.config.label():62s} {c.gflops:9,.0f} {c.q05_gflops:8,.0f}-{c.q95_gflops:<8,.0f} {p:>6} "
            f"{c.bound:>8}{' b' if c.from_binary else '  '}  {c.why}")


def _json(c) -> dict:
    d = asdict(c)
    d["config"] = dict(kernel=c.config.kernel, **c.config.params())
    d["overlaps_pick"] = c.overlaps_pick
    return d


def run(a) -> int:
    fig = Figures.load(a.device, a.calibration, force=a.force_calibration, figures=a.figures)
    if a.measure:  # fail on a machine without a GPU before compiling anything
        require_gpu()
    quiet = bool(a.json)
    progress = counter("compiled and simulated {j}/{n} of the top configurations", enabled=not quiet)

    ch, rk = choose(fig, Problem(a.M, a.N, a.K), runners=a.runners, sass_top=a.sass, progress=progress)
    if a.json:
        print(json.dumps(dict(device=ch.device, figures=ch.figures, M=ch.M, N=ch.N, K=ch.K, considered=ch.considered,
                              valid=ch.valid, pick=_json(ch.pick), runners=[_json(c) for c in ch.runners],
                              best_per_kernel=[_json(c) for c in ch.best_per_kernel], not_applicable=ch.not_applicable,
                              not_ranked=ch.not_ranked),
                         indent=2))
    else:
        p = ch.pick
        print(f"{ch.device} ({ch.figures} figures), M={ch.M} N={ch.N} K={ch.K}: {ch.valid} valid configurations of "
              f"{ch.considered} considered over every kernel")
        print(f"pick: {p.config.label()}  {p.gflops:,.0f} GFLOPS (50 %: {p.q25_gflops:,.0f}-{p.q75_gflops:,.0f}, "
              f"90 %: {p.q05_gflops:,.0f}-{p.q95_gflops:,.0f}), bound: {p.bound}")
        head = f"{'rank':>5} {'configuration':62s} {'GFLOPS':>9} {'90 % interval':>17} {'P>pick':>6} {'bound':>8}    why it loses"
        print("\nrunner-ups\n" + head)
        for c in ch.runners:
            print(_row(c))
        print("\nthe best of each other kernel\n" + head)
        for c in ch.best_per_kernel:
            print(_row(c))
        for k, why in ch.not_applicable.items():
            print(f"      {k}: not applicable ({why})")
        for k, why in ch.not_ranked.items():
            print(f"      {k}: not ranked, {why}; `perfmodel predict` and `sweep --kernel {k}` take it")
        n = sum(c.overlaps_pick for c in ch.runners)
        print(f"\nP>pick: the share of draws of the inputs and the model's residual in which it is faster than the pick; "
              + (f"{n} of the {len(ch.runners)} runner-ups are in at least {100 * OVERLAP:.0f} % of them: the model cannot "
                 f"tell them from the pick (perfmodel sweep --measure-overlap measures every such configuration)"
                 if n else "no runner-up comes near it"))
    if a.measure:
        first = int(rk.order[0])
        return measure_sweep(fig.device, rk.configs, rk.gflops, a.M, a.N, a.K, 0, sample=0, chosen=[first], kind="choose")
    return 0
