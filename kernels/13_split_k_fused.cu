// Step 13: split-K in one launch. Step 10's kernel over slices of K (quadrants, double buffering), whose
// partial tiles the last slice of each tile to finish sums in slice order (kernels/reduce_splits.cuh,
// sum_tile_if_last): the same sums as step 10's second kernel, so the same C bit for bit, without its
// launch. A per-tile counter of finished slices picks the last; the host zeroes the counters once and the
// last slice resets its tile's.
#ifndef THREAD_TILE
#define THREAD_TILE 1
#endif
#ifndef DOUBLE_BUFFER
#define DOUBLE_BUFFER 1
#endif
#define SPLIT_K 2
#include "outer_f4.cuh"
