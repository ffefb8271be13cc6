/*
 * mem_type_cost: what the GPU path's memory-type question costs per call,
 * with and without topoar's cache of host pointers, and whether it answers
 * right.
 *
 *   mem_type_cost [--quick] PATH/libtopoar_cuda.so
 *
 * Times topoar_cuda_api_t.mem_type (what every MPI_Allreduce asks, twice
 * unless MPI_IN_PLACE) on a host, a device, a managed and a pinned pointer,
 * each with the host cache on and off (mem_type_cache), and the runtime's
 * cudaPointerGetAttributes on a host pointer for comparison; nanoseconds per
 * call, best of 5 rounds of 1,000,000 calls (--quick: 100,000).
 *
 * Against tests/fake_cuda's runtime (found through its
 * fakecuda_pointer_queries counter) it also checks the cache, counting the
 * runtime's pointer queries (exit 1 on a failure):
 *   - a host pointer is queried once, then answered from the cache;
 *   - device and managed pointers are queried on every call (never cached);
 *   - pinned memory is host, cached like any host pointer;
 *   - with the cache off every call queries; turning it back on empties it;
 *   - a device allocation made by the library (dev_alloc) at an address
 *     the cache holds as host (a host mapping unmapped first, its address
 *     reused) is answered "device": the library forgets its own
 *     allocations.  The same reuse by an allocation the library does not
 *     make is the cache's documented hazard; it is shown, not failed.
 * On the fake, times measure the fake (a mutex and a map lookup per query),
 * not a driver: the cost on hardware is in docs/gpu.md.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "topoar_cuda.h"

static long iters = 1000000;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

typedef int (*attr_fn)(void *, const void *);
typedef int (*drv_one_fn)(void *, int, unsigned long long);
typedef int (*drv_many_fn)(unsigned, int *, void **, unsigned long long);
static drv_one_fn drv_one;
static drv_many_fn drv_many;
static int q_drv_one(const void *p)
{
    unsigned t = 0;
    return drv_one(&t, 2, (unsigned long long)p) ? 0 : (int)t;
}
static int q_drv_many(const void *p)
{
    unsigned t = 0;
    int a = 2;
    void *d = &t;
    return drv_many(1, &a, &d, (unsigned long long)p) ? -1 : (int)t;
}

static double best_ns(int (*q)(const void *), attr_fn raw, const void *p, int *answer)
{
    static char attrs[256];
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        int sink = 0;
        double t0 = now();
        for (long i = 0; i < iters; i++) sink += q ? q(p) : raw(attrs, p);
        double ns = (now() - t0) * 1e9 / (double)iters;
        if (ns < best) best = ns;
        if (answer) *answer = q ? q(p) : 0;
        (void)sink;
    }
    return best;
}

static const topoar_cuda_api_t *api;
static unsigned long long (*fake_queries)(void);
static int failures;

/* Cached and uncached time of one pointer; both answers must be `want`. */
static void timed(const char *what, const void *p, int want)
{
    int a_on = 0, a_off = 0;
    api->mem_type_cache(0);
    double off = best_ns(api->mem_type, NULL, p, &a_off);
    api->mem_type_cache(1);
    double on = best_ns(api->mem_type, NULL, p, &a_on);
    int ok = a_on == want && a_off == want;
    printf("mem_type ns/call, %s: cache on %.1f, off %.1f (%s)\n", what, on, off,
           ok ? (want == TOPOAR_CUDA_MEM_HOST ? "host" : "device") : "WRONG");
    failures += !ok;
}

/* Calls mem_type `calls` times on p: every answer must be `want`, and the
 * runtime must have been queried exactly `queries` times. */
static void expect(const char *what, const void *p, int calls, int want, unsigned long long queries)
{
    unsigned long long q0 = fake_queries();
    int wrong = 0;
    for (int i = 0; i < calls; i++) wrong += api->mem_type(p) != want;
    unsigned long long q = fake_queries() - q0;
    int ok = !wrong && q == queries;
    printf("%s: %s: %d calls, %llu pointer queries (expected %llu), answers %s\n", ok ? "PASS" : "FAIL", what, calls,
           q, queries, wrong ? "WRONG" : "right");
    failures += !ok;
}

static void check_cache(void *host, void *dev, void *man, void *pin)
{
    api->mem_type_cache(1); /* empty */
    expect("host pointer: queried once, then from the cache", host, 5, TOPOAR_CUDA_MEM_HOST, 1);
    expect("device pointer: queried on every call", dev, 5, TOPOAR_CUDA_MEM_DEVICE, 5);
    expect("managed pointer: queried on every call", man, 5, TOPOAR_CUDA_MEM_DEVICE, 5);
    expect("pinned pointer: host, cached", pin, 5, TOPOAR_CUDA_MEM_HOST, 1);
    expect("host pointer again: still cached", host, 3, TOPOAR_CUDA_MEM_HOST, 0);
    /* more host pointers than the cache holds (16): the first pass queries
     * each, the second at least 16 again; the answers stay right */
    {
        char *many = malloc(64 * 32);
        unsigned long long q[2];
        int wrong = 0;
        for (int round = 0; round < 2; round++) {
            unsigned long long q0 = fake_queries();
            for (int i = 0; i < 32; i++) wrong += api->mem_type(many + 64 * i) != TOPOAR_CUDA_MEM_HOST;
            q[round] = fake_queries() - q0;
        }
        int ok = !wrong && q[0] == 32 && q[1] >= 16 && q[1] <= 32;
        printf("%s: 32 host pointers, twice (more than the cache holds): %llu then %llu queries (expected 32, then "
               "16..32)%s\n", ok ? "PASS" : "FAIL", q[0], q[1], wrong ? ", WRONG answers" : "");
        failures += !ok;
        free(many);
    }
    api->mem_type_cache(0);
    expect("cache off: every call queries", host, 4, TOPOAR_CUDA_MEM_HOST, 4);
    api->mem_type_cache(1);
    expect("cache on again: emptied, queried once", host, 4, TOPOAR_CUDA_MEM_HOST, 1);

    /* Address reuse.  A host mapping is cached, unmapped, and the library
     * allocates device memory of the same size: the fake's cudaMalloc maps
     * it, and the kernel usually hands out the address just freed. */
    {
        const size_t len = 1 << 20;
        void *h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        void *d = NULL;
        (void)api->mem_type(h); /* cached as host */
        munmap(h, len);
        if (0 != api->dev_alloc(&d, len)) {
            printf("FAIL: dev_alloc\n");
            failures++;
        } else if (d != h) {
            printf("SKIP: address reuse: the device allocation did not land on the freed host address\n");
        } else {
            expect("device allocation of the library at a cached host address: forgotten, device", d, 2,
                   TOPOAR_CUDA_MEM_DEVICE, 2);
        }
        if (d) api->dev_free(d);
        /* the hazard: an allocation the library does not see */
        void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
        int (*cmalloc)(void **, size_t) = rt ? (int (*)(void **, size_t))dlsym(rt, "cudaMalloc") : NULL;
        int (*cfree)(void *) = rt ? (int (*)(void *))dlsym(rt, "cudaFree") : NULL;
        h = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        (void)api->mem_type(h);
        munmap(h, len);
        d = NULL;
        if (cmalloc && cfree && 0 == cmalloc(&d, len)) {
            if (d == h)
                printf("hazard (documented, not a failure): a cudaMalloc of the program at a host address the cache "
                       "still held is answered %s\n",
                       api->mem_type(d) == TOPOAR_CUDA_MEM_HOST ? "host (stale)" : "device");
            cfree(d);
        }
        api->mem_type_cache(1);
    }
}

int main(int argc, char **argv)
{
    char why[256] = "";
    int a = 1;
    if (a < argc && 0 == strcmp(argv[a], "--quick")) {
        iters = 100000;
        a++;
    }
    if (a >= argc) { fprintf(stderr, "usage: %s [--quick] libtopoar_cuda.so\n", argv[0]); return 2; }
    void *h = dlopen(argv[a], RTLD_NOW);
    const topoar_cuda_api_t *(*get)(int) = h ? (const topoar_cuda_api_t *(*)(int))dlsym(h, "topoar_cuda_get_api") : NULL;
    api = get ? get(TOPOAR_CUDA_ABI) : NULL;
    if (!api || api->probe(why, sizeof why)) {
        const char *e = h ? "" : dlerror();
        fprintf(stderr, "no GPU path: %s%s\n", e ? e : "", why);
        return 77;
    }
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    fake_queries = rt ? (unsigned long long (*)(void))dlsym(rt, "fakecuda_pointer_queries") : NULL;
    if (fake_queries)
        printf("runtime: tests/fake_cuda's fake (times measure the fake, not a driver)\n");
    /* before this process has any CUDA context: a CPU-only program */
    char *early = malloc(64);
    timed("host pointer before any CUDA context", early, TOPOAR_CUDA_MEM_HOST);
    attr_fn attrs = (attr_fn)dlsym(rt, "cudaPointerGetAttributes");
    int (*managed)(void **, size_t, unsigned) = (int (*)(void **, size_t, unsigned))dlsym(rt, "cudaMallocManaged");
    void *dev = NULL, *man = NULL, *pin = NULL;
    char *host = malloc(4096);
    if (api->dev_alloc(&dev, 4096) || managed(&man, 4096, 1) || api->host_alloc(&pin, 4096)) {
        fprintf(stderr, "allocation failed\n");
        return 1;
    }
    timed("host pointer with a context", host, TOPOAR_CUDA_MEM_HOST);
    timed("device pointer", dev, TOPOAR_CUDA_MEM_DEVICE);
    timed("managed pointer", man, TOPOAR_CUDA_MEM_DEVICE);
    timed("pinned pointer", pin, TOPOAR_CUDA_MEM_HOST);
    printf("cudaPointerGetAttributes(host) ns/call: %.1f\n", best_ns(NULL, attrs, host, NULL));
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    drv_one = cu ? (drv_one_fn)dlsym(cu, "cuPointerGetAttribute") : NULL;
    drv_many = cu ? (drv_many_fn)dlsym(cu, "cuPointerGetAttributes") : NULL;
    if (drv_one && drv_many) {
        int t1, t2, t3;
        double one_h = best_ns(q_drv_one, NULL, host, NULL), one_d = best_ns(q_drv_one, NULL, dev, NULL);
        double many_h = best_ns(q_drv_many, NULL, host, &t1), many_d = best_ns(q_drv_many, NULL, dev, &t2);
        (void)best_ns(q_drv_many, NULL, man, &t3);
        printf("driver ns/call: cuPointerGetAttribute host %.1f device %.1f; cuPointerGetAttributes host %.1f "
               "(type %d) device %.1f (type %d), managed type %d\n", one_h, one_d, many_h, t1, many_d, t2, t3);
    }
    if (fake_queries) check_cache(host, dev, man, pin);
    printf("mem_type_cost: %s\n", failures ? "FAILED" : "all answers right");
    return failures ? 1 : 0;
}
