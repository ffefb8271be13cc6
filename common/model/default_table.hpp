// topoar engine: the built-in decision table, predicted by the cost model.
//
// For a communicator without a rules file, auto needs to know which
// algorithm is fastest at which message size on *this* machine.  This plans
// every candidate with the real planners (make_plan) for a ladder of
// sizes, predicts each plan with the dataflow cost model (cost_model.hpp),
// and keeps the fastest per size:
//
//   size       8      32   ...  8K     32K  128K ...  8M   32M  64M
//   fastest    leader leader    leader tree tree     tree hring hring
//
//   rules      [0, 16K) leader  |  [16K, 16M) tree  |  [16M, inf) hring
//              boundaries at the geometric midpoint of two measured sizes
//              whose winners differ; equal neighbours merged; the first
//              range starts at 0, the last one is open when its winner
//              won in the bandwidth regime.
//
// A candidate must be predicted faster than every earlier (simpler, fewer
// messages) one by more than min_gain to win: the model charges extra
// messages less than they cost where processes share cores, and noise-level
// differences should not displace the latency algorithm.  Among plans
// predicted equal (within kTie) in the bandwidth regime, the one whose
// busiest rank reduces the least wins.  Across hosts, a winner whose rounds
// put more than the flight bound to one peer on another host gives way to
// the fastest plan that keeps within it, if predicted within min_gain
// (keeps_flight_bound); where none does, a winner that moves whole
// operations across hosts gives way to the fastest plan whose rounds are
// a few pipelining units (flight_class).  The result is a pure function of
// (topology, options): no clocks, no randomness, so every rank of a
// communicator computes the same table without talking.
//
// Budget: the model walks every executor step of every rank.  A candidate
// whose plan has more than max_steps steps at some size is not simulated
// there or above (its steps only grow with size), above full_max_bytes only
// the last winner and the plans ahead of it are, the simulation stops
// after max_total_steps, and above coarse_ranks ranks the size ladder takes
// bigger strides.  Sizes past the last one decided keep its winner when it
// won in the bandwidth regime, else get no rule (the engine's built-in
// choice); above max_ranks ranks there is no table at all.  Set-up cost:
// docs/cost-model.md, "Default table".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/algorithm.hpp"
#include "decide/decision.hpp"
#include "model/cost_model.hpp"
#include "config/params.hpp"
#include "planners/planners.hpp"
#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

struct DefaultTableOptions {
    // Plans are built for elements of this size (the engine's plan options
    // for it: plan_options(cfg, elem_size)); the model's segment size
    // should be the engine's (EngineConfig::segment_size).
    std::size_t elem_size = 4;
    PlanOptions plan;
    CostParams model;
    // The size ladder: min_bytes, min_bytes * size_factor, ..., max_bytes
    // (max_bytes is always included).
    std::size_t min_bytes = 8;
    std::size_t max_bytes = std::size_t(64) << 20;
    unsigned size_factor = 4;
    // Sizes above this one simulate only the winner of the size below and
    // the candidates predicted ahead of it there (within kTie): in the
    // bandwidth regime an incumbent loses only to a plan already ahead of
    // it (inside the margin) whose lead grows with the size, while the
    // larger sizes cost most of the table's steps.  SIZE_MAX: every
    // candidate at every size.
    std::size_t full_max_bytes = static_cast<std::size_t>(-1);
    // In order of preference for ties: the algorithm table's simplicity
    // order (algorithm.hpp), the latency algorithm first, the flat ring last.
    std::vector<Algorithm> candidates = model_candidates();
    // The memory type the rules are written for: host (the host executor's
    // model), or cuda for the device table (model/device_model.hpp, which
    // also sets `model` and the topology for it).
    MemType mem = MemType::host;
    // A candidate must be predicted faster than an earlier one by more than
    // this fraction to win (EngineConfig::model_margin; its default).
    double min_gain = default_model_margin();
    // Predictions this close count as equal (the bandwidth-regime tie
    // rule in build_default_table).
    static constexpr double kTie = 0.02;
    // Budget (deterministic: counted in executor steps, not seconds).
    std::size_t max_steps = std::size_t(1) << 16;        // per prediction
    std::size_t max_total_steps = std::size_t(1) << 18;  // per table
    int coarse_ranks = 64;   // above: the ladder's factor is size_factor squared
    int max_ranks = 256;     // above: no table (empty; the built-in choice applies)
};

// What was predicted, for tools, tests and verbose output.
struct DefaultTableReport {
    std::vector<std::size_t> sizes;            // the ladder
    std::vector<Algorithm> algorithms;         // = options.candidates
    std::vector<std::vector<double>> time;     // [algorithm][size] seconds; < 0: no prediction
    std::vector<std::vector<double>> reduced;  // [algorithm][size]: most bytes one rank reduces / size
    std::vector<std::vector<char>> bounded;    // [algorithm][size]: flight_class (kWithinFlight where unknown)
    std::vector<int> winner;                   // per size: index into algorithms, -1: none
    std::size_t steps = 0;                     // executor steps simulated in all
    std::size_t predictions = 0;
    std::vector<std::string> notes;            // skipped candidates, budget stops
};

// Whether no rank of `plan` sends more than flight_bytes to one rank on
// another host (topo's hosts) in one round: its rounds are pipelining units
// the executor's flight window meters (schedule_policy.hpp).  True when
// flight_bytes is 0.  The table prefers such plans: a plan predicted within
// min_gain of an unbounded winner replaces it (the fastest of them).
bool keeps_flight_bound(const Topology& topo, const Plan& plan, std::size_t elem_size, std::size_t flight_bytes);

// How `plan` loads the links between hosts, for the rule above:
//   kWithinFlight  keeps_flight_bound;
//   kPipelined     every message to a rank on another host is within
//                  flight_bytes and no round sends more than
//                  kPipelinedRound x flight_bytes to one such rank: a few
//                  parts pipelined side by side, one segment of each per
//                  round (flexrelay's and tree's rounds carry two or three
//                  32 KiB segments to one peer);
//   kWholeOps      otherwise: whole operations per round (the latency
//                  algorithm's leader exchange of the whole vector).
// A kWholeOps winner gives way to the fastest kPipelined plan within
// min_gain where no plan keeps within the bound.  Before this tier (stop
// 44) such plans counted as unbounded too, and the latency algorithm kept
// the large sizes wherever every pipelined plan had a round of a few
// segments: on family shape 8 (5 ms bucket) it ran 10 % behind its
// prediction while flexrelay ran on its own (docs/large-messages.md,
// "Whole operations against rounds of a few segments").
enum FlightClass : char { kWholeOps = 0, kPipelined = 1, kWithinFlight = 2 };
FlightClass flight_class(const Topology& topo, const Plan& plan, std::size_t elem_size, std::size_t flight_bytes);

// Builds the table into *out (replacing it).  Rules carry ranks= and
// nodes= of the topology, mem= options.mem (host by default: the model is
// the host executor's) and origin "cost model".  An empty table for one rank or above max_ranks.
Status build_default_table(const Topology& topo, const DefaultTableOptions& opt, DecisionTable* out,
                           DefaultTableReport* report = nullptr);

}  // namespace topoar
