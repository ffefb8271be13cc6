/*
 * Private interface between the fake libcudart.so.13 and the fake
 * libnccl.so.2 (tests/fake_cuda/).  Not for tests or twins.
 */
#ifndef TOPOAR_FAKECUDA_INTERNAL_H
#define TOPOAR_FAKECUDA_INTERNAL_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Host view of [p, p+bytes) when it lies in one live device allocation
 * (cudaMalloc / cudaMallocAsync) or managed allocation.  Returns 0 and sets
 * *view (and *device when not NULL); -1 when p is not device/managed memory;
 * -2 when the range leaves the allocation. */
int fakecuda_internal_view(const void *p, size_t bytes, void **view, int *device);

/* Queues fn(arg) as ONE item on the n given streams (n >= 1): it runs when
 * any of them reaches it, after the work before it on all of them (so a
 * grouped NCCL operation spanning several in-process devices runs once, with
 * every participant ready).  Returns cudaSuccess or an error. */
cudaError_t fakecuda_internal_enqueue(int n, const cudaStream_t *streams,
                                      void (*fn)(void *), void *arg);

/* 0 when s is a valid stream handle (0, cudaStreamLegacy, cudaStreamPerThread
 * or a live created stream); sets *device to the stream's device. */
int fakecuda_internal_stream_device(cudaStream_t s, int *device);

/* The calling thread's current device. */
int fakecuda_internal_current_device(void);

#ifdef __cplusplus
}
#endif

#endif
