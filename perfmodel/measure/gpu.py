"""pycuda backend: compile the ladder for the local GPU, run, verify, time; cuBLAS via ctypes.

Imported only by GPU commands. Without pycuda or a GPU it raises UserError naming the fix."""
from __future__ import annotations

import ctypes
import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..catalogue import KernelConfig, split_slices
from ..errors import UserError
from ..paths import data_dir
from ..progress import counter
from . import build, launch
from .records import Measurement, Timing
from .sass import facts_of_cubin, local_bytes_per_tile
from .timing import do_bench, summarize

REL_TOL = 1e-4  # FP32 lands far below; TF32 lands near 3e-4 (docs/measurement.md)
FULL_CHECK_FLOPS = 2 * 2048**3


def _import_pycuda():
    try:
        import pycuda.driver as drv
        from pycuda import compiler
    except ImportError:
        raise UserError("this command measures on a CUDA GPU through pycuda, which is not installed here; on a machine "
                        "with an NVIDIA GPU, its driver and the CUDA toolkit: pip install 'perfmodel[cuda]' "
                        "(pycuda builds against the toolkit)") from None
    try:
        drv.init()
        if drv.Device.count() == 0:
            raise UserError("no CUDA GPU found")
    except drv.Error as exc:
        raise UserError(f"no CUDA GPU found ({exc})") from None
    return drv, compiler


def require_gpu() -> None:
    """Raise UserError (one line) unless pycuda is installed and a CUDA GPU is present."""
    _import_pycuda()


class Gpu:
    """One CUDA context on device 0, compiled-module cache, buffers, cuBLAS handle."""

    def __init__(self):
        os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")
        self.drv, self.compiler = _import_pycuda()
        drv = self.drv
        self.dev = drv.Device(0)
        self.ctx = self.dev.make_context()
        import atexit

        atexit.register(self._close)
        a = drv.device_attribute
        self.name = self.dev.name()
        self.cc = "%d.%d" % self.dev.compute_capability()
        self.sm_count = self.dev.get_attribute(a.MULTIPROCESSOR_COUNT)
        self.l2_bytes = self.dev.get_attribute(a.L2_CACHE_SIZE)
        self.arch = f"sm_{self.cc.replace('.', '')}"
        self._modules: dict = {}
        self._flush = drv.mem_alloc(max(2 * self.l2_bytes, 256 << 20))
        self._flush_words = max(2 * self.l2_bytes, 256 << 20) // 4
        self._cublas = None
        self._workspace = None
        self._libcuda = ctypes.CDLL("libcuda.so.1")
        # how split_k's second kernel is launched (recorded with every run: RunEnvironment.reduction_launch)
        self.programmatic = launch.programmatic_supported(self.cc)

    def _close(self):
        try:
            self.ctx.pop()
        except Exception:
            pass

    # ---- compile ----------------------------------------------------------------------------
    def cubin(self, cfg: KernelConfig) -> bytes:
        src = build.source_path(cfg).read_text()
        opts = build.NVCC_FLAGS + build.defines(cfg)
        return self.compiler.compile(src, options=opts, arch=self.arch, include_dirs=[str(data_dir("kernels"))],
                                     no_extern_c=True)

    def function(self, cfg: KernelConfig, cubin: bytes | None = None, name: str = "sgemm"):
        """Kernel `name` of cfg's module (`sgemm`; split_k's module also holds `reduce_splits`)."""
        key = cfg.label()
        if key not in self._modules:
            cubin = cubin or self.cubin(cfg)
            mod = self.drv.module_from_buffer(cubin)
            self._modules[key] = (mod, mod.get_function("sgemm"), cubin)
        mod, fn, _ = self._modules[key]
        return fn if name == "sgemm" else mod.get_function(name)

    def driver_module(self, cfg: KernelConfig) -> launch.Module:
        """cfg's cubin (the one `function` loaded) loaded again through the driver API, for launches pycuda
        cannot make (launch.Module: programmatic dependent launch)."""
        self.function(cfg)
        mod, fn, cubin = self._modules[cfg.label()]
        if not isinstance(cubin, launch.Module):
            self._modules[cfg.label()] = (mod, fn, launch.Module(self._libcuda, cubin))
        return self._modules[cfg.label()][2]

    def workspace(self, nbytes: int):
        """A device buffer of at least nbytes, kept for later calls (split_k's partials)."""
        if self._workspace is None or self._workspace[0] < nbytes:
            self._workspace = None  # free the smaller one first
            self._workspace = (nbytes, self.drv.mem_alloc(max(nbytes, 4)))
        return self._workspace[1]

    def driver_blocks_per_sm(self, cfg: KernelConfig, cubin: bytes) -> int:
        """cuOccupancyMaxActiveBlocksPerMultiprocessor on the same cubin (module loaded via ctypes)."""
        return self.blocks_per_sm(cubin, "sgemm", cfg.threads)

    def blocks_per_sm(self, cubin: bytes, name: str, threads: int) -> int:
        """cuOccupancyMaxActiveBlocksPerMultiprocessor for kernel `name` of a cubin at `threads` per block."""
        cu = self._libcuda
        mod, fn, n = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
        buf = ctypes.create_string_buffer(cubin)
        assert cu.cuModuleLoadData(ctypes.byref(mod), buf) == 0
        assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()) == 0
        assert cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(n), fn, ctypes.c_int(threads), ctypes.c_size_t(0)) == 0
        cu.cuModuleUnload(mod)
        return n.value

    # ---- run --------------------------------------------------------------------------------
    def launcher(self, cfg: KernelConfig, fn, A, B, C, M, N, K):
        """What one timed run launches: the kernel; for split_k and coalesced_split_k the kernel over the grid's slices of K
        (catalogue.split_slices) into partials, then `reduce_splits` summing them into C in slice order; for
        split_k_fused (manifest `reduction = "fused"`) the kernel alone, whose last slice of each tile sums it.
        On sm_90 and newer `reduce_splits` is launched with programmatic stream serialization (measure.launch):
        its launch is set up while the kernel runs, and its first instruction waits for the kernel's grid."""
        block = (cfg.threads, 1, 1)
        if cfg.k_splits == 1:
            grid = (math.ceil(N / cfg.bn), math.ceil(M / cfg.bm), 1)
            args = (A, B, C, np.int32(M), np.int32(N), np.int32(K))
            return lambda: fn(*args, block=block, grid=grid)
        slices = int(split_slices(K, cfg.bk or 1, cfg.k_splits)[0])  # one k step a tile: the one-element kernels'
        work = self.workspace(4 * slices * M * N)
        grid = (math.ceil(N / cfg.bn), math.ceil(M / cfg.bm), slices)
        args = (A, B, work, np.int32(M), np.int32(N), np.int32(K))
        if cfg.spec.reduction == "fused":  # step 13: the last slice of each tile sums it; a zeroed counter a tile
            done = self.drv.mem_alloc(4 * grid[0] * grid[1])
            self.drv.memset_d32(done, 0, grid[0] * grid[1])
            fargs = args + (C, done)

            def run_fused():
                fn(*fargs, block=block, grid=grid)
            run_fused.keep = done  # the counters live as long as the launcher (each launch leaves them zeroed)
            return run_fused
        per_thread = 4 if (M * N) % 4 == 0 else 1
        rgrid = (math.ceil(M * N / per_thread / 256), 1, 1)
        if self.programmatic:  # sm_90 and newer: set up while the main kernel runs, waits for it in its code
            ptr = lambda x: ctypes.c_void_p(int(x))  # noqa: E731
            reduce = self.driver_module(cfg).launcher(
                "reduce_splits", rgrid, (256, 1, 1), (ptr(work), ptr(C), ctypes.c_longlong(M * N), ctypes.c_int(slices)),
                programmatic=True)
        else:
            rfn = self.function(cfg, name="reduce_splits")
            rargs = (work, C, np.int64(M * N), np.int32(slices))
            reduce = lambda: rfn(*rargs, block=(256, 1, 1), grid=rgrid)  # noqa: E731

        def run():
            fn(*args, block=block, grid=grid)
            reduce()
        return run

    def cublas_launcher(self, A, B, C, M, N, K):
        """Row-major C = A.B through column-major cuBLAS: C^T = B^T A^T (pure FP32 SGEMM)."""
        if self._cublas is None:
            lib = None
            for cand in ("libcublas.so", "/usr/local/cuda/lib64/libcublas.so", "libcublas.so.13", "libcublas.so.12"):
                try:
                    lib = ctypes.CDLL(cand)
                    break
                except OSError:
                    continue
            if lib is None:
                raise UserError("libcublas.so not found (needed for the cuBLAS baseline)")
            h = ctypes.c_void_p()
            assert lib.cublasCreate_v2(ctypes.byref(h)) == 0
            assert lib.cublasSetMathMode(h, 0) == 0  # CUBLAS_DEFAULT_MATH: no TF32
            self._cublas = (lib, h)
        lib, h = self._cublas
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        p = lambda x: ctypes.c_void_p(int(x))  # noqa: E731

        def run():
            st = lib.cublasSgemm_v2(h, 0, 0, N, M, K, ctypes.byref(one), p(B), N, p(A), K, ctypes.byref(zero), p(C), N)
            if st != 0:
                raise RuntimeError(f"cublasSgemm failed with status {st}")
        return run

    def flush(self):
        self.drv.memset_d32(self._flush, 0, self._flush_words)

    def event(self):
        return self.drv.Event()

    def sync(self):
        self.ctx.synchronize()


class Problem:
    """Fresh random normal A, B on the GPU (never zeros) and a C to poison with NaN."""

    def __init__(self, gpu: Gpu, M: int, N: int, K: int, seed: int = 0):
        rng = np.random.default_rng(seed + 7919 * M + 104729 * N + K)
        self.M, self.N, self.K = M, N, K
        self.a = rng.standard_normal((M, K), dtype=np.float32)
        self.b = rng.standard_normal((K, N), dtype=np.float32)
        drv = gpu.drv
        self.A, self.B, self.C = drv.to_device(self.a), drv.to_device(self.b), drv.mem_alloc(max(M * N * 4, 4))
        self.gpu = gpu
        self._ref = None

    def poison(self):
        self.gpu.drv.memset_d32(self.C, 0x7FC00000, self.M * self.N)  # quiet NaN

    def reference(self):
        """float64 reference: full C for small problems, else 64 sampled rows and 64 columns."""
        if self._ref is None:
            a, b = self.a.astype(np.float64), self.b.astype(np.float64)
            if 2 * self.M * self.N * self.K <= FULL_CHECK_FLOPS:
                self._ref = ("full", None, None, a @ b)
            else:
                rng = np.random.default_rng(1)
                rows = np.unique(np.concatenate([[0, self.M - 1], rng.choice(self.M, min(64, self.M), replace=False)]))
                cols = np.unique(np.concatenate([[0, self.N - 1], rng.choice(self.N, min(64, self.N), replace=False)]))
                self._ref = ("sampled rows/cols", rows, cols, (a[rows] @ b, a @ b[:, cols]))
        return self._ref

    def launch_verified(self, cfg: KernelConfig):
        """cfg's timed launch on this problem (Gpu.launcher), run once into a poisoned C and verified:
        (the launch, ok, how)."""
        run = self.gpu.launcher(cfg, self.gpu.function(cfg), self.A, self.B, self.C, self.M, self.N, self.K)
        self.poison()
        run()
        self.gpu.sync()
        ok, _, how = self.verify()
        return run, ok, how

    def verify(self) -> tuple[bool, float, str]:
        c = self.gpu.drv.from_device(self.C, (self.M, self.N), np.float32)
        if not np.isfinite(c).all():
            bad = int((~np.isfinite(c)).sum())
            return False, float("nan"), f"{bad} element(s) NaN/inf (unwritten or wrong)"
        kind, rows, cols, ref = self.reference()
        if kind == "full":
            err = float(np.linalg.norm(c - ref) / np.linalg.norm(ref))
        else:
            rr, cc = ref
            num = np.linalg.norm(c[rows].astype(np.float64) - rr) ** 2 + np.linalg.norm(c[:, cols].astype(np.float64) - cc) ** 2
            den = np.linalg.norm(rr) ** 2 + np.linalg.norm(cc) ** 2
            err = float(math.sqrt(num / den))
        ok = err < REL_TOL
        return ok, err, kind if ok else f"{kind}: relative Frobenius error {err:.2e} >= {REL_TOL:.0e}"


def compile_all(gpu: Gpu, cfgs: dict, progress: bool = True) -> dict:
    """{label: cubin or None} for {label: KernelConfig}, eight nvcc compiles at a time, with progress
    (unless not `progress`: a worker of a parallel run, whose coordinator reports); a failed compile is
    reported and left None (measuring that config reports it again)."""
    count = counter("compiled {j}/{n} kernels", stream=sys.stdout, enabled=progress)
    cubins = {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        futs = {lab: pool.submit(gpu.cubin, c) for lab, c in cfgs.items()}
        for i, (lab, f) in enumerate(futs.items(), 1):
            try:
                cubins[lab] = f.result()
            except Exception as exc:
                cubins[lab] = None
                print(f"\n  compile failed: {lab}: {str(exc)[:200]}", file=sys.stderr)
            count(i, len(futs))
    return cubins


def measure_compiled(gpu: Gpu, prob: Problem, cfg: KernelConfig | None, group: str, sampler, warm: float, rep: float,
                     cubins: dict) -> Measurement:
    """measure_point with the cubin compile_all built; a configuration that did not compile is a failed point."""
    cub = cubins.get(cfg.label()) if cfg else None
    if cfg is not None and cub is None:
        return Measurement(kernel=cfg.kernel, config=cfg.params(), group=group, M=prob.M, N=prob.N, K=prob.K,
                           verified=False, verification="error", error="compile failed")
    return measure_point(gpu, prob, cfg, group, sampler, warm, rep, cubin=cub)


def measure_point(gpu: Gpu, prob: Problem, cfg: KernelConfig | None, group: str, sampler=None,
                  warmup_ms: float = 25.0, rep_ms: float = 100.0, cubin: bytes | None = None) -> Measurement:
    """Compile (cfg) or take cuBLAS (cfg None), run once poisoned and verify, then time."""
    M, N, K = prob.M, prob.N, prob.K
    info = dict(kernel="cublas" if cfg is None else cfg.kernel, config={} if cfg is None else cfg.params(),
                group=group, M=M, N=N, K=K)
    try:
        if cfg is None:
            run = gpu.cublas_launcher(prob.A, prob.B, prob.C, M, N, K)
            extra = {}
        else:
            cubin = cubin or gpu.cubin(cfg)
            fn = gpu.function(cfg, cubin)
            run = gpu.launcher(cfg, fn, prob.A, prob.B, prob.C, M, N, K)
            extra = dict(registers=fn.num_regs, spill_bytes=int(fn.local_size_bytes), smem_bytes=int(fn.shared_size_bytes),
                         driver_blocks_per_sm=gpu.driver_blocks_per_sm(cfg, cubin))
            facts = facts_of_cubin(cubin) if cfg.buffers >= 2 or extra["spill_bytes"] else None
            if cfg.buffers >= 2:
                extra["prefetch_fraction"] = None if facts is None else facts["prefetch_fraction"]
            if extra["spill_bytes"]:
                extra["local_tile_bytes"] = local_bytes_per_tile(facts, cfg)
        prob.poison()
        run()
        gpu.sync()
        ok, err, how = prob.verify()
        if not ok:
            return Measurement(**info, **extra, verified=False, rel_frobenius_error=None if math.isnan(err) else err,
                               verification=how)
        times, warm, obs = do_bench(run, gpu.flush, gpu.event, gpu.sync, warmup_ms, rep_ms, sampler=sampler)
        t = Timing(times_ms=times, warmup_runs=warm, **summarize(times), **obs)
        return Measurement(**info, **extra, verified=True, rel_frobenius_error=err, verification=how, timing=t,
                           gflops_median=2.0 * M * N * K / (t.median_ms * 1e-3) * 1e-9)
    except UserError:
        raise
    except Exception as exc:  # a failed compile or launch is a failed point, not a crash
        return Measurement(**info, verified=False, verification="error", error=f"{type(exc).__name__}: {exc}"[:500])
