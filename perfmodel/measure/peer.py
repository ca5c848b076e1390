"""The second peer of `perfmodel bench`: an autotuned Triton matmul kept in IEEE FP32 (tl.dot with
input_precision "ieee": FFMA on CUDA cores, no tensor cores, no TF32), timed exactly as every kernel is
(measure.timing.do_bench: L2 flushed before each repetition, one event pair around the launch) and
verified against the same float64 reference. Imported only by GPU commands; torch and triton load lazily."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .records import Measurement, Timing
from .timing import do_bench, summarize

NAME = "triton"
# the autotuner's candidates: (BM, BN, BK, warps, stages), the shapes Triton's matmul tutorial tunes over
CONFIGS = ((128, 256, 32, 8, 3), (256, 128, 32, 8, 3), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4),
           (128, 32, 32, 4, 4), (64, 64, 32, 4, 4), (32, 64, 32, 2, 5), (64, 32, 32, 2, 5))
_KERNEL = None


def available() -> Optional[str]:
    """None where torch with CUDA and triton are importable here, else why not."""
    try:
        import torch
        import triton  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed"
    return None if torch.cuda.is_available() else "torch sees no CUDA GPU"


def _kernel():
    """The autotuned Triton matmul (built once)."""
    global _KERNEL
    if _KERNEL is not None:
        return _KERNEL
    import triton
    import triton.language as tl

    @triton.autotune(configs=[triton.Config({"BM": m, "BN": n, "BK": k, "GROUP": 8}, num_warps=w, num_stages=s)
                              for m, n, k, w, s in CONFIGS], key=["M", "N", "K"])
    @triton.jit
    def matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               GROUP: tl.constexpr):
        pid = tl.program_id(0)
        grid_m, grid_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        width = GROUP * grid_n
        first = (pid // width) * GROUP
        rows = min(grid_m - first, GROUP)
        pm = first + (pid % width) % rows
        pn = (pid % width) // rows
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            ka = k0 + rk
            x = tl.load(a + rm[:, None] * sam + ka[None, :] * sak, mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
            y = tl.load(b + ka[:, None] * sbk + rn[None, :] * sbn, mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(x, y, acc, input_precision="ieee")
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    _KERNEL = matmul
    return matmul


class _Event:
    """A torch CUDA event with pycuda's record()/synchronize()/time_since() (measure.timing's interface)."""

    def __init__(self):
        import torch

        self.e = torch.cuda.Event(enable_timing=True)

    def record(self):
        self.e.record()

    def synchronize(self):
        self.e.synchronize()

    def time_since(self, start: "_Event") -> float:
        return start.e.elapsed_time(self.e)


def measure(gpu, prob, group: str, sampler=None, warmup_ms: float = 25.0, rep_ms: float = 100.0) -> Measurement:
    """Autotune (at this shape), run once and verify through the problem's reference, then time."""
    M, N, K = prob.M, prob.N, prob.K
    info = dict(kernel=NAME, config={}, group=group, M=M, N=N, K=K)
    gpu.ctx.pop()  # torch runs in the device's primary context; pycuda's (cuBLAS's handle lives there) comes back after
    try:
        return _measure(gpu, prob, info, sampler, warmup_ms, rep_ms)
    finally:
        gpu.ctx.push()


def _measure(gpu, prob, info: dict, sampler, warmup_ms: float, rep_ms: float) -> Measurement:
    import torch

    M, N, K = prob.M, prob.N, prob.K
    try:
        dev = torch.device("cuda")
        a, b = torch.from_numpy(prob.a).to(dev), torch.from_numpy(prob.b).to(dev)
        c = torch.full((M, N), float("nan"), dtype=torch.float32, device=dev)
        flush = torch.empty(max(2 * gpu.l2_bytes, 256 << 20) // 4, dtype=torch.int32, device=dev)
        mm = _kernel()

        def run():
            mm[lambda meta: (math.ceil(M / meta["BM"]) * math.ceil(N / meta["BN"]),)](
                a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))

        run()  # autotunes at this shape
        torch.cuda.synchronize()
        best = mm.best_config
        info["peer_config"] = {"bm": best.kwargs["BM"], "bn": best.kwargs["BN"], "bk": best.kwargs["BK"],
                          "warps": best.num_warps, "stages": best.num_stages}
        c.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        gpu.ctx.push()
        try:  # verified as every kernel is: C copied into the problem's buffer, checked against its reference
            gpu.drv.memcpy_htod(prob.C, np.ascontiguousarray(c.cpu().numpy()))
            ok, err, how = prob.verify()
        finally:
            gpu.ctx.pop()
        if not ok:
            return Measurement(**info, verified=False, rel_frobenius_error=None if math.isnan(err) else err, verification=how)
        times, warm, obs = do_bench(run, flush.zero_, _Event, torch.cuda.synchronize, warmup_ms, rep_ms, sampler=sampler)
        t = Timing(times_ms=times, warmup_runs=warm, **summarize(times), **obs)
        return Measurement(**info, verified=True, rel_frobenius_error=err, verification=how, timing=t,
                           gflops_median=2.0 * M * N * K / (t.median_ms * 1e-3) * 1e-9)
    except Exception as exc:  # a failed compile or launch is a failed point, not a crash
        return Measurement(**info, verified=False, verification="error", error=f"{type(exc).__name__}: {exc}"[:500])
