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

// Elements of a type that divides 16 bytes travel 16 bytes per thread and
// load (one 128-bit load of each operand, then the same element-wise code
// on every lane): one scalar load per element left the 8-bit kernels at a
// third of the memory bandwidth (806 GB/s against 2.2-2.8 TB/s for f32/f64
// on an H100, docs/gpu.md).  Used when both pointers are 16-byte aligned
// (cudaMalloc'd buffers and topoar's segments of them usually are); the
// elements past the last whole vector, and unaligned calls, run one element
// per thread.
template <typename T>
struct lanes {
    static constexpr unsigned value = (sizeof(T) < 16 && 16 % sizeof(T) == 0) ? 16 / sizeof(T) : 1;
};

template <int OP, int TYPE>
__device__ __forceinline__ void grid_stride(const void* in_, void* inout_, unsigned long long n)
{
    using E = topoar::reduce::elementwise<OP, TYPE>;
    using T = typename E::T;
    constexpr unsigned kLanes = lanes<T>::value;
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    const unsigned long long tid = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    unsigned long long first = 0;
    if constexpr (kLanes > 1) {
        const bool aligned =
            ((reinterpret_cast<unsigned long long>(in_) | reinterpret_cast<unsigned long long>(inout_)) & 15u) == 0;
        if (aligned) {
            const unsigned long long nv = n / kLanes;
            const uint4* __restrict__ vin = static_cast<const uint4*>(in_);
            uint4* __restrict__ vio = static_cast<uint4*>(inout_);
            for (unsigned long long i = tid; i < nv; i += stride) {
                uint4 a = vin[i];
                uint4 b = vio[i];
                T ta[kLanes], tb[kLanes];
                memcpy(ta, &a, sizeof(a));
                memcpy(tb, &b, sizeof(b));
#pragma unroll
                for (unsigned k = 0; k < kLanes; ++k) tb[k] = E::apply(ta[k], tb[k]);
                memcpy(&b, tb, sizeof(b));
                vio[i] = b;
            }
            first = nv * kLanes;
        }
    }
    const T* __restrict__ in = static_cast<const T*>(in_);
    T* __restrict__ inout = static_cast<T*>(inout_);
    for (unsigned long long i = first + tid; i < n; i += stride) inout[i] = E::apply(in[i], inout[i]);
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
