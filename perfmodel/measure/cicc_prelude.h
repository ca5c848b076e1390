// What cicc needs before a kernel source when it is run without nvcc (measure/toolchain.py): the CUDA
// declarations nvcc's cuda_runtime.h brings, from CUDA's own headers in their runtime-compilation mode
// (__CUDACC_RTC__: no host C library headers). The kernels use qualifiers, vector types and their
// make_ functions, the built-in index variables, __syncthreads and the integer min of CUDA's device
// functions (split_k's slice length).
typedef unsigned long size_t;
#include "crt/host_defines.h"
#include "builtin_types.h"
#include "device_launch_parameters.h"
#include "vector_functions.h"
#include "vector_functions.hpp"
extern "C" __device__ __cudart_builtin__ void __syncthreads(void);
static __device__ __forceinline__ int min(int a, int b) { return a < b ? a : b; }
