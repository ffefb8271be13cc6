/*
 * The CUDA runtime for the MPI programs that put their buffers in GPU
 * memory (tools/topoar_osu_allreduce -d cuda, tests/mpi/test_allreduce
 * --device), loaded at run time: they build and run without CUDA, and
 * tests put tests/fake_cuda's libcudart.so.13 first through
 * LD_LIBRARY_PATH.  Header-only.
 */
#ifndef TOPOAR_CUDART_H
#define TOPOAR_CUDART_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* cudaMemcpyKind values of cuda_runtime_api.h */
#define TOPOAR_H2D 1
#define TOPOAR_D2H 2

typedef struct topoar_cudart {
    int (*malloc_)(void **, size_t);
    int (*free_)(void *);
    int (*memcpy_)(void *, const void *, size_t, int);
} topoar_cudart_t;

/* Loads libcudart.so.13 and selects one device per local rank (Open MPI's
 * OMPI_COMM_WORLD_LOCAL_RANK, round robin).  0, or -1 with why[] filled. */
static inline int topoar_cudart_load(topoar_cudart_t *rt, char *why, size_t len)
{
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
    int (*count)(int *), (*setdev)(int);
    int n = 0;
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (NULL == h) {
        snprintf(why, len, "%s", dlerror());
        return -1;
    }
    rt->malloc_ = (int (*)(void **, size_t)) dlsym(h, "cudaMalloc");
    rt->free_ = (int (*)(void *)) dlsym(h, "cudaFree");
    rt->memcpy_ = (int (*)(void *, const void *, size_t, int)) dlsym(h, "cudaMemcpy");
    count = (int (*)(int *)) dlsym(h, "cudaGetDeviceCount");
    setdev = (int (*)(int)) dlsym(h, "cudaSetDevice");
    if (!rt->malloc_ || !rt->free_ || !rt->memcpy_ || !count || !setdev || 0 != count(&n) || n < 1) {
        snprintf(why, len, "no usable CUDA device");
        return -1;
    }
    if (0 != setdev((lr ? atoi(lr) : 0) % n)) {
        snprintf(why, len, "cudaSetDevice failed");
        return -1;
    }
    return 0;
}

#endif /* TOPOAR_CUDART_H */
