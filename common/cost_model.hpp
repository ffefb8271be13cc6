// topoar engine: the cost model predicts how long a Plan takes on a Topology.
//
// It replays the plan the way the host executor runs it and the network
// carries it, as an event-driven simulation (no MPI, no threads):
//
//   rank r, round k:  post every receive, then every send (executor order);
//                     wait for the receives in posting order, reducing each
//                     one as it arrives; wait for the sends; reductions into
//                     a range that is also being sent wait for the sends;
//                     then round k+1.  Ranks are coupled only by messages.
//
//   message a -> b:   one "flow" over the tree path
//
//                          lca
//                   up ↗        ↘ down          every edge is full duplex:
//                 ...              ...          its up and down directions
//            up ↗                      ↘ down   are separate links with the
//           a                            b      edge's bandwidth
//
//       t_deliver = t_drained + sum(edge latencies) + overhead
//       the bytes drain at the flow's max-min fair share of every link on
//       its path, recomputed whenever a flow starts or ends (progressive
//       filling), so two flows over one link each get half of it.
//
//   segments:  the executor cuts operations into segment_bytes messages; a
//              rank pair's messages leave one after the other (one
//              connection), so the reduction of segment s overlaps the
//              transfer of segment s+1 and only the last one's latency shows.
//   protocol:  a message of at most eager_bytes flows as soon as it is sent;
//              a larger one waits until the receiver has posted its receive
//              (rendezvous).
//   reduction: gamma seconds per byte reduced, serial per rank.
//   intra-node: the rank <-> node edge is the process's shared-memory copy
//              path; two ranks of one host exchange data over their own
//              edges only, never the host's NIC.
//
// This is the alpha-beta model of the papers (FlexReduce Eq. 1, hierarchical
// ring Section IV-C) with alpha = path latency + overhead and beta = 1 /
// bottleneck share, but measured on the plan actually executed, so uneven
// trees, link sharing and pipelining need no special formula.  The unit tests
// check it against the closed forms (docs/cost-model.md).
//
// Cost: O(messages * (path length + log events)) plus max-min recomputation
// over the connected set of flows that share links with a starting or ending
// flow; events at the same instant are handled together.  On 2,048 ranks a
// flat ring (8.4 million messages) takes about 3 s, the hierarchical
// planners well under a second (docs/cost-model.md, "Performance").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plan.hpp"
#include "status.hpp"
#include "topology.hpp"

namespace topoar {

struct CostParams {
    // Software overhead per message (MPI stack, matching, completion), added
    // to the path latency of every message, seconds.
    double overhead = 1e-6;
    // Seconds per byte reduced by one rank (1 / reduction throughput).
    // Default: 5 GB/s, one core summing doubles from cache-cold memory.
    double gamma = 0.2e-9;
    // The executor's segment size (EngineConfig::segment_bytes); 0 = whole
    // operations are single messages.
    std::size_t segment_bytes = 512 * 1024;
    // Messages up to this size are sent eagerly; larger ones start when the
    // receiver has posted the receive.
    std::size_t eager_bytes = 64 * 1024;
    // Bandwidth for links whose bandwidth is unknown (0 in the topology);
    // 0 here means "unlimited".
    double unknown_bandwidth = 0;
};

struct Prediction {
    double time = 0;                     // seconds until the last rank finishes
    std::vector<double> rank_time;       // per comm rank: when it finished its schedule
    // Bytes carried per topology vertex's edge to its parent (index = vertex
    // id; the root's entries stay 0), towards the parent and away from it.
    std::vector<double> link_bytes_up;
    std::vector<double> link_bytes_down;
    // The link that needs the longest at full speed (bytes / bandwidth;
    // bytes alone where the bandwidth is unlimited).
    int busiest_vertex = -1;
    bool busiest_up = true;
    double busiest_bytes = 0;
    double busiest_seconds = 0;
    // Volume.
    std::size_t messages = 0;            // after segmentation
    double bytes_sent = 0;               // sum over messages
    double max_bytes_reduced = 0;        // most bytes one rank reduced
    // Simulation effort (for the simulator's timing report).
    std::size_t events = 0;
    std::size_t rate_updates = 0;
};

// Predicts the run time of `plan` (a full plan: only_rank == -1) for
// elements of `elem_size` bytes on `topo` (its ranks must be the plan's).
// Fails if the plan does not fit the topology or cannot complete (a receive
// without a matching send).
Status predict(const Topology& topo, const Plan& plan, std::size_t elem_size, const CostParams& params,
               Prediction* out);

// "node n3 up", "rack r0 down": a link of the prediction, for people.
std::string link_name(const Topology& topo, int vertex, bool up);

// NCCL's bus bandwidth of an all-reduce: 2(P-1)/P * bytes / seconds, the
// link speed a bandwidth-optimal algorithm would need to take that long.
double bus_bandwidth(int nranks, double bytes, double seconds);

// Max-min fair rates (progressive filling) of flows over links, the rule the
// simulation applies at every flow start and end.  capacity[l] in bytes/s
// (infinity allowed); flow_links[f] lists the links flow f crosses.  A flow
// crossing no finite link gets infinity.  Exposed for tests and tools.
std::vector<double> max_min_rates(const std::vector<double>& capacity,
                                  const std::vector<std::vector<int>>& flow_links);

}  // namespace topoar
