// What a kernel launch costs, timed two ways on the same GPU (benchmarks/launch_back_to_back.sh builds and
// runs it; GPU only):
//  1. back to back: a tiny kernel (scale: A[i] = 0.25 B[i] over 4,096 doubles, 64 KB moved) launched 30,000
//     times with nothing between the launches, the host's wall time over the launches: the situation of a
//     published microbenchmark of this (latency.back_to_back_launch_us in devices/generations/*.toml);
//  2. as validate times a kernel: the L2 flushed (a 256 MB memset) before each repetition, one event pair
//     around the launch, 200 repetitions; the empty kernel (1 block of 256 threads), the scale kernel, and
//     two scale kernels between the same events (the second launch's share).
// Prints one JSON object.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { fprintf(stderr, "%s\n", cudaGetErrorString(err_)); return 1; } } while (0)

__global__ void scale(double* __restrict__ a, const double* __restrict__ b, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = 0.25 * b[i];
}
__global__ void empty() {}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
static double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[(size_t)(q * (v.size() - 1) + 0.5)];
}

int main() {
    const int n = 4096, launches = 30000, reps = 200;
    double *a, *b;
    char* flush;
    const size_t flush_bytes = 256u << 20;
    CHECK(cudaMalloc(&a, n * sizeof(double)));
    CHECK(cudaMalloc(&b, n * sizeof(double)));
    CHECK(cudaMalloc(&flush, flush_bytes));
    CHECK(cudaMemset(a, 0, n * sizeof(double)));
    CHECK(cudaMemset(b, 0, n * sizeof(double)));
    printf("{\"n_doubles\": %d, \"bytes_per_launch\": %d, \"launches\": %d, \"back_to_back_us\": {", n, 2 * 8 * n, launches);
    for (int block = 32; block <= 1024; block *= 2) {
        const int grid = n / block + 1;
        std::vector<double> per;
        for (int r = 0; r < 4; ++r) {  // the first round warms up and is dropped
            CHECK(cudaDeviceSynchronize());
            auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < launches; i += 2) {
                scale<<<grid, block>>>(a, b, n);
                scale<<<grid, block>>>(b, a, n);
            }
            CHECK(cudaDeviceSynchronize());
            auto t1 = std::chrono::steady_clock::now();
            if (r) per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / launches);
        }
        printf("%s\"%d\": %.4f", block == 32 ? "" : ", ", block, median(per));
    }
    printf("}");
    cudaEvent_t s, e;
    CHECK(cudaEventCreate(&s));
    CHECK(cudaEventCreate(&e));
    const char* names[3] = {"empty", "scale", "two_scale"};
    for (int k = 0; k < 3; ++k) {
        std::vector<double> t;
        for (int r = 0; r < reps + 10; ++r) {
            CHECK(cudaMemsetAsync(flush, r & 0xff, flush_bytes));
            CHECK(cudaEventRecord(s));
            if (k == 0) empty<<<1, 256>>>();
            else scale<<<n / 256 + 1, 256>>>(a, b, n);
            if (k == 2) scale<<<n / 256 + 1, 256>>>(b, a, n);
            CHECK(cudaEventRecord(e));
            CHECK(cudaEventSynchronize(e));
            float ms;
            CHECK(cudaEventElapsedTime(&ms, s, e));
            if (r >= 10) t.push_back(1e3 * ms);
        }
        printf(", \"%s_event_us\": {\"median\": %.4f, \"q10\": %.4f, \"q90\": %.4f}", names[k], median(t), quantile(t, 0.1),
               quantile(t, 0.9));
    }
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    printf(", \"gpu\": \"%s\"}\n", p.name);
    return 0;
}
