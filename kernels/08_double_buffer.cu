// Step 8: step 7 + double buffering: two shared-memory buffers; the next tile's global loads go
// to registers before the current tile's math and to the other buffer after it, one barrier per
// tile. Unlike seed 000's V3 there is a barrier after the prologue and any number of k-tiles works.
#ifndef THREAD_TILE
#define THREAD_TILE 1
#endif
#ifndef DOUBLE_BUFFER
#define DOUBLE_BUFFER 1
#endif
#include "outer_f4.cuh"
