// make_plan (planners.hpp): an algorithm's planner, from the algorithm table.
#include <string>

#include "core/algorithm.hpp"
#include "planners/planners.hpp"
#include "topology/topology.hpp"

namespace topoar {

Status make_plan(Algorithm alg, const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                 Plan* out) {
    const int i = static_cast<int>(alg);
    if (i <= 0 || i >= kNumAlgorithms)
        return Status::unsupported("algorithm number " + std::to_string(i) + " is not a planning algorithm");
    const AlgorithmInfo& a = algorithm_info(alg);
    TOPOAR_TRY(a.plan(topo, count, only_rank, opts, out));
    out->algorithm = alg;
    return Status::ok();
}

}  // namespace topoar
