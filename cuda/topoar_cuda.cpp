// libtopoar_cuda.so: the CUDA runtime and NCCL behind topoar_cuda.h's table.
// Compiled with the CUDA headers, linked with the shared libcudart (and
// libnccl); dlopen()ed by the component.
#include "topoar_cuda.h"

#include <cuda_runtime_api.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdint>

#include <cstdio>
#include <cstring>

#include "topoar_cuda_reduce.h"
#include "topoar_reduce.h"

#ifdef TOPOAR_HAVE_NCCL
#include <nccl.h>
#endif

namespace {

thread_local char g_error[512];

// Records "what (file:line): CUDA error name: text" and returns nonzero.
int cuda_fail(cudaError_t e, const char* what, int line) {
    std::snprintf(g_error, sizeof g_error, "%s (cuda/topoar_cuda.cpp:%d): %s: %s", what, line, cudaGetErrorName(e),
                  cudaGetErrorString(e));
    (void)cudaGetLastError();  // not sticky for the caller
    return static_cast<int>(e) ? static_cast<int>(e) : -1;
}

#define CUDA_CALL(expr)                                                  \
    do {                                                                 \
        cudaError_t topoar_e_ = (expr);                                  \
        if (topoar_e_ != cudaSuccess) return cuda_fail(topoar_e_, #expr, __LINE__); \
    } while (0)

// The driver's pointer query, when the driver the runtime loaded has it:
// asked on every MPI_Allreduce with the GPU path on.  Measured on an H100
// (tests/gpu/mem_type_cost.c, docs/gpu.md): cudaPointerGetAttributes 140 ns
// on a host pointer; the driver's cuPointerGetAttribute 38 ns on device
// memory but 507 ns on a host pointer (its error path); the plural
// cuPointerGetAttributes with the one attribute answers host pointers
// without an error.  Values of cuda.h, which this file does not include
// (no link against libcuda).
using DriverPointerQuery = int (*)(unsigned n, int* attributes, void** data, unsigned long long ptr);
constexpr int kCuPointerAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr unsigned kCuMemoryTypeDevice = 2;       // CU_MEMORYTYPE_DEVICE (managed reports it too)
constexpr unsigned kCuMemoryTypeUnified = 4;      // CU_MEMORYTYPE_UNIFIED

// Whether this process uses CUDA at all: a context current on this thread or
// an active primary context (the runtime API's) on any device.  Without
// one no device memory can exist, so a CPU-only program on a GPU node pays
// no pointer query; once seen, it is remembered (contexts are not usually
// given up; a stale "yes" only costs the query).  Not visible: a context
// made with cuCtxCreate on another thread and never made current on the
// calling one (docs/gpu.md).
using CtxGetCurrent = int (*)(void** ctx);
using PrimaryCtxGetState = int (*)(int dev, unsigned* flags, int* active);
using DeviceGet = int (*)(int* dev, int ordinal);
struct ContextGate {
    CtxGetCurrent current = nullptr;
    PrimaryCtxGetState primary = nullptr;
    int devices[64];
    int ndev = 0;
    std::atomic<bool> in_use{false};
};

ContextGate& gate() {
    static ContextGate* g = [] {
        auto* x = new ContextGate;
        void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        int n = 0;
        DeviceGet get = h ? reinterpret_cast<DeviceGet>(dlsym(h, "cuDeviceGet")) : nullptr;
        if (h && get && cudaGetDeviceCount(&n) == cudaSuccess && n > 0 && n <= 64) {
            x->current = reinterpret_cast<CtxGetCurrent>(dlsym(h, "cuCtxGetCurrent"));
            x->primary = reinterpret_cast<PrimaryCtxGetState>(dlsym(h, "cuDevicePrimaryCtxGetState"));
            for (int i = 0; i < n; ++i)
                if (get(&x->devices[x->ndev], i) == 0) ++x->ndev;
        }
        (void)cudaGetLastError();
        if (!x->current || !x->primary || x->ndev != n) x->in_use = true;  // cannot tell: always ask
        return x;
    }();
    return *g;
}

// Host pointers recently classified, by exact address: what makes the
// question cheap for a program that passes the same buffers call after call
// (the target: < 1 % of an 8 B allreduce on host buffers, where two
// queries of 34-111 ns were 2-5 % on an H100, docs/gpu.md).
//
// Why a "host" answer may be kept: with unified virtual addressing every
// device and managed allocation lies in virtual address ranges the driver
// reserved for itself, so an address the C library handed out (malloc, the
// stack, mmap of the program's own) is never one of them, and stays host
// memory for as long as it stays mapped.  Memory that is host but known to
// CUDA is still host: cudaMallocHost/cudaHostAlloc (pinned), and
// cudaHostRegister'd memory, registered or unregistered later.  Device
// answers are never kept: device memory can be freed and its address range
// reused for anything.
//
// The one hazard: a host buffer whose pages are unmapped (free() of a large
// malloc block returns it with munmap) leaves its address free, and the
// driver may later place a new reservation there (a cudaMalloc that grows
// its pool, cuMemAddressReserve, cudaMallocManaged).  If a device buffer then
// starts at exactly that address while it is still cached (16 addresses,
// the most recent 2 per set), the call would be taken for a host call (the
// previous module would crash on it; tests/gpu/mem_type_cost shows it on
// the fake runtime, whose cudaMalloc maps memory where a freed host mapping
// was).  Everything topoar itself
// allocates on the device is removed from the cache (forget_range), and the
// cache is emptied when the process first gets a CUDA context; for other
// programs, coll_topoar_mem_type_cache 0 turns it off (docs/gpu.md).
//
// Lock-free and small: 8 sets of 2 slots (16 addresses), a set chosen by a
// hash of the address, so a lookup is two relaxed loads whether it hits or
// not (a linear scan of 16 cost device pointers, which are never cached,
// about 8 ns more per question on the fake runtime).  A new address goes to
// the set's first slot and pushes the old first to the second (a program's
// sbuf and rbuf may share a set).  Any thread may insert; a reader sees a
// slot's old or new value, both host addresses, or briefly misses an
// address being moved: a miss only costs the query.
constexpr int kHostCacheSets = 8, kHostCacheWays = 2;
constexpr int kHostCacheEntries = kHostCacheSets * kHostCacheWays;
struct HostCache {
    std::atomic<std::uintptr_t> slot[kHostCacheEntries];
    std::atomic<bool> enabled{true};
    HostCache() {
        for (auto& s : slot) s.store(0, std::memory_order_relaxed);
    }
};
HostCache g_host_cache;

std::atomic<std::uintptr_t>* host_cache_set(std::uintptr_t p) {
    const std::uint64_t h = static_cast<std::uint64_t>(p) * 0x9E3779B97F4A7C15ull;  // Fibonacci hashing
    return &g_host_cache.slot[(h >> 61) * kHostCacheWays];
}

bool cached_host(std::uintptr_t p) {
    const std::atomic<std::uintptr_t>* set = host_cache_set(p);
    return set[0].load(std::memory_order_relaxed) == p || set[1].load(std::memory_order_relaxed) == p;
}

void remember_host(std::uintptr_t p) {
    std::atomic<std::uintptr_t>* set = host_cache_set(p);
    const std::uintptr_t first = set[0].load(std::memory_order_relaxed);
    if (first == p) return;
    set[1].store(first, std::memory_order_relaxed);
    set[0].store(p, std::memory_order_relaxed);
}

// Drops every cached address in [p, p + bytes).
void forget_range(const void* p, std::size_t bytes) {
    const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(p), hi = lo + (bytes ? bytes : 1);
    for (auto& s : g_host_cache.slot) {
        std::uintptr_t v = s.load(std::memory_order_relaxed);
        if (v >= lo && v < hi) s.compare_exchange_strong(v, 0, std::memory_order_relaxed);
    }
}

void forget_all() {
    for (auto& s : g_host_cache.slot) s.store(0, std::memory_order_relaxed);
}

bool cuda_in_use() {
    ContextGate& g = gate();
    if (g.in_use.load(std::memory_order_relaxed)) return true;
    void* ctx = nullptr;
    bool used = g.current(&ctx) == 0 && ctx != nullptr;
    for (int i = 0; i < g.ndev && !used; ++i) {
        unsigned flags = 0;
        int active = 0;
        used = g.primary(g.devices[i], &flags, &active) == 0 && active;
    }
    if (used && !g.in_use.exchange(true, std::memory_order_relaxed)) {
        // Answers given without a context were never the driver's: start
        // over with the driver's own.
        forget_all();
    }
    return used;
}

DriverPointerQuery driver_query() {
    static DriverPointerQuery q = [] {
        void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        return h ? reinterpret_cast<DriverPointerQuery>(dlsym(h, "cuPointerGetAttributes")) : nullptr;
    }();
    return q;
}

int probe(char* why, size_t len) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        if (why && len)
            std::snprintf(why, len, "no usable CUDA device (cudaGetDeviceCount: %s)",
                          e != cudaSuccess ? cudaGetErrorName(e) : "0 devices");
        (void)cudaGetLastError();
        return 1;
    }
    (void)driver_query();  // resolved now, while single-threaded
    (void)gate();
    return 0;
}

const char* last_error() { return g_error; }

// The question itself; *sure: the answer may be cached (a classification,
// not an error taken for "host").
int classify(const void* ptr, bool* sure) {
    *sure = true;
    if (!cuda_in_use()) return TOPOAR_CUDA_MEM_HOST;  // no context: no device memory exists
    if (DriverPointerQuery q = driver_query()) {
        unsigned type = 0;
        int attr = kCuPointerAttributeMemoryType;
        void* data = &type;
        if (q(1, &attr, &data, reinterpret_cast<unsigned long long>(ptr)) != 0) {
            *sure = false;  // the driver keeps no error state; not a CUDA pointer, or a driver problem
            return TOPOAR_CUDA_MEM_HOST;
        }
        return (type == kCuMemoryTypeDevice || type == kCuMemoryTypeUnified) ? TOPOAR_CUDA_MEM_DEVICE
                                                                               : TOPOAR_CUDA_MEM_HOST;
    }
    cudaPointerAttributes a;
    std::memset(&a, 0, sizeof a);
    if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
        (void)cudaGetLastError();
        *sure = false;
        return TOPOAR_CUDA_MEM_HOST;
    }
    return (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) ? TOPOAR_CUDA_MEM_DEVICE
                                                                                : TOPOAR_CUDA_MEM_HOST;
}

int mem_type(const void* ptr) {
    if (ptr == nullptr) return TOPOAR_CUDA_MEM_HOST;
    const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(ptr);
    const bool cache = g_host_cache.enabled.load(std::memory_order_relaxed);
    if (cache && cached_host(p)) return TOPOAR_CUDA_MEM_HOST;
    bool sure = false;
    const int t = classify(ptr, &sure);
    if (cache && sure && t == TOPOAR_CUDA_MEM_HOST) remember_host(p);
    return t;
}

int mem_type_cache(int enable) {
    const bool was = g_host_cache.enabled.exchange(enable != 0, std::memory_order_relaxed);
    forget_all();
    return was ? 1 : 0;
}

int get_device(int* d) {
    CUDA_CALL(cudaGetDevice(d));
    return 0;
}

// A blocking stream: its work waits for earlier work on the legacy default
// stream, so a caller's cudaMemcpy(H2D) from pageable memory -- which may
// return before its DMA reached the device -- is complete before topoar
// reads the buffer (seen on an H100 with a non-blocking stream: zeros).
int stream_create(void** s) {
    cudaStream_t st = nullptr;
    CUDA_CALL(cudaStreamCreateWithFlags(&st, cudaStreamDefault));
    *s = st;
    return 0;
}

int stream_destroy(void* s) {
    CUDA_CALL(cudaStreamDestroy(static_cast<cudaStream_t>(s)));
    return 0;
}

int stream_sync(void* s) {
    CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
    return 0;
}

int default_stream_sync() {
    CUDA_CALL(cudaStreamSynchronize(nullptr));
    return 0;
}

int host_alloc(void** p, size_t bytes) {
    CUDA_CALL(cudaMallocHost(p, bytes ? bytes : 1));
    return 0;
}

int host_free(void* p) {
    CUDA_CALL(cudaFreeHost(p));
    return 0;
}

int dev_alloc(void** p, size_t bytes) {
    CUDA_CALL(cudaMalloc(p, bytes ? bytes : 1));
    forget_range(*p, bytes);  // the one hazard of the host cache, for topoar's own allocations
    return 0;
}

int dev_free(void* p) {
    CUDA_CALL(cudaFree(p));
    return 0;
}

int memcpy_async(void* dst, const void* src, size_t bytes, void* s) {
    if (bytes == 0) return 0;
    CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(s)));
    return 0;
}

int reduce_supported(int op, int type) { return topoar_reduce_supported(op, type, 1); }

int reduce(int op, int type, const void* in, void* inout, size_t count, void* s) {
    int rc = topoar_cuda_reduce(op, type, in, inout, count, s);
    if (rc != 0) return cuda_fail(static_cast<cudaError_t>(rc), "topoar_cuda_reduce", __LINE__);
    return 0;
}

#ifdef TOPOAR_HAVE_NCCL

int nccl_fail(ncclResult_t r, const char* what, int line) {
    const char* last = ncclGetLastError(nullptr);
    std::snprintf(g_error, sizeof g_error, "%s (cuda/topoar_cuda.cpp:%d): %s%s%s", what, line, ncclGetErrorString(r),
                  last && *last ? ": " : "", last ? last : "");
    return static_cast<int>(r) ? static_cast<int>(r) : -1;
}

#define NCCL_CALL(expr)                                                  \
    do {                                                                 \
        ncclResult_t topoar_r_ = (expr);                                 \
        if (topoar_r_ != ncclSuccess) return nccl_fail(topoar_r_, #expr, __LINE__); \
    } while (0)

static_assert(sizeof(ncclUniqueId) == 128, "NCCL unique id is not 128 bytes");

int nccl_unique_id(void* id) {
    ncclUniqueId u;
    NCCL_CALL(ncclGetUniqueId(&u));
    std::memcpy(id, &u, sizeof u);
    return 0;
}

int nccl_comm_init(void** comm, int nranks, const void* id, int rank) {
    ncclUniqueId u;
    std::memcpy(&u, id, sizeof u);
    ncclComm_t c = nullptr;
    NCCL_CALL(ncclCommInitRank(&c, nranks, u, rank));
    *comm = c;
    return 0;
}

int nccl_comm_destroy(void* comm) {
    NCCL_CALL(ncclCommDestroy(static_cast<ncclComm_t>(comm)));
    return 0;
}

int nccl_group_start() {
    NCCL_CALL(ncclGroupStart());
    return 0;
}

int nccl_group_end() {
    NCCL_CALL(ncclGroupEnd());
    return 0;
}

int nccl_send(const void* buf, size_t bytes, int peer, void* comm, void* s) {
    NCCL_CALL(ncclSend(buf, bytes, ncclUint8, peer, static_cast<ncclComm_t>(comm), static_cast<cudaStream_t>(s)));
    return 0;
}

int nccl_recv(void* buf, size_t bytes, int peer, void* comm, void* s) {
    NCCL_CALL(ncclRecv(buf, bytes, ncclUint8, peer, static_cast<ncclComm_t>(comm), static_cast<cudaStream_t>(s)));
    return 0;
}

// NCCL's own reduction: sum/prod/min/max on its numeric types.  Wrapping
// integer sums match MPI's; NCCL has no 16-bit integers, logical, bitwise,
// complex or MINLOC/MAXLOC: those run as topoar plans with its own kernels.
bool nccl_pair(int op, int type, ncclRedOp_t* o, ncclDataType_t* t) {
    switch (op) {
    case TOPOAR_REDOP_SUM: *o = ncclSum; break;
    case TOPOAR_REDOP_PROD: *o = ncclProd; break;
    case TOPOAR_REDOP_MIN: *o = ncclMin; break;
    case TOPOAR_REDOP_MAX: *o = ncclMax; break;
    default: return false;
    }
    switch (type) {
    case TOPOAR_REDTYPE_INT8: *t = ncclInt8; break;
    case TOPOAR_REDTYPE_UINT8: *t = ncclUint8; break;
    case TOPOAR_REDTYPE_INT32: *t = ncclInt32; break;
    case TOPOAR_REDTYPE_UINT32: *t = ncclUint32; break;
    case TOPOAR_REDTYPE_INT64: *t = ncclInt64; break;
    case TOPOAR_REDTYPE_UINT64: *t = ncclUint64; break;
    case TOPOAR_REDTYPE_FLOAT32: *t = ncclFloat32; break;
    case TOPOAR_REDTYPE_FLOAT64: *t = ncclFloat64; break;
    default: return false;
    }
    return true;
}

int nccl_allreduce_supported(int op, int type) {
    ncclRedOp_t o;
    ncclDataType_t t;
    return nccl_pair(op, type, &o, &t) ? 1 : 0;
}

int nccl_allreduce(const void* sbuf, void* rbuf, size_t count, int op, int type, void* comm, void* s) {
    ncclRedOp_t o;
    ncclDataType_t t;
    if (!nccl_pair(op, type, &o, &t)) {
        std::snprintf(g_error, sizeof g_error, "ncclAllReduce cannot reduce op %d on type %d", op, type);
        return -1;
    }
    NCCL_CALL(ncclAllReduce(sbuf, rbuf, count, t, o, static_cast<ncclComm_t>(comm), static_cast<cudaStream_t>(s)));
    return 0;
}

int nccl_comm_split(void* comm, int color, int key, void** out) {
    ncclComm_t c = nullptr;
    NCCL_CALL(ncclCommSplit(static_cast<ncclComm_t>(comm), color, key, &c, nullptr));
    *out = c;
    return 0;
}

// The pair for a collective, or an error naming it (the caller checked
// nccl_allreduce_supported; a pair that slips through is a bug).
int pair_or_fail(const char* what, int op, int type, ncclRedOp_t* o, ncclDataType_t* t) {
    if (nccl_pair(op, type, o, t)) return 0;
    std::snprintf(g_error, sizeof g_error, "%s cannot reduce op %d on type %d", what, op, type);
    return -1;
}

int nccl_reduce_scatter(const void* sbuf, void* rbuf, size_t recvcount, int op, int type, void* comm, void* s) {
    ncclRedOp_t o;
    ncclDataType_t t;
    if (pair_or_fail("ncclReduceScatter", op, type, &o, &t)) return -1;
    NCCL_CALL(ncclReduceScatter(sbuf, rbuf, recvcount, t, o, static_cast<ncclComm_t>(comm),
                                static_cast<cudaStream_t>(s)));
    return 0;
}

int nccl_reduce(const void* sbuf, void* rbuf, size_t count, int op, int type, int root, void* comm, void* s) {
    ncclRedOp_t o;
    ncclDataType_t t;
    if (pair_or_fail("ncclReduce", op, type, &o, &t)) return -1;
    NCCL_CALL(ncclReduce(sbuf, rbuf, count, t, o, root, static_cast<ncclComm_t>(comm), static_cast<cudaStream_t>(s)));
    return 0;
}

int nccl_all_gather(const void* sbuf, void* rbuf, size_t sendcount, int type, void* comm, void* s) {
    ncclRedOp_t o;
    ncclDataType_t t;
    if (pair_or_fail("ncclAllGather", TOPOAR_REDOP_SUM, type, &o, &t)) return -1;
    NCCL_CALL(ncclAllGather(sbuf, rbuf, sendcount, t, static_cast<ncclComm_t>(comm), static_cast<cudaStream_t>(s)));
    return 0;
}

int nccl_broadcast(const void* sbuf, void* rbuf, size_t count, int type, int root, void* comm, void* s) {
    ncclRedOp_t o;
    ncclDataType_t t;
    if (pair_or_fail("ncclBroadcast", TOPOAR_REDOP_SUM, type, &o, &t)) return -1;
    NCCL_CALL(ncclBroadcast(sbuf, rbuf, count, t, root, static_cast<ncclComm_t>(comm), static_cast<cudaStream_t>(s)));
    return 0;
}

#endif  // TOPOAR_HAVE_NCCL

topoar_cuda_api_t make_api() {
    topoar_cuda_api_t a;
    std::memset(&a, 0, sizeof a);
    a.abi = TOPOAR_CUDA_ABI;
    a.probe = probe;
    a.last_error = last_error;
    a.mem_type = mem_type;
    a.mem_type_cache = mem_type_cache;
    a.get_device = get_device;
    a.stream_create = stream_create;
    a.stream_destroy = stream_destroy;
    a.stream_sync = stream_sync;
    a.default_stream_sync = default_stream_sync;
    a.host_alloc = host_alloc;
    a.host_free = host_free;
    a.dev_alloc = dev_alloc;
    a.dev_free = dev_free;
    a.memcpy_async = memcpy_async;
    a.reduce_supported = reduce_supported;
    a.reduce = reduce;
#ifdef TOPOAR_HAVE_NCCL
    a.have_nccl = 1;
    a.nccl_version = NCCL_VERSION_CODE;
    a.nccl_unique_id = nccl_unique_id;
    a.nccl_comm_init = nccl_comm_init;
    a.nccl_comm_destroy = nccl_comm_destroy;
    a.nccl_group_start = nccl_group_start;
    a.nccl_group_end = nccl_group_end;
    a.nccl_send = nccl_send;
    a.nccl_recv = nccl_recv;
    a.nccl_allreduce_supported = nccl_allreduce_supported;
    a.nccl_allreduce = nccl_allreduce;
    a.nccl_comm_split = nccl_comm_split;
    a.nccl_reduce_scatter = nccl_reduce_scatter;
    a.nccl_reduce = nccl_reduce;
    a.nccl_all_gather = nccl_all_gather;
    a.nccl_broadcast = nccl_broadcast;
#endif
    return a;
}

const topoar_cuda_api_t g_api = make_api();

}  // namespace

extern "C" const topoar_cuda_api_t* topoar_cuda_get_api(int abi) { return abi == TOPOAR_CUDA_ABI ? &g_api : nullptr; }
