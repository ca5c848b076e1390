// tiled_2d (kernels/05_tiled_2d.cu) built for AB_MIN_BLOCKS resident blocks (default 2): its
// __launch_bounds__(NT) becomes __launch_bounds__(NT, AB_MIN_BLOCKS), so nvcc fits the registers to
// that many blocks an SM. For benchmarks/ab_kernel.py: the same loop at two occupancies.
#ifndef AB_MIN_BLOCKS
#define AB_MIN_BLOCKS 2
#endif
#undef __launch_bounds__
#define __launch_bounds__(...) __annotate__(launch_bounds(__VA_ARGS__, AB_MIN_BLOCKS))
#include "05_tiled_2d.cu"
