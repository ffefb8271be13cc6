// topoar engine: nccl_hier, the hierarchical all-reduce for device buffers
// across hosts: NCCL's reduce-scatter inside every host, topoar's plan
// across hosts among the ranks that hold the same shard, NCCL's all-gather
// inside every host (the shape of Horovod's hierarchical all-reduce and of
// the hierarchical schemes in netreduce-models.txt, with topoar's
// topology-aware plans for the part that crosses the network).
//
// Shards.  S = the rank count of the LARGEST host; the buffer is cut into S
// shards, q = count / S elements each, the last one also takes the
// remainder (count - S q, fewer than S elements):
//
//   shard      0        1        2    ...   S-1
//   elements [0,q)   [q,2q)   [2q,3q)     [(S-1)q, count)
//
// On a host of n ranks, its member with local index j (ranks in ascending
// order) owns the shards s with s mod n = j: one each when n = S, several
// on smaller hosts.  So every shard has exactly one owner per host, and
// shard s's owners across hosts (one rank per host) run topoar's plan for
// it on the host-level topology (one rank per host, racks and links kept).
//
// Example: hosts a = {0,1,2}, b = {3,4}, c = {5}; S = 3, count = 10 (q = 3):
//
//   shards         0: [0,3)   1: [3,6)   2: [6,10)
//   owners  a      0          1          2
//           b      3          4          3          (2 mod 2 = 0)
//           c      5          5          5
//
//   1. inside each host (one NCCL group on the host's communicator):
//        a: ncclReduceScatter(q=3) over [0,9) + ncclReduce([9,10), root 2)
//        b: ncclReduceScatter(q=3) over [0,6) (shards 0, 1: a full round of
//           its 2 ranks) + ncclReduce(shard 2 = [6,10), root 0)
//        c: nothing (one rank)
//   2. across hosts, shard by shard in increasing order, each over the NCCL
//      communicator of all ranks with topoar's device executor:
//        shard 0 among {0, 3, 5}, shard 1 among {1, 4, 5}, shard 2 among
//        {2, 3, 5} (rank 5 takes part in all three, one after the other)
//   3. inside each host: the mirror of 1 (ncclAllGather of the full rounds,
//      ncclBroadcast of the others from their owner).
//
// Host collectives: the shards a host's ranks own are taken in rounds of n
// consecutive shards.  A full round of q-element shards is one in-place
// ncclReduceScatter (recvbuff = sendbuff + j q); the last shard's extra
// elements, and every shard of a round that is not full (a host smaller than
// S whose n does not divide S), are ncclReduce calls to their owner (ncclReduce
// takes any count); the all-gather phase mirrors them with ncclAllGather and
// ncclBroadcast.  Counts not divisible by anything and hosts of any sizes
// are thus exact, with no padding and no extra copy.
//
// Every element ends bit-identical on all ranks: its host-level reduction
// is computed once, by its shard owner on that host (NCCL); across hosts
// the plan reduces it once and broadcasts it (plan.hpp); the all-gather
// only copies.
//
// Shards one after the other, not merged into one schedule: plans drop
// empty rounds, so the round numbers of two shards' schedules do not line
// up, and a merged schedule could make a rank owning two shards wait in one
// shard's round for a message another rank sends only in a later round of
// the other.  In increasing shard order on every rank nothing can wait on a
// later shard: the lowest unfinished shard always completes.
//
// plan_nccl_hier() (the algorithm table's planner) writes all of this as one
// point-to-point Plan -- the host collectives as one round of direct
// messages to (and from) each owner -- for the cost model, the simulator
// and the tools; the GPU path runs HierPlan (the same shards, owners and
// cross-host schedules) with NCCL's collectives inside the hosts.
#pragma once

#include <cstddef>
#include <vector>

#include "core/algorithm.hpp"
#include "plan/plan.hpp"
#include "planners/planners.hpp"
#include "status.hpp"

namespace topoar {

class Topology;

// Hosts of a topology and their members.
struct HostLayout {
    std::vector<std::vector<int>> members;  // per host (preorder): comm ranks, ascending
    std::vector<int> host_of;               // per comm rank: its host's index
    std::vector<int> local_of;              // per comm rank: its index among its host's members
    int shards = 0;                         // the largest host's rank count
};
// Code::unsupported when a rank has no host (a flat topology).
Status host_layout(const Topology& topo, HostLayout* out);

// Shard s of `count` elements cut into `shards` (above).
Range hier_shard(std::size_t count, int shards, int s);

// The topology one level up: one rank per host (rank k = host k in
// preorder), the switches above the hosts and every link kept.
Status host_level_topology(const Topology& topo, Topology* out);

// The algorithm shard plans use across hosts: opts.hier_inter, or (auto)
// the engine's built-in choice for the shard's size: the latency
// algorithm up to opts.hier_small_elems elements, aggregation trees above.
Algorithm hier_inter_algorithm(const PlanOptions& opts, std::size_t shard_count);

// A collective of one host's ranks on the host's own communicator.
struct HostCollective {
    enum class Kind { reduce_scatter, reduce, all_gather, broadcast };
    Kind kind;
    std::size_t offset = 0;  // elements; reduce_scatter/all_gather: start of all members' parts
    std::size_t count = 0;   // reduce_scatter/all_gather: per member; reduce/broadcast: the range's
    int root = -1;           // reduce/broadcast: the owner's local index
};

// One shard a rank owns and its part of the plan across hosts.
struct HierShard {
    int shard = 0;
    std::size_t offset = 0, count = 0;  // elements of the buffer
    Algorithm algorithm = Algorithm::tree;
    RankSchedule schedule;  // peers: comm ranks; offsets relative to the shard
};

// What one rank runs (exec/device_executor.hpp: run_device_hier).
struct HierPlan {
    std::size_t count = 0;
    int shards = 0, hosts = 0;
    int host = 0, local = 0, host_size = 0;
    std::vector<HostCollective> scatter;  // phase 1, one NCCL group (same on every member)
    std::vector<HierShard> owned;         // phase 2, increasing shard order
    std::vector<HostCollective> gather;   // phase 3, one NCCL group
    std::size_t scratch_elems = 0;        // largest of the owned schedules'
};

// rank's HierPlan for `count` elements.
Status plan_nccl_hier_rank(const Topology& topo, std::size_t count, int rank, const PlanOptions& opts,
                           HierPlan* out);

// The algorithm table's planner: the point-to-point equivalent (above),
// every rank's schedule = [direct reduce to the owners] + its HierPlan's
// shard schedules in order + [direct copies from the owners].
Status plan_nccl_hier(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, Plan* out);

}  // namespace topoar
