// topoar engine: planners turn (ranks, count, topology) into a Plan.
//
// Planners are pure functions: no I/O, no MPI, same input -> same plan on
// every rank.  Each keeps every element's reduction to one expression tree,
// computed once by the element's owner and then copied to everyone.
#pragma once

#include <cstddef>
#include <vector>

#include "core/algorithm.hpp"
#include "plan/plan.hpp"
#include "status.hpp"

namespace topoar {

// Knobs a planner may use; every rank must pass the same values.
struct PlanOptions {
    // Pipelining unit for reduce/broadcast chains and trees, in elements
    // (0: whole ranges move at once).  Derived from coll_topoar_segment_size.
    std::size_t pipeline_elems = 0;
    // Aggregation trees: number of trees K (0: planner's choice).
    int num_trees = 0;
    // Hierarchical ring: factorization p1 x p2 x ... (empty: from topology).
    std::vector<int> factors;
    // nccl_hier (planner_nccl_hier.hpp): the algorithm of its plans across
    // hosts (automatic: the latency algorithm for shards of at most
    // hier_small_elems elements, aggregation trees above, as the engine's
    // built-in choice; plan_options() derives it from small_msg_size).
    Algorithm hier_inter = Algorithm::automatic;
    std::size_t hier_small_elems = 0;
};

// Split [0, count) into `parts` nearly equal consecutive pieces; piece i.
struct Range {
    std::size_t offset = 0;
    std::size_t count = 0;
};
Range split_range(std::size_t count, std::size_t parts, std::size_t i);

// Flat ring (reduce-scatter then all-gather), bandwidth-optimal:
// 2(p-1) rounds, each moving count/p elements to the ring successor.
//
//   reduce-scatter, p = 4, chunk c ends on ring position c:
//     round 0: pos i sends chunk i-1 to pos i+1, which reduces it
//     round 1: pos i sends chunk i-2 (just reduced) ...
//     after p-1 rounds pos i holds the full chunk i
//   all-gather: p-1 more rounds passing the finished chunks along
//
// `order` lists the comm ranks in ring order (empty: 0..p-1).  A topology
// order (ranks of a node adjacent) makes only two hops per node cross its
// uplink.
Plan plan_ring(int nranks, std::size_t count, int only_rank, const std::vector<int>& order = {});
class Topology;

// Every planner: a pure function of (topology, count, options); only_rank as
// in PlanBuilder.  The registry (make_plan.cpp) holds the table's.
using PlannerFn = Status (*)(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                             Plan* out);
// The table row's planner (no_planner for auto and numbers outside it).
PlannerFn planner_of(Algorithm alg);

// Builds the plan of `alg` (its row of the algorithm table,
// core/algorithm.hpp) for `count` elements; only_rank as in PlanBuilder.
// The engine, the cost model's default table, the tools and the tests all
// plan through it, so they plan exactly what runs.  Code::unsupported for
// auto or a number outside the table, or when the algorithm cannot plan on
// this topology.
Status make_plan(Algorithm alg, const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                 Plan* out);

// The table's ring (algorithm.hpp): plan_ring in the topology's leaf order.
Status plan_ring_algorithm(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                           Plan* out);

// Recursive doubling (butterfly), latency-optimal for small vectors:
// ceil(log2 p) rounds of full-vector exchanges.  With p not a power of two,
// the first 2r ranks (r = p - 2^floor(log2 p)) pair up: even ones hand their
// vector to the odd neighbour first and get the result back at the end.
// Operand order is fixed by rank groups, so all ranks evaluate the same
// expression tree.
Plan plan_recursive_doubling(int nranks, std::size_t count, int only_rank);

// The same exchange among `members` (comm ranks, in this order), starting
// at global round `base_round`; used by the node-leader latency algorithm.
void add_recursive_doubling(PlanBuilder& b, const std::vector<int>& members, int base_round, std::size_t count);

}  // namespace topoar
