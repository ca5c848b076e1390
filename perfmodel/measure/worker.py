"""What one measuring worker does on its one GPU (measure.fleet runs one per GPU, as a process or a Ray
actor): say which GPU it is, calibrate it, compile, measure a planned point. GpuWorker imports pycuda
when first asked; SimulatedWorker stands in for a GPU where there is none (the scheduler's tests, a
cluster's dry run)."""
from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import time
from datetime import datetime

from ..catalogue import KernelConfig
from . import build, peer
from .calibrate import measured_toml, run_microbenchmarks
from .gpu import Gpu, Problem, compile_all, measure_compiled
from .nvml import NvmlSampler
from .records import PEERS, Environment, GpuIdentity, Measurement, PlannedPoint, Timing

WARMUP_MS, REP_MS = 25.0, 100.0  # timing budgets of a shape run's point (as the one-GPU path)


def point_config(p: PlannedPoint):
    """The configuration of a planned point (None for a peer: cuBLAS, Triton)."""
    return None if p.kernel in PEERS else KernelConfig.make(p.kernel, **p.config)


def _nvcc_version() -> str:
    nvcc = build.find_nvcc()
    if not nvcc:
        return "unknown"
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return out[-1] if out else "unknown"


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def environment(gpu, device_file: str, started, driver: str | None = None) -> Environment:
    """What every results folder records about the machine, toolchain and flags."""
    import pycuda

    if driver is None:
        try:
            driver = NvmlSampler().driver_version()
        except Exception:
            driver = "unknown"
    return Environment(gpu_name=gpu.name, compute_capability=gpu.cc, sm_count=gpu.sm_count, l2_bytes=gpu.l2_bytes,
                       driver_version=driver, cuda_driver_api=_cuda_version(gpu.drv.get_driver_version()),
                       nvcc_version=_nvcc_version(), pycuda_version=pycuda.VERSION_TEXT,
                       nvcc_flags=build.NVCC_FLAGS + [f"-arch={gpu.arch}"], device_file=device_file,
                       hostname=platform.node(), started_utc=started.isoformat(), kernel_sources_sha256=build.sources_sha256(),
                       reduction_launch="programmatic" if gpu.programmatic else "stream")


class GpuWorker:
    """One GPU: the first one this process sees (the process pool sets CUDA_VISIBLE_DEVICES to the GPU's
    ordinal, Ray does so for an actor that asks for one GPU). `index`: that ordinal on its host, for the
    records. Every answer is plain data (JSON text, bytes), so that it crosses a process or host."""

    def __init__(self, index: int = 0):
        self.index = index
        self._gpu = None
        self._sampler = None
        self._ident = None
        self._prob = None

    def _open(self) -> Gpu:
        if self._gpu is None:
            gpu = Gpu()
            try:
                self._sampler = NvmlSampler(pci_bus_id=gpu.dev.pci_bus_id())
                nv = self._sampler.identity()
            except Exception:  # no NVML: timings stay valid, the GPU is named by its bus
                self._sampler, nv = None, dict(uuid=f"unknown (PCI {gpu.dev.pci_bus_id()})")
            self._ident = GpuIdentity(index=self.index, name=gpu.name, host=platform.node(), **nv)
            self._gpu = gpu
        return self._gpu

    def identity(self) -> dict:
        gpu = self._open()
        return dict(gpu=self._ident.model_dump(), compute_capability=gpu.cc)

    def calibrate(self, device_name: str) -> str:
        """The microbenchmarks of measure.calibrate on this GPU, as a calibration file's text."""
        gpu = self._open()
        return measured_toml(device_name, gpu.name, run_microbenchmarks(gpu, log=lambda *a, **k: None))

    def environment(self, device_file: str, started_iso: str) -> str:
        return environment(self._open(), device_file, datetime.fromisoformat(started_iso)).model_dump_json()

    def compile(self, points: list[str]) -> dict:
        """{label: cubin or None} for the configurations of these planned points (JSON), built in parallel."""
        gpu = self._open()
        cfgs = {c.label(): c for c in (point_config(PlannedPoint.model_validate_json(p)) for p in points) if c is not None}
        return compile_all(gpu, cfgs, progress=False)

    def measure(self, point: str, cubin: bytes | None, warmup_ms: float = WARMUP_MS, rep_ms: float = REP_MS) -> str:
        """One planned point (JSON) measured, verified and timed as the one-GPU path does; the Measurement
        (JSON) names the shape and this GPU."""
        gpu = self._open()
        p = PlannedPoint.model_validate_json(point)
        if self._prob is None or (self._prob.M, self._prob.N, self._prob.K) != (p.M, p.N, p.K):
            self._prob = None  # the last shape's buffers go first
            self._prob = Problem(gpu, p.M, p.N, p.K)
        cfg = point_config(p)
        if p.kernel == peer.NAME:
            m = peer.measure(gpu, self._prob, p.group, self._sampler, warmup_ms, rep_ms)
        else:
            m = measure_compiled(gpu, self._prob, cfg, p.group, self._sampler, warmup_ms, rep_ms,
                                 {} if cfg is None else {cfg.label(): cubin})
        return m.model_copy(update={"shape": p.shape, "gpu": self._ident}).model_dump_json()


class SimulatedWorker:
    """A worker without a GPU: each point takes `delay_s` x `slow` seconds and gets a made-up result that
    depends on the point alone (the same on every worker, so a run's results do not depend on which worker
    measured what). `die_after` N: the process exits in the middle of its (N+1)-th point, as a killed
    worker would. `done_log`: a file each finished point's key is appended to (which points were measured,
    and how often)."""

    NAME = "Simulated GPU"

    def __init__(self, index: int = 0, delay_s: float = 0.0, slow: float = 1.0, die_after: int | None = None,
                 done_log: str | None = None):
        self.index, self.delay_s, self.slow, self.die_after, self.done_log = index, delay_s, slow, die_after, done_log
        self.count = 0
        self._ident = GpuIdentity(index=index, name=self.NAME, uuid=f"SIM-{platform.node()}-{index}", host=platform.node(),
                                  sm_clock_max_MHz=1980.0)

    def identity(self) -> dict:
        return dict(gpu=self._ident.model_dump(), compute_capability="9.0")

    def compile(self, points: list[str]) -> dict:
        out = {}
        for p in points:
            c = point_config(PlannedPoint.model_validate_json(p))
            if c is not None:
                out[c.label()] = c.label().encode()
        return out

    def measure(self, point: str, cubin: bytes | None, warmup_ms: float = WARMUP_MS, rep_ms: float = REP_MS) -> str:
        p = PlannedPoint.model_validate_json(point)
        t = self.delay_s * self.slow
        if self.die_after is not None and self.count >= self.die_after:
            time.sleep(t / 2)
            os._exit(3)  # killed in the middle of a point
        time.sleep(t)
        self.count += 1
        h = int(hashlib.sha256(repr(p.key()).encode()).hexdigest()[:8], 16)
        gflops = 1000.0 + h % 40000
        ms = 2.0 * p.M * p.N * p.K / (gflops * 1e9) * 1e3
        m = Measurement(kernel=p.kernel, config=p.config, group=p.group, shape=p.shape, M=p.M, N=p.N, K=p.K, verified=True,
                        rel_frobenius_error=1e-7, verification="full", gflops_median=gflops, gpu=self._ident,
                        timing=Timing(times_ms=[ms] * 5, median_ms=ms, q10_ms=ms, q90_ms=ms, min_ms=ms, warmup_runs=1))
        if self.done_log:
            with open(self.done_log, "a") as f:
                f.write(repr(p.key()) + "\n")
        return m.model_dump_json()
