// topoar's reduction kernels: one extern "C" grid-stride kernel per pair of
// TOPOAR_REDUCE_DEVICE_PAIRS (common/reduce/reduce_ops.hpp), running the
// same element-wise code as the host loops, and the launcher
// topoar_cuda_reduce() of topoar_cuda_reduce.h.
//
// Built without FMA contraction (--fmad=false in cuda/Makefile.am) so a
// complex product gives the host's bits.
#include <cuda_runtime.h>

#include <atomic>

#include "reduce_ops.hpp"
#include "topoar_cuda_reduce.h"

namespace {

constexpr unsigned kBlock = 256;     // threads per block
constexpr int kBlocksPerSm = 4;      // grid: at most this many blocks per SM
constexpr int kMaxDevices = 64;

template <int OP, int TYPE>
__device__ __forceinline__ void grid_stride(const void* in_, void* inout_, unsigned long long n)
{
    using E = topoar::reduce::elementwise<OP, TYPE>;
    using T = typename E::T;
    const T* __restrict__ in = static_cast<const T*>(in_);
    T* __restrict__ inout = static_cast<T*>(inout_);
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        inout[i] = E::apply(in[i], inout[i]);
}

}  // namespace

#define TOPOAR_KERNEL_(o, O, t, T)                                                                      \
    extern "C" __global__ void __launch_bounds__(kBlock)                                                \
        topoar_reduce_##o##_##t(const void* in, void* inout, unsigned long long n)                      \
    {                                                                                                   \
        grid_stride<O, T>(in, inout, n);                                                                \
    }
TOPOAR_REDUCE_DEVICE_PAIRS(TOPOAR_KERNEL_)
#undef TOPOAR_KERNEL_

namespace {

using kernel_fn = void (*)(const void*, void*, unsigned long long);

struct KernelTable {
    kernel_fn fn[TOPOAR_REDOP_COUNT][TOPOAR_REDTYPE_COUNT] = {};
    KernelTable()
    {
#define TOPOAR_ENTRY_(o, O, t, T) fn[O][T] = &topoar_reduce_##o##_##t;
        TOPOAR_REDUCE_DEVICE_PAIRS(TOPOAR_ENTRY_)
#undef TOPOAR_ENTRY_
    }
};

// Multiprocessor count per device, asked once (0: not asked yet).
std::atomic<int> g_sm_count[kMaxDevices];

cudaError_t sm_count(int* out)
{
    int dev = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc != cudaSuccess) return rc;
    if (dev >= 0 && dev < kMaxDevices) {
        int known = g_sm_count[dev].load(std::memory_order_relaxed);
        if (known > 0) {
            *out = known;
            return cudaSuccess;
        }
    }
    int n = 0;
    rc = cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    if (rc != cudaSuccess) return rc;
    if (n < 1) n = 1;
    if (dev >= 0 && dev < kMaxDevices) g_sm_count[dev].store(n, std::memory_order_relaxed);
    *out = n;
    return cudaSuccess;
}

}  // namespace

extern "C" int topoar_cuda_reduce(int op, int type, const void* in, void* inout, size_t count, void* stream)
{
    static const KernelTable table;
    if (op < 0 || op >= TOPOAR_REDOP_COUNT || type < 0 || type >= TOPOAR_REDTYPE_COUNT ||
        table.fn[op][type] == nullptr)
        return cudaErrorNotSupported;
    if (count == 0) return cudaSuccess;

    int sms = 0;
    cudaError_t rc = sm_count(&sms);
    if (rc != cudaSuccess) return rc;
    const unsigned long long n = count;
    const unsigned long long needed = (n + kBlock - 1) / kBlock;
    const unsigned long long cap = static_cast<unsigned long long>(sms) * kBlocksPerSm;
    const unsigned blocks = static_cast<unsigned>(needed < cap ? needed : cap);

    void* args[] = {&in, &inout, const_cast<unsigned long long*>(&n)};
    return cudaLaunchKernel(reinterpret_cast<const void*>(table.fn[op][type]), dim3(blocks), dim3(kBlock), args, 0,
                            static_cast<cudaStream_t>(stream));
}
