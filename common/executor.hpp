// topoar engine: the host executor walks one rank's schedule over a Transport.
//
// Per round: every receive is posted (into scratch for recv_reduce, straight
// into the buffer for recv_copy), then every send; receives are then waited
// for in posting order and each one is reduced as soon as it has arrived, so
// the reduction of segment k overlaps the transfer of segment k+1.  Large
// operations are cut into segments of `segment_elems` elements; all ranks
// must use the same segment size (it decides how messages pair up).
#pragma once

#include <cstddef>
#include <vector>

#include "plan.hpp"
#include "status.hpp"

namespace topoar {

// Point-to-point messaging among the ranks of one communicator.  Buffers are
// bytes; a request stays valid until wait() returned.
class Transport {
public:
    using Request = void*;
    virtual ~Transport() = default;
    virtual Status isend(const void* buf, std::size_t bytes, int peer, Request* req) = 0;
    virtual Status irecv(void* buf, std::size_t bytes, int peer, Request* req) = 0;
    virtual Status wait(Request* req) = 0;
};

// The local reduction of one call: inout[i] = in[i] (op) inout[i].
class Reducer {
public:
    virtual ~Reducer() = default;
    virtual void reduce(const void* in, void* inout, std::size_t count) = 0;
};

class Executor {
public:
    // buf: the result buffer (count elements), already holding this rank's
    // input.  scratch: at least schedule.scratch_elems elements.
    Status run(const RankSchedule& schedule, void* buf, void* scratch, std::size_t elem_size,
               std::size_t segment_elems, Transport& transport, Reducer& reducer);

private:
    struct Pending {
        const Op* op;
        char* data;       // where the segment landed
        char* target;     // where it belongs in the result buffer
        std::size_t count;
        Transport::Request req;
    };
    std::vector<Pending> recvs_;
    std::vector<Transport::Request> sends_;
};

}  // namespace topoar
