// topoar engine: the all-reduce algorithms it knows, by name and number.
//
// The numbers are part of the user interface: they are the values of the
// coll_topoar_allreduce_algorithm MCA enum and of the
// coll_topoar_allreduce_last_algorithm MPI_T variable.  Never renumber.
#pragma once

#include <string>

namespace topoar {

enum class Algorithm : int {
    automatic = 0,           // "auto": the decision table picks
    ring = 1,                // flat ring reduce-scatter + all-gather
    recursive_doubling = 2,  // latency-optimal butterfly for small messages
    hring = 3,               // hierarchical ring (p1 x p2 x ... x ph)
    flexreduce = 4,          // FlexReduce over the topology tree
    tree = 5,                // aggregation trees (RAT), K rotating trees
};

constexpr int kNumAlgorithms = 6;

const char* algorithm_name(Algorithm a);
// Parses a name ("ring", "auto", ...); returns false for an unknown one.
bool algorithm_from_name(const std::string& name, Algorithm* out);

}  // namespace topoar
