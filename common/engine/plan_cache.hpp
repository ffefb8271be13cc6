// topoar engine: the plan cache of one communicator.
//
// Plans are computed once per shape of call and kept (FlexReduce III-B:
// plan, then execute); a call holds its plans through handles
// (reference-counted), so the cache may drop entries at any time -- to stay
// within its bounds, or because the network was measured again -- without
// freeing a plan a prepared or running call still uses.  Testable alone
// (tests/unit/test_engine.cpp: test_plan_cache_handles).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include "exec/executor.hpp"
#include "exec/fast_executor.hpp"
#include "plan/plan.hpp"
#include "planners/planner_nccl_hier.hpp"
#include "status.hpp"

namespace topoar {

// A plan with one rank's schedule compiled for the executor.
struct CompiledPlan {
    Plan plan;
    ExecProgram program;
    // The small-message fast path's form of `program` (exec/fast_executor.hpp);
    // empty (!usable()) for calls above kFastMaxBytes or with large rounds.
    FastProgram fast;
    // Some send of `program` is synchronous (ExecProgram::Step::sync: the
    // send credit may hold it).
    bool credited = false;
    // The cost model's time for the plan (online adaptation), computed at
    // its first timed call from the full plan (plan holds this rank's
    // part only); < 0: not yet, 0: not predicted (too large).  Filled in
    // through const handles: a memo, not part of the plan.
    mutable double predicted = -1;
    // Set by the first host call that runs it on this rank (Engine::run):
    // that call pays for connections to new peers and first touches of
    // buffers, so online adaptation does not time it.  Every rank builds
    // and runs the same plans at the same calls, so every rank skips the
    // same call.
    mutable bool ran = false;
    Algorithm algorithm = Algorithm::automatic;
    std::size_t count = 0;
    PlanOptions options;
};

using PlanHandle = std::shared_ptr<const CompiledPlan>;
using HierHandle = std::shared_ptr<const HierPlan>;

class PlanCache {
public:
    // (algorithm, count, element size, segment bytes, pipelining bytes,
    // memory type): segments are in elements, a rule may set its own
    // segment size, large calls scale both units, device plans have their
    // own pipelining unit.
    using Key = std::tuple<int, std::size_t, std::size_t, std::size_t, std::size_t, int>;
    // nccl_hier plans by (count, element size, pipelining bytes).
    using HierKey = std::tuple<std::size_t, std::size_t, std::size_t>;

    // At most this many plans or this much plan memory are kept; a program
    // cycling through more sizes rebuilds them (cheap next to the
    // transfer).  With chunking no one plan is larger than a chunk's.
    static constexpr std::size_t kMaxPlans = 64;
    static constexpr std::size_t kMaxBytes = std::size_t(64) << 20;

    // The plan for key, built with build() on a miss (an error is returned
    // and nothing cached).
    Status get(const Key& key, const std::function<Status(CompiledPlan*)>& build, PlanHandle* out);
    Status get_hier(const HierKey& key, const std::function<Status(HierPlan*)>& build, HierHandle* out);
    // Makes room before a call looks its plans up: drops every entry when
    // `room` more would exceed the bounds.  Handles keep their plans.
    void make_room(std::size_t room);
    void clear();
    std::size_t size() const { return plans_.size() + hier_.size(); }
    std::size_t bytes() const { return bytes_; }

private:
    std::map<Key, PlanHandle> plans_;
    std::map<HierKey, HierHandle> hier_;
    std::size_t bytes_ = 0;  // footprint of what is kept
};

// What a compiled plan holds in memory, roughly (this rank's share).
std::size_t footprint(const CompiledPlan& p);
std::size_t footprint(const HierPlan& h);

}  // namespace topoar
