// topoar engine: the per-communicator object behind the C interface.
//
// Set-up (once, collective data already gathered by the glue) builds the
// topology; every call then looks its plan up in a small cache keyed by
// (algorithm, count) and runs it.  Plans are only rebuilt for a new count.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "algorithm.hpp"
#include "executor.hpp"
#include "plan.hpp"
#include "planners.hpp"
#include "status.hpp"
#include "topology.hpp"

namespace topoar {

struct EngineConfig {
    Algorithm algorithm = Algorithm::automatic;
    std::size_t segment_bytes = 512 * 1024;
    std::size_t small_msg_bytes = 4096;
    int num_trees = 0;              // aggregation trees (0: planner's choice)
    std::vector<int> hring_factors; // hierarchical ring (empty: from topology)
    DiscoveryOptions discovery;
    // Link default overrides, "BANDWIDTH[,LATENCY]"; empty keeps discovery's.
    std::string socket_link, node_link, rack_link, spine_link;
};

class Engine {
public:
    Engine(int rank, int size, EngineConfig cfg);

    Status setup(const std::vector<RankInfo>& ranks);
    bool ready() const { return ready_; }
    int rank() const { return rank_; }
    int size() const { return size_; }
    const Topology& topology() const { return topology_; }

    // The algorithm that runs for a message of `bytes` bytes.
    Algorithm choose(std::size_t bytes) const;

    // In-place all-reduce of buf (count elements of elem_size bytes).
    Status allreduce(void* buf, std::size_t count, std::size_t elem_size, Transport& transport,
                     Reducer& reducer, Algorithm* used);

    // Builds the plan of `alg` for `count` elements; only_rank as in
    // PlanBuilder.  Public so tests and tools plan exactly what runs.
    static Status make_plan(Algorithm alg, const Topology& topo, std::size_t count, int only_rank,
                            const PlanOptions& opts, Plan* out);
    // The options the engine plans with for elements of elem_size bytes.
    PlanOptions plan_options(std::size_t elem_size) const;

private:
    Status plan_for(Algorithm alg, std::size_t count, std::size_t elem_size, const Plan** out);

    int rank_, size_;
    EngineConfig cfg_;
    bool ready_ = false;
    Topology topology_;
    // Keyed by (algorithm, count, element size): segments are in elements.
    std::map<std::tuple<int, std::size_t, std::size_t>, std::unique_ptr<Plan>> plans_;
    Executor executor_;
    std::vector<unsigned char> scratch_;
};

}  // namespace topoar
