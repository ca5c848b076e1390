"""What compiler facts cost (a benchmark, not a test), with the local nvcc and without a toolkit
(PERFMODEL_IGNORE_LOCAL_TOOLKIT=1: NVIDIA's compiler wheels, NVRTC 12.9 for sm_50-sm_72). Needs CPU only;
the wheel rows need `pip install '.[sass]'`, the nvcc rows a local nvcc. Each figure: median, min and max
of REPEAT runs in new processes.
    python3 benchmarks/compiler_facts_speed.py [REPEAT]

- first predict: `perfmodel predict` with an empty cache (compile, read the ptxas report, disassemble);
- cached predict: the same command again (everything read back from the cache);
- sweep --sass 20: `perfmodel sweep --device h100-sxm --sass 20` from a cache that already holds the
  enumeration (a copy of one made by `--sass 0`), so the figure is the 20 builds and their simulation."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from perfmodel.measure import toolchain

REPEAT = int(sys.argv[1]) if len(sys.argv) > 1 else 5
PREDICTS = [("rtx2070s", ["--bm", "128"]), ("v100", [])]  # sm_75 (nvcc or wheels), sm_70 (NVRTC 12.9)


def run(args, cache, ignore):
    env = dict(os.environ, PERFMODEL_CACHE=cache)
    env.pop(toolchain.IGNORE_ENV, None)
    if ignore:
        env[toolchain.IGNORE_ENV] = "1"
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "perfmodel", *args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {r.stderr.strip()[-400:]}")
    return time.perf_counter() - t0, r.stdout


def stats(xs):
    xs = sorted(xs)
    return f"{statistics.median(xs):7.2f} s  ({xs[0]:.2f}-{xs[-1]:.2f}, n={len(xs)})"


def registers_line(out):
    return next((ln.strip() for ln in out.splitlines() if "registers/thread" in ln), "?")


modes = [("local nvcc", False)] if toolchain.find_nvcc() else []
modes.append(("no toolkit (wheels)", True))
rows = []
for label, ignore in modes:
    for dev, extra in PREDICTS:
        first, cached, line = [], [], ""
        for _ in range(REPEAT):
            with tempfile.TemporaryDirectory() as cache:
                t, out = run(["predict", "--device", dev, *extra], cache, ignore)
                first.append(t)
                line = registers_line(out)
                cached.append(run(["predict", "--device", dev, *extra], cache, ignore)[0])
        rows.append((label, f"first predict {dev}", stats(first), line))
        rows.append((label, f"cached predict {dev}", stats(cached), ""))
    with tempfile.TemporaryDirectory() as base:
        run(["sweep", "--device", "h100-sxm", "--sass", "0"], base, ignore)
        sweeps = []
        for _ in range(REPEAT):
            with tempfile.TemporaryDirectory() as tmp:
                cache = os.path.join(tmp, "c")
                shutil.copytree(base, cache)
                sweeps.append(run(["sweep", "--device", "h100-sxm", "--sass", "20"], cache, ignore)[0])
        rows.append((label, "sweep h100-sxm --sass 20", stats(sweeps), ""))
        print(f"[{label}] sweep --sass 20 done", file=sys.stderr, flush=True)

for label, what, s, line in rows:
    print(f"{label:20s} {what:28s} {s}  {line}")
