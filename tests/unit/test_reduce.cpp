// Unit tests of topoar's typed reduction (common/reduce/topoar_reduce.h):
// every op/type pair against references computed here by other means
// (128-bit integer arithmetic with explicit masking, long double for exact
// floating-point data, explicit MINLOC/MAXLOC rules), integer wrap-around at
// the limits, logical results 0/1, MINLOC/MAXLOC ties, counts 0, 1, 7, 1000,
// 100003 from unaligned starts with guard elements on both sides, the pair
// table against the MPI standard's, names and sizes.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
}

#include "topoar_reduce.h"

namespace {

// Independent copies of the pair layouts (MPI's C structs).
struct cfloat {
    float re, im;
};
struct cdouble {
    double re, im;
};
template <class V>
struct vi {
    V v;
    int k;
};

const size_t kCounts[] = {0, 1, 7, 1000, 100003};

std::mt19937_64& rng()
{
    static std::mt19937_64 r(20240611);
    return r;
}

// ---- the MPI standard's table (MPI-4.0 6.9.2), written out --------------

enum Kind { kInt, kFloat, kComplex, kBool, kPair };

Kind kind_of(int type)
{
    switch (type) {
    case TOPOAR_REDTYPE_INT8: case TOPOAR_REDTYPE_UINT8: case TOPOAR_REDTYPE_INT16:
    case TOPOAR_REDTYPE_UINT16: case TOPOAR_REDTYPE_INT32: case TOPOAR_REDTYPE_UINT32:
    case TOPOAR_REDTYPE_INT64: case TOPOAR_REDTYPE_UINT64:
        return kInt;
    case TOPOAR_REDTYPE_FLOAT32: case TOPOAR_REDTYPE_FLOAT64: case TOPOAR_REDTYPE_LONG_DOUBLE:
        return kFloat;
    case TOPOAR_REDTYPE_COMPLEX_FLOAT: case TOPOAR_REDTYPE_COMPLEX_DOUBLE:
        return kComplex;
    case TOPOAR_REDTYPE_BOOL:
        return kBool;
    default:
        return kPair;
    }
}

bool mpi_allows(int op, int type)
{
    switch (kind_of(type)) {
    case kInt:  // C integer: arithmetic, min/max, logical, bitwise
        return op != TOPOAR_REDOP_MAXLOC && op != TOPOAR_REDOP_MINLOC;
    case kFloat:
        return op == TOPOAR_REDOP_SUM || op == TOPOAR_REDOP_PROD || op == TOPOAR_REDOP_MIN ||
               op == TOPOAR_REDOP_MAX;
    case kComplex:
        return op == TOPOAR_REDOP_SUM || op == TOPOAR_REDOP_PROD;
    case kBool:
        return op == TOPOAR_REDOP_LAND || op == TOPOAR_REDOP_LOR || op == TOPOAR_REDOP_LXOR;
    case kPair:
        return op == TOPOAR_REDOP_MAXLOC || op == TOPOAR_REDOP_MINLOC;
    }
    return false;
}

bool host_only(int type)
{
    return type == TOPOAR_REDTYPE_LONG_DOUBLE || type == TOPOAR_REDTYPE_LONG_DOUBLE_INT;
}

// ---- the driver: every count, unaligned, guards, against a reference ----

// Runs op/type on `count` elements starting one element past an allocation
// (so never at the allocation's alignment), with one guard element on each
// side that must come back unchanged.
template <class T, class Gen, class Ref, class Eq>
void check_pair(int op, int type, Gen gen, Ref ref, Eq eq)
{
    assert_int_equal(topoar_reduce_type_size(type), sizeof(T));
    for (size_t count : kCounts) {
        std::vector<T> in(count + 2), io(count + 2);
        for (size_t i = 0; i < count + 2; ++i) {
            in[i] = gen();
            io[i] = gen();
        }
        const std::vector<T> before = io;
        int rc = topoar_reduce_host(op, type, in.data() + 1, io.data() + 1, count);
        assert_int_equal(rc, 0);
        assert_memory_equal(&io[0], &before[0], sizeof(T));
        assert_memory_equal(&io[count + 1], &before[count + 1], sizeof(T));
        for (size_t i = 1; i <= count; ++i) {
            const T want = ref(in[i], before[i]);
            if (!eq(io[i], want)) {
                print_error("%s/%s count %zu: element %zu differs\n", topoar_reduce_op_name(op),
                            topoar_reduce_type_name(type), count, i - 1);
                fail();
            }
        }
    }
}

// ---- integers -----------------------------------------------------------

using u128 = unsigned __int128;

// The exact result modulo 2^bits, by 128-bit arithmetic and a mask.
template <class T>
T wrap128(u128 v)
{
    constexpr int bits = 8 * sizeof(T);
    const u128 mask = bits == 128 ? ~u128(0) : ((u128(1) << bits) - 1);
    v &= mask;
    if (std::is_signed<T>::value && (v >> (bits - 1)) != 0) {
        // negative: v - 2^bits, built without overflowing T
        const long long neg = static_cast<long long>(static_cast<__int128>(v) - (static_cast<__int128>(1) << bits));
        return static_cast<T>(neg);
    }
    return static_cast<T>(static_cast<unsigned long long>(v));
}

template <class T>
u128 widen(T a)
{
    return static_cast<u128>(static_cast<__int128>(a));  // sign-extends, mod 2^128
}

template <class T>
T ref_int(int op, T a, T b)
{
    switch (op) {
    case TOPOAR_REDOP_SUM: return wrap128<T>(widen(a) + widen(b));
    case TOPOAR_REDOP_PROD: return wrap128<T>(widen(a) * widen(b));
    case TOPOAR_REDOP_MIN: return b < a ? b : a;
    case TOPOAR_REDOP_MAX: return b > a ? b : a;
    case TOPOAR_REDOP_LAND: return (a && b) ? 1 : 0;
    case TOPOAR_REDOP_LOR: return (a || b) ? 1 : 0;
    case TOPOAR_REDOP_LXOR: return (!a != !b) ? 1 : 0;
    case TOPOAR_REDOP_BAND: return wrap128<T>(widen(a) & widen(b));
    case TOPOAR_REDOP_BOR: return wrap128<T>(widen(a) | widen(b));
    case TOPOAR_REDOP_BXOR: return wrap128<T>(widen(a) ^ widen(b));
    }
    fail_msg("bad op %d", op);
    return 0;
}

// Values near the limits most of the time, so sums and products wrap.
template <class T>
T int_value()
{
    using L = std::numeric_limits<T>;
    const T special[] = {L::min(), L::max(), static_cast<T>(L::min() + 1), static_cast<T>(L::max() - 1),
                         0, 1, static_cast<T>(-1), 2, static_cast<T>(L::max() / 2 + 1)};
    const uint64_t r = rng()();
    if (r % 3 == 0) return special[(r >> 8) % (sizeof(special) / sizeof(special[0]))];
    if (r % 3 == 1) return static_cast<T>(static_cast<int>((r >> 8) % 5) - 2);  // logical data
    return static_cast<T>(r >> 3);
}

template <class T>
void check_integer_type(int type)
{
    for (int op = TOPOAR_REDOP_SUM; op <= TOPOAR_REDOP_BXOR; ++op) {
        check_pair<T>(op, type, int_value<T>, [op](T in, T io) { return ref_int<T>(op, in, io); },
                      [](T x, T y) { return x == y; });
    }
}

void test_integer_types(void**)
{
    check_integer_type<int8_t>(TOPOAR_REDTYPE_INT8);
    check_integer_type<uint8_t>(TOPOAR_REDTYPE_UINT8);
    check_integer_type<int16_t>(TOPOAR_REDTYPE_INT16);
    check_integer_type<uint16_t>(TOPOAR_REDTYPE_UINT16);
    check_integer_type<int32_t>(TOPOAR_REDTYPE_INT32);
    check_integer_type<uint32_t>(TOPOAR_REDTYPE_UINT32);
    check_integer_type<int64_t>(TOPOAR_REDTYPE_INT64);
    check_integer_type<uint64_t>(TOPOAR_REDTYPE_UINT64);
}

// Known answers at the limits, written out (17 elements: a vector loop and
// its tail both see them).
template <class T>
void expect_one(int op, int type, T in, T io, T want)
{
    std::vector<T> a(17, in), b(17, io);
    assert_int_equal(topoar_reduce_host(op, type, a.data(), b.data(), a.size()), 0);
    for (T v : b) {
        if (v != want) {
            print_error("%s/%s: got %lld, want %lld\n", topoar_reduce_op_name(op), topoar_reduce_type_name(type),
                        static_cast<long long>(v), static_cast<long long>(want));
            fail();
        }
    }
}

void test_integer_limits(void**)
{
    const int S = TOPOAR_REDOP_SUM, P = TOPOAR_REDOP_PROD;
    expect_one<int8_t>(S, TOPOAR_REDTYPE_INT8, 127, 1, -128);
    expect_one<int8_t>(S, TOPOAR_REDTYPE_INT8, -128, -1, 127);
    expect_one<int8_t>(S, TOPOAR_REDTYPE_INT8, 100, 100, -56);  // saturating op/avx would give 127
    expect_one<int8_t>(P, TOPOAR_REDTYPE_INT8, -128, -1, -128);
    expect_one<int8_t>(P, TOPOAR_REDTYPE_INT8, 16, 16, 0);
    expect_one<uint8_t>(S, TOPOAR_REDTYPE_UINT8, 255, 1, 0);
    expect_one<uint8_t>(P, TOPOAR_REDTYPE_UINT8, 255, 255, 1);
    expect_one<int16_t>(S, TOPOAR_REDTYPE_INT16, 32767, 1, -32768);
    expect_one<int16_t>(P, TOPOAR_REDTYPE_INT16, 300, 300, 24464);  // 90000 - 65536
    expect_one<int16_t>(P, TOPOAR_REDTYPE_INT16, -32768, -1, -32768);
    expect_one<uint16_t>(P, TOPOAR_REDTYPE_UINT16, 65535, 65535, 1);  // int promotion would overflow
    expect_one<int32_t>(S, TOPOAR_REDTYPE_INT32, INT32_MAX, 1, INT32_MIN);
    expect_one<int32_t>(S, TOPOAR_REDTYPE_INT32, INT32_MIN, INT32_MIN, 0);
    expect_one<int32_t>(P, TOPOAR_REDTYPE_INT32, 65536, 65536, 0);
    expect_one<int32_t>(P, TOPOAR_REDTYPE_INT32, INT32_MIN, -1, INT32_MIN);
    expect_one<uint32_t>(S, TOPOAR_REDTYPE_UINT32, UINT32_MAX, 2, 1);
    expect_one<int64_t>(S, TOPOAR_REDTYPE_INT64, INT64_MAX, 1, INT64_MIN);
    expect_one<int64_t>(P, TOPOAR_REDTYPE_INT64, INT64_MIN, -1, INT64_MIN);
    expect_one<int64_t>(P, TOPOAR_REDTYPE_INT64, 4294967296LL, 4294967296LL, 0);
    expect_one<uint64_t>(P, TOPOAR_REDTYPE_UINT64, UINT64_MAX, UINT64_MAX, 1);
    // Logical ops give 0/1, whatever nonzero values come in.
    expect_one<int32_t>(TOPOAR_REDOP_LAND, TOPOAR_REDTYPE_INT32, 5, -7, 1);
    expect_one<int32_t>(TOPOAR_REDOP_LOR, TOPOAR_REDTYPE_INT32, 0, 1 << 30, 1);
    expect_one<int32_t>(TOPOAR_REDOP_LXOR, TOPOAR_REDTYPE_INT32, 3, 4, 0);
    expect_one<uint8_t>(TOPOAR_REDOP_LXOR, TOPOAR_REDTYPE_UINT8, 0, 128, 1);
    expect_one<int64_t>(TOPOAR_REDOP_LAND, TOPOAR_REDTYPE_INT64, INT64_MIN, 1, 1);
    expect_one<int16_t>(TOPOAR_REDOP_MIN, TOPOAR_REDTYPE_INT16, -32768, 32767, -32768);
    expect_one<uint64_t>(TOPOAR_REDOP_MAX, TOPOAR_REDTYPE_UINT64, UINT64_MAX, 1, UINT64_MAX);
}

// ---- floating point, complex: data whose results are exact --------------

// Multiples of 1/4 up to 64 in magnitude: sums and products are exact in
// float, so any correct evaluation order gives the reference's bits.
template <class T>
T quarter_value()
{
    return static_cast<T>(static_cast<long double>(static_cast<int>(rng()() % 513) - 256) / 4);
}

template <class T>
T ref_float(int op, T a, T b)
{
    const long double x = a, y = b;
    switch (op) {
    case TOPOAR_REDOP_SUM: return static_cast<T>(x + y);
    case TOPOAR_REDOP_PROD: return static_cast<T>(x * y);
    case TOPOAR_REDOP_MIN: return static_cast<T>(y < x ? y : x);
    case TOPOAR_REDOP_MAX: return static_cast<T>(y > x ? y : x);
    }
    fail_msg("bad op %d", op);
    return 0;
}

template <class T>
void check_float_type(int type)
{
    for (int op : {TOPOAR_REDOP_SUM, TOPOAR_REDOP_PROD, TOPOAR_REDOP_MIN, TOPOAR_REDOP_MAX}) {
        check_pair<T>(op, type, quarter_value<T>, [op](T in, T io) { return ref_float<T>(op, in, io); },
                      [](T x, T y) { return x == y; });
    }
}

void test_floating_types(void**)
{
    check_float_type<float>(TOPOAR_REDTYPE_FLOAT32);
    check_float_type<double>(TOPOAR_REDTYPE_FLOAT64);
    check_float_type<long double>(TOPOAR_REDTYPE_LONG_DOUBLE);
    // Large values still add in the element's precision (not in a wider one).
    expect_one<float>(TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT32, 16777216.0f, 1.0f, 16777216.0f);
    expect_one<double>(TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT64, 9007199254740992.0, 1.0, 9007199254740992.0);
    expect_one<float>(TOPOAR_REDOP_MIN, TOPOAR_REDTYPE_FLOAT32, -std::numeric_limits<float>::infinity(), 3.0f,
                      -std::numeric_limits<float>::infinity());
    expect_one<double>(TOPOAR_REDOP_MAX, TOPOAR_REDTYPE_FLOAT64, std::numeric_limits<double>::max(), -1e300,
                       std::numeric_limits<double>::max());
}

template <class C, class R>
void check_complex_type(int type)
{
    auto gen = [] { return C{quarter_value<R>(), quarter_value<R>()}; };
    auto eq = [](C x, C y) { return x.re == y.re && x.im == y.im; };
    check_pair<C>(TOPOAR_REDOP_SUM, type, gen,
                  [](C a, C b) { return C{static_cast<R>((long double)a.re + b.re), static_cast<R>((long double)a.im + b.im)}; },
                  eq);
    // (a + bi)(c + di) = (ac - bd) + (ad + bc)i, in long double: exact here.
    check_pair<C>(TOPOAR_REDOP_PROD, type, gen,
                  [](C x, C y) {
                      const long double a = x.re, b = x.im, c = y.re, d = y.im;
                      return C{static_cast<R>(a * c - b * d), static_cast<R>(a * d + b * c)};
                  },
                  eq);
}

void test_complex_types(void**)
{
    check_complex_type<cfloat, float>(TOPOAR_REDTYPE_COMPLEX_FLOAT);
    check_complex_type<cdouble, double>(TOPOAR_REDTYPE_COMPLEX_DOUBLE);
    // i * i = -1; (1 + 2i)(3 - 4i) = 11 + 2i
    cfloat a[3] = {{0, 1}, {1, 2}, {0, 0}}, b[3] = {{0, 1}, {3, -4}, {5, 5}};
    assert_int_equal(topoar_reduce_host(TOPOAR_REDOP_PROD, TOPOAR_REDTYPE_COMPLEX_FLOAT, a, b, 3), 0);
    assert_true(b[0].re == -1 && b[0].im == 0);
    assert_true(b[1].re == 11 && b[1].im == 2);
    assert_true(b[2].re == 0 && b[2].im == 0);
}

// ---- bool ---------------------------------------------------------------

void test_bool(void**)
{
    // Mostly 0/1; sometimes another nonzero byte, which counts as true.
    auto gen = [] {
        const uint64_t r = rng()();
        return static_cast<uint8_t>(r % 7 == 0 ? 0x80 : r & 1);
    };
    auto eq = [](uint8_t x, uint8_t y) { return x == y; };
    check_pair<uint8_t>(TOPOAR_REDOP_LAND, TOPOAR_REDTYPE_BOOL, gen,
                        [](uint8_t a, uint8_t b) -> uint8_t { return a != 0 && b != 0; }, eq);
    check_pair<uint8_t>(TOPOAR_REDOP_LOR, TOPOAR_REDTYPE_BOOL, gen,
                        [](uint8_t a, uint8_t b) -> uint8_t { return a != 0 || b != 0; }, eq);
    check_pair<uint8_t>(TOPOAR_REDOP_LXOR, TOPOAR_REDTYPE_BOOL, gen,
                        [](uint8_t a, uint8_t b) -> uint8_t { return (a != 0) != (b != 0); }, eq);
    bool x[4] = {true, true, false, false}, y[4] = {true, false, true, false};
    assert_int_equal(topoar_reduce_host(TOPOAR_REDOP_LXOR, TOPOAR_REDTYPE_BOOL, x, y, 4), 0);
    assert_true(!y[0] && y[1] && y[2] && !y[3]);
}

// ---- MINLOC / MAXLOC ----------------------------------------------------

// Few distinct values so ties are frequent; indices anywhere.
template <class V>
vi<V> pair_value()
{
    vi<V> p;
    std::memset(&p, 0, sizeof p);  // padding compares equal in the guards
    const uint64_t r = rng()();
    p.v = static_cast<V>(static_cast<int>(r % 5) - 2);
    p.k = static_cast<int>((r >> 8) % 1000) - 10;
    return p;
}

template <class V>
vi<V> ref_loc(bool max, vi<V> a, vi<V> b)
{
    vi<V> r = b;
    if (a.v == b.v) {
        r.k = a.k < b.k ? a.k : b.k;
    } else if (max ? (a.v > b.v) : (a.v < b.v)) {
        r = a;
    }
    return r;
}

template <class V>
void check_pair_type(int type)
{
    auto eq = [](vi<V> x, vi<V> y) { return x.v == y.v && x.k == y.k; };
    check_pair<vi<V>>(TOPOAR_REDOP_MAXLOC, type, pair_value<V>,
                      [](vi<V> a, vi<V> b) { return ref_loc(true, a, b); }, eq);
    check_pair<vi<V>>(TOPOAR_REDOP_MINLOC, type, pair_value<V>,
                      [](vi<V> a, vi<V> b) { return ref_loc(false, a, b); }, eq);
}

void test_pair_types(void**)
{
    check_pair_type<float>(TOPOAR_REDTYPE_FLOAT_INT);
    check_pair_type<double>(TOPOAR_REDTYPE_DOUBLE_INT);
    check_pair_type<long>(TOPOAR_REDTYPE_LONG_INT);
    check_pair_type<int>(TOPOAR_REDTYPE_2INT);
    check_pair_type<short>(TOPOAR_REDTYPE_SHORT_INT);
    check_pair_type<long double>(TOPOAR_REDTYPE_LONG_DOUBLE_INT);
    // Ties keep the smaller index, whichever side it is on.
    vi<int> in[2] = {{7, 3}, {7, 9}}, io[2] = {{7, 5}, {7, 4}};
    assert_int_equal(topoar_reduce_host(TOPOAR_REDOP_MINLOC, TOPOAR_REDTYPE_2INT, in, io, 2), 0);
    assert_int_equal(io[0].k, 3);
    assert_int_equal(io[1].k, 4);
    vi<double> din = {-1.5, 2}, dio = {-2.5, 1};
    assert_int_equal(topoar_reduce_host(TOPOAR_REDOP_MAXLOC, TOPOAR_REDTYPE_DOUBLE_INT, &din, &dio, 1), 0);
    assert_true(dio.v == -1.5 && dio.k == 2);
}

// ---- the table, names, sizes, rejection ----------------------------------

void test_supported_table(void**)
{
    int host_pairs = 0, device_pairs = 0;
    for (int op = 0; op < TOPOAR_REDOP_COUNT; ++op) {
        for (int type = 0; type < TOPOAR_REDTYPE_COUNT; ++type) {
            const bool want_host = mpi_allows(op, type);
            const bool want_device = want_host && !host_only(type);
            if (topoar_reduce_supported(op, type, 0) != want_host ||
                topoar_reduce_supported(op, type, 1) != want_device) {
                print_error("%s/%s: supported host %d device %d, want %d %d\n", topoar_reduce_op_name(op),
                            topoar_reduce_type_name(type), topoar_reduce_supported(op, type, 0),
                            topoar_reduce_supported(op, type, 1), want_host, want_device);
                fail();
            }
            host_pairs += want_host;
            device_pairs += want_device;
        }
    }
    assert_int_equal(host_pairs, 111);
    assert_int_equal(device_pairs, 105);
}

void test_unsupported_rejected(void**)
{
    // Unsupported pairs write nothing, whatever the count (0 included).
    for (int op = -1; op <= TOPOAR_REDOP_COUNT; ++op) {
        for (int type = -1; type <= TOPOAR_REDTYPE_COUNT; ++type) {
            const bool valid = op >= 0 && op < TOPOAR_REDOP_COUNT && type >= 0 && type < TOPOAR_REDTYPE_COUNT;
            if (valid && mpi_allows(op, type)) continue;
            unsigned char in[64], io[64], before[64];
            std::memset(in, 0x5a, sizeof in);
            std::memset(io, 0x33, sizeof io);
            std::memcpy(before, io, sizeof io);
            assert_int_equal(topoar_reduce_host(op, type, in, io, 1), TOPOAR_REDUCE_UNSUPPORTED);
            assert_int_equal(topoar_reduce_host(op, type, in, io, 0), TOPOAR_REDUCE_UNSUPPORTED);
            assert_memory_equal(io, before, sizeof io);
            assert_int_equal(topoar_reduce_supported(op, type, 0), 0);
            assert_int_equal(topoar_reduce_supported(op, type, 1), 0);
        }
    }
    // A supported pair with count 0 touches nothing, even through NULL.
    assert_int_equal(topoar_reduce_host(TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT64, nullptr, nullptr, 0), 0);
}

void test_names_and_sizes(void**)
{
    const char* ops[] = {"sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor", "maxloc", "minloc"};
    for (int op = 0; op < TOPOAR_REDOP_COUNT; ++op) assert_string_equal(topoar_reduce_op_name(op), ops[op]);
    const char* types[] = {"i8",   "u8",   "i16",       "u16",        "i32",      "u32",  "i64",
                           "u64",  "f32",  "f64",       "long_double", "cf32",    "cf64", "bool",
                           "float_int", "double_int", "long_int", "2int", "short_int", "long_double_int"};
    for (int t = 0; t < TOPOAR_REDTYPE_COUNT; ++t) assert_string_equal(topoar_reduce_type_name(t), types[t]);
    assert_null(topoar_reduce_op_name(-1));
    assert_null(topoar_reduce_op_name(TOPOAR_REDOP_COUNT));
    assert_null(topoar_reduce_type_name(TOPOAR_REDTYPE_COUNT));
    const size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8, sizeof(long double), 8, 16, 1,
                            sizeof(vi<float>), sizeof(vi<double>), sizeof(vi<long>), sizeof(vi<int>),
                            sizeof(vi<short>), sizeof(vi<long double>)};
    for (int t = 0; t < TOPOAR_REDTYPE_COUNT; ++t) assert_int_equal(topoar_reduce_type_size(t), sizes[t]);
    assert_int_equal(topoar_reduce_type_size(-1), 0);
}

}  // namespace

int main()
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_supported_table), cmocka_unit_test(test_unsupported_rejected),
        cmocka_unit_test(test_names_and_sizes), cmocka_unit_test(test_integer_limits),
        cmocka_unit_test(test_integer_types),   cmocka_unit_test(test_floating_types),
        cmocka_unit_test(test_complex_types),   cmocka_unit_test(test_bool),
        cmocka_unit_test(test_pair_types),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
