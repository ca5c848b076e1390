"""Model speed (a benchmark, not a test): predictions per second over a large batch of configs, the
sweep end to end, and `perfmodel predict` cold start. Prints medians and spreads of repeated runs.
    python3 benchmarks/model_speed.py"""
import statistics
import subprocess
import sys
import time

from perfmodel import load_device, predict, KernelConfig
from perfmodel.model import Problem, predict_batch
from perfmodel.model.smem_banks import smem_counts
from perfmodel.catalogue import enumerate_configs


def stats(xs):
    xs = sorted(xs)
    return f"median {statistics.median(xs):.4g}, min {xs[0]:.4g}, max {xs[-1]:.4g} (n={len(xs)})"


dev = load_device("h100-sxm")
t = []
for _ in range(3):
    smem_counts.cache_clear()
    t0 = time.perf_counter()
    configs, why, total = enumerate_configs(dev)
    t.append(time.perf_counter() - t0)
print(f"enumerate {total} configurations ({len(configs)} valid): {stats(t)} s")

cold, warm = [], []
for _ in range(3):
    smem_counts.cache_clear()
    t0 = time.perf_counter()
    predict_batch(dev, configs, Problem(4096, 4096, 4096))
    cold.append(len(configs) / (time.perf_counter() - t0))
    t0 = time.perf_counter()
    predict_batch(dev, configs, Problem(4096, 4096, 4096))
    warm.append(len(configs) / (time.perf_counter() - t0))
print(f"predict_batch, {len(configs)} configs, cold structure cache: {stats(cold)} predictions/s")
print(f"predict_batch, {len(configs)} configs, warm structure cache: {stats(warm)} predictions/s")

big = configs * 20  # 100k-config batch (same structures, different sizes)
rates = []
for _ in range(3):
    t0 = time.perf_counter()
    predict_batch(dev, big, Problem(2048, 8192, 1024))
    rates.append(len(big) / (time.perf_counter() - t0))
print(f"predict_batch, {len(big)} configs: {stats(rates)} predictions/s")

single = []
cfg = KernelConfig.make("double_buffer")
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(200):
        predict(dev, cfg, 4096)
    single.append(200 / (time.perf_counter() - t0))
print(f"predict (typed Prediction, one at a time): {stats(single)} predictions/s")

starts = []
for _ in range(7):
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "perfmodel", "predict", "--device", "rtx2070s", "--bm", "128"], check=True,
                   capture_output=True)
    starts.append(time.perf_counter() - t0)
print(f"perfmodel predict cold start (new process): {stats(starts)} s")

import os
import tempfile

# sweep end to end in a new process: first run with an empty cache (enumeration + bank-conflict
# simulation of every valid config), then the runs after it (both read back from the disk cache)
def sweep_once(cache):
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "perfmodel", "sweep", "--device", "h100-sxm", "--top", "5"], check=True,
                   capture_output=True, env=dict(os.environ, PERFMODEL_CACHE=cache))
    return time.perf_counter() - t0


cold = []
for _ in range(3):
    with tempfile.TemporaryDirectory() as cache:
        cold.append(sweep_once(cache))
print(f"perfmodel sweep end to end, empty cache ({total} considered, {len(configs)} valid): {stats(cold)} s")
with tempfile.TemporaryDirectory() as cache:
    sweep_once(cache)
    warm = [sweep_once(cache) for _ in range(5)]
print(f"perfmodel sweep end to end, cache warm ({total} considered, {len(configs)} valid): {stats(warm)} s")
