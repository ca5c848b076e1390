"""Why the toolchain-free path for sm_75+ is nvcc's own cicc and ptxas, not NVRTC 13 (CPU; needs a local
nvcc 13.0 and `pip install 'nvidia-cuda-nvrtc==13.0.*'`). Compiles every default kernel for sm_75/80/90
with the local nvcc (the measurement path's flags) and with NVRTC 13.0 (the same defines, -std=c++17,
--ptxas-options=-v) and prints registers, stack frame and spill stores of each.
    python3 benchmarks/nvrtc_vs_nvcc.py"""
from perfmodel.catalogue import KernelConfig, kernel_ids
from perfmodel.measure import build, nvrtc, toolchain
from perfmodel.paths import data_dir

nvcc = toolchain.find_nvcc()
if nvcc is None or nvrtc.library(13) is None:
    raise SystemExit("needs a local nvcc and the nvidia-cuda-nvrtc==13.0.* wheel")
local = toolchain.Toolchain("nvcc", "local", (nvcc,))
headers = {p.name: p.read_text() for p in data_dir("kernels").glob("*.cuh")}
print(f"NVRTC {nvrtc.library(13).version} against {toolchain._nvcc_version(nvcc)} (nvcc): registers/stack/spill stores")
differ = 0
for kernel in kernel_ids():
    cfg = KernelConfig.make(kernel)
    for arch in (75, 80, 90):
        _, log_a = local.compile(build.source_path(cfg), cfg.label(), build.defines(cfg), arch, data_dir("kernels"))
        _, log_b = nvrtc.compile_cubin(13, build.source_path(cfg).read_text(), cfg.spec.source,
                                       ["-std=c++17", *build.defines(cfg), f"--gpu-architecture=sm_{arch}", "--ptxas-options=-v"], headers)
        a, b = (toolchain.resource_usage(x) for x in (log_a, log_b))
        fa, fb = (f"{u['registers']}/{u['stack_frame']}/{u['spill_stores']}" for u in (a, b))
        differ += fa != fb
        print(f"{cfg.label():62s} sm_{arch}  nvcc {fa:>9s}  NVRTC {fb:>9s}  {'same' if fa == fb else 'DIFFERENT'}")
print(f"{differ} of {3 * len(kernel_ids())} differ")
