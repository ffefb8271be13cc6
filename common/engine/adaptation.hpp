// topoar engine: online adaptation -- whether the links changed since they
// were measured.
//
// Timed host calls on measured links are compared with the cost model's
// prediction for their plans; every adapt_interval of them the ranks pool
// their mean ratio measured/predicted.  The first window is the model's
// own error on this machine (the baseline); a later window more than
// adapt_threshold above it asks for the links to be measured again (at
// most adapt_max times per communicator).  The re-measuring itself, the
// tables and the plans are the engine's (engine.cpp: Engine::
// note_call_time); this part only keeps the windows and decides.  Testable
// alone (tests/unit/test_adaptation.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config/engine_config.hpp"
#include "engine/network_setup.hpp"
#include "engine/plan_cache.hpp"
#include "model/cost_model.hpp"
#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

// The cost model's time of a call run as num_chunks chunks of `plan`, the
// last one of `tail` when given (nullptr: every chunk is `plan`): each
// plan predicted once (CompiledPlan::predicted keeps it) with `model` (the
// engine's: Selection::table_options().model).  0 when a plan is too large
// to simulate quickly.
double predicted_seconds(const Topology& topo, const CostParams& model, const PlanHandle& plan,
                         const PlanHandle& tail, std::size_t num_chunks, std::size_t elem_size);

class Adaptation {
public:
    Adaptation(const EngineConfig& cfg, int rank, int size);

    // A timed call of `bytes` took `seconds` on this rank; the model
    // predicted `predicted` (<= 0: no prediction, the call does not count).
    // Collective at a window's end, which every rank reaches at the same
    // call (the calls are collective and the timing rule is alike): one
    // allgather over io of each rank's mean ratio, so every rank decides
    // alike.  *remeasure: the links should be measured again (the caller
    // does, then calls replanned()).
    Status note(double seconds, double predicted, std::size_t bytes, SetupIo& io, bool* remeasure);
    // The caller measured the links again in `ms` milliseconds and rebuilt
    // what depends on them: counts the re-plan, starts a new baseline, and
    // returns the notice for verbose output, ending with `network` (what
    // was measured) and, when auto has a table, `table` (its text) said
    // changed or unchanged against `table_before`.
    std::string replanned(double ms, const std::string& network, const std::string& table_before,
                          const std::string& table);

    int replans() const { return replans_; }
    double baseline() const { return baseline_; }  // 0: none yet (the next window sets it)

private:
    bool enabled_;
    int interval_;
    double threshold_;
    int max_;
    int rank_, size_;
    std::vector<double> window_;  // measured / predicted of this window's timed calls
    double baseline_ = 0;         // the first window's mean ratio across ranks
    double last_mean_ = 0;        // the window that asked to re-measure
    int replans_ = 0;
};

}  // namespace topoar
