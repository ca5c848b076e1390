// Step 10: split-K. Step 8's kernel (quadrants, double buffering) over a slice of K: block z of
// gridDim.z = slices computes its k-tiles into a partial C (outer_f4.cuh, SPLIT_K), and a second
// kernel sums the slices' partials in slice order, so the same inputs give the same C on every run
// (no atomics). Where the output has fewer tiles than the SMs hold, the slices fill them.
#ifndef THREAD_TILE
#define THREAD_TILE 1
#endif
#ifndef DOUBLE_BUFFER
#define DOUBLE_BUFFER 1
#endif
#define SPLIT_K 1
#include "outer_f4.cuh"
#include "reduce_splits.cuh"
