"""The model's accuracy over recorded runs: per run MAPE, median, bias, Spearman and the gap of the
model's top-1 to the measured best; pooled over all points. No GPU, no compiler: every run replays
from its raw.json, the facts it recorded and the loop-program archives beside it."""
from __future__ import annotations

import json
import os
import re
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from .analysis import choice_errors, load_run, run_device, run_facts, run_figures, rows
from .catalogue import KernelConfig
from .errors import UserError
from .measure import sass
from .model.figures import Figures
from .model.uncertainty import coverage, spread_table
from .shapes import CLASSES as SHAPE_CLASSES

ACCURACY_SECTION = "## Accuracy set"
REFERENCE = "reference-calibration-{device}.toml"


def accuracy_set(results: Path) -> list[str]:
    """The run folders results/README.md lists under its accuracy-set heading (one `- \\`NAME\\`` a line)."""
    readme = results / "README.md"
    if not readme.is_file():
        raise UserError(f"{readme} does not exist; name the runs to score (perfmodel accuracy RUN ...)")
    text = readme.read_text(encoding="utf-8")
    if ACCURACY_SECTION not in text:
        raise UserError(f"{readme} has no '{ACCURACY_SECTION}' section; name the runs to score")
    section = text.split(ACCURACY_SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- `([^`]+)`", section, flags=re.M)


def reference_calibration(results: Path, device: str) -> Optional[Path]:
    """results/reference-calibration-DEVICE.toml, if there is one."""
    p = results / REFERENCE.format(device=device)
    return p if p.is_file() else None


@dataclass
class RunScore:
    run: str
    figures: str
    points: int
    mape_pct: float
    median_ape_pct: float
    bias_pct: float  # mean signed error: > 0 optimistic
    spearman_all: Optional[float]
    spearman_sweep: Optional[float]
    top1_gap_pct: Optional[float]  # how much slower the model's top-1 of the sweep measured than the best
    errors_pct: list
    class_errors_pct: dict = field(default_factory=dict)  # a shape run's errors by corpus class (hold-out left out)
    bounds: list = field(default_factory=list)  # per point, as errors_pct
    regimes: list = field(default_factory=list)  # per point: its occupancy regime (predict.occupancy_regime)
    intervals: list = field(default_factory=list)  # per point: (measured, predicted, q05, q25, q75, q95) GFLOPS
    kernel_points: list = field(default_factory=list)  # per kernel point: {kernel, config (JSON), error_pct} (the choice tables)
    point_rows: list = field(default_factory=list)  # per point: POINT_FIELDS (--points, --by)
    without_loop: int = 0  # points predicted without their binary's loop program (no archive held it, no same-source build)
    archives: int = 0  # loop-program archive files found beside the run (sass.ARCHIVE_GLOB)


def _spearman(a, b) -> Optional[float]:
    from scipy.stats import spearmanr  # heavy: only the accuracy and report paths need it

    return float(spearmanr(a, b).statistic) if len(a) >= 3 else None


def score_run(run_dir: Path, fig: Figures) -> RunScore:
    """Predict every verified point of one run with `fig` and the facts of the binaries that ran."""
    run = load_run(run_dir)
    facts = run_facts(run, run_dir)
    pts = [r for r in rows(run, fig, facts) if r.get("error_pct") is not None]
    err = np.array([r["error_pct"] for r in pts])
    # the run's ranked group: a validate run's random sample, a tuning run's measured configurations
    sweep = [r for r in pts if r["group"] in ("sweep", "tune")]
    top1 = None
    if sweep:
        best = max(sweep, key=lambda r: r["measured_gflops"])
        top = max(sweep, key=lambda r: r["predicted_gflops"])
        top1 = 100 * (1 - top["measured_gflops"] / best["measured_gflops"])
    return RunScore(run=Path(run_dir).name, figures=fig.kind, points=len(pts),
                    mape_pct=float(np.abs(err).mean()) if len(err) else float("nan"),
                    median_ape_pct=float(np.median(np.abs(err))) if len(err) else float("nan"),
                    bias_pct=float(err.mean()) if len(err) else float("nan"),
                    spearman_all=_spearman([r["predicted_gflops"] for r in pts], [r["measured_gflops"] for r in pts]),
                    spearman_sweep=_spearman([r["predicted_gflops"] for r in sweep], [r["measured_gflops"] for r in sweep]),
                    top1_gap_pct=top1, errors_pct=[float(e) for e in err],
                    class_errors_pct={c: [float(r["error_pct"]) for r in pts if r.get("shape_class") == c]
                                      for c in SHAPE_CLASSES if any(r.get("shape_class") == c for r in pts)},
                    bounds=[r["bound"] for r in pts], regimes=[r.get("regime", "") for r in pts],
                    kernel_points=[dict(kernel=r["kernel"], config=r["config"], error_pct=float(r["error_pct"])) for r in pts
                                   if r["kernel"] != "cublas"],
                    intervals=[tuple(float(r[k]) for k in ("measured_gflops", "predicted_gflops", "q05_gflops", "q25_gflops",
                                                           "q75_gflops", "q95_gflops")) for r in pts if "q05_gflops" in r],
                    point_rows=[point_record(Path(run_dir).name, r) for r in pts],
                    without_loop=sum(1 for r in pts if not r.get("loop_program")), archives=len(facts.archive.files))


def missing_archive_warning(s: RunScore, run_dir: Path) -> Optional[str]:
    """One line where a run's points were predicted without their loops because no loop-program archive lies
    beside the run (a run folder copied out of results/ without results/*.json.xz): such a score is not the
    model's (the replay of the binary's k-tile loop is missing); None otherwise."""
    if s.archives or not s.without_loop:
        return None
    return (f"warning: {s.run}: {s.without_loop} of its {s.points} points are predicted without their binary's loop "
            f"program: no {sass.ARCHIVE_GLOB} lies in {Path(run_dir).resolve().parent} and no same-source build "
            f"gave one; copy results/*.json.xz beside a copied run")


# what `perfmodel accuracy --points FILE` writes per scored point, in this order
POINT_FIELDS = ("run", "kernel", "config", "group", "shape", "class", "M", "N", "K", "measured_gflops", "predicted_gflops",
                "error_pct", "bound", "regime", "blocks_per_sm", "waves", "registers", "local_frame_bytes",
                "q05_gflops", "q25_gflops", "q75_gflops", "q95_gflops")
# what `--by` groups the points by: a point's field, or the band of waves its grid runs in, of the registers
# per thread its prediction used (the binary's where known; the top band: at the 255-register cap, nvcc allocates 250-255),
# or of the blocks resident on an SM (the occupancy's; from three on they drift apart: terms.waves)
GROUP_KEYS = ("kernel", "bound", "regime", "class", "run", "group", "shape", "waves", "registers", "blocks")
WAVE_BANDS = ((1.0, "under 1"), (2.0, "1-2"), (4.0, "2-4"), (16.0, "4-16"), (float("inf"), "16 or more"))
BLOCK_BANDS = ((2, "1"), (3, "2"), (5, "3-4"), (9, "5-8"), (float("inf"), "9 or more"))
REGISTER_BANDS = ((65, "up to 64"), (129, "65-128"), (193, "129-192"), (250, "193-249"), (float("inf"), "250-255 (the cap)"))


def point_record(run: str, r: dict) -> dict:
    """One scored point (an analysis.rows row with its error) as the plain fields POINT_FIELDS names."""
    p = r.get("_prediction")
    return {"run": run, "kernel": r["kernel"], "config": r["config"], "group": r.get("group"), "shape": r.get("shape"),
            "class": r.get("shape_class"), "M": r["M"], "N": r["N"], "K": r["K"],
            "measured_gflops": float(r["measured_gflops"]), "predicted_gflops": float(r["predicted_gflops"]),
            "error_pct": float(r["error_pct"]), "bound": r.get("bound"), "regime": r.get("regime"),
            "blocks_per_sm": r.get("blocks_per_sm"), "waves": None if p is None else float(p.waves.waves),
            "registers": None if p is None else int(p.resources.registers_per_thread),
            "local_frame_bytes": None if p is None else int(p.resources.local_frame_bytes),
            **{k: (float(r[k]) if k in r else None) for k in ("q05_gflops", "q25_gflops", "q75_gflops", "q95_gflops")}}


def parse_group_keys(text: str, allowed: tuple[str, ...] = GROUP_KEYS) -> tuple[str, ...]:
    """`--by kernel,regime` -> ("kernel", "regime"); a key `allowed` lacks (GROUP_KEYS for recorded runs,
    published.GROUP_KEYS for the published points), or none, is a UserError."""
    keys = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in keys if k not in allowed]
    if not keys or bad:
        raise UserError(f"--by {text!r}: {'no key given' if not keys else 'unknown key ' + repr(bad[0])}; "
                        f"allowed: {', '.join(allowed)} (comma-separated)")
    if len(set(keys)) != len(keys):
        raise UserError(f"--by {text!r} names a key twice; allowed: {', '.join(allowed)} (comma-separated)")
    return keys


def _group_value(p: dict, key: str) -> str:
    bands = {"waves": WAVE_BANDS, "registers": REGISTER_BANDS, "blocks": BLOCK_BANDS}.get(key)
    if bands is not None:
        w = p.get("blocks_per_sm" if key == "blocks" else key)
        return "n/a" if w is None else next(name for top, name in bands if w < top)
    v = p.get(key)
    return "-" if v is None else str(v)


def group_errors(points: list[dict], keys: tuple[str, ...]) -> list[dict]:
    """The scored points grouped by `keys`: per group its points, MAPE, bias (mean signed error, > 0
    optimistic) and share of the summed absolute error of all points (where the error is), largest
    share first; the groups' points add up to all points and their shares to 100 %."""
    groups: dict[tuple, list[float]] = {}
    for p in points:
        groups.setdefault(tuple(_group_value(p, k) for k in keys), []).append(p["error_pct"])
    total = sum(abs(e) for es in groups.values() for e in es) or 1.0
    out = [dict(group=dict(zip(keys, g)), points=len(es), mape_pct=float(np.mean(np.abs(es))), bias_pct=float(np.mean(es)),
                share_pct=100.0 * float(np.sum(np.abs(es))) / total) for g, es in groups.items()]
    return sorted(out, key=lambda d: (-d["share_pct"], tuple(d["group"].values())))


def check_points_path(path: Path) -> Path:
    """--points FILE must be a new file in an existing folder (checked before any scoring)."""
    path = Path(path)
    if path.exists():
        raise UserError(f"{path} exists; --points writes a new file only (results are never overwritten)")
    if not path.parent.is_dir():
        raise UserError(f"--points {path}: the folder {path.parent} does not exist")
    return path


def write_points(path: Path, points: list[dict], fields: tuple[str, ...] = POINT_FIELDS) -> None:
    """Every scored point as CSV (`fields`: POINT_FIELDS for recorded runs, published.POINT_FIELDS for the
    published points), to a new file only: results are never overwritten."""
    import csv

    path = check_points_path(path)
    with open(path, "x", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(points)


def figures_for(run_dir: Path, figures: str, calibration: Optional[str], results: Path, own_fallback: bool = False) -> Figures:
    """Datasheet figures, the SM generation's measured figures, or the run's device with the given
    calibration (default: the reference calibration of that device under results/, never the run's own;
    own_fallback: the run's own where its device has no reference calibration)."""
    if figures in ("datasheet", "generation"):
        return run_figures(run_dir, figures)
    device = run_device(load_run(run_dir)).name
    cal = calibration or reference_calibration(results, device)
    if cal is None and own_fallback and (Path(run_dir) / "calibration.toml").is_file():
        cal = Path(run_dir) / "calibration.toml"
    if cal is None:
        raise UserError(f"no calibration for {device}: {results / REFERENCE.format(device=device)} does not exist; "
                        f"pass --calibration FILE or --figures datasheet")
    return run_figures(run_dir, "measured", cal)


def _score_job(job) -> RunScore:
    rd, figures, calibration, results, own = job
    return score_run(rd, figures_for(rd, figures, calibration, results, own))


def score(runs: list[Path], figures: str = "measured", calibration: Optional[str] = None,
          results: Path = Path("results"), progress=None, workers: Optional[int] = None,
          own_fallback: bool = False) -> tuple[list[RunScore], dict]:
    """Scores per run (in parallel processes, one run each; the result does not depend on the
    number of workers) and pooled over every point: (scores, overall)."""
    for rd in runs:  # bad input fails here, in one line, before any worker starts
        figures_for(rd, figures, calibration, results, own_fallback)
    jobs = [(rd, figures, calibration, results, own_fallback) for rd in runs]
    n = max(1, min(len(jobs), workers or os.cpu_count() or 1))
    out = []
    with ProcessPoolExecutor(max_workers=n) if n > 1 else nullcontext() as pool:
        for j, s in enumerate((pool.map if pool else map)(_score_job, jobs), 1):
            out.append(s)
            if progress:
                progress(j, len(runs), s)
    return out, pooled(out, figures)


def pooled(out: list[RunScore], figures: str) -> dict:
    """score's `overall`: the runs' points pooled (MAPE, bias, worst top-1, intervals, per class and design
    choice); the same for any runs whether scored together or apart."""
    e = np.array([x for s in out for x in s.errors_pct])
    overall = dict(points=int(len(e)), runs=len(out), figures=figures,
                   mape_pct=float(np.abs(e).mean()) if len(e) else float("nan"),
                   median_ape_pct=float(np.median(np.abs(e))) if len(e) else float("nan"),
                   bias_pct=float(e.mean()) if len(e) else float("nan"),
                   worst_top1_gap_pct=max((s.top1_gap_pct for s in out if s.top1_gap_pct is not None), default=None))
    iv = [x for s in out for x in s.intervals]
    overall["intervals"] = coverage(*zip(*iv)) if iv else dict(points=0)
    by_class: dict[str, list] = {}
    for s in out:
        for c, errs in s.class_errors_pct.items():
            by_class.setdefault(c, []).extend(errs)
    if by_class:  # shape runs: pooled per corpus class, in the corpus's order
        overall["by_class"] = {c: dict(points=len(by_class[c]), mape_pct=float(np.mean(np.abs(by_class[c]))),
                                       bias_pct=float(np.mean(by_class[c]))) for c in SHAPE_CLASSES if c in by_class}
    kp = [r for s in out for r in s.kernel_points]
    by_choice = choice_errors(kp)
    if by_choice:  # runs that measured design choices: the error per choice value, and over the changed points
        overall["by_choice"] = by_choice
        ch = [r["error_pct"] for r in kp if KernelConfig.make(r["kernel"], **json.loads(r["config"])).changed_choices()]
        overall["changed_choices"] = dict(points=len(ch), mape_pct=float(np.mean(np.abs(ch))), bias_pct=float(np.mean(ch)))
    return overall


def as_json(scores: list[RunScore], overall: dict) -> dict:
    return dict(runs=[{k: v for k, v in asdict(s).items() if k not in ("errors_pct", "class_errors_pct", "bounds", "regimes", "intervals",
                                                                      "kernel_points", "point_rows")}
                      for s in scores], overall=overall)


def spread_of(scores: list[RunScore], source: str) -> dict:
    """model_spread.toml's content from scored runs (model.uncertainty.spread_table)."""
    bounds = [b for s in scores for b in s.bounds]
    ratios = [1.0 + e / 100.0 for s in scores for e in s.errors_pct]
    return spread_table(bounds, ratios, source, regimes=[g for s in scores for g in s.regimes])
