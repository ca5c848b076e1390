"""Launch prebuilt SGEMM cubins once each, for Nsight Compute (GPU only; cupy): binaries that today's kernel
sources no longer build, such as the ones a recorded run measured (build them from the sources of that
run's commit with the run's nvcc and flags, then bring the cubins here).

    ncu --metrics ... python3 benchmarks/ncu_cubin.py SIZE CUBIN:BM:BN:THREADS ...

Every cubin holds `sgemm(const float* A, const float* B, float* C, int M, int N, int K)` (the catalogue's
signature), row-major M x K times K x N, one block per BM x BN tile of C (blockIdx.x along N), THREADS
threads a block; M = N = K = SIZE. Prints `kernel CUBIN` before each launch and checks one element of C
against a float64 dot product afterwards."""
import sys
from pathlib import Path


def parse(spec: str) -> tuple[Path, int, int, int]:
    try:
        path, bm, bn, threads = spec.rsplit(":", 3)
        return Path(path), int(bm), int(bn), int(threads)
    except ValueError:
        sys.exit(f"expected CUBIN:BM:BN:THREADS, got {spec!r}")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        sys.exit(__doc__)
    import cupy as cp
    import numpy as np

    size = int(argv[0])
    rng = np.random.default_rng(0)
    a = cp.asarray(rng.standard_normal((size, size), dtype=np.float32))
    b = cp.asarray(rng.standard_normal((size, size), dtype=np.float32))
    for spec in argv[1:]:
        path, bm, bn, threads = parse(spec)
        if not path.exists():
            sys.exit(f"no cubin at {path}")
        if size % bm or size % bn:
            sys.exit(f"{path.name}: SIZE {size} is not a multiple of the tile {bm} x {bn}")
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
