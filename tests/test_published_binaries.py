"""benchmarks/published_binaries.py: a source's kernel file compiled as the published points record it
(without its cuBLAS include, the template instance taken by address, host code cut by `lines`), the
entry found by its demangled name (needs nvcc; skipped without one)."""
import sys
from pathlib import Path

import pytest

from perfmodel.measure import toolchain
from perfmodel.published import SourceBinary

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import published_binaries as pb  # noqa: E402

needs_nvcc = pytest.mark.skipif(toolchain.find_nvcc() is None, reason="no local nvcc")

KERNEL = """#include <cublas_v2.h>
template <const int TM, const uint BS>
__global__ void tile(int n, const float *a, float *c) {
    float acc[TM] = {0.0f};
    for (int k = 0; k < n; ++k)
#pragma unroll
        for (int i = 0; i < TM; ++i) acc[i] += a[k * TM + i] * a[k + i];
#pragma unroll
    for (int i = 0; i < TM; ++i) c[threadIdx.x * TM + i] = acc[i];
}
__global__ void plain(float *c) { c[threadIdx.x] = 1.0f; }
void host_only() { cublasCreate(nullptr); }
"""


@needs_nvcc
def test_a_templated_kernel_is_compiled_and_found_by_its_demangled_name(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cuh").write_text(KERNEL)
    b = SourceBinary(file="src/k.cuh", lines=(1, 11), instance="tile<16, 32>", entry="tile<16, 32u>", arch="sm_80",
                     registers=1, spill_bytes=0, loop_ffma=0)
    got = pb.compile_entries(toolchain.find_nvcc(), tmp_path, b)
    assert set(got) == {"tile<16, 32u>", "plain"}
    regs, spills, loop = got["tile<16, 32u>"]
    assert 16 < regs <= 255 and spills == 0  # sixteen accumulators live across the loop
    assert loop > 0 and loop % 16 == 0  # the k loop's body: the unrolled 16 FFMAs, as many times as nvcc unrolls k
    assert got["plain"][0] < regs and got["plain"][2] == 0
    # without `lines` the host code's cuBLAS call is compiled too, and fails without cuBLAS's header
    with pytest.raises(SystemExit, match="nvcc failed"):
        pb.compile_entries(toolchain.find_nvcc(), tmp_path, b.model_copy(update={"lines": None}))


def test_the_script_needs_a_folder_of_clones(capsys):
    assert pb.main([]) == 2 and "REPOS_DIR" in capsys.readouterr().err


def test_every_launch_names_a_published_kernel():
    # benchmarks/published_kernels.py launches the points' own tiled and shared-memory kernels as their
    # runners do; each of its 18 launches is one (source, entry) of published/sgemm.toml, with the argument
    # names its kernels take
    import published_kernels as pk

    got = pk.points()
    assert len(got) == len(pk.LAUNCH) == 18
    assert {(p.source, p.binary.entry) for p, _ in got} == set(pk.LAUNCH)
    for order, block, grid in pk.LAUNCH.values():
        assert sorted(order.split()) == sorted("M N K alpha A B beta C".split())
        assert 32 <= block[0] * block[1] <= 1024 and {d for d, _ in grid} == {"M", "N"}


def test_entry_names_keep_namespaces_and_templates_and_drop_the_parameters():
    assert pb.entry_name("sgemm_naive(int, int, int, float, float const*, float const*, float, float*)") == "sgemm_naive"
    assert pb.entry_name("void sgemm_global_mem_coalesce<32u>(int, float*)") == "sgemm_global_mem_coalesce<32u>"
    assert pb.entry_name("(anonymous namespace)::matmul_naive_kernel(float const*, float const*, float*, int, int, int)") \
        == "(anonymous namespace)::matmul_naive_kernel"
    assert pb.entry_name("k(void (*)(int), int)") == "k"


@needs_nvcc
def test_a_kernel_in_an_anonymous_namespace_beside_a_header_that_declares_a_cublas_launcher(tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "include" / "k.cuh").write_text("#pragma once\n#include <cublas_v2.h>\n"
                                               "cublasStatus_t launch(cublasHandle_t h, const float *a);\n")
    (tmp_path / "src" / "k.cu").write_text('#include "k.cuh"\nnamespace {\n__global__ void scale(float *c, int n) {\n'
                                           "  for (int k = 0; k < n; ++k) c[threadIdx.x] = c[threadIdx.x] * 2.0f + 1.0f;\n}\n}\n"
                                           "void go(float *c) { scale<<<1, 32>>>(c, 8); }\n")
    b = SourceBinary(file="src/k.cu", includes=["include"], entry="(anonymous namespace)::scale", arch="sm_80",
                     registers=1, spill_bytes=0, loop_ffma=0)
    got = pb.compile_entries(toolchain.find_nvcc(), tmp_path, b)
    assert set(got) == {"(anonymous namespace)::scale"} and got["(anonymous namespace)::scale"][1] == 0
