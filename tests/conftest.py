import os
import shutil

import pytest


def _have_gpu() -> bool:
    if os.environ.get("PERFMODEL_NO_GPU"):
        return False
    try:
        import pycuda.driver as drv  # noqa: F401

        drv.init()
        return drv.Device.count() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if any("gpu" in item.keywords for item in items) and not _have_gpu():
        skip = pytest.mark.skip(reason="no CUDA GPU with pycuda here")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker a core this process may use: the cores it is pinned to, fewer where a cgroup
    quota allows less, at most 4 (a worker held up to 5.2 GB in a run here)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    try:
        quota, period = open("/sys/fs/cgroup/cpu.max").read().split()
        if quota != "max":
            cores = min(cores, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return max(1, min(cores, 4))


@pytest.fixture(scope="session")
def have_nvcc():
    return shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/bin/nvcc")


@pytest.fixture(autouse=True)
def _rank_shapes_here(monkeypatch):
    """Shape runs rank their shapes in this process, one after the other, whatever the host's cores (tests
    replace shape_plan and SHAPE_SASS, which planning processes would not see); the test of the planning
    processes sets its own count."""
    monkeypatch.setenv("PERFMODEL_PLAN_JOBS", "1")
