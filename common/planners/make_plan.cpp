// make_plan (planners.hpp): the planner registry -- each algorithm's
// planner, from the planner column of the algorithm table
// (core/algorithm.hpp).  Above core/: the table itself links no planner.
#include <string>

#include "core/algorithm.hpp"
#include "planners/planners.hpp"
#include "topology/topology.hpp"

namespace topoar {

// auto's row: auto decides, it does not plan.
Status no_planner(const Topology&, std::size_t, int, const PlanOptions&, Plan*) {
    return Status::unsupported("'auto' is not an algorithm that plans");
}

// Rows that run on device buffers only have no host plan.
Status plan_device_only(const Topology&, std::size_t, int, const PlanOptions&, Plan*) {
    return Status::unsupported("this algorithm runs on device buffers only");
}

// Each row's planner, declared from the table (its definition lives in the
// algorithm's planner file).
#define TOPOAR_ALG_DECLARE_(num, ident, name, alias, planner, ...) \
    Status planner(const Topology&, std::size_t, int, const PlanOptions&, Plan*);
TOPOAR_ALGORITHMS(TOPOAR_ALG_DECLARE_)
#undef TOPOAR_ALG_DECLARE_

namespace {
// By number, as the table (whose rows are numbered in order).
#define TOPOAR_ALG_PLANNER_(num, ident, name, alias, planner, ...) &planner,
const PlannerFn kPlanners[kNumAlgorithms] = {TOPOAR_ALGORITHMS(TOPOAR_ALG_PLANNER_)};
#undef TOPOAR_ALG_PLANNER_
}  // namespace

PlannerFn planner_of(Algorithm alg) {
    const int i = static_cast<int>(alg);
    return i >= 0 && i < kNumAlgorithms ? kPlanners[i] : &no_planner;
}

Status make_plan(Algorithm alg, const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                 Plan* out) {
    const int i = static_cast<int>(alg);
    if (i <= 0 || i >= kNumAlgorithms)
        return Status::unsupported("algorithm number " + std::to_string(i) + " is not a planning algorithm");
    TOPOAR_TRY(planner_of(alg)(topo, count, only_rank, opts, out));
    out->algorithm = alg;
    return Status::ok();
}

}  // namespace topoar
