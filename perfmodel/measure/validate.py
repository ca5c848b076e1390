"""`perfmodel validate`: measure the ladder and a config sweep on the local GPU, verify every
point, time it beside cuBLAS, write a new results folder (raw.json, summary.csv/json, report)."""
from __future__ import annotations

import lzma
import multiprocessing as mp
import os
import random
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path

import tomli_w

from ..analysis import is_bench, run_figures, write_derived
from ..catalogue import (KernelConfig, choice_combos, enumerate_configs, get_kernel, idle_choice, ladder_on, ranked_kernels,
                         tiled_kernels)
from ..devices import device_table, load_device, shipped_devices
from ..model.figures import Figures
from ..model.predict import Problem as ModelProblem
from ..paths import write_atomic
from ..progress import counter
from ..shapes import select
from ..sweep import SASS_TOP, rank
from ..errors import UserError
from . import fleet, peer
from .calibrate import measured_toml, run_microbenchmarks
from .detect import match_shipped, write_from_driver
from .gpu import Gpu, Problem, compile_all, measure_compiled
from .ncu import run_ncu
from .nvml import NvmlSampler
from .worker import environment, point_config
from .records import Environment, Measurement, Plan, PlanDraft, PlannedPoint, Run, measurement_key, open_log, pack_file, run_record, unpack_file

LADDER_SIZES = (1024, 2048, 4096, 8192)
SHAPE_TOP, SHAPE_RANDOM, SHAPE_SASS = 3, 10, 10  # per shape: the model's top 3 (of its top 10 re-ranked
# from their binaries) and 10 random valid configurations, beside the ladder's defaults and cuBLAS
SWEEP_SIZE = 4096
SWEEP_TOTAL = 104


def sweep_sample(device, total: int = SWEEP_TOTAL, seed: int = 0) -> list[KernelConfig]:
    """A fixed random sample of valid tiled configs, stratified by kernel (equal shares; a kernel with
    fewer valid configs gives all it has and the rest is shared out), defaults excluded. Kernels the
    manifest marks `sampled = false` (those added after the recorded validate runs: split_k, async_pipeline)
    are left out, so a seed's plan stays the one its run measured; they are measured by the ladder, the
    shape runs, bench and sweep."""
    pools = {}
    for k in (k for k in tiled_kernels() if get_kernel(k).sampled):
        valid, _, _ = enumerate_configs(device, (k,), choices=False)  # each kernel with its own choices
        default = KernelConfig.make(k)
        pools[k] = [c for c in valid if c != default]
    return _stratified(pools, total, random.Random(seed))


def _stratified(pools: dict, total: int, rng: random.Random) -> list[KernelConfig]:
    """`total` configurations drawn from the pools (one per kernel) in equal shares; a pool with fewer
    gives all it has and the rest is shared out among the larger ones."""
    out, left = [], total
    for i, k in enumerate(sorted(pools, key=lambda k: len(pools[k]))):
        share = min(len(pools[k]), left // (len(pools) - i))
        out += rng.sample(pools[k], share)
        left -= share
    return out


VARIANT_RANDOM = 100


def variant_configs(device) -> tuple[list[KernelConfig], list[str]]:
    """Every combination of each kernel's design choices at its default tiles (each combination once:
    catalogue.choice_combos names it by one kernel id, with b_pad 1 and 4 where padded), defaults
    excluded; and, one line each, the combinations those tiles do not allow, with the reason."""
    out, refused = [], []
    for k in tiled_kernels():
        spec = get_kernel(k)
        if not spec.choices:
            continue
        tiles = {p: spec.defaults[p] for p in spec.params}
        for ch in choice_combos(spec):
            cfg = KernelConfig.unchecked(k, **tiles, **ch)
            if not cfg.changed_choices() or idle_choice(cfg, SWEEP_SIZE, SWEEP_SIZE, SWEEP_SIZE):
                continue
            problems = cfg.violations() or cfg.device_violations(device)
            if problems:
                refused.append(f"{cfg.label()}: {problems[0][1]}")
            else:
                out.append(cfg)
    return out, refused


def variant_sample(device, n: int = VARIANT_RANDOM, seed: int = 0) -> list[KernelConfig]:
    """n random valid configurations over tiles and design choices, each changing at least one choice,
    stratified by kernel like sweep_sample."""
    pools = {}
    for k in tiled_kernels():
        if get_kernel(k).choices:
            valid, _, _ = enumerate_configs(device, (k,), choices=True)
            pools[k] = [c for c in valid if c.changed_choices() and not idle_choice(c, SWEEP_SIZE, SWEEP_SIZE, SWEEP_SIZE)]
    return _stratified(pools, n, random.Random(seed))


def variant_plan(device, seed: int = 0):
    """`validate --variants`: cuBLAS, the ladder's defaults, every design-choice combination at default
    tiles (variant_configs) and VARIANT_RANDOM random ones (variant_sample), all at SWEEP_SIZE."""
    s = SWEEP_SIZE
    fixed, refused = variant_configs(device)
    for line in refused:
        print(f"  not measured (invalid at the default tiles): {line}")
    return ([("baseline", None, s)] + [("ladder", KernelConfig.make(k), s) for k in ladder_on(device.compute_capability)]
            + [("variant", c, s) for c in fixed] + [("variant-random", c, s) for c in variant_sample(device, seed=seed)])


def plan(device, quick: bool, seed: int = 0):
    """[(group, cfg or None for cuBLAS, size)] in execution order (grouped by size)."""
    pts = []
    sizes = (2048,) if quick else LADDER_SIZES
    for s in sizes:
        pts.append(("baseline", None, s))
        pts += [("ladder", KernelConfig.make(k), s) for k in ladder_on(device.compute_capability)]
    if not quick:
        pts += [("sweep", c, SWEEP_SIZE) for c in sweep_sample(device, seed=seed)]
    return pts


def device_toml(path: Path) -> str:
    """The device figures a run used, as one TOML table: the device file with its generation's figures
    merged in (a run's record stands alone, whatever the generation files say later)."""
    return tomli_w.dumps(device_table(path))


def env_device_name(name: str) -> str:
    return Path(name).stem if Path(name).stem in shipped_devices() else name


def _derive(out: Path) -> dict:
    """summary.*, report.md and the plots of a run whose raw.json is written, with its own calibration."""
    fig = run_figures(out)
    derived = write_derived(out, out, fig)
    try:
        from ..report.reports import write_report  # matplotlib

        write_report(out, out, derived, fig.device)
    except ImportError as exc:
        print(f"warning: no plots ({exc})", file=sys.stderr)
    return derived


def validate(out: Path | None = None, quick: bool = False, seed: int = 0, ncu: bool = False, variants: bool = False,
             gpus: str | None = None, ray: str | None = None, mixed: bool = False) -> int:
    """Measure the ladder (and, unless quick, a random sample of configs; with variants the design-choice
    plan instead, variant_plan) on the local GPU into a new results folder (default
    results/DATE-DEVICE[-quick|-variants][-seedN]); 1 if any point failed. gpus or ray: on a worker per
    GPU (validate_fleet)."""
    if gpus is not None or ray is not None:
        return validate_fleet(out, quick, seed, variants, gpus, ray, mixed)
    started = datetime.now(timezone.utc)
    root = Path.cwd() / "results"
    gpu = Gpu()
    name = match_shipped(gpu.name, gpu.cc)
    kind = "-quick" if quick else "-variants" if variants else ""
    out = out or root / f"{started:%Y%m%d-%H%M%S}-{name or 'gpu'}{kind}{f'-seed{seed}' if seed else ''}"
    if out.exists():
        raise UserError(f"{out} exists; results are never overwritten (choose another --out)")
    out.mkdir(parents=True)
    if name:
        dev_path = shipped_devices()[name]
    else:
        dev_path = write_from_driver(gpu, out / "device.toml")
        name = str(dev_path)
    device = load_device(name)
    if Path(name).stem in shipped_devices():  # device figures measured now, kept beside the raw data
        print("calibrating (microbenchmarks) ...")
        (out / "calibration.toml").write_text(measured_toml(Path(name).stem, gpu.name, run_microbenchmarks(gpu)))
    try:
        sampler = NvmlSampler()
        driver = sampler.driver_version()
    except Exception as exc:  # NVML missing: timings still valid, clock from the device file
        print(f"warning: NVML unavailable ({exc}); SM clock not sampled", file=sys.stderr)
        sampler, driver = None, "unknown"
    env = environment(gpu, env_device_name(name), started, driver)
    points = variant_plan(device, seed) if variants else plan(device, quick, seed)
    print(f"{gpu.name} ({gpu.cc}, {gpu.sm_count} SMs) -> device file {env.device_file}; {len(points)} points -> {out}")

    # compile every distinct config in parallel (nvcc runs as subprocesses)
    cubins = compile_all(gpu, {c.label(): c for _, c, _ in points if c is not None})

    warm, rep = (10.0, 40.0) if quick else (25.0, 100.0)
    measurements, failed = [], 0
    probs: dict = {}
    for i, (group, cfg, s) in enumerate(points, 1):
        if s not in probs:
            probs.clear()
            probs[s] = Problem(gpu, s, s, s)
        m = measure_compiled(gpu, probs[s], cfg, group, sampler, warm, rep, cubins)
        measurements.append(m)
        failed += not m.verified
        label = "cublas" if cfg is None else cfg.label()
        res = f"{m.gflops_median:9,.0f} GFLOPS" if m.verified else f"FAILED ({m.verification}{': ' + m.error if m.error else ''})"
        print(f"  [{i:3d}/{len(points)}] {s:5d} {label:70s} {res}", flush=True)

    run = Run(environment=env, device_toml=device_toml(dev_path), measurements=measurements)
    (out / "raw.json").write_text(run.model_dump_json(indent=1))
    if ncu:
        print("profiling the ladder with ncu ...")
        probs.clear()
        run_ncu(out)
    derived = _derive(out)
    s = derived["summary"]
    print(f"\n{'kernel':20} {'size':>5} {'measured':>10} {'predicted':>10} {'err%':>7} {'%cuBLAS':>8}  bound")
    for r in derived["rows"]:
        if r["group"] in ("ladder", "baseline") and r.get("measured_gflops"):
            print(f"{r['kernel']:20} {r['M']:5d} {r['measured_gflops']:10,.0f} {r.get('predicted_gflops') or 0:10,.0f} "
                  f"{r.get('error_pct') or 0:7.1f} {r.get('pct_of_cublas') or 0:8.1f}  {r.get('bound', '')}")
    if s.get("by_choice"):
        print(f"\n{'choice':14} {'value':11} {'points':>6} {'MAPE':>6} {'bias':>7}")
        for d in s["by_choice"]:
            print(f"{d['choice']:14} {d['value']:11} {d['points']:6d} {d['mape_pct']:5.1f}% {d['bias_pct']:+6.1f}%")
    print(f"points {s['points']}, failed {s['failed']}, MAPE {s['mape_pct']:.1f} %, Spearman all {s.get('spearman_all', float('nan')):.3f}, "
          f"sweep {s.get('spearman_sweep', float('nan')):.3f}; results in {out}")
    return 1 if failed else 0


def planned(points) -> list[PlannedPoint]:
    """validate's plan [(group, cfg or None, size)] as planned points (shape `SxSxS`: one per size)."""
    return [PlannedPoint(group=g, kernel="cublas" if c is None else c.kernel, config={} if c is None else c.params(),
                         shape=f"{n}x{n}x{n}", M=n, N=n, K=n) for g, c, n in points]


def validate_fleet(out: Path | None, quick: bool, seed: int, variants: bool, gpus: str | None, ray: str | None,
                   mixed: bool) -> int:
    """`validate [--quick|--variants] --gpus LIST | --ray ADDRESS`: the same plan and record as the one-GPU
    run, measured by a worker per GPU (measure.fleet); the first worker calibrates. Every point names its
    GPU; the append log the workers' results went to is removed once raw.json holds them all."""
    started = datetime.now(timezone.utc)
    site = _Fleet(gpus, ray, mixed)
    name = match_shipped(site.name, site.cc)
    if name is None:
        site.pool.close()
        raise UserError(f"{site.name} is not a shipped device; measuring on several GPUs needs a shipped device file "
                        "(perfmodel devices detect)")
    kind = "-quick" if quick else "-variants" if variants else ""
    out = out or Path.cwd() / "results" / f"{started:%Y%m%d-%H%M%S}-{name}{kind}{f'-seed{seed}' if seed else ''}"
    if out.exists():
        site.pool.close()
        raise UserError(f"{out} exists; results are never overwritten (choose another --out)")
    out.mkdir(parents=True)
    print("calibrating (microbenchmarks, first worker) ...")
    (out / "calibration.toml").write_text(site.calibration(name))
    env = site.environment(name, started)
    device = load_device(name)
    pts = planned(variant_plan(device, seed) if variants else plan(device, quick, seed))
    print(f"{len(pts)} points -> {out}")
    log = out / "points.jsonl"
    failed = site.measure(pts, log, Figures.load(name, out / "calibration.toml"), out, (10.0, 40.0) if quick else (25.0, 100.0),
                          resumable=False)
    got = {measurement_key(m): m for m in _recorded(log)}
    if any(p.key() not in got for p in pts):
        print(f"{sum(p.key() not in got for p in pts)} points not measured (every worker was lost); the finished ones are in {log}")
        return 1
    run = Run(environment=env, device_toml=device_toml(shipped_devices()[name]),
              measurements=[got[p.key()].model_copy(update={"shape": None}) for p in pts])
    (out / "raw.json").write_text(run.model_dump_json(indent=1))
    log.unlink()
    s = _derive(out)["summary"]
    print(f"points {s['points']}, failed {s['failed']}, MAPE {s['mape_pct']:.1f} %; results in {out}")
    return 1 if failed or s["failed"] else 0


# ---- shape runs: the corpus (shapes/corpus.toml), recorded as points finish, resumable --------------
def shape_plan(fig, shapes, seed: int = 0, progress=None, tune_top: int | None = None,
               sample: int = SHAPE_RANDOM, sass_top: int | None = None, kernels=None) -> list[PlannedPoint]:
    """Per shape: cuBLAS, the ladder's defaults, the model's top SHAPE_TOP (ranked with `fig`, the top
    SHAPE_SASS re-predicted from their binaries) and `sample` (SHAPE_RANDOM unless said) other valid
    configurations at random (seeded by the seed and the shape's name). Deterministic for one model and figures. With tune_top
    K (`sweep --measure K --shapes`): cuBLAS, the model's top K (the top max(K, SHAPE_SASS) re-predicted
    from their binaries) and `sample` others at random, no ladder. sass_top: how many of the ranking's top to
    re-predict from their binaries instead (bench: sweep.SASS_TOP, so that its pick is `perfmodel choose`'s).
    kernels: the kernels to rank (None: every tiled kernel, sweep.rank's default; bench: the manifest's ranked
    ones, catalogue.ranked_kernels, as `perfmodel choose` ranks)."""
    pts = []
    n_top = SHAPE_TOP if tune_top is None else tune_top
    n_random = sample
    for j, sh in enumerate(shapes, 1):
        dims = dict(shape=sh.name, M=sh.M, N=sh.N, K=sh.K)
        pts.append(PlannedPoint(group="baseline", kernel="cublas", config={}, **dims))
        ladder = [KernelConfig.make(k) for k in ladder_on(fig.device.compute_capability)] if tune_top is None else []
        pts += [PlannedPoint(group="ladder", kernel=c.kernel, config=c.params(), **dims) for c in ladder]
        rk = rank(fig, ModelProblem(sh.M, sh.N, sh.K), kernels,
                  sass_top=sass_top if sass_top is not None else max(SHAPE_SASS, n_top))
        chosen = {c.label() for c in ladder}
        top = []
        for i in rk.order:
            c = rk.configs[int(i)]
            if c.label() not in chosen and len(top) < n_top:
                top.append(c)
                chosen.add(c.label())
        pool = [c for c in rk.configs if c.label() not in chosen]
        rand = random.Random(f"{seed}:{sh.name}").sample(pool, min(n_random, len(pool)))
        pts += [PlannedPoint(group="top", kernel=c.kernel, config=c.params(), **dims) for c in top]
        pts += [PlannedPoint(group="random", kernel=c.kernel, config=c.params(), **dims) for c in rand]
        if progress:
            progress(j, len(shapes))
    return pts


def _recorded(path: Path) -> list[Measurement]:
    """The points a shape run recorded (points.jsonl, or points.jsonl.xz once the run is complete and
    packed; a last line cut short by a killed run is dropped)."""
    out = []
    packed = path.with_name(path.name + ".xz")
    text = path.read_text() if path.exists() else lzma.decompress(packed.read_bytes()).decode() if packed.exists() else ""
    if text:
        for line in text.splitlines():
            try:
                out.append(Measurement.model_validate_json(line))
            except ValueError:
                continue
    return out


@contextmanager
def _resume_hint(out: Path):
    """On an interrupt, say how to go on (every finished point is already in points.jsonl)."""
    try:
        yield
    except KeyboardInterrupt:
        print(f"\ninterrupted; the finished points are recorded: perfmodel {_command(out)} --resume {out}", file=sys.stderr, flush=True)
        raise


def _command(out: Path) -> str:
    """The command that resumes the shape run in `out` (bench for a bench run)."""
    return "bench" if is_bench(out) else "validate"


def pending(plan: Plan, log: Path) -> list[PlannedPoint]:
    """The planned points the run's points.jsonl does not hold yet, in plan order."""
    done = {measurement_key(m) for m in _recorded(log)}
    return [p for p in plan.points if p.key() not in done]


class _Here:
    """The one-GPU path: this process's CUDA context on device 0."""

    def __init__(self):
        self.gpu = Gpu()
        self.name, self.cc = self.gpu.name, self.gpu.cc

    def calibration(self, device: str) -> str:
        return measured_toml(device, self.gpu.name, run_microbenchmarks(self.gpu))

    def environment(self, device: str, started) -> Environment:
        return environment(self.gpu, device, started)

    def measure(self, todo: list[PlannedPoint], log: Path, fig, out: Path) -> int:
        gpu = self.gpu
        try:
            sampler = NvmlSampler()
        except Exception as exc:
            print(f"warning: NVML unavailable ({exc}); SM clock not sampled", file=sys.stderr)
            sampler = None
        cubins = compile_all(gpu, {c.label(): c for c in map(point_config, todo) if c is not None})
        prob, failed, t0 = None, 0, datetime.now(timezone.utc)
        with open_log(log) as f, _resume_hint(out):
            for i, p in enumerate(todo, 1):
                if prob is None or (prob.M, prob.N, prob.K) != (p.M, p.N, p.K):
                    prob = Problem(gpu, p.M, p.N, p.K)
                cfg = point_config(p)
                m = (peer.measure(gpu, prob, p.group, sampler) if p.kernel == peer.NAME else
                     measure_compiled(gpu, prob, cfg, p.group, sampler, 25.0, 100.0, cubins)).model_copy(update={"shape": p.shape})
                f.write(m.model_dump_json() + "\n")
                f.flush()
                failed += not m.verified
                res = f"{m.gflops_median:9,.0f} GFLOPS" if m.verified else f"FAILED ({m.verification})"
                el = (datetime.now(timezone.utc) - t0).total_seconds()
                print(f"  [{i:4d}/{len(todo)}] {p.shape:28s} {p.group:8s} {p.kernel if cfg is None else cfg.label():60s} {res}  ({el:.0f} s)", flush=True)
        print(f"measured {len(todo)} points in {(datetime.now(timezone.utc) - t0).total_seconds():.1f} s", flush=True)
        return failed


class _Fleet:
    """The parallel path (measure.fleet): a worker per GPU, `--gpus LIST` here or `--ray ADDRESS`; the
    first worker calibrates and describes the machine for the plan."""

    def __init__(self, gpus: str | None, ray: str | None, mixed: bool, planned_for: str | None = None):
        self.pool = fleet.gpu_pool(gpus, ray)
        try:
            self.workers = fleet.start_workers(self.pool)
            fleet.check_models(self.workers, mixed, planned_for)
        except BaseException:
            self.pool.close()
            raise
        w0 = self.workers[0]
        self.name, self.cc = w0.gpu.name, w0.compute_capability
        for w in self.workers:
            print(f"  worker {w.slot}: gpu{w.gpu.index} {w.gpu.name} {w.gpu.uuid} on {w.gpu.host}"
                  f"{f', SM clock max {w.gpu.sm_clock_max_MHz:.0f} MHz' if w.gpu.sm_clock_max_MHz else ''}")

    def calibration(self, device: str) -> str:
        return fleet.call_one(self.pool, self.workers, 0, "calibrate", device)

    def environment(self, device: str, started) -> Environment:
        return Environment.model_validate_json(fleet.call_one(self.pool, self.workers, 0, "environment", device, started.isoformat()))

    def measure(self, todo: list[PlannedPoint], log: Path, fig, out: Path, budgets: tuple = (25.0, 100.0),
                resumable: bool = True) -> int:
        try:
            with _resume_hint(out) if resumable else nullcontext():
                cubins = fleet.compile_on(self.pool, self.workers, todo, log=print)
                got = fleet.run_points(self.pool, self.workers, todo, log, fleet.expected_seconds(fig, todo, *budgets), cubins,
                                       measure_args=budgets)
        finally:
            self.pool.close()
        print(f"measured {got.measured} points in {got.wall_s:.1f} s on {len(self.workers)} worker(s)"
              + (f"; lost: {'; '.join(got.lost_workers)}" if got.lost_workers else ""), flush=True)
        return got.failed


DRAFT = "plan.partial.json"  # a shape run's plan while it is being made (records.PlanDraft)


def _plan_shapes(out: Path, fig, draft: PlanDraft) -> Plan:
    """Rank the corpus shapes the draft has not planned yet (shape_plan, one shape at a time: the same points
    as all at once; plan_jobs of them at once in spawned processes where this host has the cores) and write
    the draft after each, in corpus order, so that a run stopped here goes on from the next shape with
    --resume; then plan.json, written once, and the draft removed."""
    shapes = select(draft.shapes, None if (draft.holdout or not draft.bench) else False)
    done = set(draft.planned)
    todo = [sh for sh in shapes if sh.name not in done]
    n_top = SHAPE_TOP if draft.tune_top is None else draft.tune_top
    jobs = plan_jobs(len(todo))
    print(f"planning {len(todo)} of {len(shapes)} shapes (the model's top {n_top} and {draft.sample} random configurations each"
          f"{f'; {jobs} at a time' if jobs > 1 else ''}) ...", flush=True)
    if draft.bench and draft.planned:  # a resumed draft keeps the peer its first shapes were planned with
        why = None if any(p.group == "peer" for p in draft.points) else "the run's first shapes were planned without it"
    else:
        why = peer.available() if draft.bench else None
    if why is not None:
        print(f"no Triton peer: {why}", file=sys.stderr)

    def keep(d: PlanDraft) -> None:  # the draft as it stands (a whole file: written aside, then renamed)
        write_atomic(out / DRAFT, d.model_dump_json(indent=1))

    keep(draft)  # before the first shape: a run stopped while ranking it is resumable too
    sass = SASS_TOP if draft.bench else None  # bench measures `perfmodel choose`'s pick: the same ranking
    kernels = ranked_kernels() if draft.bench else None  # ... over the same kernels
    pool, planned = None, counter("planned {j}/{n} shapes", stream=sys.stdout)
    try:
        if jobs > 1:  # spawned (the fleet's coordinator has threads), not daemonic (a ranking builds in processes
            # of its own), Ctrl-C left to this process
            pool = ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"), initializer=signal.signal,
                                       initargs=(signal.SIGINT, signal.SIG_IGN))
            ranked = pool.map(_plan_one, [(fig, sh, draft.seed, draft.tune_top, draft.sample, sass, kernels) for sh in todo])
        else:
            ranked = (shape_plan(fig, [sh], draft.seed, tune_top=draft.tune_top, sample=draft.sample, sass_top=sass,
                                 kernels=kernels) for sh in todo)
        for j, (sh, pts) in enumerate(zip(todo, ranked), len(shapes) - len(todo) + 1):  # in corpus order
            if draft.bench and why is None:
                pts = [q for p in pts for q in ([p, p.model_copy(update=dict(group="peer", kernel=peer.NAME))]
                                                  if p.kernel == "cublas" else [p])]
            draft = draft.model_copy(update=dict(points=draft.points + pts, planned=draft.planned + [sh.name]))
            keep(draft)
            planned(j, len(shapes))
    except KeyboardInterrupt:
        if pool is not None:  # the shapes still being ranked are dropped (the draft holds the ones done)
            _stop(pool)
            pool = None
        cmd = "bench" if draft.bench else "validate"
        print(f"\ninterrupted while planning; the {len(draft.planned)} planned shapes are kept: perfmodel {cmd} --resume {out}",
              file=sys.stderr, flush=True)
        raise
    finally:
        if pool is not None:
            pool.shutdown()
    plan = Plan(**{k: getattr(draft, k) for k in Plan.model_fields})
    (out / "plan.json").write_text(plan.model_dump_json(indent=1))
    (out / DRAFT).unlink(missing_ok=True)
    return plan


PLAN_CORES = 4  # host cores a shape's ranking keeps busy: its closed-form ranking and up to 8 builds of its top


def plan_jobs(shapes: int) -> int:
    """How many shapes a run ranks at once: one per PLAN_CORES cores of this host (each ranking builds its top
    configurations in parallel itself), at most one per shape; PERFMODEL_PLAN_JOBS overrides. One ranks
    them in this process, one after the other."""
    env = os.environ.get("PERFMODEL_PLAN_JOBS", "")
    n = int(env) if env.isdigit() and int(env) > 0 else (os.cpu_count() or 1) // PLAN_CORES
    return max(1, min(n, shapes))


def _stop(pool: ProcessPoolExecutor) -> None:
    """End a planning pool now: queued shapes cancelled, running ones killed (with their builds' processes
    left to finish on their own) rather than waited for."""
    if hasattr(pool, "terminate_workers"):  # Python 3.14 on
        pool.terminate_workers()
        return
    handles = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in handles:
        proc.terminate()


def _plan_one(job) -> list[PlannedPoint]:
    """One shape's points (shape_plan), in a planning process."""
    fig, sh, seed, tune_top, sample, sass, kernels = job
    return shape_plan(fig, [sh], seed, tune_top=tune_top, sample=sample, sass_top=sass, kernels=kernels)


def _run_figures(out: Path, env) -> Figures:
    """A shape run's figures: its device file with the run's own calibration where it has one."""
    return Figures.load(env.device_file, out / "calibration.toml" if (out / "calibration.toml").exists() else None)


def validate_shapes(which: str = "all", seed: int = 0, out: Path | None = None, resume: Path | None = None,
                    tune_top: int | None = None, sample: int = SHAPE_RANDOM, device: str | None = None,
                    bench: bool = False, holdout: bool = False, gpus: str | None = None, ray: str | None = None,
                    mixed: bool = False, plan_only: bool = False) -> int:
    """Measure the shape corpus (one class or all) on the local GPU. A new run calibrates, ranks (shape by
    shape, each kept in plan.partial.json as it is ranked: a run stopped while planning resumes from the next
    shape) and writes plan.json; every run (new or `resume`d) measures the planned points points.jsonl does not
    hold yet, appending each as it finishes, and writes raw.json and the report once all are recorded.
    tune_top K: a `sweep --measure K --shapes` run (shape_plan; folder `…-tune-shapes-CLASS`); device:
    the device file the caller named, which must be the GPU's. bench (`perfmodel bench`; folder `…-bench-CLASS`):
    per shape cuBLAS, the Triton peer where torch and triton are here (measure.peer) and the model's top 1,
    the hold-out shapes only with `holdout`; its comparison is written beside the report (bench.*).
    gpus ('0,1', 'all') or ray ('auto', an address): measured by a worker per GPU (measure.fleet), every
    point naming its GPU; mixed: GPUs of several models allowed (reported apart). plan_only (with `resume` of a
    run stopped while it was ranking the corpus): finish plan.json with the run's own calibration and this
    machine's compiler facts, and measure nothing (no GPU touched). 1 if any point failed."""
    plan = draft = None
    if resume is not None:  # the run is checked before the GPU is touched
        out = Path(resume)
        if not (out / "plan.json").is_file() and (out / DRAFT).is_file():  # stopped while it was being planned
            try:
                draft = PlanDraft.model_validate_json((out / DRAFT).read_text())
            except ValueError as exc:
                raise UserError(f"{out / DRAFT} does not load: {str(exc).splitlines()[0]}") from None
        elif not (out / "plan.json").is_file():
            raise UserError(f"{out} holds no plan.json (not a shape run: --resume continues a perfmodel validate --shapes run)")
        else:
            try:
                plan = Plan.model_validate_json((out / "plan.json").read_text())
            except ValueError as exc:
                raise UserError(f"{out / 'plan.json'} does not load: {str(exc).splitlines()[0]}") from None
    if plan_only:
        if draft is None:
            raise UserError(f"{out} is already planned (plan.json exists); --plan-only finishes the plan of a run "
                            f"stopped while it was ranking the corpus")
        env = draft.environment
        plan = _plan_shapes(out, _run_figures(out, env), draft)
        print(f"{out / 'plan.json'}: {len(plan.points)} planned points for {env.gpu_name}; measure them there with "
              f"perfmodel {_command(out)} --resume {out}")
        return 0
    if plan is not None:
        if run_record(out) is None and not (out / "points.jsonl").exists() and (out / "points.jsonl.xz").exists():
            unpack_file(out / "points.jsonl.xz")  # a stopped run kept packed: measuring appends to the plain log
        if run_record(out) is not None:
            if (out / "summary.json").exists():
                raise UserError(f"{out} is complete (raw.json and its report exist); nothing to resume")
            pack_log(out)
            return _finish(out)  # every point is recorded; the report was cut short: no GPU needed
        if not pending(plan, out / "points.jsonl"):  # every point recorded, raw.json not yet written: no GPU needed
            return _complete(out, plan, 0)
    if gpus is None and ray is None:
        site = _Here()
    else:
        site = _Fleet(gpus, ray, mixed, None if (plan or draft) is None else (plan or draft).environment.gpu_name)
    if plan is not None or draft is not None:
        env = (plan or draft).environment
        if env.gpu_name != site.name and not mixed:
            raise UserError(f"{out} was measured on {env.gpu_name}; this GPU is {site.name}")
        fig = _run_figures(out, env)
        if plan is None:
            plan = _plan_shapes(out, fig, draft)
    else:
        if bench:
            tune_top, sample = 1, 0
        started = datetime.now(timezone.utc)
        name = match_shipped(site.name, site.cc)
        if name is None:
            raise UserError(f"{site.name} is not a shipped device; shape runs need a shipped device file (perfmodel devices detect)")
        if device is not None and device.lower() != name:
            raise UserError(f"--device {device} names another GPU than this one ({site.name}: device file {name})")
        kind = "bench" if bench else "shapes" if tune_top is None else "tune-shapes"
        out = out or Path.cwd() / "results" / f"{started:%Y%m%d-%H%M%S}-{name}-{kind}-{which.replace('_', '-')}{f'-seed{seed}' if seed else ''}"
        if out.exists():
            raise UserError(f"{out} exists; results are never overwritten (choose another --out, or --resume it)")
        out.mkdir(parents=True)
        print("calibrating (microbenchmarks) ...")
        (out / "calibration.toml").write_text(site.calibration(name))
        fig = Figures.load(name, out / "calibration.toml")
        env = site.environment(name, started)
        draft = PlanDraft(shapes=which, seed=seed, tune_top=tune_top, bench=bench, environment=env,
                          device_toml=device_toml(shipped_devices()[name]), points=[], holdout=holdout, sample=sample, planned=[])
        plan = _plan_shapes(out, fig, draft)
    log = out / "points.jsonl"
    todo = pending(plan, log)
    print(f"{site.name}: {len(plan.points)} planned points, {len(plan.points) - len(todo)} recorded, {len(todo)} to measure -> {out}")
    failed = site.measure(todo, log, fig, out)
    return _complete(out, plan, failed)


def _complete(out: Path, plan: Plan, failed: int) -> int:
    """raw.json (every planned point in plan order), the packed log and the report, once every point is
    recorded; else how many are left and the command that measures them."""
    recorded = {measurement_key(m): m for m in _recorded(out / "points.jsonl")}
    if any(p.key() not in recorded for p in plan.points):
        print(f"{sum(p.key() not in recorded for p in plan.points)} points still to measure: perfmodel {_command(out)} --resume {out}")
        return 1 if failed else 0
    run = Run(environment=plan.environment, device_toml=plan.device_toml, measurements=[recorded[p.key()] for p in plan.points])
    (out / "raw.json").write_text(run.model_dump_json(indent=1))
    pack_log(out)
    return _finish(out, failed)


def pack_log(out: Path) -> bool:
    """Once raw.json holds every point, the append log points.jsonl is kept compressed
    (points.jsonl.xz, about a tenth of its size): written, read back and compared byte for byte, and
    only then is the plain log removed. False (nothing changed) where there is no log or raw.json
    lacks one of its points."""
    log, packed = out / "points.jsonl", out / "points.jsonl.xz"
    if not log.is_file() or packed.exists() or not (out / "raw.json").is_file():
        return False
    held = {measurement_key(m) for m in Run.model_validate_json((out / "raw.json").read_text()).measurements}
    if any(measurement_key(m) not in held for m in _recorded(log)):
        return False
    pack_file(log)
    return True


def _finish(out: Path, failed: int = 0) -> int:
    """summary.*, report.md and the plots of a shape run whose raw.json is written (with its own calibration)."""
    print(f"replaying {out} for its report ...", flush=True)
    derived = _derive(out)
    s = derived["summary"]
    print(f"points {s['points']}, failed {s['failed']}, MAPE {s['mape_pct']:.1f} %; results in {out}")
    if is_bench(out):
        try:
            from ..report.reports import write_bench  # matplotlib

            write_bench(out, derived["rows"], s["device"])
        except ImportError as exc:
            print(f"warning: no bench comparison ({exc})", file=sys.stderr)
    return 1 if failed or s["failed"] else 0



