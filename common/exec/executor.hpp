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
// It runs step by step: an ExecOperation is started on a buffer (posts
// what may go first) and advanced one pass at a time until done, so a
// blocking call (Executor::run: advance, drive the transport's progress
// when a pass found nothing, repeat) and a nonblocking one (advanced from
// a progress callback, between the caller's computations) run the same
// code.  All of a run's state is the operation's: several operations may
// be outstanding at once, each over its own transport (its own tag).
//
// Failures are final and clean: when a transport call fails, every request
// still posted is cancelled (Transport::cancel) before advance() returns
// the error, and the Status names the step, its round, peer, bytes and the
// call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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

// One run of a compiled program on one buffer.  Reusable: start() again
// after it finished (done or failed); its vectors keep their capacity, so
// a reused operation allocates nothing per run.
class ExecOperation {
public:
    ExecOperation();
    ~ExecOperation();
    ExecOperation(const ExecOperation&) = delete;
    ExecOperation& operator=(const ExecOperation&) = delete;

    // buf: the result buffer, already holding this rank's input.  scratch:
    // at least program.scratch_elems elements.  program, buf, scratch,
    // transport and reducer must stay valid until the run ends.  Posts
    // what may go first; a failure here is final (nothing left posted).
    Status start(const ExecProgram& program, void* buf, void* scratch, std::size_t elem_size,
                 Transport& transport, Reducer& reducer);
    // One pass over the posted requests: applies what arrived and posts
    // what became ready.  Never drives the transport's progress itself
    // (the caller does, or is a progress callback).  *done: the run
    // finished; *moved: something completed in this pass (the next pass
    // may find more at once).  On failure every posted request has been
    // cancelled and the run is over.
    Status advance(bool* done, bool* moved);
    // Running: started, not finished and not failed.
    bool running() const { return running_; }
    // Ends a running operation early (its caller gives up, e.g. a request
    // freed at finalize): cancels every posted request.
    void abandon();

    // Tests: records the policy's decisions and the completions of the next
    // runs into *trace (nullptr: off).
    void set_trace(std::vector<ScheduleEvent>* trace) { trace_ = trace; }
    // Whether the next runs hold synchronous sends to the program's send
    // credit (true) or post them as standard sends with no credit
    // (coll_topoar_send_credit; the engine sets it per call).
    void set_credit(bool credit) { credit_ = credit; }

private:
    class Driver;
    Status failed_run();  // cancels what is posted; the error with what it did
    std::size_t cancel_posted(std::size_t* failed, std::string* first_problem);

    bool credit_ = true;
    SchedulePolicy policy_;
    std::unique_ptr<Driver> driver_;
    const ExecProgram* prog_ = nullptr;
    Transport* transport_ = nullptr;
    bool running_ = false;
    std::vector<Transport::Request> req_;
    std::vector<char> live_;  // a request of the step is posted and not finished
    // Per channel (ExecProgram::Step::chan): the steps posted, in order, and
    // the first one not yet seen complete.
    std::vector<std::vector<std::uint32_t>> queue_;
    std::vector<std::size_t> head_;
    std::vector<ScheduleEvent>* trace_ = nullptr;
};

// Blocking runs: an ExecOperation driven to its end.
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
    void set_trace(std::vector<ScheduleEvent>* trace) { op_.set_trace(trace); }

private:
    ExecOperation op_;
    std::vector<unsigned char> own_scratch_;
};

// Runs a started operation (ExecOperation, or engine/call_operation.hpp's
// CallOperation) to its end.  A pass that saw nothing complete drives the
// transport's progress before the next one; a pass that did goes on at once
// (what it posted may already be done: eager sends, messages waiting
// unexpected).  Progress first would, on an oversubscribed host, give the
// core away (the progress engine yields when it finds nothing) with work at
// hand.
template <class Operation>
Status run_to_end(Operation& op, Transport& transport) {
    bool done = false, moved = true;
    while (true) {
        if (!moved) transport.progress();
        TOPOAR_TRY(op.advance(&done, &moved));
        if (done) return Status::ok();
    }
}

}  // namespace topoar
