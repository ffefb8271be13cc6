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

/* ---- additions (backward compatible: everything above is unchanged) ----
 *
 * Argument capture.  Like the real runtime, the fake copies the VALUES of a
 * launch's arguments when cudaLaunchKernel is called (the args array points
 * into the caller's stack frame, gone by the time the stream runs); the twin
 * later receives an args array pointing into that private copy.  To copy, the
 * fake needs each parameter's size.  It takes them, like the real runtime,
 * from the kernel's cubin in the fat binary nvcc registered
 * (__cudaRegisterFatBinary; the EIATTR_KPARAM_INFO records of the section
 * .nv.info.<kernel>).  A fat binary whose cubin is compressed or absent (PTX
 * only) gives no sizes: then the twin must be registered with
 * fakecuda_register_kernel_params(), which states them explicitly (when both
 * exist they must agree, else the launch fails).  A launch whose sizes are
 * known from neither returns cudaErrorInvalidDeviceFunction with a message. */
void fakecuda_register_kernel_params(const char *device_name, fakecuda_kernel_fn fn,
                                     int nparams, const size_t *param_sizes);

/* Accounting, for tests.  Counters count since load or the last reset. */
unsigned long long fakecuda_sync_count(void);   /* host synchronizations: stream/event/device sync, synchronous memcpy/memset */
unsigned long long fakecuda_launch_count(void); /* kernel launches executed */
unsigned long long fakecuda_pointer_queries(void); /* cudaPointerGetAttributes calls */
/* bytes copied by memcpy (sync or async, executed) whose resolved kind is
 * `kind` (a cudaMemcpyKind: 0 HostToHost, 1 HostToDevice, 2 DeviceToHost,
 * 3 DeviceToDevice) */
unsigned long long fakecuda_bytes_copied(int kind);
/* live allocations of a cudaMemoryType: 1 Host (cudaMallocHost/cudaHostAlloc,
 * not cudaHostRegister), 2 Device (cudaMalloc, cudaMallocAsync), 3 Managed */
unsigned long fakecuda_live_allocations(int memory_type);
void fakecuda_reset_counters(void);

#ifdef __cplusplus
}
#endif

#endif /* TOPOAR_FAKECUDA_H */
