// topoar engine: the device executor runs one rank's schedule on GPU memory
// through a stream-ordered device transport (NCCL in cuda/, a fake in the
// unit tests).
//
// The same Plan the host executor runs, lowered differently: the host
// executor cuts operations into segments and runs them as a dataflow; here a
// round is handed to the device as a whole and the stream keeps the order.
//
//   round r:   group_start
//                send(buf[range], peer)        ...every send of the round
//                recv(slot or buf[range], peer) ...every receive
//              group_end                      (one grouped launch: pairs in
//                                              any order cannot deadlock)
//              reduce(slot -> buf[range])      ...every recv_reduce, on the
//                                              same stream, after the group
//   round r+1: ... (the stream orders it after round r's reductions)
//   end:       synchronize                    (the result is in buf)
//
// That is exactly plan.hpp's round semantics: sends read the buffer as it
// was when the round began (the previous round's reductions are ahead of
// them on the stream), receives to be reduced land in scratch slots, and
// recv_copy lands in place (validate_plan guarantees no overlap with a send
// or another receive of its round).  Nothing waits on the host between
// rounds; the host blocks once, at the end.
//
// Operand order: the device reduction computes inout = in (op) inout.  topoar
// takes only commutative predefined operations on device data, whose IEEE
// results do not depend on operand order, so local_first and incoming_first
// give the same bits; every element is still reduced once, by its owner, and
// broadcast, so all ranks end bit-identical.
#pragma once

#include <cstddef>

#include "plan/plan.hpp"
#include "planners/planner_nccl_hier.hpp"
#include "status.hpp"

namespace topoar {

// Stream-ordered operations on device memory.  Each call enqueues work and
// returns; only synchronize() waits for it.  Byte counts: both ends of a
// message pass the same byte count (NCCL's pairing rule).
class DeviceTransport {
public:
    virtual ~DeviceTransport() = default;
    virtual Status group_start() = 0;
    virtual Status send(const void* buf, std::size_t bytes, int peer) = 0;
    virtual Status recv(void* buf, std::size_t bytes, int peer) = 0;
    virtual Status group_end() = 0;
    // inout[i] = in[i] (op) inout[i] for count elements, after the group.
    virtual Status reduce(const void* in, void* inout, std::size_t count) = 0;
    // Device scratch of at least `bytes` bytes, kept across calls.
    virtual Status scratch(std::size_t bytes, void** out) = 0;
    virtual Status synchronize() = 0;
    // Collectives among the ranks of this rank's host (nccl_hier, on the
    // host's own communicator; counts in elements, NCCL's meaning), between
    // group_start and group_end like sends and receives.  A transport
    // without them says unsupported.
    //   reduce_scatter: send holds every member's recv_count-element part
    //                   in local order, recv gets this member's, reduced
    //   reduce:         recv of the member with local index root gets the
    //                   reduction of every member's send
    //   all_gather:     recv gets every member's send_count elements in
    //                   local order
    //   broadcast:      every member's recv gets root's send
    virtual Status host_reduce_scatter(const void* send, void* recv, std::size_t recv_count);
    virtual Status host_reduce(const void* send, void* recv, std::size_t count, int root);
    virtual Status host_all_gather(const void* send, void* recv, std::size_t send_count);
    virtual Status host_broadcast(const void* send, void* recv, std::size_t count, int root);
};

// Runs one rank's schedule in place on the device buffer buf.  On an error
// the stream is still synchronized before returning (nothing is left in
// flight on the caller's buffers) and the message names the round and peer.
Status run_device_schedule(const RankSchedule& schedule, void* buf, std::size_t elem_size,
                           DeviceTransport& transport);

// nccl_hier (planners/planner_nccl_hier.hpp) on one rank, in place on buf:
//
//   group_start  host_reduce_scatter / host_reduce ...   (plan.scatter)
//   group_end
//   shard s0's rounds  (as run_device_schedule, on buf + its offset)
//   shard s1's rounds  ...                                (plan.owned, in order)
//   group_start  host_all_gather / host_broadcast ...     (plan.gather)
//   group_end
//   synchronize
//
// All of it on one stream, the host waiting once at the end.  Collectives
// are in place: reduce-scatter's recv is send + local * count, all-gather's
// send is recv + local * count, reduce and broadcast use the range itself.
// Errors as run_device_schedule's (the stream is synchronized; the message
// names the phase, shard, round and peer).
Status run_device_hier(const HierPlan& plan, void* buf, std::size_t elem_size, DeviceTransport& transport);

}  // namespace topoar
