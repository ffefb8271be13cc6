#include "exec/fast_executor.hpp"

#include <algorithm>

#include "reduce/reduce_ops.hpp"

namespace topoar {

bool fast_eligible(const ExecProgram& prog, std::size_t bytes) {
    if (bytes > kFastMaxBytes || prog.round_begin.empty()) return false;
    for (std::size_t r = 0; r + 1 < prog.round_begin.size(); ++r)
        if (prog.round_begin[r + 1] - prog.round_begin[r] > static_cast<std::size_t>(kFastMaxRoundSteps)) return false;
    return true;
}

FastProgram compile_fast(const ExecProgram& prog, std::size_t elem_size) {
    FastProgram f;
    f.elem_size = elem_size;
    f.steps.reserve(prog.steps.size());
    for (std::size_t r = 0; r + 1 < prog.round_begin.size(); ++r) {
        f.round_begin.push_back(static_cast<std::uint32_t>(f.steps.size()));
        std::size_t land = 0;  // the round's receives, one after the other
        for (std::size_t i = prog.round_begin[r]; i < prog.round_begin[r + 1]; ++i) {
            const ExecProgram::Step& s = prog.steps[i];
            FastStep t;
            t.offset = s.offset * elem_size;
            t.count = s.count;
            t.bytes = s.count * elem_size;
            t.peer = s.peer;
            switch (s.kind) {
            case OpKind::send: t.kind = FastKind::send; break;
            case OpKind::recv_copy: t.kind = FastKind::copy; break;
            case OpKind::recv_reduce:
                t.kind = s.order == Operand::incoming_first ? FastKind::reduce_in_first : FastKind::reduce_own_first;
                break;
            }
            if (s.kind != OpKind::send) {
                t.direct = prog.direct[i] != 0;
                if (!t.direct) {
                    t.land = land;
                    land += t.bytes;
                }
            }
            f.steps.push_back(t);
        }
        f.scratch_bytes = std::max(f.scratch_bytes, land);
    }
    f.round_begin.push_back(static_cast<std::uint32_t>(f.steps.size()));
    return f;
}

namespace {

template <int OP, int TYPE>
inline void inline_loop(const void* in_v, void* inout_v, std::size_t count) {
    using E = reduce::elementwise<OP, TYPE>;
    using T = typename E::T;
    const T* in = static_cast<const T*>(in_v);
    T* inout = static_cast<T*>(inout_v);
    for (std::size_t i = 0; i < count; ++i) inout[i] = E::apply(in[i], inout[i]);
}

// The inlined pairs: X(kernel number, op, type).
#define TOPOAR_FAST_PAIRS(X)                                  \
    X(1, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_INT8)               \
    X(2, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_UINT8)              \
    X(3, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_INT32)              \
    X(4, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_UINT32)             \
    X(5, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_INT64)              \
    X(6, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_UINT64)             \
    X(7, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT32)            \
    X(8, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT64)            \
    X(9, TOPOAR_REDOP_MAX, TOPOAR_REDTYPE_INT32)              \
    X(10, TOPOAR_REDOP_MAX, TOPOAR_REDTYPE_FLOAT64)           \
    X(11, TOPOAR_REDOP_MIN, TOPOAR_REDTYPE_INT32)             \
    X(12, TOPOAR_REDOP_MIN, TOPOAR_REDTYPE_FLOAT64)

}  // namespace

FastReduce::FastReduce(int redop, int redtype) : op_(redop), type_(redtype) {
    // A pair topoar_reduce_host does not implement returns false below.
    own_ = redop >= 0 && redtype >= 0;
#define TOPOAR_FAST_KERNEL_(k, o, t) \
    if (own_ && redop == (o) && redtype == (t)) kernel_ = (k);
    TOPOAR_FAST_PAIRS(TOPOAR_FAST_KERNEL_)
#undef TOPOAR_FAST_KERNEL_
}

bool FastReduce::operator()(const void* in, void* inout, std::size_t count) const {
    switch (kernel_) {
#define TOPOAR_FAST_CASE_(k, o, t) \
    case (k): inline_loop<(o), (t)>(in, inout, count); return true;
        TOPOAR_FAST_PAIRS(TOPOAR_FAST_CASE_)
#undef TOPOAR_FAST_CASE_
    default: break;
    }
    return own_ && topoar_reduce_host(op_, type_, in, inout, count) == 0;
}

}  // namespace topoar
