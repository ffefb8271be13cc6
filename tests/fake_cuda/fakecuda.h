/*
 * Test-only hooks of topoar's fake CUDA runtime (tests/fake_cuda/).
 *
 * The fake libcudart.so.13 cannot run device code.  Every kernel a test
 * program launches has a host "twin" registered here under the kernel's
 * device-side name (the name nvcc registers through __cudaRegisterFunction,
 * e.g. "topoar_reduce_sum_f32" for an extern "C" __global__ function).  When
 * the stream reaches the launch, the fake calls the twin with the launch's
 * argument array; the twin turns the device pointers among them into the
 * fake's private host view with fakecuda_host_view() (which aborts with a
 * message when the range is not inside one live device allocation) and runs
 * the same element-wise code the kernel runs.
 *
 * Nothing in the product includes this header: only the fake and its twins.
 */
#ifndef TOPOAR_FAKECUDA_H
#define TOPOAR_FAKECUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* args: the kernel's argument array exactly as given to cudaLaunchKernel;
 * grid_x/block_x: the launch's x dimensions (y, z are 1 for our kernels). */
typedef void (*fakecuda_kernel_fn)(void **args, unsigned grid_x, unsigned block_x);

/* Registers the host twin of the kernel whose device name is `device_name`.
 * Called from constructors of the fake library's own twin files. */
void fakecuda_register_kernel(const char *device_name, fakecuda_kernel_fn fn);

/* The host-accessible view of [device_ptr, device_ptr + bytes); aborts with
 * a message if that range is not inside one live device allocation. */
void *fakecuda_host_view(const void *device_ptr, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* TOPOAR_FAKECUDA_H */
