// topoar engine: the host executor runs one rank's schedule over a Transport.
//
// The schedule is written in rounds (plan.hpp) but executed as a dataflow,
// so ranks are not held in lock-step: a round-synchronous executor loses a
// scheduling/rendezvous delay on every round boundary, which on slow or
// oversubscribed machines costs more than the transfers (measured: a
// pipelined tree of 8 MiB on 2 emulated nodes went from 0.48 s round by round
// to near the 0.34 s bound).
//
//   * Operations are cut into steps of at most `segment_elems` elements.
//   * Receives are posted ahead, for every round of a window of
//     kWindowRounds rounds, each into its own scratch slot (or straight into
//     the buffer when nothing can still read or write that range).
//   * A send is posted once every earlier-round receive it depends on has
//     been applied (the data it carries is final); a received segment is
//     applied (reduced or copied into the buffer) once earlier writes to its
//     range are applied and the sends that must read the old value are done.
//   * Sends and receives with one peer are posted in schedule order, so
//     messages pair up exactly as the plan built them.
// The result is the same as running the rounds one after another (the
// semantics plan.hpp defines), with the same operand order per element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "plan.hpp"
#include "status.hpp"

namespace topoar {

// Point-to-point messaging among the ranks of one communicator.  Buffers are
// bytes; a request stays valid until wait() or a successful test().
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
};

// The local reduction of one call: inout[i] = in[i] (op) inout[i].
class Reducer {
public:
    virtual ~Reducer() = default;
    virtual void reduce(const void* in, void* inout, std::size_t count) = 0;
};

// One rank's schedule compiled for execution: steps with their
// dependencies.  Built once per (plan, segment size) and reused per call.
struct ExecProgram {
    struct Step {
        OpKind kind;
        Operand order;
        int peer;
        int round;
        std::size_t offset, count;       // elements
        std::size_t slot = 0;            // scratch offset (elements), receives
        std::vector<std::uint32_t> deps; // steps that must be finished first
    };
    std::vector<Step> steps;             // schedule order
    std::vector<std::size_t> round_begin;// first step of each round (+ end)
    std::size_t scratch_elems = 0;
    // Receives that land straight in the buffer: copies with no dependency
    // (nothing earlier reads or writes their range).
    std::vector<char> direct;
};

constexpr int kWindowRounds = 4;

ExecProgram compile_schedule(const RankSchedule& schedule, std::size_t segment_elems, std::size_t elem_size);

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

private:
    enum State : std::uint8_t { waiting, posted, arrived, finished };
    std::vector<State> state_;
    std::vector<Transport::Request> req_;
    std::vector<unsigned char> own_scratch_;
};

}  // namespace topoar
