"""Kernel launches through the driver API's cuLaunchKernelEx (ctypes), for what pycuda's launch cannot ask for:
programmatic stream serialization (programmatic dependent launch, sm_90 and newer), with which a kernel launched
behind another on the same stream is set up while the one before it still runs, and waits for it in its own
code (`griddepcontrol.wait`: all blocks of the grid before it done and their stores visible).

The structures are cuda.h's CUlaunchAttribute (72 bytes: the id, padding, a 64-byte union) and CUlaunchConfig
(56 bytes); tests/test_launch.py checks their layout. Imported only where a GPU is used; nothing here loads a
library on import."""
from __future__ import annotations

import ctypes
from typing import Callable, Sequence

PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (cuda.h)
PROGRAMMATIC_FROM_CC = (9, 0)  # griddepcontrol (PTX ISA 7.8) and the launch attribute: sm_90 and newer


class Attr(ctypes.Structure):  # CUlaunchAttribute: id, padding, a 64-byte union (its first int is the value)
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int), ("rest", ctypes.c_char * 60)]


class Config(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("gx", ctypes.c_uint), ("gy", ctypes.c_uint), ("gz", ctypes.c_uint), ("bx", ctypes.c_uint),
                ("by", ctypes.c_uint), ("bz", ctypes.c_uint), ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(Attr)), ("nattrs", ctypes.c_uint)]


def programmatic_supported(compute_capability: str) -> bool:
    """Whether a device of this compute capability ("9.0") takes a programmatic dependent launch."""
    major, minor = (int(x) for x in compute_capability.split("."))
    return (major, minor) >= PROGRAMMATIC_FROM_CC


def check(rc: int, what: str) -> None:
    if rc != 0:
        raise RuntimeError(f"{what} failed with CUresult {rc}")


class Module:
    """A cubin loaded through the driver API (ctypes) in the current context; its kernels launched with
    cuLaunchKernelEx on the default stream."""

    def __init__(self, cu, cubin: bytes):
        self.cu, self.mod, self._buf = cu, ctypes.c_void_p(), ctypes.create_string_buffer(cubin)
        check(cu.cuModuleLoadData(ctypes.byref(self.mod), self._buf), "cuModuleLoadData")
        self.fns: dict = {}

    def fn(self, name: str):
        if name not in self.fns:
            f = ctypes.c_void_p()
            check(self.cu.cuModuleGetFunction(ctypes.byref(f), self.mod, name.encode()), f"cuModuleGetFunction({name})")
            self.fns[name] = f
        return self.fns[name]

    def launcher(self, name: str, grid: Sequence[int], block: Sequence[int], args: Sequence,
                 programmatic: bool = False) -> Callable[[], None]:
        """A callable that launches kernel `name`; args are ctypes values, kept alive with the callable.
        programmatic: with programmatic stream serialization (the kernel must wait for the grid before it)."""
        f = self.fn(name)
        vals = list(args)
        params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
        attr = Attr(id=PROGRAMMATIC_STREAM_SERIALIZATION, value=1)
        cfg = Config(*grid, *block, 0, None, ctypes.pointer(attr) if programmatic else None, 1 if programmatic else 0)
        cu = self.cu

        def launch():
            check(cu.cuLaunchKernelEx(ctypes.byref(cfg), f, params, None), f"cuLaunchKernelEx({name})")
        launch.keep = (vals, params, attr, cfg, self)
        return launch
