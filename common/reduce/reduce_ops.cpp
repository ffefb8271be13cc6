// Host loops of topoar's typed reduction and the C entry points of
// topoar_reduce.h.
//
// Each supported pair gets one loop, host_loop<OP, TYPE>, over __restrict
// pointers so the compiler vectorizes it (this file is built with
// -ftree-vectorize -fvect-cost-model=dynamic, see common/Makefile.am: GCC's
// -O2 "very cheap" model refuses loops of unknown trip count).  On x86-64 each
// loop is also compiled for AVX2 and picked at load time (target_clones),
// so one portable binary runs 32-byte vectors where the CPU has them:
// with SSE2 alone, integer sums ran at half the speed of Open MPI's op/avx
// component (tools/topoar_reduce_bench, 1-4 MiB).
#include "reduce_ops.hpp"

#include <cstddef>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define TOPOAR_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef TOPOAR_CLONES
#define TOPOAR_CLONES
#endif

namespace topoar {
namespace reduce {
namespace {

using loop_fn = void (*)(const void* in, void* inout, size_t count);

template <int OP, int TYPE>
TOPOAR_CLONES void host_loop(const void* in_, void* inout_, size_t count)
{
    using E = elementwise<OP, TYPE>;
    using T = typename E::T;
    const T* __restrict in = static_cast<const T*>(in_);
    T* __restrict inout = static_cast<T*>(inout_);
    for (size_t i = 0; i < count; ++i) inout[i] = E::apply(in[i], inout[i]);
}

struct Tables {
    loop_fn host[TOPOAR_REDOP_COUNT][TOPOAR_REDTYPE_COUNT] = {};
    bool device[TOPOAR_REDOP_COUNT][TOPOAR_REDTYPE_COUNT] = {};

    Tables()
    {
#define TOPOAR_HOST_ENTRY_(o, O, t, T) host[O][T] = &host_loop<O, T>;
#define TOPOAR_DEVICE_ENTRY_(o, O, t, T) device[O][T] = true;
        TOPOAR_REDUCE_HOST_PAIRS(TOPOAR_HOST_ENTRY_)
        TOPOAR_REDUCE_DEVICE_PAIRS(TOPOAR_DEVICE_ENTRY_)
#undef TOPOAR_HOST_ENTRY_
#undef TOPOAR_DEVICE_ENTRY_
    }
};

const Tables& tables()
{
    static const Tables t;
    return t;
}

bool in_range(int op, int type)
{
    return op >= 0 && op < TOPOAR_REDOP_COUNT && type >= 0 && type < TOPOAR_REDTYPE_COUNT;
}

#define TOPOAR_OP_NAME_(E, name) #name,
const char* const kOpNames[TOPOAR_REDOP_COUNT] = {TOPOAR_REDUCE_OPS(TOPOAR_OP_NAME_)};
#undef TOPOAR_OP_NAME_
#define TOPOAR_TYPE_NAME_(E, name, ctype, cat) #name,
const char* const kTypeNames[TOPOAR_REDTYPE_COUNT] = {TOPOAR_REDUCE_TYPES(TOPOAR_TYPE_NAME_)};
#undef TOPOAR_TYPE_NAME_
#define TOPOAR_TYPE_SIZE_(E, name, ctype, cat) sizeof(ctype),
const size_t kTypeSizes[TOPOAR_REDTYPE_COUNT] = {TOPOAR_REDUCE_TYPES(TOPOAR_TYPE_SIZE_)};
#undef TOPOAR_TYPE_SIZE_

// The X-lists are in enum order (the name arrays above rely on it).
#define TOPOAR_COUNT_(...) +1
static_assert(0 TOPOAR_REDUCE_OPS(TOPOAR_COUNT_) == TOPOAR_REDOP_COUNT, "op list");
static_assert(0 TOPOAR_REDUCE_TYPES(TOPOAR_COUNT_) == TOPOAR_REDTYPE_COUNT, "type list");
#undef TOPOAR_COUNT_
constexpr int kOpOrder[] = {
#define TOPOAR_ENUM_(E, ...) E,
    TOPOAR_REDUCE_OPS(TOPOAR_ENUM_)};
constexpr int kTypeOrder[] = {TOPOAR_REDUCE_TYPES(TOPOAR_ENUM_)};
#undef TOPOAR_ENUM_
constexpr bool in_enum_order(const int* v, int n)
{
    for (int i = 0; i < n; ++i)
        if (v[i] != i) return false;
    return true;
}
static_assert(in_enum_order(kOpOrder, TOPOAR_REDOP_COUNT), "TOPOAR_REDUCE_OPS not in enum order");
static_assert(in_enum_order(kTypeOrder, TOPOAR_REDTYPE_COUNT), "TOPOAR_REDUCE_TYPES not in enum order");

// The pair structs must have MPI's layout (value at offset 0).
static_assert(sizeof(double_int) == 16 && sizeof(short_int) == 8 && sizeof(two_int) == 8, "pair layout");
static_assert(sizeof(boolean) == 1 && sizeof(complex_float) == 8 && sizeof(complex_double) == 16, "layout");

}  // namespace
}  // namespace reduce
}  // namespace topoar

using namespace topoar::reduce;

extern "C" int topoar_reduce_host(int op, int type, const void* in, void* inout, size_t count)
{
    if (!in_range(op, type)) return TOPOAR_REDUCE_UNSUPPORTED;
    loop_fn fn = tables().host[op][type];
    if (fn == nullptr) return TOPOAR_REDUCE_UNSUPPORTED;
    if (count > 0) fn(in, inout, count);
    return 0;
}

extern "C" int topoar_reduce_supported(int op, int type, int on_device)
{
    if (!in_range(op, type)) return 0;
    return on_device ? tables().device[op][type] : tables().host[op][type] != nullptr;
}

extern "C" const char* topoar_reduce_op_name(int op)
{
    return op >= 0 && op < TOPOAR_REDOP_COUNT ? kOpNames[op] : nullptr;
}

extern "C" const char* topoar_reduce_type_name(int type)
{
    return type >= 0 && type < TOPOAR_REDTYPE_COUNT ? kTypeNames[type] : nullptr;
}

extern "C" size_t topoar_reduce_type_size(int type)
{
    return type >= 0 && type < TOPOAR_REDTYPE_COUNT ? kTypeSizes[type] : 0;
}
