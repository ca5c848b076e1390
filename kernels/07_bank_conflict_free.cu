// Step 7: as step 6, but each thread's TMxTN tile is split into four (TM/2)x(TN/2) quadrants
// spread over the block tile, so a warp's float4 reads of B are contiguous. Seed 000 sec. 5, V2.
#ifndef THREAD_TILE
#define THREAD_TILE 1
#endif
#include "outer_f4.cuh"
