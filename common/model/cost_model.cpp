// The cost model's entry points (cost_model.hpp).  Its parts:
//   model/event_queue.hpp          the event queue of the simulation
//   model/network.{hpp,cpp}        links, flows, max-min sharing
//   model/replay.hpp               the replays of the ranks' schedules:
//   model/replay_dataflow.cpp        the executor's SchedulePolicy (default)
//   model/replay_rounds.cpp          round by round (--mode rounds)
#include "model/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "exec/schedule_policy.hpp"
#include "model/network.hpp"
#include "model/replay.hpp"

namespace topoar {

Status predict(const Topology& topo, const Plan& plan, std::size_t elem_size, const CostParams& params,
               Prediction* out) {
    return predict(topo, plan, elem_size, params, out, nullptr);
}

Status predict(const Topology& topo, const Plan& plan, std::size_t elem_size, const CostParams& params,
               Prediction* out, std::vector<ScheduleEvent>* trace) {
    if (plan.only_rank >= 0) return Status::invalid("cost model: needs a full plan (only_rank == -1)");
    if (plan.nranks != topo.num_ranks())
        return Status::invalid("cost model: plan for " + std::to_string(plan.nranks) + " ranks, topology has " +
                               std::to_string(topo.num_ranks()));
    if (static_cast<int>(plan.ranks.size()) != plan.nranks)
        return Status::invalid("cost model: plan has " + std::to_string(plan.ranks.size()) + " schedules for " +
                               std::to_string(plan.nranks) + " ranks");
    if (elem_size == 0) return Status::invalid("cost model: element size 0");
    if (!(params.overhead >= 0) || !(params.gamma >= 0) || !(params.unknown_bandwidth >= 0))
        return Status::invalid("cost model: negative or NaN parameter");
    if (params.node_nics < 0 || !(params.peer_bandwidth >= 0) || !(params.round_latency >= 0) ||
        !(params.nic_path_bandwidth >= 0))
        return Status::invalid(
            "cost model: node_nics, peer_bandwidth, nic_path_bandwidth and round_latency must be 0 or more");
    for (int r = 0; r < plan.nranks; ++r)
        for (const Round& round : plan.ranks[static_cast<std::size_t>(r)].rounds)
            for (const Op& op : round.ops)
                if (op.peer < 0 || op.peer >= plan.nranks || op.peer == r || op.count == 0)
                    return Status::invalid("cost model: rank " + std::to_string(r) + " has an operation with peer " +
                                           std::to_string(op.peer) + " and " + std::to_string(op.count) +
                                           " elements");
    *out = Prediction{};
    out->rank_time.assign(static_cast<std::size_t>(plan.nranks), 0.0);
    out->link_bytes_up.assign(static_cast<std::size_t>(topo.num_nodes()), 0.0);
    out->link_bytes_down.assign(static_cast<std::size_t>(topo.num_nodes()), 0.0);
    model::Network net(topo, params);
    if (params.mode == CostMode::dataflow)
        TOPOAR_TRY(model::replay_dataflow(net, plan, elem_size, params, out, trace));
    else
        TOPOAR_TRY(model::replay_rounds(net, plan, elem_size, params, out));
    for (double t : out->rank_time) out->time = std::max(out->time, t);
    net.report(out);
    return Status::ok();
}

std::size_t count_steps(const Plan& plan, std::size_t elem_size, std::size_t segment_bytes) {
    // The executor's steps (schedule_policy.hpp); elem_size 0: no cap.
    const std::size_t seg =
        elem_size ? step_elems(segment_elems_of(segment_bytes, elem_size), elem_size) : SIZE_MAX;
    std::size_t n = 0;
    for (const RankSchedule& rs : plan.ranks)
        for (const Round& round : rs.rounds)
            for (const Op& op : round.ops) n += (op.count + seg - 1) / seg;
    return n;
}

std::string link_name(const Topology& topo, int vertex, bool up) {
    if (vertex < 0 || vertex >= topo.num_nodes()) return "none";
    const TopoNode& n = topo.node(vertex);
    return std::string(to_string(n.level)) + " " + n.name + (up ? " up" : " down");
}

double bus_bandwidth(int nranks, double bytes, double seconds) {
    if (nranks <= 1 || !(seconds > 0)) return 0;
    return 2.0 * (nranks - 1) / nranks * bytes / seconds;
}

}  // namespace topoar
