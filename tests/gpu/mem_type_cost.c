/*
 * mem_type_cost: what the GPU path's memory-type question costs per call on a
 * machine with a GPU, and whether it answers right.
 *
 *   mem_type_cost PATH/libtopoar_cuda.so
 *
 * Times topoar_cuda_api_t.mem_type (what every MPI_Allreduce asks, twice
 * unless MPI_IN_PLACE) on a host, a device, a managed and a pinned pointer,
 * and the runtime's cudaPointerGetAttributes on a host pointer for
 * comparison; nanoseconds per call, best of 5 rounds of 1,000,000 calls.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "topoar_cuda.h"

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
        for (int i = 0; i < 1000000; i++) sink += q ? q(p) : raw(attrs, p);
        double ns = (now() - t0) * 1e3;
        if (ns < best) best = ns;
        if (answer) *answer = q ? q(p) : 0;
        (void)sink;
    }
    return best;
}

int main(int argc, char **argv)
{
    char why[256] = "";
    if (argc < 2) { fprintf(stderr, "usage: %s libtopoar_cuda.so\n", argv[0]); return 2; }
    void *h = dlopen(argv[1], RTLD_NOW);
    const topoar_cuda_api_t *(*get)(int) = h ? (const topoar_cuda_api_t *(*)(int))dlsym(h, "topoar_cuda_get_api") : NULL;
    const topoar_cuda_api_t *api = get ? get(TOPOAR_CUDA_ABI) : NULL;
    if (!api || api->probe(why, sizeof why)) {
        const char *e = h ? "" : dlerror();
        fprintf(stderr, "no GPU path: %s%s\n", e ? e : "", why);
        return 77;
    }
    /* before this process has any CUDA context: a CPU-only program */
    char *early = malloc(64);
    int a_early;
    double t_early = best_ns(api->mem_type, NULL, early, &a_early);
    printf("mem_type ns/call before any CUDA context: host %.1f (%s)\n", t_early,
           a_early == TOPOAR_CUDA_MEM_HOST ? "host" : "WRONG");
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    attr_fn attrs = (attr_fn)dlsym(rt, "cudaPointerGetAttributes");
    int (*managed)(void **, size_t, unsigned) = (int (*)(void **, size_t, unsigned))dlsym(rt, "cudaMallocManaged");
    void *dev = NULL, *man = NULL, *pin = NULL;
    char *host = malloc(4096);
    if (api->dev_alloc(&dev, 4096) || managed(&man, 4096, 1) || api->host_alloc(&pin, 4096)) {
        fprintf(stderr, "allocation failed\n");
        return 1;
    }
    int a_host, a_dev, a_man, a_pin, bad = 0;
    double t_host = best_ns(api->mem_type, NULL, host, &a_host);
    double t_dev = best_ns(api->mem_type, NULL, dev, &a_dev);
    double t_man = best_ns(api->mem_type, NULL, man, &a_man);
    double t_pin = best_ns(api->mem_type, NULL, pin, &a_pin);
    double t_rt = best_ns(NULL, attrs, host, NULL);
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
    bad += (a_early != TOPOAR_CUDA_MEM_HOST) + (a_host != TOPOAR_CUDA_MEM_HOST) + (a_dev != TOPOAR_CUDA_MEM_DEVICE) + (a_man != TOPOAR_CUDA_MEM_DEVICE) +
           (a_pin != TOPOAR_CUDA_MEM_HOST);
    printf("mem_type ns/call with a context: host %.1f (%s), device %.1f (%s), managed %.1f (%s), pinned %.1f (%s); "
           "cudaPointerGetAttributes(host) %.1f\n",
           t_host, a_host == TOPOAR_CUDA_MEM_HOST ? "host" : "WRONG", t_dev, a_dev == TOPOAR_CUDA_MEM_DEVICE ? "device" : "WRONG",
           t_man, a_man == TOPOAR_CUDA_MEM_DEVICE ? "device" : "WRONG", t_pin, a_pin == TOPOAR_CUDA_MEM_HOST ? "host" : "WRONG",
           t_rt);
    return bad ? 1 : 0;
}
