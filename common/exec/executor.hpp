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

#include "core/transport.hpp"
#include "exec/schedule_policy.hpp"
#include "plan/plan.hpp"
#include "status.hpp"

namespace topoar {

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
