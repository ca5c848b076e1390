"""How far to trust a prediction: its 50 % and 90 % intervals, propagated from where each figure came from.

Two kinds of uncertainty enter (docs/model.md, "Intervals"):

- **the inputs**: every figure the model uses has a provenance (this GPU's calibration, its SM
  generation's calibration, a published microbenchmark, another GPU's measurement used as a proxy,
  the datasheet) and a range over which it is known to vary (`RANGES`, each with its evidence). A
  draw takes each input at a point of its range and runs the prediction's terms again: the FFMA rate
  scales the FFMA and issue terms and the compute phase, the shared-memory bandwidth the smem term,
  the L2 and DRAM bandwidths their terms and the last wave's stores, the memory latency the exposed
  latency and each wave's first tile, the SM clock every cycle count that is the SM's against the
  memory system's, the launch cost the timed launch (measured for the generation, else its published
  back-to-back time, which a launch timed alone exceeds). Terms are recombined exactly as the point
  prediction combines them (the largest bounds each k-tile; terms.tile_loop_cycles), so an input
  matters only where it is, or becomes, the bound.
- **the model itself**: what is left when every figure is the GPU's measured one. Its spread is the
  distribution of ln(predicted / measured) over the recorded runs `model_spread.toml` lists (the
  accuracy set, the shape runs without the corpus hold-out, the H200 runs; each device's reference
  calibration, else the run's own), per bound and occupancy regime (predict.occupancy_regime: a warp
  alone on its scheduler, a grid under one wave, under four, more), written by `perfmodel accuracy RUN ...
  --model-spread FILE`; a bound and regime with fewer than `MIN_POINTS` recorded points uses the bound's,
  a bound with fewer uses all points'.
- **the model from datasheet figures**: a prediction from datasheet figures (`--figures datasheet`) of a GPU
  whose SM generation was calibrated leaves out every figure a calibration measures, and misses more than
  the calibrated model does, in a way the inputs' ranges do not carry (figures it then lacks: the L2->SM
  port, the tile loop's exposed share, the fetch table, the store rate). Its residual is drawn from
  `datasheet_spread.toml`: the same quantiles over the same recorded runs predicted from datasheet figures,
  written by `perfmodel accuracy RUN ... --figures datasheet --model-spread FILE`.
- **the model on a generation nobody calibrated**: a GPU whose SM generation has no calibration is
  predicted from datasheet figures, and the recorded runs (all of calibrated generations) do not say how
  far the model is off there. Its residual is drawn instead from `transfer_spread.toml`: the distribution
  of ln(predicted / measured) over the published measurements of such GPUs (published/sgemm.toml, every
  bound pooled), written by `perfmodel accuracy --published --model-spread FILE`. `perfmodel accuracy
  --published` scores each source's intervals with the spread of the other sources' points only
  (`transfer_override`), so the check is of points the spread did not see.

Draws are a fixed pseudo-random sample (`DRAWS`, seed `SEED`), so the same prediction always gets the
same interval. Without its draw axis everything is the point prediction: at every input's nominal
value and the model's zero residual, the terms give `PredictionBatch.time_s` exactly."""
from __future__ import annotations

import tomllib
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ..devices import generation_measured
from ..facts import BuildFacts
from . import terms as T
from .occupancy import register_cap

DRAWS = 512
SEED = 20261124
MIN_POINTS = 30  # recorded points a bound needs for its own model spread
SPREAD_FILE = Path(__file__).with_name("model_spread.toml")
TRANSFER_FILE = Path(__file__).with_name("transfer_spread.toml")
DATASHEET_SPREAD_FILE = Path(__file__).with_name("datasheet_spread.toml")
_transfer_override: list = []  # a stack of transfer tables that replace TRANSFER_FILE's (transfer_override)
LEVELS = (0.05, 0.25, 0.75, 0.95)  # the 90 % and 50 % intervals' ends
SPREAD_LEVELS = [round(x, 2) for x in np.arange(0.01, 0.995, 0.01)]  # the levels the spread files hold
OVERLAP = 0.05  # a configuration faster than another in at least this share of the draws overlaps it (sweep, choose)


@dataclass(frozen=True)
class Range:
    """An input's achieved value over the figure the model uses, uniform in log between lo and hi."""

    lo: float
    hi: float
    evidence: str


# Rates (FFMA, bandwidths) as achieved / figure; the latency as actual / figure. Keyed by (input, provenance).
RANGES: dict[tuple[str, str], Range] = {
    ("ffma", "calibration"): Range(0.97, 1.03, "the 8x8 outer product's FFMA rate at 16 warps per SM in the 21 calibration "
                                   "files of H100 SXM and H200 GPUs under results/ that measured it: 51.7-53.7 TFLOPS (-2.3 to +1.6 %)"),
    ("ffma", "generation"): Range(0.96, 1.04, "as a calibration, and the H200's calibrations lie within the H100's range "
                                  "(one SM generation, two SKUs): +-2 % more for a GPU of the generation nobody calibrated"),
    ("ffma", "datasheet"): Range(0.87, 1.03, "one issue clock per FFMA with the binary's register-bank reads "
                                 "(model.schedule); 13 outer-product loops measured on the H100 at 8-24 warps per SM "
                                 "sustain 0.88-1.03 of that replay (benchmarks/ffma_loops.py)"),
    ("smem", "calibration"): Range(0.99, 1.01, "126.15-126.16 B per clock per SM in the 22 calibration files under results/"),
    ("smem", "generation"): Range(0.99, 1.01, "126.15-126.16 B per clock per SM in 22 calibration files of two SKUs"),
    ("smem", "datasheet"): Range(0.95, 1.0, "the architectural 128 B per clock per SM is a ceiling; calibrate measures "
                                 "126.2 on the H100 (98.6 %)"),
    ("l2", "calibration"): Range(0.93, 1.05, "6,593-7,409 GB/s in the 22 calibration files around the reference's 7,089"),
    ("l2", "microbenchmark"): Range(0.85, 1.15, "a published L2 microbenchmark of this GPU: access pattern and data-set "
                                    "size move it by about +-15 % (the H100 calibrations above span 12 %)"),
    ("l2", "proxy"): Range(0.75, 1.33, "another GPU's measurement scaled by SMs x clock: an assumption, +-33 %; the one "
                           "proxy checked against a measurement (H100 SXM, scaled from an H100 PCIe) was 3 % off, while "
                           "L2 bytes per SM per clock differ up to 1.9x between dies of one generation (A100 31.5, A40 16.6)"),
    ("l2", "datasheet"): Range(0.75, 1.33, "NVIDIA publishes no L2 bandwidth; as a proxy"),
    ("dram", "calibration"): Range(0.97, 1.01, "2,965-3,070 GB/s in the 20 H100 calibration files around the reference's 3,042"),
    ("dram", "microbenchmark"): Range(0.88, 1.03, "a published streaming measurement: read, scale and triad kernels "
                                      "differ by up to 13 % (te42kyfo/gpu-benches gpu-stream: H100 PCIe read 1,942, scale "
                                      "1,704 GB/s)"),
    ("dram", "proxy"): Range(0.85, 1.0, "as the datasheet"),
    ("dram", "datasheet"): Range(0.85, 0.98, "the datasheet gives the interface's peak; streaming reads reach 87-98 % of "
                                 "it (te42kyfo/gpu-benches gpu-stream, commit 1c36d509, full occupancy: A100 40 GB 96 %, "
                                 "A100 80 GB 87 or 91 % (SXM or PCIe), A40 98 %, H100 PCIe 97 %, L40 98 %, V100 96 %; perfmodel calibrate: "
                                 "H100 SXM 91 %, H200 92 %)"),
    ("port", "calibration"): Range(0.99, 1.01, "119.7-120.0 B per clock in the 18 calibration files that measured it"),
    ("port", "generation"): Range(0.99, 1.01, "119.7-120.0 B per clock in 18 calibration files of two SKUs"),
    ("port", "l1"): Range(0.85, 1.0, "the L1's line rate (128 B per clock) is the most an SM takes in (calibrate measures "
                          "120 on the H100, 94 %), and the model lets single-buffered blocks expose their whole load "
                          "phase where calibrate's tile loop on the H100 saw 3 / 4 blocks expose 0.8 / 0.7 of one "
                          "block's. Drawn: one position for both, uniform (in log for the rate)"),
    ("latency", "calibration"): Range(0.97, 1.03, "L2 363-381 and DRAM 674-698 cycles in the 22 calibration files"),
    ("latency", "microbenchmark"): Range(0.71, 1.29, "a pointer chase gives the near and far L2 partitions (H100 265 and "
                                         "480 cycles, A100 213 and 426) and the device file their mean: a tile's lines "
                                         "come from both"),
    ("latency", "proxy"): Range(0.6, 1.6, "another GPU's pointer chase in this GPU's cycles: the partitions' span and "
                                "a memory technology nobody measured here"),
    ("launch", "measured"): Range(0.98, 1.02, "an empty kernel timed as validate times a kernel on the lent H100: 3.71 us with "
                                  "1 block, 3.78 us with 132 (results/archive/fixed-costs-20261123-h100-sxm.txt)"),
    ("launch", "published"): Range(1.0, 1.53, "the published time is of a tiny kernel launched back to back; validate times a "
                                   "launch alone between two events, which costs more: on Hopper 3.71 us measured against "
                                   "2.43 us published (1.53 x), and 2.30 us for a launch behind another (0.95 x)"),
    ("launch", "none"): Range(1.0, 1.0, "neither measured nor published for this generation: not counted"),
}
# the smallest share of one block's load phase b single-buffered blocks exposed in calibrate's tile loop on the
# H100 (long compute phases; 1 with one or two blocks): Figures.tile_exposure, docs/model.md
TILE_EXPOSURE_H100 = ([1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 0.8, 0.7])
L1_FILL_BYTES_PER_CLOCK = 128.0  # one 128 B line per clock into an SM's L1: the most an L2->SM port can deliver
# compiled / estimated registers per thread of the distinct configurations of the runs model_spread.toml lists
# (the registers of the binary that ran against catalogue's estimate), at 10, 30, 50, 70 and 90 %, per kernel;
# "all" (2,111 configurations) for a kernel with fewer than MIN_POINTS of them. The estimate misses most for
# the register-tiled kernels without float4 loads (its median is 1.56 / 1.68 x low for tiled_1d / tiled_2d)
REGISTER_RATIO_LEVELS = {
    "all": (0.92, 1.02, 1.13, 1.31, 2.28),
    "tiled_1d": (0.98, 1.3, 1.56, 2.32, 3.91),  # 155 configurations
    "tiled_2d": (1.1, 1.39, 1.68, 2.21, 3.34),  # 633
    "tiled_2d_float4": (0.9, 0.97, 1.06, 1.13, 1.26),  # 213
    "bank_conflict_free": (0.94, 1.0, 1.06, 1.12, 1.24),  # 104
    "double_buffer": (0.96, 1.03, 1.06, 1.12, 1.27),  # 86
    "warp_tiled": (0.9, 0.97, 1.03, 1.11, 1.24),  # 916
}
REGISTER_LEVELS = 5
INPUTS = ("clock", "ffma", "smem", "l2", "dram", "latency", "port", "reuse", "launch")  # drawn in this order
_PROXY_WORDS = ("proxy",)
_MEASURED_WORDS = ("measured", "microbenchmark", "pointer chase", "jia et al", "luo et al", "stream")


def _source_kind(source: Optional[str]) -> str:
    """proxy, microbenchmark or datasheet, from a device file's source text: a proxy says so; otherwise
    what the figure is comes before any parenthesis (a datasheet figure may quote a measurement beside it)."""
    s = (source or "").lower()
    if any(w in s for w in _PROXY_WORDS):
        return "proxy"
    if any(w in s.split("(")[0] for w in _MEASURED_WORDS):
        return "microbenchmark"
    return "datasheet"


def launch_source(device) -> str:
    """Which figure a timed launch's cost comes from (model.predict.launch_overhead_s): "measured" (the
    generation's launch timed as validate times a kernel), "published" (the generation's back-to-back launch
    time) or "" (neither: counted as 0)."""
    lat = device.latency
    return "measured" if lat.launch_overhead_us is not None else "published" if lat.back_to_back_launch_us is not None else ""


def provenance(fig, clock_given: bool) -> dict[str, str]:
    """Where each input of a prediction with these Figures comes from: given (a clock the caller
    states, e.g. measured while timing), calibration, generation, microbenchmark, proxy or datasheet.
    Memory figures of a device file are classified by their [sources] entry (a proxy says so)."""
    dev, m = fig.device, fig.device.measured
    sm = "generation" if fig.generation else "calibration" if fig.calibrated else "datasheet"
    own = fig.calibrated and not fig.generation  # this GPU's calibration measured its memory system too
    clock = "given" if clock_given else "calibration" if own and m.sm_clock_MHz else "datasheet"
    out = {"clock": clock, "ffma": sm,
           "smem": sm if fig.calibrated and m.smem_bandwidth_bytes_per_clock_per_sm else "datasheet"}
    for inp, figure, measured in (("l2", "memory.l2_bandwidth_GBps", "l2_bandwidth_GBps"),
                                  ("dram", "memory.dram_bandwidth_GBps", "dram_bandwidth_GBps")):
        out[inp] = "calibration" if own and getattr(m, measured) else _source_kind(dev.source_of(figure))
    if own and m.l2_latency_cycles and m.dram_latency_cycles:
        out["latency"] = "calibration"
    else:  # the weaker of the two latencies' sources
        kinds = {_source_kind(dev.source_of(f)) for f in ("latency.l2_latency_cycles", "latency.dram_latency_cycles")}
        out["latency"] = "proxy" if "proxy" in kinds or "datasheet" in kinds else "microbenchmark"
    out["port"] = ("l1" if not fig.calibrated else "generation" if fig.generation else "calibration") \
        if fig.l2_port_bytes_per_clock else "unmeasured"
    out["reuse"] = "model"
    out["launch"] = launch_source(dev) or "none"
    # where the model's own residual comes from: the published points, the recorded runs predicted from datasheet
    # figures, or the recorded runs with measured figures
    out["model"] = "transfer" if uses_transfer(fig) else "datasheet" if uses_datasheet_spread(fig) else "recorded"
    return out


def registers_provenance(bt, idx) -> str:
    """'compiler' where every config of idx has known registers (compiled, recorded or given), else 'estimate'."""
    builds = bt.builds
    return "estimate" if builds and any(builds[i].registers is None for i in idx) else "compiler"


def scaled_registers(device, cfg, level: int) -> int:
    """cfg's estimated registers scaled by its kernel's compiled/estimated ratio at `level` of
    REGISTER_RATIO_LEVELS, rounded up to nvcc's 8-register steps, at most what nvcc gives under the launch
    bounds (no compiled count recorded exceeds it)."""
    ratio = REGISTER_RATIO_LEVELS.get(cfg.kernel, REGISTER_RATIO_LEVELS["all"])[level]
    want = int(np.ceil(cfg.estimated_registers() * ratio / 8.0) * 8)
    return min(want, int(register_cap(device, cfg.threads)))


def _register_variants(bt, idx):
    """PredictionBatches of configs idx, one per level of REGISTER_RATIO_LEVELS: estimated registers scaled
    by their kernel's ratio at that level, at most what nvcc gives under the launch bounds (no compiled
    count recorded exceeds it); known registers kept."""
    fig = bt.figures
    out = []
    for level in range(REGISTER_LEVELS):
        builds = []
        for i in idx:
            b, c = bt.builds[i], bt.configs[i]
            if b.registers is not None:
                builds.append(b)
                continue
            builds.append(BuildFacts(registers=scaled_registers(fig.device, c, level),
                                     registers_source="estimate x recorded ratio", origin="given"))
        out.append(bt.again(idx, builds))
    return out


def input_range(fig, inp: str, kind: str) -> Range:
    """The range of one input of this provenance (the clock's from the device's base and boost clocks)."""
    if inp == "reuse":
        return Range(0.0, 1.0, "the DRAM bytes: the model counts each wave's A and B panels once (terms.dram_bytes); "
                               "blocks out of step, and what the L2 keeps between waves, can bring them down to the "
                               "compulsory traffic (A, B and C once), never below. Drawn: the position, in log, between "
                               "the model's bytes and the compulsory ones, uniform")
    if (inp, kind) == ("port", "unmeasured"):
        return Range(0.0, 1.0, f"without calibrate's tile loop the model lets the resident blocks' tile bursts queue at "
                               f"the SM's share of the L2 bandwidth and exposes the whole load phase; on the H100 they "
                               f"overlap, each through a port of about one L1 line per clock (120 B measured, "
                               f"{L1_FILL_BYTES_PER_CLOCK:.0f} assumed), and 3 / 4 single-buffered blocks expose only 0.8 / "
                               f"0.7 of one block's phase. Drawn: the position between the two, uniform (in log for the rate)")
    if inp == "clock":
        c = fig.device.compute
        if kind == "given":
            return Range(1.0, 1.0, "the clock given (measured while the kernel ran)")
        if kind == "calibration":
            f = min(1.0, fig.device.measured.sm_clock_MHz / c.sm_clock_boost_MHz)
            return Range(0.98 * f, f, f"calibrate observed {fig.device.measured.sm_clock_MHz:.0f} MHz under load; "
                                      f"NVML reports it in steps, and a longer or hotter run may sit a step or two lower (2 %)")
        base = c.sm_clock_base_MHz or c.sm_clock_boost_MHz
        return Range(min(1.0, base / c.sm_clock_boost_MHz), 1.0,
                     f"under a sustained load the SM clock lies between the base ({base:.0f} MHz) and the boost "
                     f"clock ({c.sm_clock_boost_MHz:.0f} MHz) the prediction assumes, as power and temperature allow")
    return RANGES[(inp, kind)]


@lru_cache(maxsize=4)
def model_spread(path: Path = SPREAD_FILE) -> Optional[dict]:
    """The model's residual quantiles per bound: {'levels': [...], 'by_bound': {bound: [ln(pred/measured)...]},
    'points': {bound: n}, 'source': text}, and per bound and occupancy regime ('by_bound_regime' for those
    of MIN_POINTS points or more, keyed "bound/regime"; 'regime_points' counts every pair); None where the
    file is absent (while it is being written: the intervals then hold the inputs' spread alone)."""
    if not path.is_file():
        return None
    with open(path, "rb") as f:
        return tomllib.load(f)


@lru_cache(maxsize=4)
def datasheet_spread(path: Path = DATASHEET_SPREAD_FILE) -> Optional[dict]:
    """model_spread's quantiles for predictions from datasheet figures (the same runs, `perfmodel accuracy RUN ...
    --figures datasheet --model-spread FILE`); None where the file is absent (the recorded spread is used then)."""
    if not path.is_file():
        return None
    with open(path, "rb") as f:
        return tomllib.load(f)


@lru_cache(maxsize=4)
def transfer_spread(path: Path = TRANSFER_FILE) -> Optional[dict]:
    """The residual quantiles of the published points: {'levels', 'quantiles', 'points', 'source'}; None where
    the file is absent (the recorded spread is used then)."""
    if not path.is_file():
        return None
    with open(path, "rb") as f:
        return tomllib.load(f)


def _quantiles(x) -> list[float]:
    """x's quantiles at SPREAD_LEVELS, as the spread files hold them: a residual's predictive quantiles, the
    level p at rank p (n + 1) of the n sorted residuals (np.quantile's "weibull" rule), so that a new point
    exchangeable with them falls below it with probability p whatever n (a new draw lies between the k-th and
    the (k+1)-th of n with probability 1 / (n + 1): the order-statistics argument of distribution-free
    prediction intervals, [predictive-inference] in docs/references.md).
    np.quantile's default rule puts p at rank p (n - 1) + 1, which covers less than p where n is small: over
    30 residuals its 5-95 % range holds a new point with probability 0.84, not 0.90. Levels beyond the
    outermost ranks (p < 1 / (n + 1)) take the outermost residual."""
    return [round(float(v), 5) for v in np.quantile(x, SPREAD_LEVELS, method="weibull")]


def transfer_table(ratios: Sequence[float], source: str) -> dict:
    """transfer_spread.toml's content: the quantiles of ln(predicted / measured GFLOPS) of published points."""
    lr = np.log(np.asarray(ratios, dtype=float))
    return dict(schema_version=1, source=source, points=int(len(lr)), levels=SPREAD_LEVELS, quantiles=_quantiles(lr))


@contextmanager
def transfer_override(table: dict):
    """Within `with transfer_override(table):` the transfer spread is `table` (transfer_table's content)
    instead of TRANSFER_FILE's: how the published points are scored on the other sources' residuals."""
    _transfer_override.append(table)
    try:
        yield
    finally:
        _transfer_override.pop()


def _transfer() -> Optional[dict]:
    return _transfer_override[-1] if _transfer_override else transfer_spread()


def uses_transfer(fig) -> bool:
    """Whether a prediction with these Figures takes the model's residual from the published points: datasheet
    figures of a GPU whose SM generation nobody calibrated (and a transfer spread to take it from)."""
    return fig.kind == "datasheet" and generation_measured(fig.device) is None and _transfer() is not None


def uses_datasheet_spread(fig) -> bool:
    """Whether a prediction with these Figures takes the model's residual from the recorded runs predicted from
    datasheet figures: datasheet figures of a GPU whose SM generation was calibrated (and that spread to take it
    from)."""
    return fig.kind == "datasheet" and not uses_transfer(fig) and datasheet_spread() is not None


def _spread(source: str) -> Optional[dict]:
    """The recorded residual a prediction draws from: "datasheet" (datasheet_spread), else model_spread."""
    return datasheet_spread() if source == "datasheet" else model_spread()


def spread_table(bounds: Sequence[str], ratios: Sequence[float], source: str,
                 regimes: Optional[Sequence[str]] = None) -> dict:
    """The model_spread.toml content for recorded points: their bounds and predicted / measured GFLOPS, and
    where given their occupancy regimes (predict.occupancy_regime): the quantiles per bound, and per bound
    and regime (key "bound/regime") where that pair has MIN_POINTS points."""
    lr = np.log(np.asarray(ratios, dtype=float))
    bs = np.asarray(list(bounds))
    by, pts = {"all": lr}, {"all": len(lr)}
    for b in sorted(set(bs)):
        by[b], pts[b] = lr[bs == b], int((bs == b).sum())
    out = dict(schema_version=1, source=source, levels=SPREAD_LEVELS, points=pts,
               by_bound={b: _quantiles(x) for b, x in by.items()})
    if regimes is not None:
        keys = np.asarray([f"{b}/{g}" for b, g in zip(bs, regimes)])
        out["regime_points"] = {k: int((keys == k).sum()) for k in sorted(set(keys))}
        out["by_bound_regime"] = {k: _quantiles(lr[keys == k]) for k, n in out["regime_points"].items() if n >= MIN_POINTS}
    return out


def residual_group(bound: str, regime: Optional[str] = None, source: str = "recorded") -> tuple[str, int]:
    """Which recorded points a prediction of this bound and occupancy regime takes the model's residual
    from, and how many: ("issue/lone", 32) where that bound and regime has MIN_POINTS of them, else the
    bound's ("issue", 972), else all points' ("all", 4991); ("", 0) without the spread file. source:
    "datasheet" for the recorded runs predicted from datasheet figures (datasheet_spread), else model_spread."""
    sp = _spread(source)
    if sp is None:
        return "", 0
    key = f"{bound}/{regime}"
    n = sp.get("regime_points", {}).get(key, 0)
    if regime and n >= MIN_POINTS:
        return key, int(n)
    if sp["points"].get(bound, 0) >= MIN_POINTS:
        return bound, int(sp["points"][bound])
    return "all", int(sp["points"]["all"])


def _residual_quantiles(bound_names: Sequence[str], u: np.ndarray, source: str = "recorded",
                        regimes: Optional[Sequence[str]] = None) -> np.ndarray:
    """ln(predicted / measured) at probability u (D, n) for each config's bound and occupancy regime: the
    recorded points of that bound in that regime where there are MIN_POINTS of them, else of that bound,
    else all (residual_group); source "datasheet": those recorded points predicted from datasheet figures
    (uses_datasheet_spread); "transfer": from the published points' spread (uses_transfer), every bound
    alike."""
    if source == "transfer":
        tr = _transfer()
        return np.interp(u, np.asarray(tr["levels"], dtype=float), np.asarray(tr["quantiles"], dtype=float))
    sp = _spread(source)
    if sp is None:
        return np.zeros_like(u)
    levels = np.asarray(sp["levels"], dtype=float)
    out = np.empty_like(u)
    for j, b in enumerate(bound_names):
        key, _ = residual_group(b, regimes[j] if regimes is not None else None, source)
        q = sp["by_bound_regime"][key] if "/" in key else sp["by_bound"][key]
        out[:, j] = np.interp(u[:, j], levels, np.asarray(q, dtype=float))
    return out


def _residual_levels(bt, idx, draws: int) -> np.ndarray:
    """Probability levels of the model's residual, (draws, len(idx)): the same stratified levels for every
    config, in an order of its own (a config's residual is not another's), fixed by what the config is
    (tile, threads, registers, problem), so a config gets the same interval in any batch."""
    r, (M, N, K) = bt.resources, bt.dims
    base = (np.arange(draws) + 0.5) / draws
    cols = []
    for k in idx:
        key = [int(x) for x in (r.bm[k], r.bn[k], r.bk[k], r.threads[k], r.registers[k], r.buffers[k], r.smem_bytes[k],
                                np.ravel(M)[k if np.size(M) > 1 else 0], np.ravel(N)[k if np.size(N) > 1 else 0],
                                np.ravel(K)[k if np.size(K) > 1 else 0])]
        cols.append(np.random.default_rng([SEED] + key).permutation(base))
    return np.stack(cols, axis=1) if cols else np.zeros((draws, 0))


def _log_uniform(rng, r: Range, shape) -> np.ndarray:
    return np.exp(rng.uniform(np.log(r.lo), np.log(r.hi), size=shape)) if r.hi > r.lo else np.full(shape, r.lo)


def _take(x, idx, n):
    """Entries idx of a per-config array (a scalar or None as it is)."""
    return x if x is None or np.ndim(x) == 0 else np.broadcast_to(np.asarray(x), (n,))[idx]


def draw_times(bt, idx: Optional[Sequence[int]] = None, only: Optional[str] = None, draws: int = DRAWS,
               _registers: bool = True) -> np.ndarray:
    """Times (s) of `draws` draws of the inputs (and the model's residual) for configs idx of a
    PredictionBatch: (draws, len(idx)). Each draw runs terms.tile_cycles again with the drawn rates and
    latency (the binary's simulated compute phase scaled with the FFMA rate, as the issue term is), then
    the waves as the point prediction does. only: vary that input alone ('model' for the residual) and
    hold the others at their nominal values."""
    n_all = len(bt.gflops)
    idx = np.arange(n_all) if idx is None else np.asarray(idx, dtype=int)
    n = len(idx)
    rng = np.random.default_rng(SEED)
    prov = provenance(bt.figures, bt.clock_given)
    mult = {}
    for inp in INPUTS:  # every input is drawn, in a fixed order, so `only` sees the same numbers; one draw serves
        # every config (a slower clock slows them all), so rankings compare configs under the same inputs
        r = input_range(bt.figures, inp, prov[inp])
        positional = (inp, prov[inp]) in (("port", "unmeasured"), ("port", "l1"), ("reuse", "model"))
        x = rng.uniform(0.0, 1.0, size=(draws, 1)) if positional else _log_uniform(rng, r, (draws, 1))
        mult[inp] = np.broadcast_to(x if only in (None, inp) else np.ones((draws, 1)), (draws, n))
    if _registers and registers_provenance(bt, idx) == "estimate" and only in (None, "registers"):
        # the registers nobody compiled: each draw takes the configs at one level of the recorded ratio of
        # compiled to estimated registers (an occupancy change re-predicts them), the other inputs as drawn
        level = rng.integers(0, REGISTER_LEVELS, size=draws)
        vs = [draw_times(v, None, only=only if only == "registers" else None, draws=draws, _registers=False)
              for v in _register_variants(bt, idx)]
        return np.stack(vs)[level, np.arange(draws)]
    names = [T.BOUNDS[int(b)] for b in bt.bound[idx]]
    resid = (_residual_quantiles(names, _residual_levels(bt, idx, draws), source=prov["model"],
                                 regimes=list(bt.regime[idx]))
             if only in (None, "model") else np.zeros((draws, n)))
    ck, rf, rs, rl, rd, lm, rp, ru, la = (mult[k] for k in INPUTS)
    # the L2's reuse: DRAM bytes between the compulsory (A, B and C once) and the model's estimate
    M, N, K = (np.broadcast_to(np.asarray(d, dtype=float), (n_all,))[idx] for d in bt.dims)
    model_dram = np.maximum(np.broadcast_to(bt.traffic.dram_bytes, (n_all,))[idx], 1.0)
    slices = bt.traffic.slices[idx]  # split_k writes a partial C per slice
    floor = np.minimum(4.0 * (M * K + K * N + slices * M * N) / model_dram, 1.0)
    dram_scale = np.exp(ru * np.log(floor)) if only in (None, "reuse") else np.ones((draws, n))

    def cycles(args):
        a = {k: _take(v, idx, n_all) if k not in ("work", "rates", "f", "tile_exposure") else v for k, v in args.items()}
        wk = {f: _take(getattr(args["work"], f), idx, n_all) for f in args["work"].__dataclass_fields__}
        fr = {f: _take(getattr(args["f"], f), idx, n_all) for f in args["f"].__dataclass_fields__}
        ffma, other, c = wk["ffma"], wk["other"], a["c_ffma"]
        share = ffma * c / np.maximum(ffma * c + other, 1e-12)  # FFMA share of the issue slots
        r = args["rates"]
        l2 = _take(r.l2_bpc, idx, n_all)
        drawn_port = prov["port"] in ("unmeasured", "l1")  # not measured: the tile-load structure is drawn
        if drawn_port and only in (None, "port"):
            # rp, the position, in log, of one block's burst rate from the model's load phase (the b resident
            # blocks' bursts queue at the rate the model uses: the SM's L2 share, or the L1's line rate, and
            # the whole phase is exposed) to the H100's tile loop (one block's burst shows, at one L1 line
            # per clock or the low end of the line rate's range); the same position sets the share of the
            # load phase b single-buffered blocks expose (1, or the H100's X at 3-4 blocks)
            if r.port_bpc is None:
                model_rate, h100_rate = l2, np.maximum(L1_FILL_BYTES_PER_CLOCK, l2)
            else:
                model_rate, h100_rate = r.port_bpc, r.port_bpc * input_range(bt.figures, "port", "l1").lo
            low = np.log(model_rate / a["b"])
            port = np.exp(low + rp * (np.log(h100_rate) - low))
            a["tile_exposure"] = lambda b, _ratio: 1.0 - rp * (1.0 - np.interp(b, *TILE_EXPOSURE_H100))
        elif r.port_bpc is not None:
            port = r.port_bpc if drawn_port else r.port_bpc * rp
        else:
            port = None
        lat = wk["mem_latency"] * lm * ck
        if a.get("landing") is not None:  # a ring's landing wait: a latency, drawn as the load latency is
            a["landing"] = a["landing"] * lm * ck
        wk.update(mem_latency=lat, exposed_k=wk["exposed_k"] + (lat - wk["mem_latency"]) / wk["load_steps"],
                  dram_bytes=wk["dram_bytes"] * dram_scale, dram_bus_bytes=wk["dram_bus_bytes"] * dram_scale)
        rates = replace(r, smem_bpc=r.smem_bpc * rs, l2_bpc=l2 * rl / ck, dram_bpc=_take(r.dram_bpc, idx, n_all) * rd / ck,
                        port_bpc=port)
        sched, sched_lat = a["scheduled"], a.get("scheduled_latency")
        drawn_sched = None if sched is None else sched * (share / rf + 1.0 - share)
        # the replay with the global loads' latency: its compute part as the compute phase's draw, its waits
        # (what it has beyond the compute phase) with the drawn latency
        a.update(work=T.TileWork(**wk), rates=rates, f=T.Fractions(**fr), c_ffma=c / rf, scheduled=drawn_sched,
                 scheduled_latency=None if sched_lat is None or sched is None else
                 drawn_sched + np.maximum(sched_lat - sched, 0.0) * lm * ck)
        return T.tile_cycles(**a)[0]

    class _W:  # the waves of configs idx
        full_waves, tail = bt.waves.full_waves[idx], bt.waves.tail[idx]

    loops = T.tile_loop_cycles(bt.traffic.ktiles[idx], _W, cycles(bt.compute.tile_args_full), cycles(bt.compute.tile_args_tail))
    # summed in predict_batch's order, so that draws at the figures give its time to the last bit
    total = loops + bt.prologue_cycles[idx] * lm * ck + bt.edge_cycles[idx] + bt.store_cycles[idx] * ck / rd + bt.lone_store_cycles[idx] * ck / rd
    hz = bt.clock_MHz[idx] * 1e6 * ck
    return (total / hz + bt.launch_s * la + bt.reduce_s[idx]) * np.exp(resid)  # resid = ln(predicted / measured GFLOPS) = ln(measured / predicted time)


def draw_gflops(bt, idx, times) -> np.ndarray:
    """GFLOPS of drawn times of configs idx; no draw beats the FP32 peak at the config's clock."""
    idx = np.asarray(idx, dtype=int)
    flops = np.broadcast_to(bt.traffic.flops, bt.gflops.shape)[idx]
    peak = bt.figures.device.peak_fp32_GFLOPS(1.0) * bt.clock_MHz[idx]
    return np.minimum(flops / times * 1e-9, peak)


def intervals(bt, idx: Optional[Sequence[int]] = None, only: Optional[str] = None) -> dict[str, np.ndarray]:
    """GFLOPS at the LEVELS of the draws for configs idx: {'q05', 'q25', 'q75', 'q95'} arrays (the slowest
    draws give the low GFLOPS), zeros where no block fits."""
    idx = np.arange(len(bt.gflops)) if idx is None else np.asarray(idx, dtype=int)
    g = draw_gflops(bt, idx, draw_times(bt, idx, only=only))
    fits = bt.occupancy.blocks_per_sm[idx] > 0
    return {f"q{round(q * 100):02d}": np.where(fits, np.quantile(g, q, axis=0), 0.0) for q in LEVELS}


def width_parts(bt, k: int) -> dict[str, tuple[float, float]]:
    """For config k: the 90 % interval's ends (as a share of the prediction, e.g. (-0.12, +0.03)) when only
    one input varies, per input and for the model's residual."""
    p = float(bt.gflops[k])
    out = {}
    for inp in INPUTS + ("model",) + (("registers",) if registers_provenance(bt, [k]) == "estimate" else ()):
        q = intervals(bt, [k], only=inp)
        out[inp] = (float(q["q05"][0]) / p - 1.0 if p else 0.0, float(q["q95"][0]) / p - 1.0 if p else 0.0)
    return out


def coverage(measured, predicted, q05, q25, q75, q95) -> dict:
    """How the intervals of scored points did: the share of measurements inside the 50 % and 90 %
    intervals (%), the median half-width of the 90 % interval as a share of the prediction (%), the
    median absolute error (%) and the ratio of the two."""
    m, p = np.asarray(measured, float), np.asarray(predicted, float)
    lo5, lo25, hi75, hi95 = (np.asarray(x, float) for x in (q05, q25, q75, q95))
    if not len(m):
        return dict(points=0)
    half = 50.0 * (hi95 - lo5) / p
    mae = float(np.median(np.abs(100.0 * (p / m - 1.0))))
    return dict(points=int(len(m)), inside_50_pct=float(100.0 * np.mean((m >= lo25) & (m <= hi75))),
                inside_90_pct=float(100.0 * np.mean((m >= lo5) & (m <= hi95))),
                median_half_width_90_pct=float(np.median(half)), median_ape_pct=mae,
                width_over_error=float(np.median(half) / mae) if mae > 0 else float("inf"))
