/*
 * libtopoar_cuda.so: everything of topoar that needs the CUDA runtime or
 * NCCL, behind one table of C functions.
 *
 * The component (ompi_coll_topoar/) never links against CUDA: at open it
 * dlopen()s this library and calls topoar_cuda_get_api(TOPOAR_CUDA_ABI).
 * Without the library, a driver or a device, the GPU path is off and the
 * component behaves exactly as a host-only build.
 *
 * Streams, NCCL communicators and errors cross as void* and int: no CUDA or
 * NCCL header is needed to use this one.  Every function returns 0 on
 * success; on failure nonzero, with a message naming the call and the CUDA
 * or NCCL error in last_error() (per thread).
 */
#ifndef TOPOAR_CUDA_H
#define TOPOAR_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: mem_type_cache; NCCL split, reduce-scatter, reduce, all-gather and
 * broadcast (the nccl_hier algorithm). */
#define TOPOAR_CUDA_ABI 2

/* topoar_cuda_api_t.mem_type results (the engine's TOPOAR_MEM_* values). */
#define TOPOAR_CUDA_MEM_HOST 1
#define TOPOAR_CUDA_MEM_DEVICE 2

typedef struct topoar_cuda_api {
    int abi;                 /* TOPOAR_CUDA_ABI */
    int have_nccl;           /* built with NCCL */
    int nccl_version;        /* NCCL_VERSION_CODE it was built with, 0 without */

    /* Usable here: a driver and at least one device.  Fills why otherwise. */
    int (*probe)(char *why, size_t len);
    const char *(*last_error)(void);

    /* TOPOAR_CUDA_MEM_DEVICE for device and managed memory, else HOST (any
     * error means host, and is cleared). */
    int (*mem_type)(const void *ptr);
    /* The cache of pointers mem_type found to be host memory (exact
     * addresses, a few entries; cuda/topoar_cuda.cpp says why that is sound
     * and names its one hazard): on (1, the default) or off (0); emptied
     * either way.  Returns the previous setting. */
    int (*mem_type_cache)(int enable);
    int (*get_device)(int *device);

    int (*stream_create)(void **stream);
    int (*stream_destroy)(void *stream);
    int (*stream_sync)(void *stream);
    /* Waits for the legacy default stream (stream 0), and so for every
     * blocking stream's earlier work: before device buffers go to code that
     * does not order itself after it (the previous module). */
    int (*default_stream_sync)(void);

    int (*host_alloc)(void **ptr, size_t bytes); /* pinned */
    int (*host_free)(void *ptr);
    int (*dev_alloc)(void **ptr, size_t bytes);
    int (*dev_free)(void *ptr);
    /* any direction (cudaMemcpyDefault), enqueued on stream */
    int (*memcpy_async)(void *dst, const void *src, size_t bytes, void *stream);

    /* topoar's reduction kernels (common/reduce/topoar_reduce.h ids):
     * inout[i] = in[i] op inout[i], enqueued on stream. */
    int (*reduce_supported)(int op, int type);
    int (*reduce)(int op, int type, const void *in, void *inout, size_t count, void *stream);

    /* NCCL (NULL without NCCL).  The unique id is 128 bytes. */
    int (*nccl_unique_id)(void *id);
    int (*nccl_comm_init)(void **comm, int nranks, const void *id, int rank);
    int (*nccl_comm_destroy)(void *comm);
    int (*nccl_group_start)(void);
    int (*nccl_group_end)(void);
    /* byte messages (ncclUint8), both ends pass the same byte count */
    int (*nccl_send)(const void *buf, size_t bytes, int peer, void *comm, void *stream);
    int (*nccl_recv)(void *buf, size_t bytes, int peer, void *comm, void *stream);
    /* 1 if ncclAllReduce can do this op/type pair itself */
    int (*nccl_allreduce_supported)(int op, int type);
    int (*nccl_allreduce)(const void *sbuf, void *rbuf, size_t count, int op, int type, void *comm,
                          void *stream);
    /* ncclCommSplit of comm (collective over it): *out is the communicator
     * of the ranks with the same color, ranked by key. */
    int (*nccl_comm_split)(void *comm, int color, int key, void **out);
    /* Collectives on op/type pairs nccl_allreduce_supported accepts (op is
     * ignored by all-gather and broadcast); counts in elements, as NCCL's:
     * reduce-scatter's is per rank (sbuf holds nranks of them), all-gather's
     * is what each rank contributes. */
    int (*nccl_reduce_scatter)(const void *sbuf, void *rbuf, size_t recvcount, int op, int type, void *comm,
                               void *stream);
    int (*nccl_reduce)(const void *sbuf, void *rbuf, size_t count, int op, int type, int root, void *comm,
                       void *stream);
    int (*nccl_all_gather)(const void *sbuf, void *rbuf, size_t sendcount, int type, void *comm, void *stream);
    int (*nccl_broadcast)(const void *sbuf, void *rbuf, size_t count, int type, int root, void *comm,
                          void *stream);
} topoar_cuda_api_t;

/* The table, or NULL if abi differs from the library's. */
const topoar_cuda_api_t *topoar_cuda_get_api(int abi);

#ifdef __cplusplus
}
#endif

#endif /* TOPOAR_CUDA_H */
