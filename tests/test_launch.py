"""perfmodel.measure.launch: the driver API's launch structures as cuda.h lays them out, and which devices take a
programmatic dependent launch (CPU: nothing here loads libcuda)."""
import ctypes

import pytest

from perfmodel.measure import launch


def test_launch_structures_match_cuda_h():
    # CUlaunchAttribute: a 4-byte id, padding to 8, a 64-byte union; CUlaunchConfig: six dims, shared bytes,
    # the stream, the attributes and their count (cuda.h, CUDA 12 and 13)
    assert ctypes.sizeof(launch.Attr) == 72 and launch.Attr.value.offset == 8
    assert ctypes.sizeof(launch.Config) == 56
    assert (launch.Config.stream.offset, launch.Config.attrs.offset, launch.Config.nattrs.offset) == (32, 40, 48)


@pytest.mark.parametrize("cc, ok", [("6.1", False), ("7.5", False), ("8.0", False), ("8.9", False), ("9.0", True),
                                    ("10.0", True), ("12.0", True)])
def test_programmatic_launch_from_sm_90(cc, ok):
    assert launch.programmatic_supported(cc) is ok


def test_a_failed_driver_call_names_the_call_and_its_code():
    launch.check(0, "cuLaunchKernelEx")
    with pytest.raises(RuntimeError, match=r"cuLaunchKernelEx\(reduce_splits\) failed with CUresult 1"):
        launch.check(1, "cuLaunchKernelEx(reduce_splits)")


def test_runs_recorded_before_the_launch_was_replayed_with_the_usual_launch():
    # every run recorded so far launched split_k's second kernel the usual way; their replays pay the whole floor
    from pathlib import Path

    from perfmodel.analysis import load_run, run_facts
    from perfmodel.catalogue import KernelConfig

    run_dir = Path(__file__).resolve().parent.parent / "results" / "20261130-194847-h200-bench-all"
    run = load_run(run_dir)
    assert run.environment.reduction_launch is None
    m = next(m for m in run.measurements if m.kernel == "split_k")
    assert run_facts(run, run_dir).for_measurement(m, KernelConfig.make(m.kernel, **m.config)).reduction_launch == "stream"


def test_a_run_that_launched_it_programmatically_is_replayed_so():
    # the first bench run with the programmatic launch (H200): its split_k picks replay with the launch they ran
    # with, the generation's measured saving off the reduction's floor; the same build launched the usual way
    # pays the whole floor
    from dataclasses import replace
    from pathlib import Path

    from perfmodel.analysis import load_run, run_facts, run_figures
    from perfmodel.catalogue import KernelConfig
    from perfmodel.model.predict import predict

    run_dir = Path(__file__).resolve().parent.parent / "results" / "20261204-015443-h200-bench-all"
    run = load_run(run_dir)
    assert run.environment.reduction_launch == "programmatic"
    fig, facts = run_figures(run_dir), run_facts(run, run_dir)
    saving = fig.effective.latency.programmatic_launch_saving_us
    assert saving and saving > 0
    picks = [m for m in run.measurements if m.kernel == "split_k" and m.group == "top"]
    assert len(picks) >= 10
    for m in picks:
        cfg = KernelConfig.make(m.kernel, **m.config)
        build = facts.for_measurement(m, cfg)
        assert build.reduction_launch == "programmatic"
        p = predict(fig, cfg, m.M, m.N, m.K, build=build)
        usual = predict(fig, cfg, m.M, m.N, m.K, build=replace(build, reduction_launch="stream"))
        assert p.reduction_programmatic_saving_us == saving and usual.reduction_programmatic_saving_us == 0.0
        assert usual.reduction_fixed_us - p.reduction_fixed_us == pytest.approx(min(saving, usual.reduction_fixed_us))


def test_the_run_environment_names_the_launch():
    from pydantic import ValidationError

    from perfmodel.measure.records import Environment

    base = dict(gpu_name="NVIDIA H200", compute_capability="9.0", sm_count=132, l2_bytes=62914560, driver_version="580",
                cuda_driver_api="13.0", nvcc_version="13.0", pycuda_version="2026.1", nvcc_flags=["-O3"], device_file="h200",
                hostname="h", started_utc="2026-12-03T00:00:00+00:00")
    assert Environment(**base).reduction_launch is None
    assert Environment(**base, reduction_launch="programmatic").reduction_launch == "programmatic"
    with pytest.raises(ValidationError):
        Environment(**base, reduction_launch="graph")
