"""The measurement layer's logic that needs no GPU: plans, samples, detection, device files from
driver attributes, the do_bench loop (with fake events), and the summary statistics."""
from types import SimpleNamespace

import pytest

from perfmodel import KernelConfig, kernel_ids, load_device
from perfmodel.catalogue import ladder_on
from perfmodel.analysis import summary
from perfmodel.measure.detect import match_shipped, write_from_driver
from perfmodel.measure.timing import do_bench, summarize
from perfmodel.measure.validate import plan, sweep_sample


def test_full_plan_is_ladder_times_sizes_plus_baseline_plus_sample():
    dev = load_device("h100-sxm")
    pts = plan(dev, quick=False)
    assert len(pts) == 4 * (1 + len(ladder_on("9.0"))) + 104
    assert sum(1 for g, c, s in pts if g == "baseline") == 4
    assert {s for g, c, s in pts if g == "sweep"} == {4096}
    quick = plan(dev, quick=True)
    assert len(quick) == 1 + len(ladder_on("9.0")) and {s for _, _, s in quick} == {2048}


def test_sweep_sample_is_stratified_deterministic_and_seeded():
    dev = load_device("h100-sxm")
    a, b, c = sweep_sample(dev), sweep_sample(dev), sweep_sample(dev, seed=1)
    assert a == b and a != c and len(a) == len(c) == 104
    defaults = {KernelConfig.make(k) for k in kernel_ids()}
    assert not defaults & set(a)
    per_kernel = {k: sum(1 for x in a if x.kernel == k) for k in {x.kernel for x in a}}
    assert max(per_kernel.values()) - min(v for k, v in per_kernel.items() if k != "smem_tiled") <= 1


@pytest.mark.parametrize("name, cc, expect", [
    ("NVIDIA H100 80GB HBM3", "9.0", "h100-sxm"), ("NVIDIA H200", "9.0", "h200"), ("NVIDIA A100-SXM4-40GB", "8.0", "a100"),
    ("Tesla V100-SXM2-16GB", "7.0", "v100"), ("NVIDIA GeForce RTX 2070 SUPER", "7.5", "rtx2070s"),
    ("NVIDIA GeForce RTX 4090", "8.9", "rtx4090"), ("NVIDIA A100-PCIE-40GB", "8.0", "a100-pcie"),
    ("NVIDIA GeForce RTX 4060 Laptop GPU", "8.9", "rtx4060-laptop"), ("NVIDIA GeForce RTX 3070 Ti", "8.6", "rtx3070ti"),
    ("NVIDIA GeForce RTX 3090", "8.6", "rtx3090"), ("NVIDIA RTX A6000", "8.6", "a6000"), ("Tesla T4", "7.5", "t4"),
    ("NVIDIA GeForce RTX 2080 Ti", "7.5", "rtx2080ti"), ("NVIDIA GeForce RTX 3080", "8.6", None),
    ("NVIDIA L4", "8.9", "l4"), ("NVIDIA L40S", "8.9", None), ("NVIDIA A10", "8.6", "a10"), ("NVIDIA A10G", "8.6", None),
    ("NVIDIA RTX A1000", "8.6", None), ("NVIDIA GeForce RTX 3090 Ti", "8.6", None), ("NVIDIA T400", "7.5", None), ("NVIDIA H100 80GB HBM3", "8.0", None),
])
def test_match_shipped(name, cc, expect):
    assert match_shipped(name, cc) == expect


class FakeAttrs:
    def __getattr__(self, name):
        return name


def fake_gpu():
    values = dict(CLOCK_RATE=2520000, MULTIPROCESSOR_COUNT=128, MEMORY_CLOCK_RATE=10501000, GLOBAL_MEMORY_BUS_WIDTH=384,
                  L2_CACHE_SIZE=75497472, MAX_THREADS_PER_MULTIPROCESSOR=1536, MAX_REGISTERS_PER_MULTIPROCESSOR=65536,
                  MAX_REGISTERS_PER_BLOCK=65536, MAX_SHARED_MEMORY_PER_MULTIPROCESSOR=102400,
                  MAX_SHARED_MEMORY_PER_BLOCK_OPTIN=101376)
    drv = SimpleNamespace(device_attribute=FakeAttrs())
    dev = SimpleNamespace(get_attribute=lambda attr: values[attr])
    return SimpleNamespace(drv=drv, dev=dev, name="NVIDIA GeForce RTX 4090", cc="8.9")


def test_unknown_gpu_gets_a_valid_device_file_with_proxies_marked(tmp_path):
    path = write_from_driver(fake_gpu(), tmp_path / "rtx4090.toml")
    d = load_device(str(path))
    assert d.compute.sm_count == 128 and d.compute.sm_clock_boost_MHz == 2520
    # DRAM bandwidth from the driver: 2 x 10.501 GHz x 384 bit / 8 = 1008 GB/s
    assert d.memory.dram_bandwidth_GBps == pytest.approx(1008.1, rel=1e-3)
    assert d.limits.max_warps_per_sm == 48 and d.limits.smem_per_sm_bytes == 102400
    assert "latency.dram_latency_cycles" in d.proxy_fields and "compute.sm_count" not in d.proxy_fields
    assert "proxy" in d.source_of("latency.dram_latency_cycles")
    with pytest.raises(FileExistsError):
        write_from_driver(fake_gpu(), path)


class FakeEvent:
    clock = [0.0]

    def record(self):
        self.t = FakeEvent.clock[0]

    def synchronize(self):
        pass

    def time_since(self, other):
        return self.t - other.t


def test_do_bench_budgets_events_and_flush():
    calls = {"fn": 0, "flush": 0}

    def fn():  # each launch "takes" 2 ms
        calls["fn"] += 1
        FakeEvent.clock[0] += 2.0

    def flush():
        calls["flush"] += 1
        FakeEvent.clock[0] += 5.0  # outside the timed region: must not show up in the times

    times, warm, _ = do_bench(fn, flush, FakeEvent, lambda: None, warmup_ms=10, rep_ms=40)
    assert warm == 5 and len(times) == 20 and calls["flush"] == 20
    assert all(t == pytest.approx(2.0) for t in times)
    s = summarize(times)
    assert s["median_ms"] == s["min_ms"] == pytest.approx(2.0)


def test_summary_statistics_by_hand():
    rows = [dict(group="sweep", verified=True, error_pct=e, predicted_gflops=p, measured_gflops=m, kernel="k", config=str(i))
            for i, (e, p, m) in enumerate([(10.0, 110, 100), (-20.0, 160, 200), (5.0, 315, 300), (0.0, 50, 50)])]
    s = summary(rows)
    assert s["mape_pct"] == pytest.approx((10 + 20 + 5 + 0) / 4)
    # predicted order 315 > 160 > 110 > 50 equals measured order 300 > 200 > 100 > 50
    assert s["spearman_sweep"] == pytest.approx(1.0)
    # model's top-1 (315) is the measured best (300): no gap
    assert s["sweep_top1_gap_pct"] == pytest.approx(0.0)
