// topoar's CUDA reduction kernels (cuda/libtopoar_cuda.so) against the host
// reduction: for every pair topoar_reduce_supported(op, type, 1) lists, on
// counts 0, 1, 7, 1000, 100003 and 3,000,017, from a start one element past
// the allocation (unaligned for types under 16 bytes: the one-element loop)
// and from a 16-byte aligned start (the 16-byte vector loop and its tail),
// the device result must equal topoar_reduce_host's bit for bit, and the
// guard elements on both sides must be untouched.  Unsupported
// pairs must give cudaErrorNotSupported.  The library is loaded with dlopen,
// as the component does.  Without a CUDA device the test is skipped (77);
// under the fake runtime (tests/fake_cuda) the kernels' host twins run.
//
//   test_cuda_reduce [--bench]   --bench: also time sum/f32 and sum/i8
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "topoar_cuda_reduce.h"
#include "topoar_reduce.h"

#ifndef TOPOAR_CUDA_LIB
#define TOPOAR_CUDA_LIB "libtopoar_cuda.so"
#endif

namespace {

int failures = 0;

#define CHECK_CUDA(call)                                                                            \
    do {                                                                                            \
        cudaError_t rc_ = (call);                                                                   \
        if (rc_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(rc_)); \
            std::exit(1);                                                                           \
        }                                                                                           \
    } while (0)

// Bytes that are valid data for every type: floats are small multiples of
// 1/4 (exact arithmetic), pairs get small values and indices, bool 0/1,
// integers any bits.  Padding is zero.
void fill(std::vector<unsigned char>& buf, int type, size_t n, std::mt19937& rng)
{
    const size_t sz = topoar_reduce_type_size(type);
    std::fill(buf.begin(), buf.end(), 0);
    for (size_t i = 0; i < n; ++i) {
        unsigned char* e = buf.data() + i * sz;
        const float q = static_cast<float>(static_cast<int>(rng() % 513) - 256) / 4;
        const int small = static_cast<int>(rng() % 3) - 1, idx = static_cast<int>(rng() % 9);
        switch (type) {
        case TOPOAR_REDTYPE_FLOAT32: *reinterpret_cast<float*>(e) = q; break;
        case TOPOAR_REDTYPE_FLOAT64: *reinterpret_cast<double*>(e) = q; break;
        case TOPOAR_REDTYPE_COMPLEX_FLOAT:
            reinterpret_cast<float*>(e)[0] = q;
            reinterpret_cast<float*>(e)[1] = static_cast<float>(rng() % 64) / 4;
            break;
        case TOPOAR_REDTYPE_COMPLEX_DOUBLE:
            reinterpret_cast<double*>(e)[0] = q;
            reinterpret_cast<double*>(e)[1] = static_cast<double>(rng() % 64) / 4;
            break;
        case TOPOAR_REDTYPE_BOOL: e[0] = rng() % 2; break;
        case TOPOAR_REDTYPE_FLOAT_INT: *reinterpret_cast<float*>(e) = small; std::memcpy(e + 4, &idx, 4); break;
        case TOPOAR_REDTYPE_DOUBLE_INT: *reinterpret_cast<double*>(e) = small; std::memcpy(e + 8, &idx, 4); break;
        case TOPOAR_REDTYPE_LONG_INT: *reinterpret_cast<long*>(e) = small; std::memcpy(e + 8, &idx, 4); break;
        case TOPOAR_REDTYPE_2INT: std::memcpy(e, &small, 4); std::memcpy(e + 4, &idx, 4); break;
        case TOPOAR_REDTYPE_SHORT_INT: *reinterpret_cast<short*>(e) = static_cast<short>(small); std::memcpy(e + 4, &idx, 4); break;
        default:
            for (size_t b = 0; b < sz; ++b) e[b] = static_cast<unsigned char>(rng() % 3 == 0 ? 0 : rng());
        }
    }
}

void check_pair(topoar_cuda_reduce_fn reduce, int op, int type, std::mt19937& rng)
{
    const size_t sz = topoar_reduce_type_size(type);
    size_t aligned_lead = 1;  // elements before an aligned start: lcm(sz, 16) / sz
    while ((aligned_lead * sz) % 16 != 0) ++aligned_lead;
    std::vector<size_t> leads{1};
    if (aligned_lead != 1) leads.push_back(aligned_lead);
    for (size_t lead : leads) {
        for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(100003), size_t(3000017)}) {
            const size_t elems = lead + count + 1, bytes = elems * sz, off = lead * sz;
            std::vector<unsigned char> in(bytes), io(bytes), want, got(bytes);
            fill(in, type, elems, rng);
            fill(io, type, elems, rng);
            want = io;
            topoar_reduce_host(op, type, in.data() + off, want.data() + off, count);
            void *d_in = nullptr, *d_io = nullptr;
            CHECK_CUDA(cudaMalloc(&d_in, bytes));
            CHECK_CUDA(cudaMalloc(&d_io, bytes));
            CHECK_CUDA(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice));
            CHECK_CUDA(cudaMemcpy(d_io, io.data(), bytes, cudaMemcpyHostToDevice));
            int rc = reduce(op, type, static_cast<char*>(d_in) + off, static_cast<char*>(d_io) + off, count, nullptr);
            if (rc != 0) {
                std::printf("FAIL %s/%s count %zu (start %zu bytes in): topoar_cuda_reduce returned %d\n",
                            topoar_reduce_op_name(op), topoar_reduce_type_name(type), count, off, rc);
                ++failures;
            }
            CHECK_CUDA(cudaDeviceSynchronize());
            CHECK_CUDA(cudaMemcpy(got.data(), d_io, bytes, cudaMemcpyDeviceToHost));
            CHECK_CUDA(cudaFree(d_in));
            CHECK_CUDA(cudaFree(d_io));
            if (std::memcmp(got.data(), want.data(), bytes) != 0) {
                size_t i = 0;
                while (got[i] == want[i]) ++i;
                std::printf("FAIL %s/%s count %zu (start %zu bytes in): differs from the host at byte %zu "
                            "(element %ld)\n",
                            topoar_reduce_op_name(op), topoar_reduce_type_name(type), count, off, i,
                            static_cast<long>(i / sz) - static_cast<long>(lead));
                ++failures;
            }
        }
    }
}

void bench(topoar_cuda_reduce_fn reduce, int op, int type)
{
    const size_t bytes = size_t(256) << 20, n = bytes / topoar_reduce_type_size(type);
    void *d_in, *d_io;
    CHECK_CUDA(cudaMalloc(&d_in, bytes));
    CHECK_CUDA(cudaMalloc(&d_io, bytes));
    CHECK_CUDA(cudaMemset(d_in, 0, bytes));
    CHECK_CUDA(cudaMemset(d_io, 0, bytes));
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    reduce(op, type, d_in, d_io, n, nullptr);
    const int reps = 20;
    CHECK_CUDA(cudaEventRecord(a));
    for (int r = 0; r < reps; ++r) reduce(op, type, d_in, d_io, n, nullptr);
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    // three streams of `bytes`: read in, read inout, write inout
    std::printf("bench %s/%s 256 MiB: %.3f ms, %.0f GB/s (3 x bytes moved)\n", topoar_reduce_op_name(op),
                topoar_reduce_type_name(type), ms / reps, 3.0 * bytes / (ms / reps * 1e-3) * 1e-9);
    cudaFree(d_in);
    cudaFree(d_io);
}

}  // namespace

int main(int argc, char** argv)
{
    int devices = 0;
    cudaError_t rc = cudaGetDeviceCount(&devices);
    if (rc != cudaSuccess || devices == 0) {
        std::printf("SKIP: no CUDA device (%s)\n", rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
        return 77;
    }
    const char* path = std::getenv("TOPOAR_CUDA_LIB") ? std::getenv("TOPOAR_CUDA_LIB") : TOPOAR_CUDA_LIB;
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        std::printf("FAIL: dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    auto reduce = reinterpret_cast<topoar_cuda_reduce_fn>(dlsym(lib, TOPOAR_CUDA_REDUCE_SYMBOL));
    if (reduce == nullptr) {
        std::printf("FAIL: no %s in %s\n", TOPOAR_CUDA_REDUCE_SYMBOL, path);
        return 1;
    }
    std::mt19937 rng(12345);
    int pairs = 0;
    for (int op = 0; op < TOPOAR_REDOP_COUNT; ++op) {
        for (int type = 0; type < TOPOAR_REDTYPE_COUNT; ++type) {
            if (topoar_reduce_supported(op, type, 1)) {
                check_pair(reduce, op, type, rng);
                ++pairs;
            } else if (reduce(op, type, nullptr, nullptr, 1, nullptr) != cudaErrorNotSupported) {
                std::printf("FAIL %s/%s: unsupported pair not rejected\n", topoar_reduce_op_name(op),
                            topoar_reduce_type_name(type));
                ++failures;
            }
        }
    }
    if (reduce(-1, 0, nullptr, nullptr, 1, nullptr) != cudaErrorNotSupported ||
        reduce(0, TOPOAR_REDTYPE_COUNT, nullptr, nullptr, 1, nullptr) != cudaErrorNotSupported) {
        std::printf("FAIL: out-of-range op/type not rejected\n");
        ++failures;
    }
    std::printf("%d device pairs checked against the host reduction: %d failures\n", pairs, failures);
    if (argc > 1 && std::strcmp(argv[1], "--bench") == 0) {
        bench(reduce, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT32);
        bench(reduce, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_INT8);
        bench(reduce, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_INT16);
        bench(reduce, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT64);
    }
    return failures ? 1 : 0;
}
