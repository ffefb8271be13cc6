/*
 * topoar's CUDA reduction kernels, C interface of libtopoar_cuda.so.
 *
 * The component loads the library with dlopen (never links it), so a host
 * without CUDA runs the component unchanged.  Every kernel is the device
 * instance of the element-wise code in common/reduce/reduce_ops.hpp, for
 * the pairs topoar_reduce_supported(op, type, 1) lists; the kernel of a
 * pair is the extern "C" __global__ function
 *     topoar_reduce_<op name>_<type name>(const void *in, void *inout,
 *                                         unsigned long long n)
 * e.g. topoar_reduce_sum_f32 (names from topoar_reduce_op_name and
 * topoar_reduce_type_name), a grid-stride loop doing
 * inout[i] = in[i] op inout[i].
 */
#ifndef TOPOAR_CUDA_REDUCE_H
#define TOPOAR_CUDA_REDUCE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues inout[i] = in[i] op inout[i], i < count, on `stream` (a
 * cudaStream_t; NULL is the default stream) for device-accessible `in` and
 * `inout` (TOPOAR_REDOP_* / TOPOAR_REDTYPE_* from topoar_reduce.h; they must
 * not overlap).  Returns 0 (cudaSuccess) once the kernel is enqueued, or a
 * cudaError_t value: cudaErrorNotSupported (801) for a pair without a
 * kernel, else what the runtime reported (no device, bad stream, ...).
 * count 0 enqueues nothing and returns 0 for a supported pair. */
int topoar_cuda_reduce(int op, int type, const void *in, void *inout, size_t count, void *stream);

/* The name the signature above has in dlsym. */
#define TOPOAR_CUDA_REDUCE_SYMBOL "topoar_cuda_reduce"
typedef int (*topoar_cuda_reduce_fn)(int op, int type, const void *in, void *inout, size_t count, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* TOPOAR_CUDA_REDUCE_H */
