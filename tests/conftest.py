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


@pytest.fixture(scope="session")
def have_nvcc():
    return shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/bin/nvcc")
