"""Command line: `perfmodel predict|devices|sweep|choose|roofline|validate|report|calibrate|accuracy`.

The top layer: `build_parser()` and `main(argv) -> int` (tests drive it in-process) parse the
arguments; the handlers in perfmodel.commands turn them into library calls. The library never
imports this module or sees an argparse namespace. Bad input -> one line on stderr and exit status
2 (UserError), never a traceback."""
from __future__ import annotations

import argparse
import re
import sys
import traceback
from typing import Optional, Sequence

from .commands import accuracy, choose, devices, measure, predict, report, sweep
from .catalogue import B_PAD_DEFAULT, B_PAD_MAX, CHOICES, SPLITS_MAX, STAGES, ladder_help
from .errors import UserError
from .shapes import CLASSES as SHAPE_CLASSES
from .sweep import SASS_TOP

EXIT_USAGE = 2
EXIT_BUG = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        raise UserError(f"{self.prog}: {message}")


MAX_DIM = 2**31 - 1  # the kernels index matrices with int


def _int_at_least(lo: int, expected: str, hi: Optional[int] = None, why: str = ""):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer (expected {expected})") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"{v} is {'negative' if lo == 0 else 'not positive'} (expected {expected})")
        if hi is not None and v > hi:
            raise argparse.ArgumentTypeError(f"{v} is above {hi:,}{why} (expected {expected})")
        return v

    return parse


positive_int = _int_at_least(1, "a positive integer")
count_int = _int_at_least(0, "0 or more")
dim_int = _int_at_least(1, f"1 to {MAX_DIM:,}", MAX_DIM, ", the largest size the kernels index with int")


def _add_size(p):
    p.add_argument("--size", type=dim_int, help="square problem size S (M=N=K=S; default 4096)")
    p.add_argument("-M", type=dim_int, help="rows of A and C")
    p.add_argument("-N", type=dim_int, help="columns of B and C")
    p.add_argument("-K", type=dim_int, help="inner dimension")


def _size(a) -> tuple[int, int, int]:
    given = [f"-{d}" for d in "MNK" if getattr(a, d, None)]
    if a.size and given:
        raise UserError(f"--size sets M = N = K; it conflicts with {', '.join(given)} (give --size or -M/-N/-K)")
    s = a.size or 4096
    return getattr(a, "M", None) or s, getattr(a, "N", None) or s, getattr(a, "K", None) or s


def _add_fleet(p, what: str):
    """--gpus, --ray and --mixed-gpus: measure on a worker per GPU (measure.fleet)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--gpus", metavar="LIST", help=f"{what} on these GPUs of this host at once, a worker process per GPU "
                   "(ordinals separated by commas, e.g. 0,1, or all)")
    g.add_argument("--ray", metavar="auto|ADDRESS", help=f"{what} on every GPU of a Ray cluster, an actor per GPU (auto: the "
                   "running cluster, else a Ray started here; needs perfmodel[ray])")
    p.add_argument("--mixed-gpus", action="store_true", help="allow workers with GPUs of different models (reported apart)")


GPUS_SYNTAX = re.compile(r"^(all|\d+(,\d+)*)$")


def _check_fleet(a) -> None:
    gpus, ray = getattr(a, "gpus", None), getattr(a, "ray", None)
    if gpus is not None and not GPUS_SYNTAX.match(gpus):
        raise UserError(f"--gpus {gpus}: expected GPU ordinals separated by commas (e.g. 0,1) or all")
    if getattr(a, "mixed_gpus", False) and gpus is None and ray is None:
        raise UserError("--mixed-gpus has no effect without --gpus or --ray")
    if gpus is None and ray is None:
        return
    opt = "--gpus" if gpus is not None else "--ray"
    if a.cmd == "validate" and a.ncu:
        raise UserError(f"--ncu profiles on this process's GPU; it cannot apply with {opt}")
    if a.cmd == "sweep" and not (a.measure or a.measure_overlap):
        raise UserError(f"{opt} measures: give --measure K or --measure-overlap")


def _check(a) -> None:
    """Options that contradict each other or have no effect without another."""
    if a.cmd == "sweep" and not a.measure:
        for opt, val in (("--sample", a.sample), ("--seed", a.seed)):
            if val is not None:
                raise UserError(f"{opt} has no effect without --measure (it picks the measured random sample)")
        if a.shapes:
            raise UserError("--shapes tunes on the GPU: give --measure K (the model's top K measured per shape)")
    if a.cmd == "sweep" and a.shapes:
        for opt, val in (("--size/-M/-N/-K", a.size_given), ("--kernel", a.kernel), ("--calibration", a.calibration),
                         ("--json", a.json), ("--csv", a.csv), ("--figures datasheet", a.figures == "datasheet")):
            if val:
                raise UserError(f"--shapes takes each shape's size from the corpus and calibrates the GPU first; {opt} cannot apply")
    if a.cmd == "sweep" and a.measure_overlap and (a.measure or a.shapes):
        raise UserError("--measure-overlap measures the configurations that overlap the first; it excludes --measure K and --shapes")
    if a.cmd == "sweep" and a.kernel_tuner and (a.measure or a.measure_overlap or a.shapes or a.json or a.csv):
        raise UserError("--kernel-tuner writes the search space for Kernel Tuner; it excludes --measure, --measure-overlap, "
                        "--shapes, --json and --csv")
    if a.cmd == "sweep" and a.measure_overlap and (a.json or a.csv):
        raise UserError("--measure-overlap prints its measurements; --json and --csv cannot apply")
    if a.cmd == "accuracy" and a.model_spread and a.intervals:
        raise UserError("--model-spread writes the residuals of recorded runs with measured or datasheet figures (or of the "
                        "published points with --published); it excludes --intervals")
    if a.cmd == "sweep":
        a.sample = 20 if a.sample is None else a.sample
        a.seed = 0 if a.seed is None else a.seed
    kernels = getattr(a, "kernel", None)
    if isinstance(kernels, list):
        dup = sorted({k for k in kernels if kernels.count(k) > 1})
        if dup:
            raise UserError(f"--kernel {dup[0]} is given more than once (name each kernel once)")
    if a.cmd == "choose" and a.measure and a.json:
        raise UserError("--measure prints its measurement; --json cannot apply")
    if a.cmd in ("predict", "sweep", "roofline", "choose") and a.figures == "datasheet" and a.calibration:
        raise UserError("--figures datasheet and --calibration exclude each other (a calibration's figures are measured)")
    if a.cmd == "report" and a.figures in ("datasheet", "generation") and a.calibration:
        raise UserError(f"--calibration has no effect with --figures {a.figures} (only measured figures use a calibration)")
    if a.cmd == "accuracy" and (a.by or a.points):
        for opt, val in (("--intervals", a.intervals), ("--model-spread", a.model_spread)):
            if val:
                raise UserError(f"--by and --points break down the scored points (of recorded runs, or with --published the "
                                f"published ones); {opt} cannot apply")
    if a.cmd == "accuracy" and a.intervals and (a.published is not None or a.figures is not None):
        raise UserError("--intervals scores every figure source and the published points itself; it takes no --published or --figures")
    if a.cmd == "accuracy" and a.published is not None:
        if a.runs:
            raise UserError("--published scores the published measurements; it takes no RUN folders")
        if a.calibration:
            raise UserError("--published takes no --calibration (nobody calibrated those GPUs here)")
        if a.figures == "measured":
            raise UserError("--published takes --figures generation or datasheet (nobody calibrated those GPUs here)")
    if a.cmd == "accuracy" and a.figures is None:
        a.figures = "generation" if a.published is not None else "measured"
    if a.cmd == "accuracy" and a.figures != "measured" and a.calibration:
        raise UserError(f"--calibration has no effect with --figures {a.figures} (only measured figures use a calibration)")
    if a.cmd == "validate" and a.resume:
        for opt, val in (("--shapes", a.shapes), ("--quick", a.quick), ("--out", a.out), ("--ncu", a.ncu), ("--seed", a.seed),
                         ("--sample", a.sample is not None)):
            if val:
                raise UserError(f"--resume continues a run with its own plan; {opt} cannot change it")
    if a.cmd == "validate" and a.sample is not None and not a.shapes and not a.resume:
        raise UserError("--sample sizes a shape run (random configurations a shape); it needs --shapes CLASS|all")
    if a.cmd == "validate" and a.variants and (a.quick or a.shapes or a.resume):
        raise UserError("--variants is its own plan; it excludes --quick, --shapes and --resume")
    if a.cmd == "validate" and a.shapes and (a.quick or a.ncu):
        raise UserError(f"--shapes measures the whole corpus class; {'--quick' if a.quick else '--ncu'} applies to the square ladder run only")
    if a.cmd in ("validate", "bench") and getattr(a, "plan_only", False):
        if not a.resume:
            raise UserError("--plan-only finishes the plan of a run stopped while ranking the corpus; name it with --resume RUN")
        if a.gpus is not None or a.ray is not None:
            raise UserError("--plan-only measures nothing; it takes no --gpus or --ray")
    if a.cmd == "bench" and a.resume:
        for opt, val in (("--shapes", a.shapes != "all"), ("--holdout", a.holdout), ("--out", a.out)):
            if val:
                raise UserError(f"--resume continues a run with its own plan; {opt} cannot change it")
    _check_fleet(a)
    if a.cmd == "devices" and a.action == "list" and a.name:
        raise UserError(f"devices list takes no NAME (got '{a.name}'); use devices show NAME")
    if a.cmd == "devices" and a.action == "detect" and a.name:
        raise UserError(f"devices detect takes no NAME (got '{a.name}')")


def _add_tile(p):
    for name in ("bm", "bn", "bk", "tm", "tn", "wm", "wn"):
        p.add_argument(f"--{name}", type=positive_int, help=f"tile parameter {name}")
    p.add_argument("--wn-iter", dest="wn_iter", type=positive_int, help="warp_tiled: column sub-tiles per warp")
    p.add_argument("--stages", type=positive_int, help=f"async_pipeline: shared-memory buffers in its cp.async ring ({STAGES[0]}-{STAGES[1]})")
    p.add_argument("--splits", type=positive_int, help=f"split_k: slices of K (2-{SPLITS_MAX}; a second kernel sums them)")
    g = p.add_argument_group("design choices (kernels/manifest.toml `choices`; default: the kernel's own)")
    g.add_argument("--thread-tile", dest="thread_tile", choices=CHOICES["thread_tile"],
                   help="steps 6-8: each thread's tm x tn tile contiguous or split into four quadrants")
    g.add_argument("--double-buffer", dest="double_buffer", choices=CHOICES["double_buffer"],
                   help="steps 6-8: two shared-memory buffers, one barrier per k-tile")
    g.add_argument("--load-width", dest="load_width", type=int, choices=CHOICES["load_width"],
                   help="steps 4-9: floats per global load (4 = float4)")
    g.add_argument("--a-transposed", dest="a_transposed", choices=CHOICES["a_transposed"],
                   help="steps 6-8: A stored [bk][bm] in shared memory (else [bm][bk])")
    g.add_argument("--frag-width", dest="frag_width", type=int, choices=CHOICES["frag_width"],
                   help="steps 6-9: floats per shared-memory fragment read (4 = float4)")
    g.add_argument("--b-layout", dest="b_layout", choices=CHOICES["b_layout"],
                   help="steps 6-8: B rows of bn floats, of bn + b_pad, or each thread's tn values bn/tn floats apart")
    g.add_argument("--ragged", dest="ragged", choices=CHOICES["ragged"],
                   help="steps 6-8, 10: on sizes the interior body cannot take (K not a multiple of bk or of 4, N not of 4), every "
                        "block runs the guarded edge body (edge), or the blocks inside C an unchecked inner body: scalar loads "
                        "(inner), or float4 loads where K and N are multiples of 4 (inner4)")
    g.add_argument("--b-pad", dest="b_pad", type=_int_at_least(1, "an integer from 1 to 32", B_PAD_MAX),
                   help=f"with --b-layout padded: floats added to each B row (default {B_PAD_DEFAULT})")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="perfmodel", description="Predict, explain and measure CUDA SGEMM kernels.")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    p = sub.add_parser("predict", help="predict one kernel configuration and explain the bound", epilog=ladder_help(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", required=True, help="shipped device name or path to a device .toml")
    p.add_argument("--kernel", default="double_buffer", help="kernel id (default double_buffer)")
    _add_tile(p)
    _add_size(p)
    p.add_argument("--registers", type=positive_int, help="registers/thread to use instead of the compiler's or the estimate")
    p.add_argument("--estimate", action="store_true", help="do not run the local nvcc: estimate registers (faster first call)")
    p.add_argument("--clock", type=positive_int, help="SM clock in MHz (default: boost clock)")
    p.add_argument("--calibration", help="a perfmodel calibrate file: predict with its measured figures")
    p.add_argument("--force-calibration", action="store_true", help="use a calibration of another compute capability")
    p.add_argument("--figures", choices=["auto", "datasheet"], default="auto",
                    help="device figures without --calibration: auto = the SM generation's measured figures where "
                         "there are (devices/generations), else the datasheet (default); datasheet = datasheets and published "
                         "microbenchmarks only, no figure this project measured on any GPU")
    p.add_argument("--json", action="store_true", help="print the Prediction as JSON")

    d = sub.add_parser("devices", help="list shipped devices, show one, or detect the local GPU")
    d.add_argument("action", nargs="?", default="list", choices=["list", "show", "detect"])
    d.add_argument("name", nargs="?", help="device name or path (for show)")

    s = sub.add_parser("sweep", help="predict every valid configuration and rank them")
    s.add_argument("--device", required=True)
    s.add_argument("--kernel", action="append", help="kernel id (repeatable; default: the tiled kernels)")
    _add_size(s)
    s.add_argument("--top", type=positive_int, default=10)
    s.add_argument("--choices", choices=["all", "default"], default="all",
                   help="all: every design choice of each kernel too (thread tile, double buffering, load and fragment "
                        "widths, A and B layouts; default); default: each kernel with its own choices only")
    fmt = s.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--csv", action="store_true")
    s.add_argument("--measure", type=positive_int, metavar="K", help="on a GPU: measure the top K and a random sample")
    s.add_argument("--measure-overlap", action="store_true",
                   help="on a GPU: measure exactly the configurations whose interval overlaps the model's first "
                        "(faster than it in at least 5 %% of the draws; the first 200 ranked are scanned)")
    s.add_argument("--sample", type=positive_int, metavar="N",
                   help="with --measure: how many of the other valid configs to measure at random (default 20)")
    s.add_argument("--seed", type=count_int, help="with --measure: seed of the random sample (default 0; another seed = another sample)")
    s.add_argument("--shapes", choices=list(SHAPE_CLASSES) + ["all"], metavar="CLASS|all",
                   help="with --measure K: tune on the shape corpus (shapes/corpus.toml) instead of one size: calibrate, then per "
                        "shape cuBLAS, the model's top K and --sample others, each point recorded as it finishes "
                        "(results/…-tune-shapes-CLASS; continue a stopped run with perfmodel validate --resume RUN)")
    _add_fleet(s, "with --measure K or --measure-overlap: measure")
    s.add_argument("--kernel-tuner", metavar="FILE.py",
                   help="write one kernel's (--kernel) search space and the model's order as a Python module Kernel Tuner "
                        "takes (tune_params, restrictions, x0 = the model's top, model_order); with --choices default "
                        "its own design choices only")
    s.add_argument("--calibration", help="a perfmodel calibrate file: rank with its measured figures")
    s.add_argument("--force-calibration", action="store_true", help="use a calibration of another compute capability")
    s.add_argument("--figures", choices=["auto", "datasheet"], default="auto",
                    help="device figures without --calibration: auto = the SM generation's measured figures where "
                         "there are (devices/generations), else the datasheet (default); datasheet = datasheets and published "
                         "microbenchmarks only, no figure this project measured on any GPU")
    s.add_argument("--sass", type=count_int, default=SASS_TOP, metavar="N",
                   help="compile the closed form's top N (local nvcc, cached) and re-rank them with the compiler's registers "
                        "and the simulated k-tile loop; with the design choices also its top N with each kernel's own "
                        "choices, each kernel's top 3, and then the own-choice top N of the kernels that lead "
                        f"(default {SASS_TOP}; 0: closed form only)")

    ch = sub.add_parser("choose", help="the model's pick over every kernel of the catalogue, its runner-ups and why they lose")
    ch.add_argument("--device", required=True, help="shipped device name or path to a device .toml")
    _add_size(ch)
    ch.add_argument("--runners", type=positive_int, default=4, help="runner-ups to show after the pick (default 4)")
    ch.add_argument("--json", action="store_true", help="print the choice as JSON")
    ch.add_argument("--measure", action="store_true", help="on a GPU: time the pick beside cuBLAS right away (results/…-choose)")
    ch.add_argument("--calibration", help="a perfmodel calibrate file: choose with its measured figures")
    ch.add_argument("--force-calibration", action="store_true", help="use a calibration of another compute capability")
    ch.add_argument("--figures", choices=["auto", "datasheet"], default="auto",
                    help="device figures without --calibration (as predict's --figures)")
    ch.add_argument("--sass", type=count_int, default=SASS_TOP, metavar="N",
                    help=f"re-predict the top N from their binaries, as sweep does (default {SASS_TOP}; 0: closed form only)")

    r = sub.add_parser("roofline", help="draw the device's hierarchical roofline with predicted kernels")
    r.add_argument("--device", required=True)
    r.add_argument("--kernel", action="append", help="kernel id (repeatable; default: the whole ladder)")
    r.add_argument("--size", type=dim_int, default=4096)
    r.add_argument("-o", "--output", required=True, help="output file .png or .svg (never overwritten)")
    r.add_argument("--calibration", help="a perfmodel calibrate file: use its measured figures")
    r.add_argument("--force-calibration", action="store_true", help="use a calibration of another compute capability")
    r.add_argument("--figures", choices=["auto", "datasheet"], default="auto",
                    help="device figures without --calibration: auto = the SM generation's measured figures where "
                         "there are (devices/generations), else the datasheet (default); datasheet = datasheets and published "
                         "microbenchmarks only, no figure this project measured on any GPU")

    v = sub.add_parser("validate", help="measure the ladder and a config sweep on the local GPU")
    v.add_argument("--quick", action="store_true", help="a subset that finishes in under a minute")
    v.add_argument("--out", help="results folder to create (default results/<date>-<gpu>)")
    v.add_argument("--ncu", action="store_true", help="also record ncu counters for the ladder")
    v.add_argument("--seed", type=count_int, default=0, help="seed of the random config sample (another seed = a hold-out set)")
    v.add_argument("--shapes", choices=list(SHAPE_CLASSES) + ["all"], metavar="CLASS|all",
                   help="measure the shape corpus (shapes/corpus.toml), one class or all: per shape cuBLAS, the ladder, "
                        "the model's top 3 and 10 random configurations, each point recorded as it finishes")
    v.add_argument("--sample", type=count_int, metavar="N",
                   help="with --shapes: N random configurations a shape instead of 10 (sizes the run; seeded by --seed)")
    v.add_argument("--resume", metavar="RUN", help="continue a --shapes run that stopped: measure what it has not recorded")
    v.add_argument("--plan-only", action="store_true",
                   help="with --resume of a run stopped while it was ranking the corpus: finish its plan (plan.json) and "
                        "measure nothing; no GPU needed (the run's calibration and this machine's compiler facts)")
    v.add_argument("--variants", action="store_true",
                   help="the design choices at 4096: every combination of each kernel's choices at its default tiles and "
                        "100 random configurations over tiles and choices (seeded by --seed), beside cuBLAS and the ladder; "
                        "the report gives the error per choice value")
    _add_fleet(v, "measure")

    be = sub.add_parser("bench", help="the model's pick per corpus shape measured against cuBLAS and Triton (GPU)",
                        description="For every shape of the corpus (shapes/corpus.toml; the hold-out only with --holdout): "
                                    "cuBLAS FP32, an autotuned Triton matmul kept in IEEE FP32 where torch and triton are "
                                    "installed, and the model's top 1 (perfmodel choose), measured in one process and recorded "
                                    "as validate records a shape run (folder results/<date>-<gpu>-bench-CLASS); bench.md, "
                                    "bench.json and bench.png give the ratios per shape, per class and overall.")
    be.add_argument("--shapes", choices=list(SHAPE_CLASSES) + ["all"], metavar="CLASS|all", default="all",
                    help="one class of the corpus, or all (default)")
    be.add_argument("--holdout", action="store_true", help="measure the corpus hold-out shapes too (left out otherwise)")
    be.add_argument("--out", help="results folder to create (default results/<date>-<gpu>-bench-CLASS)")
    be.add_argument("--resume", metavar="RUN", help="continue a bench run that stopped: measure what it has not recorded")
    be.add_argument("--plan-only", action="store_true",
                    help="with --resume of a run stopped while it was ranking the corpus: finish its plan (plan.json) and "
                         "measure nothing; no GPU needed (the run's calibration and this machine's compiler facts)")
    _add_fleet(be, "measure")

    rp = sub.add_parser("report", help="regenerate plots and report.md from a recorded run (no GPU)")
    rp.add_argument("results_dir")
    rp.add_argument("--out", help="folder for the derived files (default RESULTS_DIR/derived-<time>)")
    rp.add_argument("--svg", action="store_true", help="also write SVG figures")
    rp.add_argument("--holdout", action="store_true",
                    help="shape runs: score the corpus hold-out too (it is left out otherwise; score it once, at the end)")
    rp.add_argument("--calibration", help="a perfmodel calibrate file: predict with its measured figures")
    rp.add_argument("--figures", choices=["auto", "datasheet", "generation", "measured"], default="auto",
                    help="device figures: auto = the run's calibration.toml if it has one (default); generation = "
                         "the SM generation's measured figures (no calibration of that GPU); datasheet = no figure this "
                         "project measured")

    c = sub.add_parser("calibrate", help="microbenchmark the local GPU into a device file")
    c.add_argument("--out", help="device TOML to write (never overwritten); with --gpus or --ray a folder to create, "
                   "one calibration-gpuN[-HOST].toml per GPU in it")
    _add_fleet(c, "calibrate")

    ac = sub.add_parser("accuracy", help="the model's accuracy over recorded runs (no GPU)")
    ac.add_argument("runs", nargs="*", metavar="RUN",
                    help="results folders (default: the accuracy set that results/README.md lists)")
    ac.add_argument("--figures", choices=["measured", "generation", "datasheet"], default=None,
                    help="device figures: measured = a calibration (default); generation = the SM generation's "
                         "measured figures with the device file's memory system (no calibration of that GPU; "
                         "the default with --published); datasheet = datasheets and published microbenchmarks only, no "
                         "figure this project measured on any GPU")
    ac.add_argument("--published", nargs="?", const="", metavar="FILE",
                    help="score the published measurements of other GPUs instead of recorded runs "
                         "(default file: published/sgemm.toml)")
    ac.add_argument("--calibration", help="calibration file (default: the reference calibration of the run's device)")
    ac.add_argument("--results", default="results", help="the results folder holding README.md and the runs (default results)")
    ac.add_argument("--json", action="store_true", help="print the table as JSON")
    ac.add_argument("--intervals", action="store_true",
                    help="how the prediction intervals did, per figure source: the runs (default the accuracy set) with "
                         "measured, generation and datasheet figures, and the published points")
    ac.add_argument("--by", metavar="KEYS", help="also break the scored points down by these comma-separated keys "
                    "(kernel, bound, regime, class, run, group, shape, waves, registers, blocks; with --published: source, device, "
                    "generation, kernel, bound, registers): points, MAPE, bias and share of the summed absolute error per group, "
                    "largest share first")
    ac.add_argument("--points", metavar="FILE", help="write every scored point (run, kernel, configuration, shape, measured "
                    "and predicted GFLOPS, error, bound, regime, waves, registers, local frame, interval; with --published: "
                    "source, device, generation, row, kernel, tile, size, measured and predicted GFLOPS, error, bound, figures, "
                    "registers and where they come from, blocks per SM, interval) to FILE as CSV (a new file)")
    ac.add_argument("--model-spread", metavar="FILE", help="write the model's residual quantiles per bound over the scored "
                    "points to FILE (a new file; perfmodel/model/model_spread.toml is written so, from the runs it lists, and "
                    "datasheet_spread.toml from the same runs with --figures datasheet); with --published, the published points' residual quantiles, every bound pooled "
                    "(perfmodel/model/transfer_spread.toml is written so)")
    return ap


COMMANDS = {"predict": predict.run, "devices": devices.run, "sweep": sweep.run, "choose": choose.run, "roofline": report.roofline,
            "validate": measure.validate, "bench": measure.bench, "report": report.report, "calibrate": measure.calibrate,
            "accuracy": accuracy.run}


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        a = build_parser().parse_args(argv)
        if hasattr(a, "size"):
            a.size_given = bool(a.size or any(getattr(a, d, None) for d in "MNK"))
            a.M, a.N, a.K = _size(a)
        _check(a)
        return COMMANDS[a.cmd](a)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a file that cannot be read or written: the user's path, not a bug
        where = f" {exc.filename}" if exc.filename else ""
        print(f"error: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # a genuine bug: the traceback, and what to do with it
        traceback.print_exc()
        print("perfmodel stopped on a bug (the traceback above), not on your input: please report it with the "
              "command line and the traceback.", file=sys.stderr)
        return EXIT_BUG


def run() -> None:
    sys.exit(main())
