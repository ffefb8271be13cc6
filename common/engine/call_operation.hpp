// topoar engine: one run of a prepared host call as an operation object.
//
// A prepared call (engine.hpp, PreparedCall) of a host route runs its plan
// on [0, c), [c, 2c), ... of the buffer, chunk after chunk
// (EngineConfig::chunk_size).  A CallOperation holds everything one run
// needs -- the call (its plan handles keep the plans alive, whatever the
// engine's plan cache drops meanwhile), its scratch, the chunk it is at and
// the executor's state -- so several may be outstanding on one
// communicator, each over its own transport (its own tag), completing in
// any order.  A blocking call is start() and run_to_end(); a nonblocking one
// is start() and advance() from a progress callback until done.
#pragma once

#include <cstddef>
#include <memory>

#include "engine.hpp"
#include "exec/executor.hpp"
#include "status.hpp"

namespace topoar {

class CallOperation {
public:
    CallOperation() = default;
    CallOperation(const CallOperation&) = delete;
    CallOperation& operator=(const CallOperation&) = delete;

    // Starts a run of `call` (a host route: runs_on_host) on buf in place.
    // call, buf, transport and reducer must outlive the run.  A call with
    // nothing to move is done at once.
    Status start(const PreparedCall& call, void* buf, Transport& transport, Reducer& reducer);
    // One pass (ExecOperation::advance); moves to the next chunk when one
    // finishes.  Never drives the transport's progress itself.
    Status advance(bool* done, bool* moved);
    bool running() const { return running_; }
    // Gives a running operation up: its posted requests are cancelled.
    void abandon();

private:
    Status start_chunk();
    Status chunk_error(const Status& s) const;

    const PreparedCall* call_ = nullptr;
    char* buf_ = nullptr;
    Transport* transport_ = nullptr;
    Reducer* reducer_ = nullptr;
    std::size_t chunk_ = 0, chunks_ = 0;
    bool running_ = false;
    std::unique_ptr<unsigned char[]> scratch_;
    std::size_t scratch_size_ = 0;
    ExecOperation exec_;
};

// Driven to its end with run_to_end (exec/executor.hpp).

}  // namespace topoar
