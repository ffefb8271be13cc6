// topoar engine: the point-to-point interface every layer that talks to
// other ranks uses (the executor, the link probes, set-up), implemented by
// the glue (the PML), tests (an in-process fake) and tools.
#pragma once

#include <cstddef>

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
    // A synchronous send: done once the receiver has matched it (MPI's
    // issend), so its data has reached the peer.  The default is isend.
    virtual Status issend(const void* buf, std::size_t bytes, int peer, Request* req) {
        return isend(buf, bytes, peer, req);
    }
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

}  // namespace topoar
