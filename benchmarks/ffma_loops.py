"""The 8x8 outer product of calibrate's ffma_outer (benchmarks/ffma/loops.cu) with its 64-FFMA body
unrolled 1, 2, 4 or 8 times per backward branch, with and without the loop-carried update of x, with
y folded into immediates (as calibrate's) or in registers (`_reg`: three register operands): the
FFMA rate by resident warps per SM (4 = one warp per scheduler). What a lone warp loses per loop
iteration shows as a rate that grows with the unrolling at 4 warps.

`measure` also times calibrate's own FFMA-rate loops (perfmodel/measure/microbench.cu: independent
chains, the 8x8 and 16x8 outer products from registers and fed from shared memory) at every warp
count calibrate uses. Each loop is timed at 1 x and 16 x its iteration count: an event-timed launch
holds a few microseconds that are not the loop (docs/measurement.md, "The FFMA-rate launches' fixed
time"), which 16 x the iterations makes negligible, so the 16 x rate is the loop's own. The cubins
that ran are kept in the record, so that `simulate` replays the very binaries that were timed.

  python3 benchmarks/ffma_loops.py measure         # GPU: GFLOPS per loop and warps/SM at 1 x and 16 x the
                                                   # iterations, median of 5 interleaved rounds
  python3 benchmarks/ffma_loops.py simulate FILE   # CPU (nvdisasm; nvcc for records without cubins): the
                                                   # loops' SASS replayed by model.schedule with one issue
                                                   # cycle per FFMA, beside the measurement FILE wrote by
                                                   # `measure`; for calibrate's loops, measured / replayed
  python3 benchmarks/ffma_loops.py slack FILE      # CPU: measured / replayed with the register-bank term at
                                                   # bank slacks of 0-4 clocks and none, at 8-24 warps per SM
  python3 benchmarks/ffma_loops.py in-step FILE    # CPU: calibrate's loops against their replay with each
                                                   # scheduler's warps on their own and in step
  python3 benchmarks/ffma_loops.py blocks          # GPU: calibrate's shared-memory-fed loops at 4-16 warps per
                                                   # SM as blocks of 4 warps (calibrate's) and of 1 warp: the
                                                   # same binary with and without a barrier across schedulers
  python3 benchmarks/ffma_loops.py blocks-table FILE  # CPU: that record beside the loops' replay
  python3 benchmarks/ffma_loops.py ncu OUT         # GPU: Nsight Compute's counters and warp stall reasons of
                                                   # calibrate's loops at each warp count, one launch each
                                                   # (OUT/ffma_loops_ncu.csv and .json; `launch` is its child)
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from perfmodel.measure import build, sass

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "benchmarks" / "ffma" / "loops.cu"
MICROBENCH = ROOT / "perfmodel" / "measure" / "microbench.cu"  # calibrate's loops
LOOPS = ["outer_u1_dep", "outer_u2_dep", "outer_u4_dep", "outer_u8_dep", "outer_u1_free", "outer_u2_free", "outer_u4_free",
         "outer_u1_dep_reg", "outer_u2_dep_reg", "outer_u4_dep_reg", "outer_u1_free_reg", "outer_u2_free_reg", "outer_u4_free_reg"]
WARPS = [4, 8, 16, 24]
ROUNDS = 5
MULTIPLIERS = (1, 16)  # each loop's iterations x 1 and x 16
# calibrate's FFMA-rate loops (perfmodel/measure/calibrate.py, run_microbenchmarks): kernel -> (threads per
# block, blocks per SM, iterations at x 1, FLOP per thread and iteration, FFMAs per source iteration (the
# product's and x's updates), extra kernel arguments, shared-memory wavefronts per LDS (SPREAD_WAVEFRONTS of
# perfmodel/model/figures.py over the loop's LDS; 0: none))
CALIBRATE = {
    "ffma_independent": (256, (8,), 4000, 256, 128, (), 0.0),
    "ffma_outer": (128, (1, 2, 4, 6, 8), 2000, 128, 72, (), 0.0),
    "ffma_outer_16x8": (128, (1, 2), 1000, 256, 144, (), 0.0),
    "ffma_outer_smem": (128, (1, 2, 4, 6, 8), 250, 1024, 512, (), 12.0 / 4),
    "ffma_outer_smem_16x8": (128, (1, 2), 125, 2048, 1024, (), 16.0 / 6),
    **{f"ffma_outer_smem_sb{sb}": (128, (1, 2, 4, 8), 250, 1024, 512, (sb,), w / 4)
       for sb, w in ((1, 12.0), (2, 20.0), (4, 36.0))},
}


def _kernel(name: str) -> str:
    return "ffma_outer_smem_sb" if name.startswith("ffma_outer_smem_sb") else name


def _flop_per_pass(prog: dict, name: str) -> float:
    """FLOP per thread and pass of calibrate's loop `name` as the binary `prog` unrolled it."""
    _, _, _, flop, ffma_per_iter, _, _ = CALIBRATE[name]
    return prog["cls"].count("F") / ffma_per_iter * flop


def _median_and_spread(samples: dict) -> tuple[dict, dict]:
    """{key: [GFLOPS per round]} -> ({key: median}, {key: (max - min) / median in %}), keys as strings."""
    med = {str(k): float(np.median(v)) for k, v in samples.items() if v}
    return med, {str(k): float((max(v) - min(v)) / med[str(k)] * 100) for k, v in samples.items() if v}


def measure() -> int:
    import base64

    from perfmodel.measure.calibrate import event_timed, microbench_module
    from perfmodel.measure.gpu import Gpu

    gpu = Gpu()
    drv = gpu.drv
    cubin = gpu.compiler.compile(SRC.read_text(), options=["-O3"], arch=gpu.arch, no_extern_c=True)
    mod = drv.module_from_buffer(cubin)
    f = {n: mod.get_function(n) for n in LOOPS}
    mb_cubin, mb_mod = microbench_module(gpu)
    g = {n: mb_mod.get_function(_kernel(n)) for n in CALIBRATE}
    sms = gpu.sm_count
    out = drv.mem_alloc(64)

    def rate(fn, blocks, threads, iters, flop, extra=()):
        args = [np.int32(a) for a in extra]
        sec = event_timed(gpu, lambda: fn(out, np.int32(iters), *args, block=(threads, 1, 1), grid=(blocks, 1)), reps=1)
        return blocks * threads * iters * flop / sec * 1e-9

    res = {(x, "loops"): {n: {w: [] for w in WARPS} for n in LOOPS} for x in MULTIPLIERS}
    res.update({(x, "calibrate"): {n: {str(threads * b // 32): [] for b in counts} for n, (threads, counts, *_) in CALIBRATE.items()}
                for x in MULTIPLIERS})
    for r in range(ROUNDS):
        print(f"round {r + 1} of {ROUNDS}", file=sys.stderr, flush=True)
        for x in MULTIPLIERS:
            for n in LOOPS:
                for w in WARPS:
                    if w // 4 <= gpu.blocks_per_sm(cubin, n, 128):
                        res[(x, "loops")][n][w].append(rate(f[n], sms * (w // 4), 128, 4096 * x, 64 * 2))
            for n, (threads, counts, iters, flop, _, extra, _) in CALIBRATE.items():
                cap = gpu.blocks_per_sm(mb_cubin, _kernel(n), threads)
                for b in counts:
                    if b <= cap:
                        res[(x, "calibrate")][n][str(threads * b // 32)].append(rate(g[n], sms * b, threads, iters * x, flop, extra))

    def med(key):
        both = {n: _median_and_spread(ws) for n, ws in res[key].items()}
        return {n: b[0] for n, b in both.items()}, {n: b[1] for n, b in both.items()}

    doc = dict(gpu=gpu.name, sm_count=sms, rounds=ROUNDS, multipliers=list(MULTIPLIERS), loop_iterations=4096,
               calibrate_iterations={n: c[2] for n, c in CALIBRATE.items()})
    doc["gflops"], doc["spread_pct"] = med((16, "loops"))  # the loops' own rates (what `simulate` compares)
    doc["gflops_x1"], doc["spread_pct_x1"] = med((1, "loops"))
    doc["calibrate"], doc["calibrate_spread_pct"] = med((16, "calibrate"))
    doc["calibrate_x1"], doc["calibrate_spread_pct_x1"] = med((1, "calibrate"))
    doc["cubins"] = {"loops": base64.b64encode(cubin).decode(), "microbench": base64.b64encode(mb_cubin).decode()}
    print(json.dumps(doc, indent=1))
    return 0


def _split(listing: str) -> dict:
    out = {}
    for part in re.split(r"\n(?=\s*\.text\.)", listing):
        mm = re.match(r"\s*\.text\.(\w+):", part)
        if mm:
            out[mm.group(1)] = sass.loop_program(part)
    return out


def _programs(src: Path = SRC, cubin: bytes | None = None):
    """{loop: loop program} of the kernels in `src` (default benchmarks/ffma/loops.cu) built here for sm_90,
    or of `cubin` (a recorded build) where given."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "loops.cubin"
        if cubin is None:
            subprocess.run([build.find_nvcc(), "-cubin", "-O3", "-arch=sm_90", "-o", str(path), str(src)], check=True)
        else:
            path.write_bytes(cubin)
        listing = subprocess.run([sass.find_nvdisasm(), *sass.DISASM_ARGS, str(path)], capture_output=True, text=True,
                                 check=True).stdout
    return _split(listing)


def _recorded_programs(m: dict, which: str, src: Path):
    import base64

    raw = (m.get("cubins") or {}).get(which)
    return _programs(src, base64.b64decode(raw) if raw else None)


def slack(path: str) -> int:
    from perfmodel.devices import load_device
    from perfmodel.model import schedule

    m = json.loads(Path(path).read_text())
    dev = load_device("h100-sxm")
    progs = _recorded_programs(m, "loops", SRC)
    print("measured / replayed with the register-bank term, over the loops and 8-24 warps per SM (min-max, median)\n")
    print("| slack (clocks) | two-register loops | three-register loops (`_reg`) | calibrate's loop |")
    print("|---|---|---|---|")
    for sl in (0.0, 1.0, 2.0, 3.0, 4.0, 1e9):
        schedule.BANK_SLACK = sl
        ratio = {}
        for n, ws in m["gflops"].items():
            product = 64 * int(re.search(r"_u(\d+)_", n).group(1))
            for w, g in ws.items():
                if int(w) >= 8:
                    ratio[(n, w)] = g / _replayed_gflops(dev, progs[n], int(w), 128, product * 2, banks=2)
        cols = []
        for sel in (lambda n: "_reg" not in n, lambda n: "_reg" in n, lambda n: n == "outer_u2_dep"):
            v = [r for (n, _), r in ratio.items() if sel(n)]
            cols.append(f"{min(v):.3f}-{max(v):.3f} ({float(np.median(v)):.3f})" if v else "")
        print(f"| {'unbounded (the term never holds issue)' if sl > 1e6 else f'{sl:.0f}'} | " + " | ".join(cols) + " |")
    return 0


def _device(m: dict):
    from perfmodel.devices import load_device

    return load_device("h200" if "H200" in m.get("gpu", "") else "h100-sxm")


def _replayed_gflops(dev, prog: dict, warps_per_sm: int, threads: int, flop_per_body: float, lds_wavefronts: float = 0.0,
                     banks: int = 0, writeback: bool = True, in_step: bool = False) -> float:
    """GFLOPS of the whole GPU when every SM holds `warps_per_sm` warps running the loop `prog` (one pass of
    it does `flop_per_body` FLOP per thread), replayed by model.schedule at one issue cycle per FFMA;
    writeback: the register-bank term also charges the shared loads' register writes (schedule.LDS_WRITEBACK,
    off in the model); in_step: each scheduler's warps replayed in step (schedule.simulate's in_step)."""
    from perfmodel.model import schedule

    lat = dev.latency
    W = max(warps_per_sm // 4, 1)
    keep, schedule.LDS_WRITEBACK = schedule.LDS_WRITEBACK, writeback
    try:
        cyc = schedule.simulate(prog, W, max(threads // 32 // 4, 1), 1.0, lat.smem_latency_cycles, lat.l1_latency_cycles,
                                lat.fma_latency_cycles, lds_wavefronts or 1.0, 1.0, 4.0, banks=banks, in_step=in_step)
    finally:
        schedule.LDS_WRITEBACK = keep
    return 4 * W * 32 * flop_per_body / cyc * dev.compute.sm_count * dev.compute.sm_clock_boost_MHz * 1e-3


def simulate(path: str) -> int:
    m = json.loads(Path(path).read_text())
    loops = [n for n in LOOPS if n in m["gflops"]]
    dev = _device(m)
    banks = dev.compute.register_banks or 0
    peak = dev.peak_fp32_GFLOPS(dev.compute.sm_clock_boost_MHz)
    progs = _recorded_programs(m, "loops", SRC)
    x1 = m.get("gflops_x1")
    print(f"{m['gpu']}; % of the datasheet peak ({peak:,.0f} GFLOPS at {dev.compute.sm_clock_boost_MHz:.0f} MHz); "
          f"simulated: model.schedule with one issue cycle per FFMA and the control codes' stall counts; both count "
          f"the product's 64 FFMAs per pass, not the x updates"
          + ("; measured at 16 x 4,096 iterations, and at 4,096 (x 1) beside it" if x1 else "") + "\n")
    print("| loop | instructions (FFMA) | stall-count cycles | warps/SM | measured | spread | " + ("measured x 1 | " if x1 else "")
          + "simulated | with register banks |")
    print("|---|---|---|---|---|---|" + ("---|" if x1 else "") + "---|---|")
    for n in loops:
        prog = progs[n]
        nf = prog["cls"].count("F")
        product = 64 * int(re.search(r"_u(\d+)_", n).group(1))  # the product's FFMAs per pass, as measured
        for w, g in m["gflops"][n].items():
            gs = [_replayed_gflops(dev, prog, int(w), 128, product * 2, banks=b) for b in (0, banks)]
            short = f"{100 * x1[n][w] / peak:.1f} % | " if x1 else ""
            print(f"| {n} | {len(prog['cls'])} ({nf}) | {sum(prog['stall'])} | {w} | {100 * g / peak:.1f} % | "
                  f"{m['spread_pct'][n][w]:.1f} % | {short}{100 * gs[0] / peak:.1f} % | {100 * gs[1] / peak:.1f} % |")
    if "calibrate" in m:
        calibrate_table(m, dev, peak)
    return 0


def calibrate_rows(m: dict, dev=None) -> list:
    """calibrate's FFMA-rate loops in a `measure` record, each at each warp count: (kernel, warps per SM,
    measured GFLOPS at 16 x and at 1 x calibrate's iterations, replayed GFLOPS without the register-bank
    term, with its operand reads alone and with the shared loads' register writes too), the replay of the
    recorded cubin's loop at one issue cycle per FFMA."""
    dev = dev or _device(m)
    banks = dev.compute.register_banks or 0
    progs = _recorded_programs(m, "microbench", MICROBENCH)
    rows = []
    for n, (threads, _, _, _, _, _, lds_wf) in CALIBRATE.items():
        prog = progs[_kernel(n)]
        body = _flop_per_pass(prog, n)
        for w, g in m["calibrate"].get(n, {}).items():
            rep = [_replayed_gflops(dev, prog, int(w), threads, body, lds_wf, banks=b, writeback=wb)
                   for b, wb in ((0, False), (banks, False), (banks, True))]
            rows.append((n, int(w), g, m["calibrate_x1"][n][w], *rep))
    return rows


def calibrate_table(m: dict, dev, peak: float) -> None:
    rows = calibrate_rows(m, dev)
    print(f"\ncalibrate's FFMA-rate loops (perfmodel/measure/microbench.cu, the recorded cubin): % of the datasheet peak "
          f"measured at calibrate's iterations (x 1) and at 16 x them (the loop's own rate), replayed without the "
          f"register-bank term, with its operand reads alone and with the shared loads' register writes too (the model's "
          f"term); the last two columns are measured (x 16) / replayed with the reads alone and with the whole term\n")
    print("| loop | warps/SM | measured x 1 | measured x 16 | replayed | register-bank reads | reads and load writes | "
          "measured / reads | measured / whole term |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, w, g16, g1, r0, rr, r2 in rows:
        print(f"| {n} | {w} | {100 * g1 / peak:.1f} % | {100 * g16 / peak:.1f} % | {100 * r0 / peak:.1f} % | "
              f"{100 * rr / peak:.1f} % | {100 * r2 / peak:.1f} % | {g16 / rr:.3f} | {g16 / r2:.3f} |")
    for label, k in (("with the operand reads alone", 5), ("with the whole register-bank term", 6)):
        ratios = [r[2] / r[k] for r in rows]
        inside = sum(abs(x - 1) <= 0.05 for x in ratios)
        print(f"\n{label}: {inside} of {len(ratios)} loop and warp-count pairs replayed within 5 % of their measured rate "
              f"(measured / replayed {min(ratios):.3f}-{max(ratios):.3f}, median {float(np.median(ratios)):.3f})")


SMEM_FED = [n for n, c in CALIBRATE.items() if c[6]]  # calibrate's loops fed from shared memory
BLOCK_THREADS = (128, 32)


def blocks() -> int:
    """calibrate's shared-memory-fed loops at 16 x calibrate's iterations, the same warps per SM held as blocks
    of 128 threads (one warp per scheduler: each k-tile's barrier waits for the block's warps on the other
    three schedulers) and of 32 (a barrier of one warp): median GFLOPS of ROUNDS interleaved rounds."""
    import base64

    from perfmodel.measure.calibrate import event_timed, microbench_module
    from perfmodel.measure.gpu import Gpu

    gpu = Gpu()
    cubin, mod = microbench_module(gpu)
    out = gpu.drv.mem_alloc(64)
    res = {n: {str(t): {} for t in BLOCK_THREADS} for n in SMEM_FED}
    for r in range(ROUNDS):
        print(f"round {r + 1} of {ROUNDS}", file=sys.stderr, flush=True)
        for n in SMEM_FED:
            _, _, iters, flop, _, extra, _ = CALIBRATE[n]
            fn = mod.get_function(_kernel(n))
            for t in BLOCK_THREADS:
                cap = gpu.blocks_per_sm(cubin, _kernel(n), t)
                for w in (4, 8, 16):
                    b = w * 32 // t
                    if b > cap:
                        continue
                    args = [np.int32(a) for a in extra]
                    sec = event_timed(gpu, lambda: fn(out, np.int32(16 * iters), *args, block=(t, 1, 1),
                                                      grid=(gpu.sm_count * b, 1)), reps=1)
                    res[n][str(t)].setdefault(str(w), []).append(gpu.sm_count * b * t * 16 * iters * flop / sec * 1e-9)
    both = {n: {t: _median_and_spread(ws) for t, ws in ts.items()} for n, ts in res.items()}
    doc = dict(gpu=gpu.name, sm_count=gpu.sm_count, rounds=ROUNDS, multiplier=16,
               gflops={n: {t: b[0] for t, b in ts.items()} for n, ts in both.items()},
               spread_pct={n: {t: b[1] for t, b in ts.items()} for n, ts in both.items()},
               cubins={"microbench": base64.b64encode(cubin).decode()})
    print(json.dumps(doc, indent=1))
    return 0


def _calibrate_record(path: str):
    """A record of calibrate's loops: (the record, its device, the register banks, the datasheet peak in GFLOPS,
    the loop programs of its cubin)."""
    m = json.loads(Path(path).read_text())
    dev = _device(m)
    return (m, dev, dev.compute.register_banks or 0, dev.peak_fp32_GFLOPS(dev.compute.sm_clock_boost_MHz),
            _recorded_programs(m, "microbench", MICROBENCH))


def blocks_table(path: str) -> int:
    """CPU: a `blocks` record beside the replay of its cubin's loops (one warp of each block per scheduler in
    both, so the replay is the same for the two block sizes)."""
    m, dev, banks, peak, progs = _calibrate_record(path)
    print(f"{m['gpu']}: calibrate's shared-memory-fed loops at 16 x its iterations, % of the datasheet peak "
          f"({peak:,.0f} GFLOPS), as 4-warp blocks (a barrier across the four schedulers) and 1-warp blocks, "
          f"beside their replay with the register-bank term's operand reads alone and with the shared loads' "
          f"register writes too (the whole term)\n")
    print("| loop | warps/SM | 4-warp blocks | 1-warp blocks | replayed, reads | replayed, whole term | 4-warp / whole | "
          "1-warp / whole |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for n, ts in m["gflops"].items():
        threads, _, _, _, _, _, lds_wf = CALIBRATE[n]
        prog = progs[_kernel(n)]
        body = _flop_per_pass(prog, n)
        for w in sorted({int(w) for t in ts.values() for w in t}):
            reads, rep = (_replayed_gflops(dev, prog, w, threads, body, lds_wf, banks=banks, writeback=wb) for wb in (False, True))
            g4, g1 = ts.get("128", {}).get(str(w)), ts.get("32", {}).get(str(w))
            cell = (lambda g: f"{100 * g / peak:.1f} %" if g else "")
            ratio = (lambda g: f"{g / rep:.3f}" if g else "")
            print(f"| {n} | {w} | {cell(g4)} | {cell(g1)} | {100 * reads / peak:.1f} % | {100 * rep / peak:.1f} % | "
                  f"{ratio(g4)} | {ratio(g1)} |")
    return 0


def in_step_table(path: str) -> int:
    """calibrate's FFMA-rate loops of a `measure` record at 16 x its iterations against their replay with the
    register-bank term's operand reads, the scheduler's warps replayed on their own (the model) and in step."""
    m, dev, banks, peak, progs = _calibrate_record(path)
    print(f"{m['gpu']}: calibrate's FFMA-rate loops at 16 x its iterations, % of the datasheet peak ({peak:,.0f} GFLOPS), "
          f"beside their replay with the register-bank reads, each scheduler's warps on their own (the model) and in "
          f"step (schedule.simulate's in_step)\n")
    print("| loop | warps/SM | measured | replayed, own | replayed, in step | measured / own | measured / in step |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for n, (threads, _, _, _, _, _, lds_wf) in CALIBRATE.items():
        prog = progs[_kernel(n)]
        body = _flop_per_pass(prog, n)
        for w, g in m["calibrate"].get(n, {}).items():
            own, lock = (_replayed_gflops(dev, prog, int(w), threads, body, lds_wf, banks=banks, writeback=False,
                                          in_step=st) for st in (False, True))
            print(f"| {n} | {w} | {100 * g / peak:.1f} % | {100 * own / peak:.1f} % | {100 * lock / peak:.1f} % | "
                  f"{g / own:.3f} | {g / lock:.3f} |")
    return 0


def launch() -> int:
    """ncu's child: each of calibrate's FFMA-rate loops once at each warp count it is measured at (x 1)."""
    from perfmodel.measure.calibrate import microbench_module
    from perfmodel.measure.gpu import Gpu

    gpu = Gpu()
    drv = gpu.drv
    cubin, mod = microbench_module(gpu)
    out = drv.mem_alloc(64)
    for n, (threads, counts, iters, _, _, extra, _) in CALIBRATE.items():
        cap = gpu.blocks_per_sm(cubin, _kernel(n), threads)
        for b in counts:
            if b <= cap:
                print(f"kernel {n}@{threads * b // 32}", flush=True)
                mod.get_function(_kernel(n))(out, np.int32(iters), *[np.int32(a) for a in extra], block=(threads, 1, 1),
                                             grid=(gpu.sm_count * b, 1))
                gpu.sync()
    return 0


def ncu(out: str) -> int:
    import shutil

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from ncu_choices import METRICS, SCHEDULERS, known_metrics, top_stalls

    from perfmodel.measure.ncu import parse_ncu

    tool = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    metrics = METRICS + "," + ",".join(known_metrics(tool, SCHEDULERS))
    cmd = [tool, "--clock-control", "none", "--target-processes", "all", "-k", "regex:^ffma_", "--metrics", metrics,
           "--csv", "--page", "raw", sys.executable, __file__, "launch"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "ffma_loops_ncu.csv").write_text(r.stdout)
    if r.returncode != 0:
        print(r.stderr[-2000:])
        return 1
    summary = parse_ncu(r.stdout)
    (Path(out) / "ffma_loops_ncu.json").write_text(json.dumps(summary, indent=1))
    for name, v in summary.items():
        stalls = top_stalls(v, 7)
        print(f"{name}: issue {v.get('smsp__issue_active.avg.pct_of_peak_sustained_active', 0):.1f} %, fma pipe "
              f"{v.get('sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active', 0):.1f} %, lds wavefronts / lds "
              f"{v.get('l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum', 0) / max(v.get('smsp__inst_executed_op_shared_ld.sum', 0), 1):.2f}"
              "; stalls per issue " + " ".join(f"{k}={x:.2f}" for k, x in stalls))
    return 0


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "measure"
    sys.exit(measure() if mode == "measure" else launch() if mode == "launch" else ncu(sys.argv[2]) if mode == "ncu"
             else blocks() if mode == "blocks" else blocks_table(sys.argv[2]) if mode == "blocks-table"
             else slack(sys.argv[2]) if mode == "slack" else in_step_table(sys.argv[2]) if mode == "in-step"
             else simulate(sys.argv[2]))
