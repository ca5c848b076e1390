"""Launch prebuilt SGEMM cubins once each, for Nsight Compute (GPU only; cupy): binaries that today's kernel
sources no longer build, such as the ones a recorded run measured (build them from the sources of that
run's commit with the run's nvcc and flags, then bring the cubins here).

    ncu --metrics ... python3 benchmarks/ncu_cubin.py SIZE CUBIN:BM:BN:THREADS ...

Every cubin holds `sgemm(const float* A, const float* B, float* C, int M, int N, int K)` (the catalogue's
signature), row-major M x K times K x N, one block per BM x BN tile of C (blockIdx.x along N), THREADS
threads a block; M = N = K = SIZE. Prints `kernel CUBIN` before each launch and checks one element of C
against a float64 dot product afterwards."""
import argparse
import sys
from pathlib import Path

import numpy as np


def parse_args(argv: list[str]) -> tuple[int, list[tuple[Path, int, int, int]]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("size", type=int, help="M = N = K")
    ap.add_argument("cubins", nargs="+", metavar="CUBIN:BM:BN:THREADS")
    a = ap.parse_args(argv)
    specs = []
    for spec in a.cubins:
        try:
            path, bm, bn, threads = spec.rsplit(":", 3)
            specs.append((Path(path), int(bm), int(bn), int(threads)))
        except ValueError:
            ap.error(f"expected CUBIN:BM:BN:THREADS, got {spec!r}")
        p, bm_, bn_, _ = specs[-1]
        if not p.is_file():
            ap.error(f"no cubin at {p}")
        if a.size <= 0 or a.size % bm_ or a.size % bn_:
            ap.error(f"{p.name}: SIZE {a.size} is not a positive multiple of the tile {bm_} x {bn_}")
    return a.size, specs


def main(argv: list[str]) -> int:
    size, specs = parse_args(argv)
    import cupy as cp  # GPU only

    rng = np.random.default_rng(0)
    a = cp.asarray(rng.standard_normal((size, size), dtype=np.float32))
    b = cp.asarray(rng.standard_normal((size, size), dtype=np.float32))
    for path, bm, bn, threads in specs:
        fn = cp.RawModule(path=str(path)).get_function("sgemm")
        c = cp.zeros((size, size), dtype=cp.float32)
        print(f"kernel {path.name}", flush=True)
        fn((size // bn, size // bm), (threads,), (a, b, c, np.int32(size), np.int32(size), np.int32(size)))
        cp.cuda.runtime.deviceSynchronize()
        i, j = size // 3, size // 5
        want = float(np.dot(cp.asnumpy(a[i]).astype(np.float64), cp.asnumpy(b[:, j]).astype(np.float64)))
        got = float(c[i, j])
        ok = abs(got - want) <= 1e-3 * (1.0 + abs(want))
        print(f"  C[{i},{j}] = {got:.5f}, float64 {want:.5f}: {'ok' if ok else 'WRONG'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
