/*
 * The map from Open MPI's predefined ops and datatypes to topoar's own
 * typed reduction (common/reduce/topoar_reduce.h).
 *
 * A datatype maps to the topoar element type of the same size and
 * representation (sizes from sizeof and from Open MPI's configure results
 * for Fortran), and to a class that says which ops MPI defines on it
 * (MPI-4.0 section 6.9.2):
 *
 *   class        ops                                   e.g.
 *   C integer    sum prod min max land lor lxor band bor bxor   MPI_INT
 *   F integer    sum prod min max band bor bxor        MPI_INTEGER, MPI_AINT
 *   floating     sum prod min max                      MPI_DOUBLE, MPI_REAL
 *   complex      sum prod                              MPI_C_COMPLEX
 *   logical      land lor lxor                         MPI_C_BOOL, MPI_LOGICAL
 *   byte         band bor bxor                         MPI_BYTE
 *   pair         maxloc minloc                         MPI_DOUBLE_INT
 *
 * MPI_CHAR is treated as a C integer (Open MPI 4.1 reduces it so, although
 * the standard lists it under no op).  Not mapped, so handed to the previous
 * module: MPI_WCHAR (Open MPI rejects every op on it), MPI_C_LONG_DOUBLE_COMPLEX
 * and MPI_REAL16 (no topoar type), MPI_2REAL and MPI_2DOUBLE_PRECISION (the
 * index is not an int), MPI_LOGICAL where Fortran's .TRUE. is not 1.
 *
 * Handles are compared as Open MPI's public mpi.h defines them (the
 * addresses of its predefined objects): only mpi.h is needed here.
 */
#include "coll_topoar_ops.h"
#include "coll_topoar_compat.h" /* sizeof(C++ bool), which Open MPI 5 no longer says */

#include <stddef.h>
#include <string.h>

#include "topoar_reduce.h"

enum dtype_class { CLS_C_INTEGER, CLS_F_INTEGER, CLS_FLOATING, CLS_COMPLEX, CLS_LOGICAL, CLS_BYTE, CLS_PAIR };

/* The topoar integer type of a C or Fortran integer of `size` bytes (a
 * constant expression, for the table below); -1 when there is none. */
#define INT_REDTYPE(size, is_signed)                                                          \
    ((size) == 1   ? ((is_signed) ? TOPOAR_REDTYPE_INT8 : TOPOAR_REDTYPE_UINT8)               \
     : (size) == 2 ? ((is_signed) ? TOPOAR_REDTYPE_INT16 : TOPOAR_REDTYPE_UINT16)             \
     : (size) == 4 ? ((is_signed) ? TOPOAR_REDTYPE_INT32 : TOPOAR_REDTYPE_UINT32)             \
     : (size) == 8 ? ((is_signed) ? TOPOAR_REDTYPE_INT64 : TOPOAR_REDTYPE_UINT64)             \
                   : -1)
#define IS_SIGNED(ctype) (!((ctype) -1 > 0)) /* not '< 0': -Wtype-limits */
#define C_INT(ctype) INT_REDTYPE(sizeof(ctype), IS_SIGNED(ctype))
/* Fortran REAL / COMPLEX by size: IEEE single or double. */
#define REAL_REDTYPE(size) ((size) == 4 ? TOPOAR_REDTYPE_FLOAT32 : (size) == 8 ? TOPOAR_REDTYPE_FLOAT64 : -1)
#define COMPLEX_REDTYPE(size)                                                                 \
    ((size) == 8 ? TOPOAR_REDTYPE_COMPLEX_FLOAT : (size) == 16 ? TOPOAR_REDTYPE_COMPLEX_DOUBLE : -1)

struct dtype_entry {
    MPI_Datatype dtype;
    int redtype; /* -1: this build cannot map it */
    int cls;
};

/* The common C types first: the lookup is a linear scan. */
static const struct dtype_entry dtype_table[] = {
    {MPI_FLOAT, TOPOAR_REDTYPE_FLOAT32, CLS_FLOATING},
    {MPI_DOUBLE, TOPOAR_REDTYPE_FLOAT64, CLS_FLOATING},
    {MPI_INT, C_INT(int), CLS_C_INTEGER},
    {MPI_LONG, C_INT(long), CLS_C_INTEGER},
    {MPI_UNSIGNED, C_INT(unsigned), CLS_C_INTEGER},
    {MPI_UNSIGNED_LONG, C_INT(unsigned long), CLS_C_INTEGER},
    {MPI_LONG_LONG_INT, C_INT(long long), CLS_C_INTEGER},
    {MPI_LONG_LONG, C_INT(long long), CLS_C_INTEGER},
    {MPI_UNSIGNED_LONG_LONG, C_INT(unsigned long long), CLS_C_INTEGER},
    {MPI_SHORT, C_INT(short), CLS_C_INTEGER},
    {MPI_UNSIGNED_SHORT, C_INT(unsigned short), CLS_C_INTEGER},
    {MPI_CHAR, C_INT(char), CLS_C_INTEGER},
    {MPI_SIGNED_CHAR, C_INT(signed char), CLS_C_INTEGER},
    {MPI_UNSIGNED_CHAR, C_INT(unsigned char), CLS_C_INTEGER},
    {MPI_INT8_T, TOPOAR_REDTYPE_INT8, CLS_C_INTEGER},
    {MPI_UINT8_T, TOPOAR_REDTYPE_UINT8, CLS_C_INTEGER},
    {MPI_INT16_T, TOPOAR_REDTYPE_INT16, CLS_C_INTEGER},
    {MPI_UINT16_T, TOPOAR_REDTYPE_UINT16, CLS_C_INTEGER},
    {MPI_INT32_T, TOPOAR_REDTYPE_INT32, CLS_C_INTEGER},
    {MPI_UINT32_T, TOPOAR_REDTYPE_UINT32, CLS_C_INTEGER},
    {MPI_INT64_T, TOPOAR_REDTYPE_INT64, CLS_C_INTEGER},
    {MPI_UINT64_T, TOPOAR_REDTYPE_UINT64, CLS_C_INTEGER},
    {MPI_LONG_DOUBLE, TOPOAR_REDTYPE_LONG_DOUBLE, CLS_FLOATING},
    /* multi-language types: Fortran integer's ops */
    {MPI_AINT, C_INT(MPI_Aint), CLS_F_INTEGER},
    {MPI_OFFSET, C_INT(MPI_Offset), CLS_F_INTEGER},
    {MPI_COUNT, C_INT(MPI_Count), CLS_F_INTEGER},
    {MPI_C_BOOL, sizeof(_Bool) == 1 ? TOPOAR_REDTYPE_BOOL : -1, CLS_LOGICAL},
    {MPI_CXX_BOOL, MCA_COLL_TOPOAR_SIZEOF_CXX_BOOL == 1 ? TOPOAR_REDTYPE_BOOL : -1, CLS_LOGICAL},
    {MPI_C_COMPLEX, TOPOAR_REDTYPE_COMPLEX_FLOAT, CLS_COMPLEX},
    {MPI_C_FLOAT_COMPLEX, TOPOAR_REDTYPE_COMPLEX_FLOAT, CLS_COMPLEX},
    {MPI_C_DOUBLE_COMPLEX, TOPOAR_REDTYPE_COMPLEX_DOUBLE, CLS_COMPLEX},
    {MPI_CXX_FLOAT_COMPLEX, TOPOAR_REDTYPE_COMPLEX_FLOAT, CLS_COMPLEX},
    {MPI_CXX_DOUBLE_COMPLEX, TOPOAR_REDTYPE_COMPLEX_DOUBLE, CLS_COMPLEX},
    {MPI_BYTE, TOPOAR_REDTYPE_UINT8, CLS_BYTE},
    {MPI_FLOAT_INT, TOPOAR_REDTYPE_FLOAT_INT, CLS_PAIR},
    {MPI_DOUBLE_INT, TOPOAR_REDTYPE_DOUBLE_INT, CLS_PAIR},
    {MPI_LONG_INT, TOPOAR_REDTYPE_LONG_INT, CLS_PAIR},
    {MPI_2INT, TOPOAR_REDTYPE_2INT, CLS_PAIR},
    {MPI_SHORT_INT, TOPOAR_REDTYPE_SHORT_INT, CLS_PAIR},
    {MPI_LONG_DOUBLE_INT, TOPOAR_REDTYPE_LONG_DOUBLE_INT, CLS_PAIR},
    /* Fortran, where this Open MPI was built with it */
#if OMPI_HAVE_FORTRAN_INTEGER
    {MPI_INTEGER, INT_REDTYPE(OMPI_SIZEOF_FORTRAN_INTEGER, 1), CLS_F_INTEGER},
    {MPI_2INTEGER, OMPI_SIZEOF_FORTRAN_INTEGER == sizeof(int) ? TOPOAR_REDTYPE_2INT : -1, CLS_PAIR},
#endif
#if OMPI_HAVE_FORTRAN_INTEGER1
    {MPI_INTEGER1, TOPOAR_REDTYPE_INT8, CLS_F_INTEGER},
#endif
#if OMPI_HAVE_FORTRAN_INTEGER2
    {MPI_INTEGER2, TOPOAR_REDTYPE_INT16, CLS_F_INTEGER},
#endif
#if OMPI_HAVE_FORTRAN_INTEGER4
    {MPI_INTEGER4, TOPOAR_REDTYPE_INT32, CLS_F_INTEGER},
#endif
#if OMPI_HAVE_FORTRAN_INTEGER8
    {MPI_INTEGER8, TOPOAR_REDTYPE_INT64, CLS_F_INTEGER},
#endif
#if OMPI_HAVE_FORTRAN_REAL
    {MPI_REAL, REAL_REDTYPE(OMPI_SIZEOF_FORTRAN_REAL), CLS_FLOATING},
#endif
#if OMPI_HAVE_FORTRAN_DOUBLE_PRECISION
    {MPI_DOUBLE_PRECISION, REAL_REDTYPE(OMPI_SIZEOF_FORTRAN_DOUBLE_PRECISION), CLS_FLOATING},
#endif
#if OMPI_HAVE_FORTRAN_REAL4
    {MPI_REAL4, TOPOAR_REDTYPE_FLOAT32, CLS_FLOATING},
#endif
#if OMPI_HAVE_FORTRAN_REAL8
    {MPI_REAL8, TOPOAR_REDTYPE_FLOAT64, CLS_FLOATING},
#endif
#if OMPI_HAVE_FORTRAN_COMPLEX
    {MPI_COMPLEX, COMPLEX_REDTYPE(OMPI_SIZEOF_FORTRAN_COMPLEX), CLS_COMPLEX},
#endif
#if OMPI_HAVE_FORTRAN_DOUBLE_COMPLEX
    {MPI_DOUBLE_COMPLEX, COMPLEX_REDTYPE(OMPI_SIZEOF_FORTRAN_DOUBLE_COMPLEX), CLS_COMPLEX},
#endif
#if OMPI_HAVE_FORTRAN_COMPLEX8
    {MPI_COMPLEX8, TOPOAR_REDTYPE_COMPLEX_FLOAT, CLS_COMPLEX},
#endif
#if OMPI_HAVE_FORTRAN_COMPLEX16
    {MPI_COMPLEX16, TOPOAR_REDTYPE_COMPLEX_DOUBLE, CLS_COMPLEX},
#endif
/* LOGICAL ops give 1 for true: only right where Fortran's .TRUE. is 1. */
#if OMPI_HAVE_FORTRAN_LOGICAL && defined(OMPI_FORTRAN_VALUE_TRUE) && OMPI_FORTRAN_VALUE_TRUE == 1
    {MPI_LOGICAL, INT_REDTYPE(OMPI_SIZEOF_FORTRAN_LOGICAL, 1), CLS_LOGICAL},
#endif
};

static int op_id(struct ompi_op_t *op)
{
    if (op == MPI_SUM) return TOPOAR_REDOP_SUM;
    if (op == MPI_MAX) return TOPOAR_REDOP_MAX;
    if (op == MPI_MIN) return TOPOAR_REDOP_MIN;
    if (op == MPI_PROD) return TOPOAR_REDOP_PROD;
    if (op == MPI_LAND) return TOPOAR_REDOP_LAND;
    if (op == MPI_LOR) return TOPOAR_REDOP_LOR;
    if (op == MPI_LXOR) return TOPOAR_REDOP_LXOR;
    if (op == MPI_BAND) return TOPOAR_REDOP_BAND;
    if (op == MPI_BOR) return TOPOAR_REDOP_BOR;
    if (op == MPI_BXOR) return TOPOAR_REDOP_BXOR;
    if (op == MPI_MAXLOC) return TOPOAR_REDOP_MAXLOC;
    if (op == MPI_MINLOC) return TOPOAR_REDOP_MINLOC;
    return -1; /* user-defined, MPI_REPLACE, MPI_NO_OP */
}

static int class_allows(int cls, int redop)
{
    switch (cls) {
    case CLS_C_INTEGER:
        return redop <= TOPOAR_REDOP_BXOR;
    case CLS_F_INTEGER:
        return redop <= TOPOAR_REDOP_MAX || (redop >= TOPOAR_REDOP_BAND && redop <= TOPOAR_REDOP_BXOR);
    case CLS_FLOATING:
        return redop <= TOPOAR_REDOP_MAX;
    case CLS_COMPLEX:
        return redop == TOPOAR_REDOP_SUM || redop == TOPOAR_REDOP_PROD;
    case CLS_LOGICAL:
        return redop >= TOPOAR_REDOP_LAND && redop <= TOPOAR_REDOP_LXOR;
    case CLS_BYTE:
        return redop >= TOPOAR_REDOP_BAND && redop <= TOPOAR_REDOP_BXOR;
    case CLS_PAIR:
        return redop == TOPOAR_REDOP_MAXLOC || redop == TOPOAR_REDOP_MINLOC;
    }
    return 0;
}

/* The table entry of (dtype, op) when topoar reduces the pair itself on the
 * host (mca_coll_topoar_op_ids), else NULL; *redop is op's id. */
static const struct dtype_entry *own_entry(struct ompi_datatype_t *dtype, struct ompi_op_t *op, int *redop)
{
    const int o = op_id(op);
    size_t i;
    if (o < 0) return NULL;
    for (i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; ++i) {
        const struct dtype_entry *e = &dtype_table[i];
        if (e->dtype != dtype) continue;
        if (e->redtype < 0 || !class_allows(e->cls, o) || !topoar_reduce_supported(o, e->redtype, 0)) return NULL;
        *redop = o;
        return e;
    }
    return NULL;
}

int mca_coll_topoar_op_ids(struct ompi_datatype_t *dtype, struct ompi_op_t *op, int *redop, int *redtype)
{
    int o;
    const struct dtype_entry *e = own_entry(dtype, op, &o);
    if (NULL == e) return 0;
    *redop = o;
    *redtype = e->redtype;
    return 1;
}

/* Inputs that overflow an 8- or 16-bit sum or product in most elements,
 * enough of them for Open MPI's vectorized loops (op/avx) to run. */
#define PROBE_ELEMS 1024

static int differs_from_open_mpi(struct ompi_datatype_t *dtype, struct ompi_op_t *op, int redop, int redtype,
                                 size_t elem)
{
    /* On the stack (6 KiB): concurrent first calls of several threads each
     * probe on their own, with the same answer. */
    unsigned char in[PROBE_ELEMS * 2], mine[PROBE_ELEMS * 2], theirs[PROBE_ELEMS * 2];
    size_t i, bytes = PROBE_ELEMS * elem;
    for (i = 0; i < bytes; ++i) {
        in[i] = (unsigned char) (0x70 + 37 * i);
        mine[i] = theirs[i] = (unsigned char) (0x7b + 91 * i);
    }
    if (0 != topoar_reduce_host(redop, redtype, in, mine, PROBE_ELEMS) ||
        MPI_SUCCESS != PMPI_Reduce_local(in, theirs, PROBE_ELEMS, dtype, op)) {
        return 1; /* cannot tell: keep the previous module out */
    }
    return 0 != memcmp(mine, theirs, bytes);
}

int mca_coll_topoar_previous_may_differ(struct ompi_datatype_t *dtype, struct ompi_op_t *op, size_t extent)
{
    /* Per table entry, [sum, prod]: 0 not probed yet, 1 same, 2 differs. */
    static unsigned char known[sizeof dtype_table / sizeof dtype_table[0]][2];
    const struct dtype_entry *e;
    int redop;
    unsigned char answer, *slot;
    if (extent > 2 || (op != MPI_SUM && op != MPI_PROD)) {
        return 0;
    }
    e = own_entry(dtype, op, &redop);
    if (NULL == e) {
        return 0; /* reduced by Open MPI's op either way */
    }
    slot = &known[e - dtype_table][op == MPI_PROD];
    answer = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (0 == answer) {
        answer = differs_from_open_mpi(dtype, op, redop, e->redtype, extent) ? 2 : 1;
        __atomic_store_n(slot, answer, __ATOMIC_RELAXED);
    }
    return 2 == answer;
}
