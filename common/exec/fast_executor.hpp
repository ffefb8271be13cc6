// topoar engine: the small-message fast path -- a compiled plan as flat
// arrays of steps, run round after round, posted straight to the transport.
//
// A small call's time is the software around its few messages (issue 24:
// 8 B on one host, 2 ranks, topoar 0.91 us against tuned's 0.53 us).  The
// host executor (executor.hpp) pays per call for what makes large calls
// fast: the SchedulePolicy's dependency graph rebuilt per run, a window of
// rounds, per-step virtual calls into the Transport and the Reducer.  A
// small plan needs none of it:
//
//   round r:  post every receive of r (in step order)      irecv irecv
//             post every send of r (in step order)         isend
//             wait for all of them                         wait_all
//             apply the receives of r, in step order       reduce / copy
//
// which is plan.hpp's round semantics itself: a send of round r reads what
// the receives of earlier rounds applied, a receive is applied after the
// sends of its round (which read the old value) completed, and the
// receives of a round are applied in schedule order with each step's own
// operand order -- the same reductions in the same order as the host
// executor, so results are bit-identical to it (tests/unit/test_fast.cpp
// checks it for every planner).  Messages pair up as with the executor:
// both post a channel's (peer, direction) steps in schedule order.
//
// FastProgram is built once per compiled plan (engine/plan_cache.hpp) when
// the plan is small (fast_eligible); run_fast is a function template over
// the transport (Io below), so the steps are posted by plain calls, with
// no allocation, no map lookup and no virtual call per step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <memory>

#include "core/transport.hpp"
#include "exec/executor.hpp"
#include "exec/schedule_policy.hpp"
#include "status.hpp"

namespace topoar {

// Calls up to this many bytes may take the fast path: the latency
// algorithm's and the trees' sizes (auto's small-message threshold is
// 8 KiB by default, docs/performance.md).
constexpr std::size_t kFastMaxBytes = std::size_t(16) << 10;
// Steps of one round (the request array lives on the stack).
constexpr int kFastMaxRoundSteps = 32;

enum class FastKind : std::uint8_t {
    send,
    copy,            // buf[range] = message
    reduce_in_first, // buf[range] = message op buf[range]
    reduce_own_first // buf[range] = buf[range] op message
};

struct FastStep {
    std::size_t offset = 0;  // bytes into the buffer
    std::size_t bytes = 0;
    std::size_t count = 0;   // elements
    std::size_t land = 0;    // receives: bytes into the scratch
    int peer = 0;
    FastKind kind = FastKind::send;
    bool direct = false;     // a receive that lands in the buffer itself
};

struct FastProgram {
    std::vector<FastStep> steps;            // schedule order
    std::vector<std::uint32_t> round_begin; // first step of each round (+ end)
    std::size_t scratch_bytes = 0;          // largest round's receives
    std::size_t elem_size = 0;
    bool usable() const { return !round_begin.empty(); }
};

// Whether a call of `bytes` bytes whose compiled program is `prog` runs
// fast: small, and no round larger than kFastMaxRoundSteps.
bool fast_eligible(const ExecProgram& prog, std::size_t bytes);
// The fast form of `prog` (built only when fast_eligible).
FastProgram compile_fast(const ExecProgram& prog, std::size_t elem_size);

// The reduction of a fast run for topoar's own (op, type) pairs
// (reduce/topoar_reduce.h): the common sums, minima and maxima inlined
// from reduce/reduce_ops.hpp's element-wise code (the code the vectorized
// loops run, so the bits are the same), every other pair through
// topoar_reduce_host.  Resolved once per call.
class FastReduce {
public:
    // redop/redtype: topoar's ids of the call's pair; -1: not its own.
    FastReduce(int redop, int redtype);
    bool own() const { return own_; }
    // inout = in op inout for count elements; false (nothing done) when
    // the pair is not topoar's own.
    bool operator()(const void* in, void* inout, std::size_t count) const;

private:
    int op_ = -1, type_ = -1, kernel_ = 0;
    bool own_ = false;
};

// Where a fast run failed (run_fast's answer is the transport's code).
struct FastFailure {
    const char* call = nullptr;  // "isend", "irecv", "wait"
    std::uint32_t step = 0, round = 0;
    int peer = -1;
    std::size_t bytes = 0;
};

// Io: the transport and the reduction, called directly:
//   int  isend(const void* buf, size_t bytes, int peer, void** req)
//   int  irecv(void* buf, size_t bytes, int peer, void** req)
//   int  wait_all(int n, void** reqs)  -- either way nothing is left posted
//   void cancel(void** req)            -- ends a posted request after a failure
//   void reduce(const void* in, void* inout, size_t count)  -- inout = in op inout
// Returns 0, or the failing call's code (every request posted is ended).
// A completed round's receives, applied in step order: copies, and
// reductions with the step's operand order (r.reduce(in, inout, count)).
// run_fast and FastOperation both apply rounds through this, so their
// results are the same bit for bit.
template <class R>
void apply_round(const FastProgram& prog, std::uint32_t lo, std::uint32_t hi, char* buf, char* scratch, R& r) {
    for (std::uint32_t i = lo; i < hi; ++i) {
        const FastStep& s = prog.steps[i];
        if (s.kind == FastKind::send || s.direct) continue;
        char* data = scratch + s.land;
        char* target = buf + s.offset;
        if (s.kind == FastKind::copy) {
            std::memcpy(target, data, s.bytes);
        } else if (s.kind == FastKind::reduce_in_first) {
            r.reduce(data, target, s.count);
        } else {
            r.reduce(target, data, s.count);
            std::memcpy(target, data, s.bytes);
        }
    }
}

template <class Io>
int run_fast(const FastProgram& prog, char* buf, char* scratch, Io& io, FastFailure* failed) {
    void* req[kFastMaxRoundSteps];
    const std::size_t nrounds = prog.round_begin.size() - 1;
    for (std::size_t r = 0; r < nrounds; ++r) {
        const std::uint32_t lo = prog.round_begin[r], hi = prog.round_begin[r + 1];
        int n = 0, rc = 0;
        std::uint32_t i = lo;
        const char* call = "irecv";
        // Receives first, so a peer's message finds its receive posted.
        for (; i < hi && rc == 0; ++i) {
            const FastStep& s = prog.steps[i];
            if (s.kind == FastKind::send) continue;
            rc = io.irecv(s.direct ? buf + s.offset : scratch + s.land, s.bytes, s.peer, &req[n]);
            if (rc == 0) ++n;
        }
        if (rc == 0) {
            call = "isend";
            for (i = lo; i < hi && rc == 0; ++i) {
                const FastStep& s = prog.steps[i];
                if (s.kind != FastKind::send) continue;
                rc = io.isend(buf + s.offset, s.bytes, s.peer, &req[n]);
                if (rc == 0) ++n;
            }
        }
        if (rc != 0) {
            for (int k = 0; k < n; ++k) io.cancel(&req[k]);
            const FastStep& s = prog.steps[i - 1];
            *failed = FastFailure{call, i - 1, static_cast<std::uint32_t>(r), s.peer, s.bytes};
            return rc;
        }
        rc = io.wait_all(n, req);
        if (rc != 0) {
            *failed = FastFailure{"wait", lo, static_cast<std::uint32_t>(r), -1, 0};
            return rc;
        }
        apply_round(prog, lo, hi, buf, scratch, io);
    }
    return 0;
}

// The same program run stepwise, for nonblocking and persistent calls: the
// round's receives and sends are posted, each advance() tests them without
// driving progress (the caller's progress callback does), and once all are
// complete the round's receives are applied in step order and the next
// round is posted.  The rounds, operand orders and reductions are run_fast's,
// so results are bit-identical to it (and to the executor).  Reusable:
// start() again after it finished (persistent requests); the scratch is
// its own, kept at its largest size.
class FastOperation {
public:
    FastOperation() = default;
    FastOperation(const FastOperation&) = delete;
    FastOperation& operator=(const FastOperation&) = delete;
    ~FastOperation() { abandon(); }

    // prog, buf, transport and reducer must outlive the run.
    Status start(const FastProgram& prog, char* buf, Transport& transport, Reducer& reducer);
    Status advance(bool* done, bool* moved);
    bool running() const { return running_; }
    // Cancels and frees what is still posted.
    void abandon();

private:
    Status post_round();

    const FastProgram* prog_ = nullptr;
    char* buf_ = nullptr;
    Transport* transport_ = nullptr;
    Reducer* reducer_ = nullptr;
    std::unique_ptr<char[]> scratch_;
    std::size_t scratch_size_ = 0;
    std::size_t round_ = 0;
    int n_ = 0;            // requests posted in this round
    int pending_ = 0;      // of those, not yet complete
    void* req_[kFastMaxRoundSteps] = {};
    bool live_[kFastMaxRoundSteps] = {};  // posted and not complete
    bool running_ = false;
};

}  // namespace topoar
