// topoar engine: the host executor runs one rank's schedule over a Transport.
//
// What may be posted or applied when is not decided here: the executor
// compiles the schedule and follows the SchedulePolicy of
// exec/schedule_policy.hpp (segments, window of rounds, per-peer order,
// apply once the dependencies finished), the same one the cost model
// replays.  This file moves the bytes: it posts what the policy asks,
// polls the posted requests, reduces or copies arrived segments, and
// reports completions back.
//
// Failures are final and clean: when a transport call fails, every request
// still posted is cancelled (Transport::cancel) before run() returns, and
// the Status names the step, its round, peer, bytes and the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/schedule_policy.hpp"
#include "plan/plan.hpp"
#include "status.hpp"

namespace topoar {

// Point-to-point messaging among the ranks of one communicator.  Buffers are
// bytes; a request stays valid until wait(), a test() that set *done, or
// cancel().  A request whose wait() or test() failed is gone as well.
class Transport {
public:
    using Request = void*;
    virtual ~Transport() = default;
    virtual Status isend(const void* buf, std::size_t bytes, int peer, Request* req) = 0;
    virtual Status irecv(void* buf, std::size_t bytes, int peer, Request* req) = 0;
    virtual Status wait(Request* req) = 0;
    // Non-blocking and cheap: *done is set when the request completed (it
    // is then freed).  Does not itself drive communication: see progress().
    virtual Status test(Request* req, bool* done) = 0;
    // Drives outstanding communication once (the executor calls it once per
    // pass over its requests rather than once per request).
    virtual void progress() {}
    // Ends a posted request that will not be waited for (after a failure):
    // cancels it where the transport can, and frees it.  The default
    // completes it with wait(), which returns once the peer did its part.
    virtual Status cancel(Request* req) { return wait(req); }
};

// The local reduction of one call: inout[i] = in[i] (op) inout[i].
class Reducer {
public:
    virtual ~Reducer() = default;
    virtual void reduce(const void* in, void* inout, std::size_t count) = 0;
};

class Executor {
public:
    // buf: the result buffer, already holding this rank's input.  scratch:
    // at least program.scratch_elems elements.
    Status run(const ExecProgram& program, void* buf, void* scratch, std::size_t elem_size, Transport& transport,
               Reducer& reducer);

    // Convenience for tests and tools: compiles the schedule and uses its
    // own scratch (the `scratch` argument is not used).
    Status run(const RankSchedule& schedule, void* buf, void* scratch, std::size_t elem_size,
               std::size_t segment_elems, Transport& transport, Reducer& reducer);

    // Tests: records the policy's decisions and the completions of the next
    // runs into *trace (nullptr: off).
    void set_trace(std::vector<ScheduleEvent>* trace) { trace_ = trace; }

private:
    class Driver;
    SchedulePolicy policy_;
    std::vector<Transport::Request> req_;
    std::vector<char> live_;  // a request of the step is posted and not finished
    // Per channel (ExecProgram::Step::chan): the steps posted, in order, and
    // the first one not yet seen complete.
    std::vector<std::vector<std::uint32_t>> queue_;
    std::vector<std::size_t> head_;
    std::vector<unsigned char> own_scratch_;
    std::vector<ScheduleEvent>* trace_ = nullptr;
};

}  // namespace topoar
