"""perfmodel: predict, explain and measure the performance of CUDA SGEMM kernels.

    from perfmodel import load_device, KernelConfig, predict
    p = predict(load_device("rtx2070s"), KernelConfig.make("double_buffer", bm=128), 4096)
"""
from .catalogue import KernelConfig, kernel_ids  # noqa: F401
from .devices import DeviceSpec, load_device, shipped_devices  # noqa: F401
from .errors import UserError  # noqa: F401
from .facts import BuildFacts  # noqa: F401
from .model import Figures, Prediction, Problem, predict, predict_batch  # noqa: F401

__version__ = "0.1.0"
