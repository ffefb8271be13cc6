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

Status FastOperation::start(const FastProgram& prog, char* buf, Transport& transport, Reducer& reducer) {
    abandon();
    prog_ = &prog;
    buf_ = buf;
    transport_ = &transport;
    reducer_ = &reducer;
    if (prog.scratch_bytes > scratch_size_) {
        scratch_.reset(new char[prog.scratch_bytes]);
        scratch_size_ = prog.scratch_bytes;
    }
    round_ = 0;
    running_ = prog.round_begin.size() > 1;
    return running_ ? post_round() : Status::ok();
}

Status FastOperation::post_round() {
    const std::uint32_t lo = prog_->round_begin[round_], hi = prog_->round_begin[round_ + 1];
    char* scratch = scratch_.get();
    n_ = pending_ = 0;
    // Receives first, so a peer's message finds its receive posted.
    for (int pass = 0; pass < 2; ++pass) {
        for (std::uint32_t i = lo; i < hi; ++i) {
            const FastStep& s = prog_->steps[i];
            const bool send = s.kind == FastKind::send;
            if (send != (pass == 1)) continue;
            Status st = send ? transport_->isend(buf_ + s.offset, s.bytes, s.peer, &req_[n_])
                             : transport_->irecv(s.direct ? buf_ + s.offset : scratch + s.land, s.bytes, s.peer,
                                                 &req_[n_]);
            if (!st) {
                abandon();
                return Status(st.code(), "fast operation: " + std::string(send ? "isend" : "irecv") + " of step " +
                                              std::to_string(i) + " (round " + std::to_string(round_) + ", peer " +
                                              std::to_string(s.peer) + ", " + std::to_string(s.bytes) +
                                              " bytes): " + st.message());
            }
            live_[n_++] = true;
            ++pending_;
        }
    }
    return Status::ok();
}

Status FastOperation::advance(bool* done, bool* moved) {
    *done = false;
    *moved = false;
    if (!running_) {
        *done = true;
        return Status::ok();
    }
    for (int k = 0; k < n_ && pending_ > 0; ++k) {
        if (!live_[k]) continue;
        bool complete = false;
        Status st = transport_->test(&req_[k], &complete);
        if (!st) {
            live_[k] = false;  // the transport ended it
            --pending_;
            abandon();
            return Status(st.code(), "fast operation: round " + std::to_string(round_) + ": " + st.message());
        }
        if (complete) {
            live_[k] = false;
            --pending_;
        }
    }
    if (pending_ > 0) return Status::ok();
    // The round is complete: its receives applied in step order.
    apply_round(*prog_, prog_->round_begin[round_], prog_->round_begin[round_ + 1], buf_, scratch_.get(), *reducer_);
    *moved = true;
    n_ = 0;
    if (++round_ + 1 >= prog_->round_begin.size()) {
        running_ = false;
        *done = true;
        return Status::ok();
    }
    return post_round();
}

void FastOperation::abandon() {
    for (int k = 0; k < n_; ++k) {
        if (live_[k]) {
            (void) transport_->cancel(&req_[k]);
            live_[k] = false;
        }
    }
    n_ = pending_ = 0;
    running_ = false;
}

}  // namespace topoar
