// Step 6: 2-D register tile + float4 global loads, A transposed in shared memory, float4
// shared-memory reads; each thread's tile contiguous. Seed 000 V1 is close (it has float4 but no
// transpose); seed 004's kernel is this step with DOUBLE_BUFFER 1.
#ifndef THREAD_TILE
#define THREAD_TILE 0
#endif
#include "outer_f4.cuh"
