"""Measuring on every GPU at once: one worker per GPU (measure.worker), as a process per GPU of this
host (`--gpus 0,1`) or as a Ray actor per GPU of a Ray cluster (`--ray auto|ADDRESS`, the engine Kernel
Tuner's parallel runner uses), and the coordinator that hands them a shape run's planned points.

The coordinator (run_points) gives each free worker the costliest point left of the shape it holds (a
worker keeps a shape's buffers and reference product between points), else of the shape with the most
expected time left that no other worker holds (longest first), and appends every result to the run's
points.jsonl the moment it arrives, so an interrupted run loses nothing and `--resume` measures only
what is missing. A worker that dies in the middle of a point is dropped and its point measured again by
another worker, once; a point that loses two workers is recorded as failed, with the reason."""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import sys
import time
import tomllib
import traceback
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ..errors import UserError
from ..model.predict import Problem, predict_batch
from ..progress import counter
from .detect import match_shipped
from .records import GpuIdentity, Measurement, PlannedPoint, open_log
from .worker import GpuWorker, point_config

POLL_S = 0.2
RETRIES = 1  # a point whose worker died is measured again this many times before it is recorded as failed
FIXED_S = 0.35  # a point's cost besides its timed runs: verification, launches, the host's share (s)


@dataclass
class Handle:
    """A worker as the coordinator sees it."""

    slot: int  # position in the pool
    gpu: GpuIdentity
    compute_capability: str
    alive: bool = True
    shape: Optional[str] = None  # the shape whose buffers it holds
    done: int = 0
    busy_s: float = 0.0


# ---- pools: start workers, send one task to a worker, collect what comes back ------------------
def _serve(factory, args, env, tasks, results, slot):
    """A worker process: make the worker, then answer tasks (op, args) until told to stop (None)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's to handle
    os.environ.update(env)
    try:
        w = factory(*args)
    except Exception:
        results.put((slot, "error", traceback.format_exc(limit=3)))
        return
    while True:
        task = tasks.get()
        if task is None:
            return
        op, a = task
        try:
            results.put((slot, "ok", getattr(w, op)(*a)))
        except Exception as exc:
            results.put((slot, "error", f"{type(exc).__name__}: {exc}"[:500]))


class ProcessPool:
    """One process per worker on this host (spawned: each makes its own CUDA context). `specs`: per
    worker (factory, args, environment variables)."""

    def __init__(self, specs: list[tuple[Callable, tuple, dict]]):
        ctx = mp.get_context("spawn")
        self._results = ctx.Queue()
        self._tasks, self._procs = [], []
        for slot, (factory, args, env) in enumerate(specs):
            q = ctx.Queue()
            p = ctx.Process(target=_serve, args=(factory, args, env, q, self._results, slot), daemon=True)
            p.start()
            self._tasks.append(q)
            self._procs.append(p)
        self._busy: set[int] = set()

    def __len__(self):
        return len(self._procs)

    def submit(self, slot: int, op: str, *args) -> None:
        self._busy.add(slot)
        self._tasks[slot].put((op, args))

    def poll(self, timeout: float) -> list[tuple[int, str, object]]:
        """(slot, 'ok' | 'error' | 'lost', value) for each worker that finished its task (or died) by now."""
        out = []
        try:
            out.append(self._results.get(timeout=timeout))
            while True:
                out.append(self._results.get_nowait())
        except queue.Empty:
            pass
        for slot, *_ in out:
            self._busy.discard(slot)
        for slot in list(self._busy):
            p = self._procs[slot]
            if not p.is_alive():
                try:  # its answer may have arrived just before it ended
                    while True:
                        r = self._results.get(timeout=0.05)
                        out.append(r)
                        self._busy.discard(r[0])
                except queue.Empty:
                    pass
                if slot in self._busy:
                    self._busy.discard(slot)
                    out.append((slot, "lost", f"worker process ended (exit code {p.exitcode})"))
        return out

    def close(self) -> None:
        for q, p in zip(self._tasks, self._procs):
            if p.is_alive():
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
        for p in self._procs:
            p.join(timeout=2)
            if p.is_alive():
                p.terminate()
                p.join(timeout=2)


class _RayServe:
    """The Ray actor: holds one worker and runs its methods."""

    def __init__(self, factory, args):
        self.w = factory(*args)

    def call(self, op, args):
        return getattr(self.w, op)(*args)


def ray_module():
    """ray, or UserError naming the extra that installs it."""
    try:
        import ray
    except ImportError:
        raise UserError("--ray needs Ray, which is not installed here: pip install 'perfmodel[ray]'") from None
    return ray


def ray_init(address: str):
    """Connect to the Ray cluster at `address`; 'auto': the running cluster (RAY_ADDRESS, or one started
    on this host with `ray start`), else a Ray started here for this run."""
    ray = ray_module()
    if not ray.is_initialized():
        if address == "auto":
            try:
                ray.init(address="auto", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError):
                ray.init(include_dashboard=False, log_to_driver=False)
        else:
            try:
                ray.init(address=address, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise UserError(f"--ray {address}: no Ray cluster there ({str(exc).splitlines()[0]}); give the address "
                                "`ray start --head` printed, or auto") from None
    return ray


class RayPool:
    """One Ray actor per worker; `gpus_each` 1 for a GPU worker (Ray gives each its own GPU, as Kernel
    Tuner's parallel runner asks), 0 for a simulated one. `specs`: per worker (factory, args)."""

    def __init__(self, specs: list[tuple[Callable, tuple]], gpus_each: float = 1.0, address: str = "auto"):
        self.ray = ray_init(address)
        actor = self.ray.remote(_RayServe)
        self._actors = [actor.options(num_gpus=gpus_each, num_cpus=0 if gpus_each else 0.01).remote(f, a) for f, a in specs]
        self._refs: dict = {}  # ObjectRef -> slot

    def __len__(self):
        return len(self._actors)

    def submit(self, slot: int, op: str, *args) -> None:
        self._refs[self._actors[slot].call.remote(op, args)] = slot

    def poll(self, timeout: float) -> list[tuple[int, str, object]]:
        if not self._refs:
            time.sleep(timeout)
            return []
        ready, _ = self.ray.wait(list(self._refs), num_returns=len(self._refs), timeout=timeout)
        out = []
        for ref in ready:
            slot = self._refs.pop(ref)
            try:
                out.append((slot, "ok", self.ray.get(ref)))
            except self.ray.exceptions.RayActorError as exc:
                out.append((slot, "lost", f"Ray actor died ({type(exc).__name__})"))
            except self.ray.exceptions.RayTaskError as exc:
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                out.append((slot, "error", f"{type(cause).__name__}: {cause}"[:500]))
        return out

    def kill(self, slot: int) -> None:
        """End one actor as a lost host would (for tests and drills)."""
        self.ray.kill(self._actors[slot])

    def close(self) -> None:
        for a in self._actors:
            try:
                self.ray.kill(a)
            except Exception:
                pass


def parse_gpus(text: str, count: int) -> list[int]:
    """'0,1' or 'all' -> GPU ordinals of this host; UserError for what is not one of its `count` GPUs."""
    if text == "all":
        if count == 0:
            raise UserError("--gpus all: this host has no CUDA GPU")
        return list(range(count))
    try:
        ids = [int(t) for t in text.split(",") if t.strip() != ""]
    except ValueError:
        raise UserError(f"--gpus {text}: expected GPU ordinals separated by commas (e.g. 0,1) or all") from None
    if not ids or len(set(ids)) != len(ids) or any(i < 0 or i >= count for i in ids):
        raise UserError(f"--gpus {text}: expected distinct GPU ordinals of this host's {count} GPU(s) "
                        f"(0 to {count - 1}), separated by commas, or all")
    return ids


def visible_gpu_count() -> int:
    """How many CUDA GPUs this host has, from NVML (no CUDA context is made in the coordinator)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:
        return 0


def gpu_pool(gpus: Optional[str], ray: Optional[str]):
    """The pool of GPU workers `--gpus LIST` (processes here) or `--ray ADDRESS` (one actor per GPU of the
    cluster) asks for."""
    if ray is not None:
        r = ray_init(ray)
        n = int(r.cluster_resources().get("GPU", 0))
        if n == 0:
            raise UserError(f"--ray {ray}: the Ray cluster has no GPU (ray start --num-gpus, or a host with one)")
        return RayPool([(_ray_gpu_worker, ()) for _ in range(n)], gpus_each=1.0, address=ray)
    count = visible_gpu_count()
    if count == 0:
        raise UserError(f"--gpus {gpus}: NVML finds no CUDA GPU on this host")
    ids = parse_gpus(gpus, count)
    return ProcessPool([(GpuWorker, (i,), {"CUDA_VISIBLE_DEVICES": str(i)}) for i in ids])


def _ray_gpu_worker():
    """A GPU worker inside a Ray actor: Ray has set CUDA_VISIBLE_DEVICES to the GPU it gave the actor."""
    ids = ray_module().get_gpu_ids()
    return GpuWorker(int(ids[0]) if ids else 0)


# ---- scheduling --------------------------------------------------------------------------------
def expected_seconds(fig, points: list[PlannedPoint], warmup_ms: float = 25.0, rep_ms: float = 100.0) -> dict:
    """{point key: the seconds it is expected to take}: the timing budgets (or five runs and a warm-up, where
    a run takes longer than they allow) at the model's time for the configuration (closed form, estimated
    registers; a peer at the shape's best predicted time), plus FIXED_S."""
    by_shape = defaultdict(list)
    for p in points:
        by_shape[(p.M, p.N, p.K)].append(p)
    out = {}
    for (M, N, K), pts in by_shape.items():
        cfgs = [point_config(p) for p in pts]
        kern = [c for c in cfgs if c is not None]
        t = predict_batch(fig, kern, Problem(M, N, K)).time_s if kern else np.array([])
        best = float(np.min(t)) if len(t) else 2.0 * M * N * K / 40e12
        it = iter(t)
        for p, c in zip(pts, cfgs):
            run_s = float(next(it)) if c is not None else best
            out[p.key()] = FIXED_S + max((warmup_ms + rep_ms) / 1e3, 7 * run_s)
    return out


class Scheduler:
    """Planned points by shape, costliest first; see the module's docstring for the order."""

    def __init__(self, points: list[PlannedPoint], cost: dict):
        self.cost = cost
        self.left: dict[str, list[PlannedPoint]] = defaultdict(list)
        for p in sorted(points, key=lambda p: -cost.get(p.key(), 1.0)):
            self.left[p.shape].append(p)

    def __len__(self):
        return sum(len(v) for v in self.left.values())

    def seconds_left(self) -> float:
        return sum(self.cost.get(p.key(), 1.0) for v in self.left.values() for p in v)

    def take(self, shape: Optional[str], held: set) -> Optional[PlannedPoint]:
        if shape is not None and self.left.get(shape):
            return self.left[shape].pop(0)
        shapes = [s for s, v in self.left.items() if v]
        if not shapes:
            return None
        free = [s for s in shapes if s not in held] or shapes
        s = max(free, key=lambda s: sum(self.cost.get(p.key(), 1.0) for p in self.left[s]))
        return self.left[s].pop(0)

    def put_back(self, p: PlannedPoint) -> None:
        self.left[p.shape].insert(0, p)


@dataclass
class Outcome:
    measured: int = 0
    failed: int = 0
    left: int = 0  # points not measured (every worker lost)
    lost_workers: list = field(default_factory=list)
    wall_s: float = 0.0


def failed_point(p: PlannedPoint, why: str) -> Measurement:
    return Measurement(kernel=p.kernel, config=p.config, group=p.group, shape=p.shape, M=p.M, N=p.N, K=p.K,
                       verified=False, verification="error", error=why)


def start_workers(pool) -> list[Handle]:
    """Ask every worker which GPU it is; a worker that cannot start is an error naming it."""
    for slot in range(len(pool)):
        pool.submit(slot, "identity")
    got = {}
    while len(got) < len(pool):
        for slot, status, value in pool.poll(1.0):
            if status != "ok":
                raise UserError(f"worker {slot} did not start: {str(value).strip().splitlines()[-1]}")
            got[slot] = Handle(slot=slot, gpu=GpuIdentity(**value["gpu"]), compute_capability=value["compute_capability"])
    return [got[s] for s in range(len(pool))]


def check_models(workers: list[Handle], mixed: bool, planned_for: Optional[str] = None) -> None:
    """UserError where the workers' GPUs are of more than one model (unless `mixed`), or not the model
    the run was planned for."""
    names = sorted({w.gpu.name for w in workers})
    if len(names) > 1 and not mixed:
        raise UserError(f"the workers' GPUs are of {len(names)} models ({', '.join(names)}); a run measures one model "
                        "(--mixed-gpus measures on all and reports them apart)")
    if planned_for is not None and not mixed and names != [planned_for]:
        raise UserError(f"the run was planned on {planned_for}; these workers have {', '.join(names)}")


def call_one(pool, workers: list[Handle], slot: int, op: str, *args):
    """Run one task on one worker and wait for its answer (UserError if it fails or dies)."""
    pool.submit(slot, op, *args)
    while True:
        for s, status, value in pool.poll(1.0):
            if s == slot:
                if status != "ok":
                    raise UserError(f"worker {slot} ({workers[slot].gpu.name}) failed at {op}: {str(value).strip().splitlines()[-1]}")
                return value


def compile_on(pool, workers: list[Handle], todo: list[PlannedPoint], log=print) -> dict:
    """{label: cubin or None} for the points' configurations, the distinct configurations shared out among
    the workers (each builds its share with its host's compiler, in parallel)."""
    seen, share = set(), [[] for _ in workers]
    for p in todo:
        c = point_config(p)
        if c is not None and c.label() not in seen:
            seen.add(c.label())
            share[len(seen) % len(workers)].append(p.model_dump_json())
    cubins = {}
    live = [w for w in workers if w.alive]
    count = counter(f"compiled {{j}}/{{n}} kernels on {len(live)} worker(s)", stream=sys.stdout, enabled=log is print)
    done = -1
    for w, pts in zip(live, share):
        if pts:
            pool.submit(w.slot, "compile", pts)
    waiting = {w.slot for w, pts in zip(live, share) if pts}
    while waiting:
        for slot, status, value in pool.poll(1.0):
            waiting.discard(slot)
            if status == "ok":
                cubins.update(value)
            else:  # its share is compiled again by whoever measures it (and fails there if it cannot)
                log(f"  worker {slot} did not compile its share: {str(value).strip().splitlines()[-1]}")
        if len(cubins) != done:  # a line when the count moves, not at every poll
            done = len(cubins)
            count(done, len(seen))
    if done < len(seen) and log is print and sys.stdout.isatty():
        print()  # end the rewritten line where some share did not compile
    return cubins


@contextmanager
def _first_interrupt_deferred():
    """Within: the first Ctrl-C (SIGINT) only sets a flag that the caller reads (yielded: a function that
    says whether it came) at a point where nothing is half done; the second raises KeyboardInterrupt as
    usual. Without this, a KeyboardInterrupt raised between a worker's answer and its line in the log, or
    between a submit and its entry in the points in flight, lost a point the worker had measured, and a
    resumed run measured it again. Off the main thread, where no handler can be set, nothing changes."""
    count = [0]

    def handler(signum, frame):
        count[0] += 1
        if count[0] > 1:
            raise KeyboardInterrupt

    before, installed = signal.getsignal(signal.SIGINT), False
    if before is not signal.SIG_IGN:  # a process that ignores Ctrl-C keeps ignoring it
        try:
            signal.signal(signal.SIGINT, handler)
            installed = True
        except ValueError:  # not the main thread
            pass
    if not installed:
        yield lambda: False
        return
    try:
        yield lambda: count[0] > 0
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.SIG_DFL)


def run_points(pool, workers: list[Handle], todo: list[PlannedPoint], log_path: Path, cost: dict, cubins: dict | None = None,
               measure_args: tuple = (), echo=print, retries: int = RETRIES) -> Outcome:
    """Measure `todo` on the workers, appending each Measurement to log_path as it arrives; progress on
    `echo` (a line per point, a summary with each GPU's rate and the time left every 20 points and at the end)."""
    cubins = cubins or {}
    sched = Scheduler(todo, cost)
    total = len(todo)
    busy: dict[int, tuple[PlannedPoint, float]] = {}
    tries: Counter = Counter()
    out = Outcome()
    t0 = time.time()
    done_cost = 0.0

    def summary():
        el = time.time() - t0
        rate = done_cost / el if el > 0 and done_cost else 0.0
        left = (sched.seconds_left() + sum(cost.get(p.key(), 1.0) for p, _ in busy.values())) / rate if rate else float("nan")
        per = ", ".join(f"gpu{w.gpu.index}@{w.gpu.host} {60 * w.done / el:.1f}/min" + ("" if w.alive else " (lost)") for w in workers)
        echo(f"  -- {out.measured}/{total} points in {el:.0f} s; {per}; about {left:.0f} s left", flush=True)

    def say_stopping():  # the points in flight are finished and recorded; a second Ctrl-C drops them
        echo(f"\ninterrupted: recording the {len(busy)} point(s) in flight (Ctrl-C again to drop them)", file=sys.stderr, flush=True)

    stopping = False
    with open_log(log_path) as f, _first_interrupt_deferred() as interrupted:
        while len(sched) or busy:
            if interrupted() and not stopping:
                stopping = True
                say_stopping()
            try:
                if not stopping:
                    for w in workers:
                        if w.alive and w.slot not in busy:
                            p = sched.take(w.shape, {x.shape for x in workers if x.alive and x.slot != w.slot})
                            if p is None:
                                break
                            c = point_config(p)
                            pool.submit(w.slot, "measure", p.model_dump_json(), None if c is None else cubins.get(c.label()), *measure_args)
                            busy[w.slot] = (p, time.time())
                            w.shape = p.shape
                if not busy:
                    if len(sched) and not stopping:  # every worker is gone: what is left stays planned, for --resume
                        out.left = len(sched)
                    break
                finished = pool.poll(POLL_S)
            except KeyboardInterrupt:  # off the main thread, where Ctrl-C could not be deferred
                if stopping:
                    raise
                stopping = True
                say_stopping()
                continue
            for slot, status, value in finished:
                if slot not in busy:
                    continue
                p, started = busy.pop(slot)
                w = workers[slot]
                if status == "lost":
                    w.alive = False
                    out.lost_workers.append(f"gpu{w.gpu.index}@{w.gpu.host}: {value}")
                    tries[p.key()] += 1
                    echo(f"  worker gpu{w.gpu.index}@{w.gpu.host} lost ({value}) during {p.shape} {p.kernel}", file=sys.stderr, flush=True)
                    if tries[p.key()] <= retries:
                        sched.put_back(p)
                        continue
                    m = failed_point(p, f"lost {tries[p.key()]} workers while measuring it (last: {value})")
                elif status == "error":
                    m = failed_point(p, str(value))
                else:
                    m = Measurement.model_validate_json(value)
                f.write(m.model_dump_json() + "\n")
                f.flush()
                out.measured += 1
                out.failed += not m.verified
                w.done += 1
                w.busy_s += time.time() - started
                done_cost += cost.get(p.key(), 1.0)
                c = point_config(p)
                res = f"{m.gflops_median:9,.0f} GFLOPS" if m.verified else f"FAILED ({m.verification}{': ' + m.error if m.error else ''})"
                echo(f"  [{out.measured:4d}/{total}] gpu{w.gpu.index} {p.shape:26s} {p.group:8s} "
                     f"{p.kernel if c is None else c.label():58s} {res}  ({time.time() - t0:.0f} s)", flush=True)
                if out.measured % 20 == 0:
                    summary()
    if stopping:
        raise KeyboardInterrupt
    out.wall_s = time.time() - t0
    summary()
    return out


# ---- calibrate every GPU at once -------------------------------------------------------------------
CALIBRATED = ("sm_clock_MHz", "ffma_outer_GFLOPS", "dram_bandwidth_GBps", "l2_bandwidth_GBps",
              "smem_bandwidth_bytes_per_clock_per_sm", "dram_latency_cycles", "l2_latency_cycles", "l2_reread_latency_cycles")


def calibrate_fleet(out: Path | None, gpus: str | None, ray: str | None, mixed: bool = False) -> int:
    """`perfmodel calibrate --gpus LIST | --ray ADDRESS`: the microbenchmarks on every worker's GPU at once,
    one calibration file per GPU in a new folder (default results/calibration-DATE-DEVICE-gpus), and the
    main figures side by side with their spread (max/min) over the GPUs."""
    pool = gpu_pool(gpus, ray)
    try:
        workers = start_workers(pool)
        check_models(workers, mixed)
        names = {}
        for w in workers:
            name = match_shipped(w.gpu.name, w.compute_capability)
            if not name:
                raise UserError(f"{w.gpu.name} has no shipped device file; run `perfmodel devices detect` first")
            names[w.slot] = name
        date = datetime.now(timezone.utc)
        out = out or Path("results") / f"calibration-{date:%Y%m%d-%H%M%S}-{names[0]}-gpus"
        if out.exists():
            raise UserError(f"{out} exists; calibration files are never overwritten")
        out.mkdir(parents=True)
        print(f"calibrating {len(workers)} GPU(s) at once -> {out}", flush=True)
        t0 = time.time()
        for w in workers:
            pool.submit(w.slot, "calibrate", names[w.slot])
        files, left = {}, {w.slot for w in workers}
        while left:
            for slot, status, value in pool.poll(1.0):
                left.discard(slot)
                w = workers[slot]
                if status != "ok":
                    print(f"  gpu{w.gpu.index}@{w.gpu.host}: calibration failed ({str(value).strip().splitlines()[-1]})", file=sys.stderr)
                    continue
                hosts = {x.gpu.host for x in workers}
                f = out / f"calibration-gpu{w.gpu.index}{'' if len(hosts) == 1 else '-' + w.gpu.host}.toml"
                f.write_text(f"# {w.gpu.name} {w.gpu.uuid} on {w.gpu.host}\n" + value)
                files[slot] = f
                print(f"  gpu{w.gpu.index}@{w.gpu.host}: {f} ({time.time() - t0:.0f} s)", flush=True)
    finally:
        pool.close()
    if not files:
        return 1
    measured = {s: tomllib.loads(f.read_text()).get("measured", {}) for s, f in files.items()}
    head = "".join(f" {'gpu' + str(workers[s].gpu.index):>12}" for s in files)
    print(f"\n{'figure':40}{head} {'max/min':>8}")
    for k in CALIBRATED:
        vals = [measured[s].get(k) for s in files]
        if any(v is None for v in vals):
            continue
        print(f"{k:40}" + "".join(f" {v:12,.1f}" for v in vals) + f" {max(vals) / min(vals):8.3f}")
    return 0 if len(files) == len(workers) else 1
