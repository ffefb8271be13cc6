// topoar engine: the cost model predicts how long a Plan takes on a Topology.
//
// It replays the plan the way the host executor runs it and the network
// carries it, as an event-driven simulation (no MPI, no threads).  Two
// replays of the ranks exist:
//
//   dataflow (default): the executor of executor.hpp, step by step.  Every
//     rank's schedule is compiled with compile_schedule and run by the same
//     SchedulePolicy the executor runs (exec/schedule_policy.hpp: segments,
//     window of kWindowRounds rounds, per-peer send order, apply once the
//     dependencies finished), so the model cannot take other decisions than
//     the executor (tests/unit/test_schedule_policy.cpp checks it); the
//     replay adds the network and a reduction's gamma per byte on the
//     rank's one CPU.
//   rounds: the old round-synchronous executor: post the round's receives,
//     then its sends; wait for all; reductions into a range the round also
//     sends wait for the sends; then the next round.  Kept for the closed
//     forms of the papers, which describe lock-step rounds.
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
//              (rendezvous); in dataflow mode it also pays the handshake
//              (request there, answer back: two path latencies, plus
//              handshake_queue_delay when the answer's direction carries data
//              and so queues behind it).
//   reduction: gamma seconds per byte reduced, serial per rank.
//   intra-node: the rank <-> node edge is the process's shared-memory copy
//              path; two ranks of one host exchange data over their own
//              edges only, never the host's NIC.
//
// This is the alpha-beta model of the papers (FlexReduce Eq. 1, hierarchical
// ring Section IV-C) with alpha = path latency + overhead and beta = 1 /
// bottleneck share, but measured on the plan actually executed, so uneven
// trees, link sharing and pipelining need no special formula.  The unit tests
// check it against the closed forms and against runs on emulated clusters
// (docs/cost-model.md).
//
// Code: cost_model.cpp (entry points), model/event_queue.hpp,
// model/network.{hpp,cpp} (links, flows, sharing), model/replay.hpp with
// model/replay_dataflow.cpp and model/replay_rounds.cpp.
//
// Cost: O(messages * (path length + log events)) plus max-min recomputation
// over the connected set of flows that share links with a starting or ending
// flow; events at the same instant are handled together.  The dataflow mode
// also pays compile_schedule for every rank and keeps about 40 bytes per
// step plus 4 per dependency (docs/cost-model.md, "Performance").
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "core/max_min.hpp"  // max_min_rates, the simulation's sharing rule (for tests and tools)
#include "exec/schedule_policy.hpp"
#include "config/params.hpp"
#include "plan/plan.hpp"
#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

// How the ranks replay their schedules (see the top of this file).
enum class CostMode { dataflow, rounds };

struct CostParams {
    CostMode mode = CostMode::dataflow;
    // Software overhead per message (MPI stack, matching, completion), added
    // to the path latency of every message, seconds.
    double overhead = 1e-6;
    // Dataflow mode: the share of `overhead` that each end's CPU spends on
    // a message (LogP's o: posting, matching, completion), the rest staying
    // on the path.  A rank's sends and receives queue on its CPU with its
    // reductions, so one message costs `overhead` as before but a rank that
    // sends or receives k messages at once pays k times its share: a star
    // of p ranks costs its root p shares, recursive doubling log2 p.
    // 0 (here, the papers' closed forms): the whole overhead is path
    // latency, a rank handles any number of messages at once.  The engine's
    // table and topoar_sim use coll_topoar_model_cpu_share (25 %).
    // docs/cost-model.md, "Messages on a rank's CPU".
    double message_cpu_share = 0;
    // Seconds per byte reduced by one rank (1 / reduction throughput).
    // Default: 5 GB/s, one core summing doubles from cache-cold memory.
    double gamma = 0.2e-9;
    // The executor's segment size (EngineConfig::segment_size, default
    // from the parameter table); 0 = whole operations are single messages.
    std::size_t segment_bytes = default_segment_size();
    // The executor's flight bound across hosts (EngineConfig::flight_size;
    // exec/schedule_policy.hpp, flight_window): fewer rounds open at once.
    // Applied on topologies of more than one host; 0: none.
    std::size_t flight_bytes = 0;
    // Messages up to this size are sent eagerly; larger ones start when the
    // receiver has posted the receive.
    std::size_t eager_bytes = 64 * 1024;
    // Bandwidth for links whose bandwidth is unknown (0 in the topology);
    // 0 here means "unlimited".
    double unknown_bandwidth = 0;
    // Share of a link's bandwidth that carries payload (protocol headers,
    // framing).  TCP over Ethernet at MTU 1500: 1448 / 1538 = 0.94, which
    // the emulated clusters measure (docs/cost-model.md, "Validation").
    double wire_efficiency = 1.0;
    // Dataflow mode: extra wait of a rendezvous handshake whose answer
    // travels against a direction that carries data (it queues behind it;
    // on the emulated clusters up to tbf's 100 ms queue).  0: ideal queues.
    double handshake_queue_delay = 0;
    // Max-min shares are exact while at most this many flows are in flight;
    // above, they are recomputed at most every rate_quantum seconds (0: a
    // segment's time on the fastest link) times flows / exact_flows, and a
    // starting flow gets a provisional share meanwhile.  Keeps 2,048-rank
    // predictions in seconds; docs/cost-model.md measures the error.
    std::size_t exact_flows = 128;
    double rate_quantum = 0;
    // Rounds mode: time every round of a rank costs on its critical path,
    // after its messages (the next round starts this much later): a
    // synchronous launch or a step's handshake that data cannot overlap.  An
    // NCCL ring step of s chunks, each behind the previous one's flag, costs
    // s alpha this way (hierarchical ring paper IV-C: 2 s alpha (p - 1) per
    // ring), where `overhead` (on arrival) hides behind a slower send.  0: none.
    double round_latency = 0;
    // Rounds mode: a round's operations run as ring steps of at most this
    // many bytes each, and every step costs round_latency: a round costs
    // round_latency x ceil(largest operation of the round / round_step_bytes).
    // NCCL 2.3's ring kernels (src/collectives/device/all_reduce.h,
    // reduce_scatter.h, all_gather.h of v2.3.5) move a loop of nranks x
    // nRings x slice elements at a time, slice = NCCL_BUFFSIZE (4 MiB) /
    // BUFCHUNKS (2) = 2 MiB per ring, each of the loop's 2(p-1) steps in
    // s = 2 flagged substeps; so a ring of p ranks over n bytes takes
    // ceil(n / (p nRings 2 MiB)) loops, and this is nRings x 2 MiB.  0: one
    // step per round whatever its size (the paper's IV-C closed form).
    std::size_t round_step_bytes = 0;
    // The same for a round whose messages all stay within the rank's node
    // (an NCCL communicator of one node's GPUs runs other rings: on a V100
    // NVLink mesh 12, where rings across nodes get one per NIC at most).
    // 0: round_step_bytes.
    std::size_t round_step_bytes_node = 0;
    // Rounds mode: also record when every rank finished each of its rounds
    // (Prediction::rank_round_end; memory: 8 bytes per rank and round).
    bool record_round_ends = false;
    // Device data (device_model.hpp), NICs shared by several GPUs: a node's
    // up-link is this many NICs, an even share of it each, and a flow that
    // leaves or enters the node crosses the NIC of its GPU (the node's ranks
    // in tree order split evenly: of 4 GPUs and 2 NICs, GPUs 0-1 use NIC 0,
    // 2-3 NIC 1), so one flow gets at most one NIC and two GPUs of one NIC
    // share it.  0: the up-link is one pooled link (a flow may use all of it).
    int node_nics = 0;
    // Device data, GPUs joined by direct links without a switch (an NVLink
    // mesh: V100 SXM2 pairs share 2 of a GPU's 6 links): a flow between two
    // ranks of one node is also limited to this, per direction and pair.
    // 0: no such limit (NVSwitch: a GPU's whole link reaches every peer).
    double peer_bandwidth = 0;
    // Device data, the path between a GPU and the NICs (PCIe): a flow that
    // leaves the node also crosses its sender's path up, one that enters it
    // the receiver's path down, this much per GPU and direction, shared by
    // all such flows of the GPU whichever NIC they use.  0: no such limit.
    double nic_path_bandwidth = 0;
};

// The share of `overhead` each end's CPU spends per message as the replay
// applies it: message_cpu_share within 0..0.5 in dataflow mode, none in
// rounds mode.  One place for Network's path latency and the dataflow
// replay's CPU time, so one message always costs `overhead` in all.
inline double applied_cpu_share(const CostParams& p) {
    return p.mode == CostMode::dataflow ? std::clamp(p.message_cpu_share, 0.0, 0.5) : 0.0;
}

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
    std::size_t steps = 0;               // dataflow: executor steps of all ranks
    // Rounds mode: round_end[k] = when the last rank finished its k-th
    // round (the phases of a plan whose ranks all take part in every round,
    // as the hierarchical ring's: topoar_sim --dims).  Empty in dataflow mode.
    std::vector<double> round_end;
    // Rounds mode with CostParams::record_round_ends: rank_round_end[r][k] =
    // when rank r finished its k-th round.
    std::vector<std::vector<double>> rank_round_end;
};

// Predicts the run time of `plan` (a full plan: only_rank == -1) for
// elements of `elem_size` bytes on `topo` (its ranks must be the plan's).
// Fails if the plan does not fit the topology or cannot complete (a receive
// without a matching send).
Status predict(const Topology& topo, const Plan& plan, std::size_t elem_size, const CostParams& params,
               Prediction* out);
// The same, recording (dataflow mode) every rank's scheduling decisions and
// completions in the order the simulation took them, for tests that check
// the executor takes the same ones (tests/unit/test_schedule_policy.cpp).
Status predict(const Topology& topo, const Plan& plan, std::size_t elem_size, const CostParams& params,
               Prediction* out, std::vector<ScheduleEvent>* trace);

// Executor steps of all ranks of `plan` (operations cut at segment_bytes):
// what a dataflow prediction walks, for callers that budget it.
std::size_t count_steps(const Plan& plan, std::size_t elem_size, std::size_t segment_bytes);

// "node n3 up", "rack r0 down": a link of the prediction, for people.
std::string link_name(const Topology& topo, int vertex, bool up);

// NCCL's bus bandwidth of an all-reduce: 2(P-1)/P * bytes / seconds, the
// link speed a bandwidth-optimal algorithm would need to take that long.
double bus_bandwidth(int nranks, double bytes, double seconds);

}  // namespace topoar
