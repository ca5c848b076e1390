"""The model's pick for one problem on one device over the whole kernel catalogue (`perfmodel choose`):
every valid configuration of every kernel ranked (sweep.rank: the closed form, the top re-predicted
from their binaries), the first with its prediction and interval, the runner-ups and the best of each
other kernel with why each loses, and how often each would beat the pick over the interval's draws."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .catalogue import KernelConfig, get_kernel, not_applicable, ranked_kernels, unranked_kernels
from .model import terms as T
from .model import uncertainty as U
from .model.figures import Figures
from .model.predict import PredictionBatch, Problem
from .sweep import SASS_TOP, rank

OVERLAP = U.OVERLAP


@dataclass
class Candidate:
    config: KernelConfig
    rank: int
    gflops: float
    q05_gflops: float
    q25_gflops: float
    q75_gflops: float
    q95_gflops: float
    bound: str
    p_beats_pick: float  # share of the draws in which it is faster than the pick (0 for the pick)
    why: str  # why it loses to the pick (empty for the pick)
    from_binary: bool

    @property
    def overlaps_pick(self) -> bool:
        return self.rank > 1 and self.p_beats_pick >= OVERLAP


@dataclass
class Choice:
    device: str
    figures: str
    M: int
    N: int
    K: int
    considered: int
    valid: int
    pick: Candidate
    runners: list  # the next configurations of the ranking
    best_per_kernel: list  # the best configuration of every other kernel
    not_applicable: dict = field(default_factory=dict)  # kernel -> why no configuration of it is valid here
    not_ranked: dict = field(default_factory=dict)  # kernel -> why the ranking leaves it out (manifest why_unranked)


def _per_flop(bt: PredictionBatch, i: int) -> tuple[float, float]:
    """(cycles per flop of the k-tile loop at full residency, wave efficiency)."""
    r, o, w, t = bt.resources, bt.occupancy, bt.waves, bt.traffic
    b = max(float(o.blocks_per_sm[i]), 1.0)
    flops_tile = 2.0 * float(r.bm[i] * r.bn[i] * r.bk[i]) * b
    cyc = bt.compute.cycles[:, i]
    waves = float(t.blocks[i]) / max(float(w.blocks_per_wave[i]), 1.0)
    eff = waves / max(np.ceil(waves - 1e-9), 1.0)
    return float(cyc.max()) / flops_tile, eff


def why_it_loses(bt_r: PredictionBatch, i: int, bt_p: PredictionBatch, p: int,
                 gflops_r: Optional[float] = None, gflops_p: Optional[float] = None) -> str:
    """One line: where a configuration's time goes beyond the pick's (fixed costs, waves, or the k-tile
    loop's cycles per flop and what bounds them). gflops_r, gflops_p: the GFLOPS the ranking shows for the
    two (a configuration not re-predicted from its binary carries its kernel's closed-form scale, which its
    batch row does not); default their batch rows'."""
    b_r, b_p = T.BOUNDS[int(bt_r.bound[i])], T.BOUNDS[int(bt_p.bound[p])]
    if int(bt_r.occupancy.blocks_per_sm[i]) == 0:
        return "no block fits on an SM"
    g_r = float(bt_r.gflops[i]) if gflops_r is None else gflops_r
    g_p = float(bt_p.gflops[p]) if gflops_p is None else gflops_p
    below = f"{100 * (1 - g_r / max(g_p, 1e-9)):.1f} % below the pick"
    if b_r == "fixed":
        return f"{below}: fixed costs (its first loads, the launch, padding of partial tiles) dominate"
    pf_r, eff_r = _per_flop(bt_r, i)
    pf_p, eff_p = _per_flop(bt_p, p)
    blocks = f"{int(bt_r.occupancy.blocks_per_sm[i])} blocks per SM against the pick's {int(bt_p.occupancy.blocks_per_sm[p])}"
    if eff_r < eff_p - 0.05:
        return (f"{below}: wave quantisation, its waves fill {100 * eff_r:.0f} % of the GPU's resident block slots "
                f"on average (the pick's {100 * eff_p:.0f} %)")
    if pf_r <= pf_p * 1.01:
        return (f"{below}: its k-tile loop is as fast per flop ({pf_r / pf_p:.2f}x the pick's cycles, {b_r}-bound, {blocks}); "
                f"it loses in the tail wave, the first tiles and the stores")
    return f"{below}: {pf_r / pf_p:.2f}x the pick's k-tile cycles per flop, bound by {b_r} (the pick by {b_p}), {blocks}"


def choose(fig: Figures, problem: Problem, runners: int = 4, sass_top: int = SASS_TOP,
           progress: Optional[Callable[[int, int], None]] = None):
    """The model's pick over the whole catalogue: (Choice, the sweep.Ranking it came from)."""
    rk = rank(fig, problem, ranked_kernels(), sass_top, progress)
    order = [int(i) for i in rk.order]
    first = order[0]
    seen, best_of = set(), []
    for i in order:  # the best configuration of each kernel, in ranking order
        k = rk.configs[i].kernel
        if k not in seen:
            seen.add(k)
            best_of.append(i)
    shown = list(dict.fromkeys(order[: runners + 1] + best_of))
    iv = rk.intervals(shown)
    pos = {i: j for j, i in enumerate(shown)}
    rank_of = {i: r for r, i in enumerate(order, 1)}

    def cand(i) -> Candidate:
        j = pos[i]
        bt, k = rk.batch_of(i)
        bp, kp = rk.batch_of(first)
        return Candidate(config=rk.configs[i], rank=rank_of[i], gflops=float(rk.gflops[i]),
                         q05_gflops=float(iv["q05"][j]), q25_gflops=float(iv["q25"][j]), q75_gflops=float(iv["q75"][j]),
                         q95_gflops=float(iv["q95"][j]), bound=T.BOUNDS[int(bt.bound[k])],
                         p_beats_pick=float(iv["p_beats_first"][j]),
                         why="" if i == first else why_it_loses(bt, k, bp, kp, float(rk.gflops[i]), float(rk.gflops[first])),
                         from_binary=i in rk.refined)

    M, N, K = problem.M, problem.N, problem.K
    na = {k: not_applicable(get_kernel(k), fig.device) or "no configuration of it is valid on this device"
          for k in ranked_kernels() if k not in seen}
    return Choice(device=fig.device.name, figures=fig.kind, M=M, N=N, K=K, considered=rk.considered, valid=len(rk.configs),
                  pick=cand(first), runners=[cand(i) for i in order[1: runners + 1]],
                  best_per_kernel=[cand(i) for i in best_of if i != first], not_applicable=na,
                  not_ranked=unranked_kernels()), rk
