// topoar engine: aggregation trees (RAT) and the node-aware latency tree.
//
// plan_tree follows RAT (Wan et al., APNet '20, section 3 "Design",
// Algorithm 1 and the load-balancing remark under Figure 3): every region of
// the topology (host, rack, spine, ...) gets one aggregator per tree; the
// aggregators reduce their region's data upwards, the root of the tree holds
// the final value, and the result is broadcast back down the same tree.
// Cross-region traffic is minimal (one partial per region and tree crosses a
// region's uplink) and the dependency chain is 2 x (number of levels).
//
// One tree alone would leave all but one rank per region idle and push the
// whole vector through one NIC per region, so, as the paper suggests for
// symmetric networks, we build K trees, each owning slice k of the vector
// (split_range(count, K, k)), whose aggregators rotate over the children of
// every region.  With the rotation balanced, a host uplink carries about
// 2 M (1 - 1/m) bytes in each direction (m = fan-out of its parent), the
// alpha-beta optimum of a two-level all-reduce, and every rank of a host
// aggregates an equal share.
//
// Example: hosts a = {0,1}, b = {2,3,4}; K = 4 (the default here), slice
// Sk = split_range(M, 4, k); roots: S0 on 0, S1 on 2, S2 on 1, S3 on 3.
//
//   reduce, round 0 (host level)           reduce, round 1 (root level)
//     a: S0,S1: 1 -> 0   S2,S3: 0 -> 1       S0: 4 -> 0     S1: 0 -> 2
//     b: S0: 2,3 -> 4    S1,S2: 3,4 -> 2     S2: 2 -> 1     S3: 1 -> 3
//        S3: 2,4 -> 3
//   broadcast, round 2 (root level)        broadcast, round 3 (host level)
//     S0: 0 -> 4     S1: 2 -> 0              the mirror image of round 0
//     S2: 1 -> 2     S3: 3 -> 1
//   In each of rounds 1 and 2 a host uplink carries M/2 up and M/2 down.
//
// Rounds: a region of height h (hosts 1, racks 2, ...) reduces in round h-1
// and broadcasts in round H + (H - h), H = height of the topology; with
// pipelining (PlanOptions::pipeline_elems) segment s of every slice runs s
// rounds later, so reduction up one level, the level above and the broadcast
// down overlap: 2H + S - 1 rounds for S segments.
//
// Every element is reduced exactly once (by its tree's root; each aggregator
// adds its children's partials in child order, incoming operand first) and
// then copied, so all ranks get bit-identical results.
//
// plan_leader_tree is the small-message variant: one fixed tree (leader =
// lowest rank of each host), k-nomial reduce inside each host, an exchange
// among the host leaders, k-nomial broadcast inside each host.  Only one
// message per host crosses the network per round, and the inter-host part
// takes ceil(log2 N) or 2 ceil(log_r N) rounds for N hosts, independent of
// how the ranks are placed.
//
//   2 hosts x 4 ranks {0..3} {4..7}, intra radix 8, leader exchange RD:
//     round 0: 1,2,3 -> 0     5,6,7 -> 4      (reduce to host leaders)
//     round 1: 0 <-> 4                         (exchange, lower host first)
//     round 2: 0 -> 1,2,3     4 -> 5,6,7      (broadcast in each host)
#pragma once

#include <cstddef>
#include <vector>

#include "planners/planners.hpp"
#include "topology/topology.hpp"

namespace topoar {

// The aggregators of K trees over a topology.
struct TreeLayout {
    int num_trees = 0;
    // choice[k][v]: index (into topo.node(v).children) of the child whose
    // aggregator also aggregates v in tree k; -1 for leaves.
    std::vector<std::vector<int>> choice;
    // agg[k][v]: comm rank aggregating vertex v's region in tree k (for a
    // leaf: its own rank).  agg[k][root] is tree k's root.
    std::vector<std::vector<int>> agg;
    // height[v]: 0 for leaves, 1 + max over children otherwise.
    std::vector<int> height;
};

// Deterministic, balanced aggregators for K >= 1 trees.  At every vertex the
// K trees are spread round-robin over its children, taking first the trees
// in which the vertex's aggregator also serves the levels above (so the
// roots rotate too), then the others.
TreeLayout layout_trees(const Topology& topo, int num_trees);

// Modelled time of the reduce phase of an all-reduce of 1 byte with this
// layout (the broadcast mirrors it): the largest (bytes one direction of an
// edge carries) / (edge bandwidth), in seconds, over all edges and both
// directions, with equal slices.  Unknown bandwidths use LinkDefaults.
double tree_bottleneck(const Topology& topo, const TreeLayout& layout);

// The planner's choice of K when PlanOptions::num_trees is 0: the smallest
// K, from the largest fan-out of the topology up to twice that and the least
// common multiple of all fan-outs (at most 256), whose modelled bottleneck is
// within 1% of the best of them.
int default_num_trees(const Topology& topo);

// RAT all-reduce with K trees (opts.num_trees, 0 = default_num_trees) and
// pipelining in segments of opts.pipeline_elems elements (0 = none).
Status plan_tree(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, Plan* out);

// How the host leaders of plan_leader_tree combine their partial results.
enum class LeaderExchange {
    // recursive_doubling when it takes at most as many rounds as
    // reduce_bcast (radix 4: N = 2, 4, 8, 16, 32, ... leaders), else
    // reduce_bcast.
    automatic,
    // k-nomial reduce to the first leader, then k-nomial broadcast: every
    // element reduced exactly once (final_reducers == 1).
    reduce_bcast,
    // Recursive doubling among leaders with the lower group's operand first
    // on both sides: all leaders compute the same expression tree, so the
    // results are still bit-identical, but each leader reduces.
    recursive_doubling,
};

struct LeaderTreeOptions {
    int intra_radix = 8;   // k-nomial radix inside a host (8: flat up to 8 ranks)
    int leader_radix = 4;  // k-nomial radix among leaders (reduce_bcast)
    LeaderExchange exchange = LeaderExchange::automatic;
};

// Rounds the leader exchange takes among `leaders` ranks.
int leader_exchange_rounds(int leaders, const LeaderTreeOptions& lopts, LeaderExchange* chosen = nullptr);

// Node-aware latency all-reduce (see above).  PlanOptions are accepted for a
// uniform signature; pipelining does not apply to small messages.  Hosts are
// the topology's Level::node vertices; a topology without hosts treats
// every rank as its own host.
Status plan_leader_tree(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                        Plan* out);
Status plan_leader_tree(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                        const LeaderTreeOptions& lopts, Plan* out);

// The table's "leader" algorithm (algorithm.hpp): plan_leader_tree across
// hosts, plan_recursive_doubling on one host; the plan says Algorithm::leader.
Status plan_leader(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, Plan* out);

}  // namespace topoar
