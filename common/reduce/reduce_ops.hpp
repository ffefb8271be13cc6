// The element-wise operation of every predefined MPI op/type pair, written
// once for host C++ and CUDA kernels (TOPOAR_HD).
//
// One table says which pairs exist: TOPOAR_REDUCE_DEVICE_PAIRS and
// TOPOAR_REDUCE_HOST_ONLY_PAIRS below.  The host loops (reduce_ops.cpp),
// the CUDA kernels (cuda/reduce_kernels.cu), their host twins for the fake
// CUDA runtime and topoar_reduce_supported() are all generated from it; a
// static_assert checks every listed pair against the MPI rule for its
// type's category (op_allowed), so the list cannot grow an invalid pair.
//
// Semantics, exactly MPI's (MPI-4.0 section 6.9.2):
//   - integer SUM/PROD wrap modulo 2^bits: computed in an unsigned type at
//     least as wide as int (signed overflow and int promotion of 16-bit
//     products would be undefined behaviour);
//   - LAND/LOR/LXOR on integers and bool give 0 or 1, any nonzero is true;
//   - MINLOC/MAXLOC: the extreme value, and on equal values the smaller
//     index;
//   - MIN/MAX on floating point assume NaN-free data (the result with a
//     NaN operand is whichever `a < b ? a : b` gives, as in Open MPI).
// The argument order is apply(in, inout) -> new inout.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "topoar_reduce.h"

#if defined(__CUDACC__)
#define TOPOAR_HD __host__ __device__
#else
#define TOPOAR_HD
#endif

namespace topoar {
namespace reduce {

// ---- element types -------------------------------------------------------

struct complex_float {
    float re, im;
};
struct complex_double {
    double re, im;
};
// MPI_C_BOOL / MPI_CXX_BOOL: one byte.  Kept as a byte (not C++ bool) so a
// byte other than 0/1 coming off the wire is not undefined behaviour.
struct boolean {
    uint8_t v;
};
// The MINLOC/MAXLOC pair types, laid out as MPI defines them (value first).
struct float_int {
    float v;
    int k;
};
struct double_int {
    double v;
    int k;
};
struct long_int {
    long v;
    int k;
};
struct two_int {
    int v;
    int k;
};
struct short_int {
    short v;
    int k;
};
struct long_double_int {
    long double v;
    int k;
};

enum class Category { integer, floating, complex, logical, pair };

// X(ENUM, name token, C type, category)
#define TOPOAR_REDUCE_TYPES(X)                                                          \
    X(TOPOAR_REDTYPE_INT8, i8, int8_t, integer)                                         \
    X(TOPOAR_REDTYPE_UINT8, u8, uint8_t, integer)                                       \
    X(TOPOAR_REDTYPE_INT16, i16, int16_t, integer)                                      \
    X(TOPOAR_REDTYPE_UINT16, u16, uint16_t, integer)                                    \
    X(TOPOAR_REDTYPE_INT32, i32, int32_t, integer)                                      \
    X(TOPOAR_REDTYPE_UINT32, u32, uint32_t, integer)                                    \
    X(TOPOAR_REDTYPE_INT64, i64, int64_t, integer)                                      \
    X(TOPOAR_REDTYPE_UINT64, u64, uint64_t, integer)                                    \
    X(TOPOAR_REDTYPE_FLOAT32, f32, float, floating)                                     \
    X(TOPOAR_REDTYPE_FLOAT64, f64, double, floating)                                    \
    X(TOPOAR_REDTYPE_LONG_DOUBLE, long_double, long double, floating)                   \
    X(TOPOAR_REDTYPE_COMPLEX_FLOAT, cf32, ::topoar::reduce::complex_float, complex)     \
    X(TOPOAR_REDTYPE_COMPLEX_DOUBLE, cf64, ::topoar::reduce::complex_double, complex)   \
    X(TOPOAR_REDTYPE_BOOL, bool, ::topoar::reduce::boolean, logical)                    \
    X(TOPOAR_REDTYPE_FLOAT_INT, float_int, ::topoar::reduce::float_int, pair)           \
    X(TOPOAR_REDTYPE_DOUBLE_INT, double_int, ::topoar::reduce::double_int, pair)        \
    X(TOPOAR_REDTYPE_LONG_INT, long_int, ::topoar::reduce::long_int, pair)              \
    X(TOPOAR_REDTYPE_2INT, 2int, ::topoar::reduce::two_int, pair)                       \
    X(TOPOAR_REDTYPE_SHORT_INT, short_int, ::topoar::reduce::short_int, pair)           \
    X(TOPOAR_REDTYPE_LONG_DOUBLE_INT, long_double_int, ::topoar::reduce::long_double_int, pair)

// X(ENUM, name token)
#define TOPOAR_REDUCE_OPS(X)                                                            \
    X(TOPOAR_REDOP_SUM, sum)                                                            \
    X(TOPOAR_REDOP_PROD, prod)                                                          \
    X(TOPOAR_REDOP_MIN, min)                                                            \
    X(TOPOAR_REDOP_MAX, max)                                                            \
    X(TOPOAR_REDOP_LAND, land)                                                          \
    X(TOPOAR_REDOP_LOR, lor)                                                            \
    X(TOPOAR_REDOP_LXOR, lxor)                                                          \
    X(TOPOAR_REDOP_BAND, band)                                                          \
    X(TOPOAR_REDOP_BOR, bor)                                                            \
    X(TOPOAR_REDOP_BXOR, bxor)                                                          \
    X(TOPOAR_REDOP_MAXLOC, maxloc)                                                      \
    X(TOPOAR_REDOP_MINLOC, minloc)

template <int TYPE>
struct type_info;
#define TOPOAR_REDUCE_TYPE_INFO_(E, name, ctype, cat)                                   \
    template <>                                                                         \
    struct type_info<E> {                                                               \
        using type = ctype;                                                             \
        static constexpr Category category = Category::cat;                            \
    };
TOPOAR_REDUCE_TYPES(TOPOAR_REDUCE_TYPE_INFO_)
#undef TOPOAR_REDUCE_TYPE_INFO_

// The MPI standard's rule: which ops a category of types takes.
TOPOAR_HD constexpr bool op_allowed(int op, Category c)
{
    switch (c) {
    case Category::integer:
        return op >= TOPOAR_REDOP_SUM && op <= TOPOAR_REDOP_BXOR;
    case Category::floating:
        return op == TOPOAR_REDOP_SUM || op == TOPOAR_REDOP_PROD || op == TOPOAR_REDOP_MIN ||
               op == TOPOAR_REDOP_MAX;
    case Category::complex:
        return op == TOPOAR_REDOP_SUM || op == TOPOAR_REDOP_PROD;
    case Category::logical:
        return op == TOPOAR_REDOP_LAND || op == TOPOAR_REDOP_LOR || op == TOPOAR_REDOP_LXOR;
    case Category::pair:
        return op == TOPOAR_REDOP_MAXLOC || op == TOPOAR_REDOP_MINLOC;
    }
    return false;
}

// ---- the pair table ------------------------------------------------------
//
// X(op name, op enum, type name, type enum).  Kernel and twin names are
// topoar_reduce_<op name>_<type name>, e.g. topoar_reduce_sum_f32.

#define TOPOAR_REDUCE_X_(X, o, O, t, T) X(o, O, t, T)
#define TOPOAR_REDUCE_INT_TYPES_(X, o, O)                                               \
    TOPOAR_REDUCE_X_(X, o, O, i8, TOPOAR_REDTYPE_INT8)                                  \
    TOPOAR_REDUCE_X_(X, o, O, u8, TOPOAR_REDTYPE_UINT8)                                 \
    TOPOAR_REDUCE_X_(X, o, O, i16, TOPOAR_REDTYPE_INT16)                                \
    TOPOAR_REDUCE_X_(X, o, O, u16, TOPOAR_REDTYPE_UINT16)                               \
    TOPOAR_REDUCE_X_(X, o, O, i32, TOPOAR_REDTYPE_INT32)                                \
    TOPOAR_REDUCE_X_(X, o, O, u32, TOPOAR_REDTYPE_UINT32)                               \
    TOPOAR_REDUCE_X_(X, o, O, i64, TOPOAR_REDTYPE_INT64)                                \
    TOPOAR_REDUCE_X_(X, o, O, u64, TOPOAR_REDTYPE_UINT64)
#define TOPOAR_REDUCE_FLOAT_TYPES_(X, o, O)                                             \
    TOPOAR_REDUCE_X_(X, o, O, f32, TOPOAR_REDTYPE_FLOAT32)                              \
    TOPOAR_REDUCE_X_(X, o, O, f64, TOPOAR_REDTYPE_FLOAT64)
#define TOPOAR_REDUCE_COMPLEX_TYPES_(X, o, O)                                           \
    TOPOAR_REDUCE_X_(X, o, O, cf32, TOPOAR_REDTYPE_COMPLEX_FLOAT)                       \
    TOPOAR_REDUCE_X_(X, o, O, cf64, TOPOAR_REDTYPE_COMPLEX_DOUBLE)
#define TOPOAR_REDUCE_PAIR_TYPES_(X, o, O)                                              \
    TOPOAR_REDUCE_X_(X, o, O, float_int, TOPOAR_REDTYPE_FLOAT_INT)                      \
    TOPOAR_REDUCE_X_(X, o, O, double_int, TOPOAR_REDTYPE_DOUBLE_INT)                    \
    TOPOAR_REDUCE_X_(X, o, O, long_int, TOPOAR_REDTYPE_LONG_INT)                        \
    TOPOAR_REDUCE_X_(X, o, O, 2int, TOPOAR_REDTYPE_2INT)                                \
    TOPOAR_REDUCE_X_(X, o, O, short_int, TOPOAR_REDTYPE_SHORT_INT)

// Every pair the CUDA kernels implement (and the host too).
#define TOPOAR_REDUCE_DEVICE_PAIRS(X)                                                   \
    TOPOAR_REDUCE_INT_TYPES_(X, sum, TOPOAR_REDOP_SUM)                                  \
    TOPOAR_REDUCE_INT_TYPES_(X, prod, TOPOAR_REDOP_PROD)                                \
    TOPOAR_REDUCE_INT_TYPES_(X, min, TOPOAR_REDOP_MIN)                                  \
    TOPOAR_REDUCE_INT_TYPES_(X, max, TOPOAR_REDOP_MAX)                                  \
    TOPOAR_REDUCE_INT_TYPES_(X, land, TOPOAR_REDOP_LAND)                                \
    TOPOAR_REDUCE_INT_TYPES_(X, lor, TOPOAR_REDOP_LOR)                                  \
    TOPOAR_REDUCE_INT_TYPES_(X, lxor, TOPOAR_REDOP_LXOR)                                \
    TOPOAR_REDUCE_INT_TYPES_(X, band, TOPOAR_REDOP_BAND)                                \
    TOPOAR_REDUCE_INT_TYPES_(X, bor, TOPOAR_REDOP_BOR)                                  \
    TOPOAR_REDUCE_INT_TYPES_(X, bxor, TOPOAR_REDOP_BXOR)                                \
    TOPOAR_REDUCE_FLOAT_TYPES_(X, sum, TOPOAR_REDOP_SUM)                                \
    TOPOAR_REDUCE_FLOAT_TYPES_(X, prod, TOPOAR_REDOP_PROD)                              \
    TOPOAR_REDUCE_FLOAT_TYPES_(X, min, TOPOAR_REDOP_MIN)                                \
    TOPOAR_REDUCE_FLOAT_TYPES_(X, max, TOPOAR_REDOP_MAX)                                \
    TOPOAR_REDUCE_COMPLEX_TYPES_(X, sum, TOPOAR_REDOP_SUM)                              \
    TOPOAR_REDUCE_COMPLEX_TYPES_(X, prod, TOPOAR_REDOP_PROD)                            \
    TOPOAR_REDUCE_X_(X, land, TOPOAR_REDOP_LAND, bool, TOPOAR_REDTYPE_BOOL)             \
    TOPOAR_REDUCE_X_(X, lor, TOPOAR_REDOP_LOR, bool, TOPOAR_REDTYPE_BOOL)               \
    TOPOAR_REDUCE_X_(X, lxor, TOPOAR_REDOP_LXOR, bool, TOPOAR_REDTYPE_BOOL)             \
    TOPOAR_REDUCE_PAIR_TYPES_(X, maxloc, TOPOAR_REDOP_MAXLOC)                           \
    TOPOAR_REDUCE_PAIR_TYPES_(X, minloc, TOPOAR_REDOP_MINLOC)

// Pairs on types CUDA has no arithmetic for (long double).
#define TOPOAR_REDUCE_HOST_ONLY_PAIRS(X)                                                \
    TOPOAR_REDUCE_X_(X, sum, TOPOAR_REDOP_SUM, long_double, TOPOAR_REDTYPE_LONG_DOUBLE) \
    TOPOAR_REDUCE_X_(X, prod, TOPOAR_REDOP_PROD, long_double, TOPOAR_REDTYPE_LONG_DOUBLE) \
    TOPOAR_REDUCE_X_(X, min, TOPOAR_REDOP_MIN, long_double, TOPOAR_REDTYPE_LONG_DOUBLE) \
    TOPOAR_REDUCE_X_(X, max, TOPOAR_REDOP_MAX, long_double, TOPOAR_REDTYPE_LONG_DOUBLE) \
    TOPOAR_REDUCE_X_(X, maxloc, TOPOAR_REDOP_MAXLOC, long_double_int, TOPOAR_REDTYPE_LONG_DOUBLE_INT) \
    TOPOAR_REDUCE_X_(X, minloc, TOPOAR_REDOP_MINLOC, long_double_int, TOPOAR_REDTYPE_LONG_DOUBLE_INT)

#define TOPOAR_REDUCE_HOST_PAIRS(X)                                                     \
    TOPOAR_REDUCE_DEVICE_PAIRS(X)                                                       \
    TOPOAR_REDUCE_HOST_ONLY_PAIRS(X)

// ---- the element-wise operations -----------------------------------------

// Unsigned arithmetic type for wrapping integer SUM/PROD: the unsigned
// version of T, at least as wide as unsigned int so no operand is promoted
// to (signed) int.
template <class T>
using wrap_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <int OP, class T>
TOPOAR_HD inline T apply_integer(T in, T io)
{
    using U = wrap_t<T>;
    if constexpr (OP == TOPOAR_REDOP_SUM) {
        return static_cast<T>(static_cast<U>(static_cast<U>(in) + static_cast<U>(io)));
    } else if constexpr (OP == TOPOAR_REDOP_PROD) {
        return static_cast<T>(static_cast<U>(static_cast<U>(in) * static_cast<U>(io)));
    } else if constexpr (OP == TOPOAR_REDOP_MIN) {
        return in < io ? in : io;
    } else if constexpr (OP == TOPOAR_REDOP_MAX) {
        return in > io ? in : io;
    } else if constexpr (OP == TOPOAR_REDOP_LAND) {
        return static_cast<T>((in != 0) & (io != 0));
    } else if constexpr (OP == TOPOAR_REDOP_LOR) {
        return static_cast<T>((in != 0) | (io != 0));
    } else if constexpr (OP == TOPOAR_REDOP_LXOR) {
        return static_cast<T>((in != 0) ^ (io != 0));
    } else if constexpr (OP == TOPOAR_REDOP_BAND) {
        return static_cast<T>(in & io);
    } else if constexpr (OP == TOPOAR_REDOP_BOR) {
        return static_cast<T>(in | io);
    } else {
        static_assert(OP == TOPOAR_REDOP_BXOR, "integer op");
        return static_cast<T>(in ^ io);
    }
}

template <int OP, class T>
TOPOAR_HD inline T apply_floating(T in, T io)
{
    if constexpr (OP == TOPOAR_REDOP_SUM) {
        return in + io;
    } else if constexpr (OP == TOPOAR_REDOP_PROD) {
        return in * io;
    } else if constexpr (OP == TOPOAR_REDOP_MIN) {
        return in < io ? in : io;
    } else {
        static_assert(OP == TOPOAR_REDOP_MAX, "floating-point op");
        return in > io ? in : io;
    }
}

// Complex product as (ac - bd) + (ad + bc)i, the textbook formula without
// C99 Annex G's NaN/infinity recovery.  Device code is compiled without FMA
// contraction, so host and device give the same bits.
template <int OP, class C>
TOPOAR_HD inline C apply_complex(C in, C io)
{
    if constexpr (OP == TOPOAR_REDOP_SUM) {
        return C{in.re + io.re, in.im + io.im};
    } else {
        static_assert(OP == TOPOAR_REDOP_PROD, "complex op");
        return C{in.re * io.re - in.im * io.im, in.re * io.im + in.im * io.re};
    }
}

template <int OP>
TOPOAR_HD inline boolean apply_logical(boolean in, boolean io)
{
    const bool a = in.v != 0, b = io.v != 0;
    if constexpr (OP == TOPOAR_REDOP_LAND) {
        return boolean{static_cast<uint8_t>(a & b)};
    } else if constexpr (OP == TOPOAR_REDOP_LOR) {
        return boolean{static_cast<uint8_t>(a | b)};
    } else {
        static_assert(OP == TOPOAR_REDOP_LXOR, "logical op");
        return boolean{static_cast<uint8_t>(a ^ b)};
    }
}

// MAXLOC/MINLOC: the extreme value with its index; equal values keep the
// smaller index (MPI-4.0 section 6.9.4).
template <int OP, class P>
TOPOAR_HD inline P apply_pair(P in, P io)
{
    static_assert(OP == TOPOAR_REDOP_MAXLOC || OP == TOPOAR_REDOP_MINLOC, "pair op");
    const bool in_wins = OP == TOPOAR_REDOP_MAXLOC ? in.v > io.v : in.v < io.v;
    if (in_wins) return in;
    if (in.v == io.v && in.k < io.k) io.k = in.k;
    return io;
}

// The one entry the loops and kernels call: new inout = in OP inout.
template <int OP, int TYPE>
struct elementwise {
    using T = typename type_info<TYPE>::type;
    static constexpr Category category = type_info<TYPE>::category;
    static_assert(op_allowed(OP, category), "MPI does not define this op on this type");

    TOPOAR_HD static inline T apply(T in, T io)
    {
        if constexpr (category == Category::integer) {
            return apply_integer<OP>(in, io);
        } else if constexpr (category == Category::floating) {
            return apply_floating<OP>(in, io);
        } else if constexpr (category == Category::complex) {
            return apply_complex<OP>(in, io);
        } else if constexpr (category == Category::logical) {
            return apply_logical<OP>(in, io);
        } else {
            return apply_pair<OP>(in, io);
        }
    }
};

}  // namespace reduce
}  // namespace topoar
