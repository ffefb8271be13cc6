// topoar engine: the all-reduce algorithms it knows — one table.
//
// Everything else reads this table: the C++ enum below, the C accessors of
// topoar_engine.h (topoar_algorithm_count/_info/_name/_from_name), the
// coll_topoar_allreduce_algorithm MCA enum and the MPI_T last_algorithm
// description the glue builds from them, make_plan (planners/planners.hpp),
// the cost-model table's candidates and their simplicity order, rules-file
// names and the tools' lists.  Adding an algorithm: its planner file, one row here, its
// tests, its docs.
//
// The numbers are part of the user interface: they are the values of the
// coll_topoar_allreduce_algorithm MCA enum and of the
// coll_topoar_allreduce_last_algorithm MPI_T variable.  Never renumber.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "status.hpp"

namespace topoar {

// One row per algorithm:
//   X(number, identifier, name, deprecated alias or nullptr, planner,
//     simplicity, multi_host, device_only, description)
// planner     a function with PlannerFn's signature, in namespace topoar
//             (declared from this table by the planner registry,
//             planners/make_plan.cpp, which alone reads this column: core/
//             links no planner; no_planner for auto)
// simplicity  place in the cost model's order of preference (fewer
//             messages first; a later candidate must beat every earlier one
//             by coll_topoar_model_margin); -1: not a table candidate.  A
//             device_only row with one is a candidate of the device table
//             only (its planner then writes a point-to-point equivalent
//             for the model, which the host path never runs)
// multi_host  shaped for several hosts: on one host it degenerates to its
//             flat form
// device_only runs on device buffers only (no host plan: its planner says
//             unsupported; the GPU path runs it)
// description one line for people (topoar_info, docs, MCA help)
#define TOPOAR_ALGORITHMS(X)                                                                                   \
    X(0, automatic, "auto", nullptr, no_planner, -1, false, false,                                                     \
      "choose per message size and communicator: rules file, then the cost-model table, then the built-in "    \
      "choice")                                                                                                 \
    X(1, ring, "ring", nullptr, plan_ring_algorithm, 4, false, false,                                                  \
      "flat ring reduce-scatter + all-gather in topology order; 2(p-1) rounds, bandwidth-optimal")             \
    X(2, leader, "leader", "recursive_doubling", plan_leader, 0, true, false,                                         \
      "reduce to a leader per host, leaders exchange by recursive doubling or a tree, broadcast inside the "   \
      "host; on one host plain recursive doubling (latency algorithm)")                                        \
    X(3, hring, "hring", nullptr, plan_hring, 3, true, false,                                                          \
      "hierarchical ring: p1 x p2 x ... x ph rings along the topology levels")                                 \
    X(4, flexreduce, "flexreduce", nullptr, plan_flexreduce, 2, true, false,                                           \
      "FlexReduce: uneven reduce-scatter/all-gather over the topology tree")                                    \
    X(5, tree, "tree", nullptr, plan_tree, 1, true, false,                                                      \
      "aggregation trees (RAT): K rotating trees, one aggregator per oversubscribed region")                    \
    X(6, nccl, "nccl", nullptr, plan_device_only, -1, false, true,                                              \
      "device buffers only: NCCL's own ncclAllReduce (auto's choice within one host); pairs NCCL cannot "      \
      "reduce run the built-in plan with topoar's kernels")                                                   \
    X(7, nccl_hier, "nccl_hier", nullptr, plan_nccl_hier, 7, true, true,                                       \
      "device buffers only: NCCL reduce-scatter inside each host, topoar's plan across hosts among the "      \
      "ranks holding the same shard, NCCL all-gather inside each host; pairs NCCL cannot reduce run the "     \
      "built-in plan")                                                                                        \
    X(8, flexrelay, "flexrelay", nullptr, plan_flexrelay, 5, true, false,                                      \
      "FlexReduce with direct transfers and relay shares: a host whose link is the bottleneck sends its "    \
      "vector once through one rank and receives the result once")                                          \
    X(9, halving, "halving", nullptr, plan_halving, 6, false, false,                                          \
      "reduce-scatter by recursive halving with doubling distance, all-gather by recursive doubling, in "  \
      "topology order: the largest halves between the nearest ranks (log2 p rounds each way; ranks beyond "  \
      "a power of two folded into a neighbour first)")

enum class Algorithm : int {
#define TOPOAR_ALG_ENUM_(num, ident, ...) ident = num,
    TOPOAR_ALGORITHMS(TOPOAR_ALG_ENUM_)
#undef TOPOAR_ALG_ENUM_
};

#define TOPOAR_ALG_COUNT_(...) +1
constexpr int kNumAlgorithms = 0 TOPOAR_ALGORITHMS(TOPOAR_ALG_COUNT_);
#undef TOPOAR_ALG_COUNT_

struct AlgorithmInfo {
    Algorithm id;
    const char* name;
    const char* alias;  // deprecated name still accepted, or nullptr
    int simplicity;
    bool multi_host;
    bool device_only;
    const char* description;
};

// The table, indexed by number (row i has id i).
const AlgorithmInfo& algorithm_info(Algorithm a);
const AlgorithmInfo* algorithm_table();  // kNumAlgorithms rows

const char* algorithm_name(Algorithm a);  // "unknown" outside the table
// Parses a name or a deprecated alias ("ring", "auto", "recursive_doubling",
// ...); returns false for an unknown one.
bool algorithm_from_name(const std::string& name, Algorithm* out);
// The cost-model table's candidates, simplest first: for host buffers
// (rows with a simplicity, not device_only), and for the device table
// (every row with a simplicity).
std::vector<Algorithm> model_candidates();
std::vector<Algorithm> device_model_candidates();
// Every algorithm but auto, by number.
std::vector<Algorithm> concrete_algorithms();
// Those that plan for host buffers (not device_only), by number.
std::vector<Algorithm> host_algorithms();
// "a, b, c" of names (for usage and error messages).
std::string algorithm_names(const std::vector<Algorithm>& algs);

}  // namespace topoar
