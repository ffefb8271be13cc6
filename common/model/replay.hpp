// topoar cost model, part 3 of 3: the replays of a plan's schedules on the
// network (network.hpp).
//
//   dataflow (default): the host executor, step by step.  Every rank's
//     schedule is compiled with compile_schedule and run by the
//     SchedulePolicy (exec/schedule_policy.hpp) that the executor runs:
//     same segments, dependencies, window, per-peer order and apply rule.
//     This replay supplies what the network adds: a message flows when its
//     pair's previous one has drained, eagerly or after the rendezvous
//     handshake; it arrives one path latency after draining (before its
//     receive was posted: it waits in the unexpected queue); a reduction
//     costs gamma per byte on the rank's one CPU.
//   rounds: the old round-synchronous executor: post the round's receives,
//     then its sends; wait for all; reductions into a range the round also
//     sends wait for the sends; then the next round.  Kept for the closed
//     forms of the papers, which describe lock-step rounds (topoar_sim
//     --mode rounds, tests/unit/test_cost_model.cpp).
//
// Each fills the Prediction's rank times, events, steps and reduced bytes;
// cost_model.cpp adds the network's statistics.  Internal to the cost model.
#pragma once

#include <cstddef>
#include <vector>

#include "exec/schedule_policy.hpp"
#include "model/cost_model.hpp"
#include "model/network.hpp"
#include "plan/plan.hpp"

namespace topoar {
namespace model {

Status replay_dataflow(Network& net, const Plan& plan, std::size_t elem_size, const CostParams& params,
                       Prediction* out, std::vector<ScheduleEvent>* trace);

Status replay_rounds(Network& net, const Plan& plan, std::size_t elem_size, const CostParams& params,
                     Prediction* out);

}  // namespace model
}  // namespace topoar
