/*
 * topoar's own element-wise reduction of the predefined MPI op/type pairs,
 * C interface (used by the Open MPI glue, the CUDA library and tests).
 *
 * The element-wise code is written once, for host and device, in
 * reduce_ops.hpp; this header only names the operations and types.
 * Semantics are MPI's: integer SUM/PROD wrap modulo 2^bits, logical ops give
 * 0 or 1, MINLOC/MAXLOC keep the smaller index on a tie.  Which (op, type)
 * pairs exist follows the MPI standard (no bitwise ops on floating point, no
 * MIN/MAX on complex, ...); topoar_reduce_supported() answers for each.
 *
 * The values are part of the interface (stored in decision data, passed to
 * the CUDA library): append, never renumber.
 */
#ifndef TOPOAR_REDUCE_H
#define TOPOAR_REDUCE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum topoar_redop {
    TOPOAR_REDOP_SUM = 0,
    TOPOAR_REDOP_PROD = 1,
    TOPOAR_REDOP_MIN = 2,
    TOPOAR_REDOP_MAX = 3,
    TOPOAR_REDOP_LAND = 4,
    TOPOAR_REDOP_LOR = 5,
    TOPOAR_REDOP_LXOR = 6,
    TOPOAR_REDOP_BAND = 7,
    TOPOAR_REDOP_BOR = 8,
    TOPOAR_REDOP_BXOR = 9,
    TOPOAR_REDOP_MAXLOC = 10,
    TOPOAR_REDOP_MINLOC = 11,
    TOPOAR_REDOP_COUNT = 12 /* number of ops, not an op */
};

enum topoar_redtype {
    TOPOAR_REDTYPE_INT8 = 0,
    TOPOAR_REDTYPE_UINT8 = 1,
    TOPOAR_REDTYPE_INT16 = 2,
    TOPOAR_REDTYPE_UINT16 = 3,
    TOPOAR_REDTYPE_INT32 = 4,
    TOPOAR_REDTYPE_UINT32 = 5,
    TOPOAR_REDTYPE_INT64 = 6,
    TOPOAR_REDTYPE_UINT64 = 7,
    TOPOAR_REDTYPE_FLOAT32 = 8,
    TOPOAR_REDTYPE_FLOAT64 = 9,
    TOPOAR_REDTYPE_LONG_DOUBLE = 10,     /* host only */
    TOPOAR_REDTYPE_COMPLEX_FLOAT = 11,   /* {float re, im} */
    TOPOAR_REDTYPE_COMPLEX_DOUBLE = 12,  /* {double re, im} */
    TOPOAR_REDTYPE_BOOL = 13,            /* one byte, 0 or 1; logical ops */
    /* MINLOC/MAXLOC pairs, laid out as the C structs {value; int index}. */
    TOPOAR_REDTYPE_FLOAT_INT = 14,
    TOPOAR_REDTYPE_DOUBLE_INT = 15,
    TOPOAR_REDTYPE_LONG_INT = 16,
    TOPOAR_REDTYPE_2INT = 17,
    TOPOAR_REDTYPE_SHORT_INT = 18,
    TOPOAR_REDTYPE_LONG_DOUBLE_INT = 19, /* host only */
    TOPOAR_REDTYPE_COUNT = 20            /* number of types, not a type */
};

/* Returned by topoar_reduce_host for a pair it does not implement. */
#define TOPOAR_REDUCE_UNSUPPORTED (-1)

/* inout[i] = in[i] op inout[i] for i < count, on host memory.  `in` and
 * `inout` must not overlap; neither needs more than the element type's
 * natural alignment.  Returns 0, or TOPOAR_REDUCE_UNSUPPORTED (nothing
 * written) when (op, type) is not a supported pair, whatever the count. */
int topoar_reduce_host(int op, int type, const void *in, void *inout, size_t count);

/* 1 if (op, type) is implemented on the host (on_device == 0) or by the
 * CUDA kernels (on_device != 0), else 0. */
int topoar_reduce_supported(int op, int type, int on_device);

/* "sum", "prod", ..., "minloc"; NULL when out of range. */
const char *topoar_reduce_op_name(int op);
/* "i8", "u8", ..., "f32", "f64", "long_double", "cf32", "cf64", "bool",
 * "float_int", ..., "long_double_int"; NULL when out of range. */
const char *topoar_reduce_type_name(int type);
/* Bytes of one element (the C type's size, padding included); 0 when out
 * of range. */
size_t topoar_reduce_type_size(int type);

#ifdef __cplusplus
}
#endif

#endif /* TOPOAR_REDUCE_H */
