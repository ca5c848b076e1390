"""Rank every legal tile configuration: the closed form over all of them, then the top N re-predicted
from their binaries (facts.compiled: compiler registers, prefetch share, simulated k-tile loop)."""
from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from . import catalogue, facts
from .catalogue import VALUES, KernelConfig, enumerate_configs, idle_choice, tiled_kernels
from .model import smem_banks
from .model.occupancy import occupancy
from .model import uncertainty as U
from .model.figures import Figures
from .model.predict import PredictionBatch, Problem, predict_batch
from .paths import cache_dir, data_dir, write_json_atomic


def _digest(paths, text: str = "") -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    h.update(text.encode())
    return h.hexdigest()


def _cache_file(kind: str, key: str) -> Path | None:
    try:
        return cache_dir() / f"sweep-{kind}-{key[:24]}.json"
    except OSError:  # unwritable home: no cache, same results
        return None


def cached_enumeration(device, kernels=None, choices: bool = True):
    """`catalogue.enumerate_configs`, cached on disk (PERFMODEL_CACHE or ~/.cache/perfmodel). The key
    hashes everything the result depends on: the device's figures, the kernel list, VALUES, whether the
    design choices are enumerated, the kernel manifest and catalogue.py's checks; any change is a new
    entry, so a hit equals a recomputation."""
    kernels = tiled_kernels() if kernels is None else list(kernels)
    key = _digest([catalogue.__file__, data_dir("kernels") / "manifest.toml"],
                  device.model_dump_json() + json.dumps([list(kernels), VALUES, choices]))
    path = _cache_file("configs", key)
    if path is not None and path.exists():
        try:
            d = json.loads(path.read_text())
            configs = [KernelConfig.model_construct(**c) for c in d["valid"]]
            return configs, Counter(d["why"]), d["total"]
        except (ValueError, KeyError, TypeError):
            pass  # damaged entry: recompute and rewrite
    configs, why, total = enumerate_configs(device, kernels, choices)
    full = {k: None for k in catalogue.PARAM_NAMES + catalogue.CHOICE_NAMES}
    write_json_atomic(path, dict(valid=[{**full, "kernel": c.kernel, **{k: getattr(c, k) for k in full}} for c in configs],
                                 why=dict(why), total=total))
    return configs, why, total


@dataclass
class Ranking:
    """Every valid config of a sweep, its closed-form batch, and the predicted GFLOPS after re-predicting
    the top N from their binaries (`refined`: their indices)."""

    configs: list
    invalid_by_constraint: Counter
    considered: int
    batch: PredictionBatch
    gflops: np.ndarray
    refined: set
    seconds: float  # the closed form's time
    refined_batch: Optional[PredictionBatch] = None  # the refined configs' batch (`refined_at`: their rows in it)
    refined_at: dict = field(default_factory=dict)
    scale: Optional[np.ndarray] = None  # per config, the factor kernel_scale gave its closed form (1 where refined)

    @property
    def order(self) -> np.ndarray:
        return np.argsort(-self.gflops, kind="stable")  # ties (a choice the model cannot tell apart) in enumeration order

    def batch_of(self, i: int) -> tuple[PredictionBatch, int]:
        """The batch that predicted config i (the refined one where it was re-predicted) and its row there."""
        return (self.refined_batch, self.refined_at[i]) if i in self.refined_at else (self.batch, i)

    def _draws(self, idx: Sequence[int]) -> np.ndarray:
        """Drawn GFLOPS (model.uncertainty) of configs idx, each from the batch that predicted it."""
        out = np.empty((U.DRAWS, len(idx)))
        for refined in (False, True):
            pos = [j for j, i in enumerate(idx) if (i in self.refined_at) == refined]
            if pos:
                src = self.refined_batch if refined else self.batch
                rows = [self.batch_of(idx[j])[1] for j in pos]
                out[:, pos] = U.draw_gflops(src, rows, U.draw_times(src, rows))
                if not refined and self.scale is not None:  # the kernel's closed-form scale (kernel_scale)
                    out[:, pos] *= self.scale[[idx[j] for j in pos]]
        return out

    def intervals(self, idx: Sequence[int]) -> dict[str, np.ndarray]:
        """The 50 % and 90 % intervals (GFLOPS) of configs idx, and `p_beats_first`: the share of draws in
        which each is faster than the first of idx (the inputs are drawn once for all configs, the
        model's residual for each on its own)."""
        idx = [int(i) for i in idx]
        g = self._draws(idx)
        out = {f"q{round(q * 100):02d}": np.quantile(g, q, axis=0) for q in U.LEVELS}
        out["p_beats_first"] = (g > g[:, :1]).mean(axis=0)
        return out


PER_KERNEL = 3  # refine_set: each kernel's closed-form top with its own choices, re-predicted from binaries


def refine_set(configs: Sequence[KernelConfig], gflops: np.ndarray, top: int) -> list[int]:
    """Which configurations to re-predict from their binaries: the closed form's top `top`, and where the
    ranking holds design choices, also its top `top` of the configurations with their kernels' own
    choices. The closed form is biased towards the choices (+5.0 % over the 285 recorded points that
    change one, -0.3 % over the 2,090 that do not: docs/kernels.md), so its top can fill with variants
    of a few tiles and leave out the defaults that the binaries would rank first. The closed form's bias
    differs by kernel too (async_pipeline's top ten at 4096: 45 TFLOPS, measured 35.6-41.3), so one
    kernel can fill both lists: the top PER_KERNEL of each kernel with its own choices are added as well,
    and the binaries decide between kernels."""
    order = np.argsort(-np.asarray(gflops), kind="stable")
    idx = [int(i) for i in order[:top]]
    if top <= 0:
        return idx
    seen = set(idx)
    if any(configs[i].changed_choices() for i in idx):
        plain = (int(i) for i in order if not configs[i].changed_choices())
        idx += [i for i in itertools.islice(plain, top) if i not in seen]
        seen = set(idx)
    kernels = {c.kernel for c in configs}
    if len(kernels) > 1:
        idx += [i for i in kernels_top(configs, order, PER_KERNEL, kernels) if i not in seen]
    return idx


def kernels_top(configs: Sequence[KernelConfig], order: Sequence[int], n: int, kernels=None) -> list[int]:
    """The first n configurations of each kernel with its own choices, in `order` (indices into configs);
    with `kernels` given, the walk stops once each of them has its n."""
    taken: Counter = Counter()
    out = []
    for i in order:
        c = configs[int(i)]
        if taken[c.kernel] < n and not c.changed_choices():
            taken[c.kernel] += 1
            out.append(int(i))
            if kernels is not None and all(taken[k] >= n for k in kernels):
                break
    return out


def refine_with_binaries(fig: Figures, configs: Sequence[KernelConfig], gflops: np.ndarray, problem: Problem, top: int,
                         progress: Optional[Callable[[int, int], None]] = None,
                         extra: Sequence[int] = ()) -> tuple[np.ndarray, set, Optional[PredictionBatch], dict]:
    """Predicted GFLOPS with the top `top` (refine_set) re-predicted from their binaries (compiled in parallel with the
    local nvcc, cached on disk). Where the binaries show a kernel's closed form optimistic for this problem
    (kernel_scale below 1), a second pass builds refine_set of the closed form corrected by those factors,
    so that kernel (async_pipeline's at 4096 filled the closed form's own-choice top 20) does not keep
    another kernel's candidates from being built. `extra` (occupancy_candidates) is built with the leaders'
    set. Returns (gflops, set of refined indices, their batch, index -> row in it); unchanged where no local
    compiler targets the device."""
    closed = np.asarray(gflops, dtype=float)
    g = closed.copy()
    cc = fig.device.compute_capability
    if top <= 0 or not facts.can_compile(cc):
        return g, set(), None, {}
    keep, basis, rb = [], closed, None

    def build(idx) -> bool:  # compile idx and re-predict everything built so far from its binaries
        nonlocal rb
        built = facts.compiled_many([configs[i] for i in idx], cc, progress)
        keep.extend((i, b) for i, b in zip(idx, built) if b is not None)
        if keep:
            rb = predict_batch(fig, [configs[i] for i, _ in keep], problem, builds=[b for _, b in keep])
            for k, (i, _) in enumerate(keep):
                g[i] = rb.gflops[k]
        return bool(keep)

    for _ in range(2):  # the second pass: refine_set of the closed form corrected by what the first pass's binaries
        done = {i for i, _ in keep}  # showed of each kernel (kernel_scale), where that corrects a kernel
        idx = [i for i in refine_set(configs, basis, top) if i not in done]
        if not idx:
            break
        if not build(idx):
            return g, set(), None, {}
        bias = kernel_scale(configs, closed, g, {i for i, _ in keep}, everywhere=True)
        if basis is not closed or not (bias < 1).any():
            break
        basis = closed * bias
    done = {i for i, _ in keep}
    lead = leaders_set(configs, closed, g, done, top)
    lead += [i for i in dict.fromkeys(extra) if i not in done and i not in lead]
    if lead:  # the kernels that lead once binaries were read: their own top too (and the occupancy candidates)
        build(lead)
    refined = {i for i, _ in keep}
    return g * kernel_scale(configs, closed, g, refined), refined, rb, {i: k for k, (i, _) in enumerate(keep)}


def leaders_set(configs: Sequence[KernelConfig], closed: np.ndarray, g: np.ndarray, built: set, top: int) -> list[int]:
    """The configurations still to build of the kernels that lead once binaries were read: each kernel among the
    first PER_KERNEL re-predicted configurations, its closed form's top `top` with its own choices. Within one
    kernel the closed form orders tiles by its terms alone, and its bias differs between tiles that its binaries
    separate (double_buffer at 4096 on an H200: the closed form has bk = 16 tiles 2-3 % above bk = 8 ones, their
    binaries the other way round, and 128 x 128 x 8 stood 734th, ninth of that kernel's own-choice tiles): so the
    kernel the binaries put first gets its own top built, not only the share refine_set gives every kernel."""
    if top <= 0 or not built:
        return []
    first = sorted(built, key=lambda i: -g[i])[:PER_KERNEL]
    kernels = {configs[i].kernel for i in first}
    order = np.argsort(-np.asarray(closed), kind="stable")
    own = kernels_top(configs, order, top, kernels)
    return [i for k in sorted(kernels) for i in own if configs[i].kernel == k and i not in built]


def kernel_scale(configs: Sequence[KernelConfig], closed: np.ndarray, refined_g: np.ndarray, refined: set,
                 everywhere: bool = False) -> np.ndarray:
    """Per configuration, the factor its closed-form GFLOPS takes in the ranking: 1 where it was re-predicted
    from its binary; else, where its kernel's re-predicted configurations came out slower than their closed
    form, the median of their binary / closed-form ratios (never above 1). So a kernel whose closed form is
    optimistic for this problem cannot rank configurations nobody built above the ones whose binaries
    were read (refine_set takes each kernel's top, so every kernel has some). everywhere: the factor on the
    re-predicted configurations too (the kernel's closed form corrected, for choosing what to build)."""
    ratios: dict[str, list[float]] = {}
    for i in refined:
        if closed[i] > 0:
            ratios.setdefault(configs[i].kernel, []).append(refined_g[i] / closed[i])
    factor = {k: min(1.0, float(np.median(r))) for k, r in ratios.items()}
    return np.array([1.0 if (i in refined and not everywhere) else factor.get(c.kernel, 1.0) for i, c in enumerate(configs)])


SASS_TOP = 20  # the closed form's top configurations rank re-predicts from their binaries (sweep, choose, bench)


def occupancy_candidates(bt: PredictionBatch, top: int) -> list[int]:
    """Configurations to build because their binary may fit one more block per SM than the closed form gives
    them: the closed form takes each configuration at its estimated registers (catalogue's
    estimated_registers), and a count a few registers too high drops a block at an occupancy cliff (split_k
    128 x 128 x 8, 8 x 8, 4 slices at 3001^3 on an H200: estimated 136, compiled 128; one block per SM for
    the closed form, 33.4 against its binary's 40.2 TFLOPS, 7,911th of the closed form; measured 39.4 TFLOPS,
    the fastest point recorded at that shape). Each configuration with estimated registers is taken at the low
    end its kernel's compiled counts reach against the estimate (the 10 % level of
    model.uncertainty.REGISTER_RATIO_LEVELS, in 8-register steps, at most nvcc's cap); those for which that
    raises the blocks per SM are predicted again at it, and each kernel's top PER_KERNEL with its own choices
    returned (one kernel's optimistic closed form would fill an overall top: async_pipeline's at 3001^3). A
    candidate list only: what is built is ranked by its binary, the others keep their closed form. top: 0 for
    none (a ranking that builds nothing)."""
    if top <= 0:
        return []
    dev = bt.figures.device
    est = np.array([b.registers is None for b in bt.builds]) if bt.builds else np.ones(len(bt.configs), bool)
    low = np.array([U.scaled_registers(dev, c, 0) for c in bt.configs], dtype=float)
    blocks, _, _ = occupancy(dev.limits, bt.resources.threads, low, bt.resources.smem_bytes)
    idx = np.flatnonzero(est & (low < bt.resources.registers) & (blocks > bt.occupancy.blocks_per_sm))
    if not len(idx):
        return []
    again = bt.again(idx, [facts.given(int(low[i]), "estimate at its kernel's low compiled ratio") for i in idx])
    return kernels_top(bt.configs, idx[np.argsort(-again.gflops, kind="stable")], PER_KERNEL)


def rank(fig: Figures, problem: Problem, kernels=None, sass_top: int = SASS_TOP,
         progress: Optional[Callable[[int, int], None]] = None, choices: bool = True) -> Ranking:
    """Enumerate (cached; with `choices` every design choice too, less those that cannot pay at this
    problem: catalogue.idle_choice), predict all in one batch, re-predict the top `sass_top` from their binaries."""
    t0 = time.perf_counter()
    configs, why, total = cached_enumeration(fig.device, kernels, choices)
    M, N, K = (int(np.ravel(x)[0]) for x in problem.arrays(1))
    configs = [c for c in configs if not idle_choice(c, M, N, K)]  # ragged = inner on aligned sizes: only costs
    smem_banks.load_disk_cache(_cache_file("smem", smem_banks.code_hash()))
    bt = predict_batch(fig, configs, problem)
    smem_banks.save_disk_cache(_cache_file("smem", smem_banks.code_hash()))
    dt = time.perf_counter() - t0
    extra = occupancy_candidates(bt, sass_top) if facts.can_compile(fig.device.compute_capability) else []
    gflops, refined, rb, at = refine_with_binaries(fig, configs, bt.gflops, problem, sass_top, progress, extra=extra)
    scale = np.where([i in refined for i in range(len(configs))], 1.0, gflops / np.maximum(bt.gflops, 1e-30)) if refined else None
    return Ranking(configs=configs, invalid_by_constraint=why, considered=total, batch=bt, gflops=gflops, refined=refined,
                   scale=scale,
                   seconds=dt, refined_batch=rb, refined_at=at)
