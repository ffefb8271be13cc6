#include "planners/planner_barrier.hpp"

#include <string>

namespace topoar {

Status plan_barrier(const HostLayout& l, int rank, std::vector<BarrierStep>* out) {
    const auto p = l.host_of.size();
    if (rank < 0 || static_cast<std::size_t>(rank) >= p || l.local_of.size() != p)
        return Status::invalid("barrier: rank " + std::to_string(rank) + " is not in the layout");
    const int h = l.host_of[static_cast<std::size_t>(rank)], i = l.local_of[static_cast<std::size_t>(rank)];
    if (h < 0 || static_cast<std::size_t>(h) >= l.members.size())
        return Status::invalid("barrier: rank " + std::to_string(rank) + " has no host");
    const std::vector<int>& local = l.members[static_cast<std::size_t>(h)];
    const int n = static_cast<int>(local.size()), hosts = static_cast<int>(l.members.size());
    if (i < 0 || i >= n || local[static_cast<std::size_t>(i)] != rank)
        return Status::invalid("barrier: rank " + std::to_string(rank) + " is not where its host says");
    for (const auto& m : l.members)
        if (m.empty()) return Status::invalid("barrier: a host without ranks");

    std::vector<BarrierStep> s;
    auto at = [&](int k) { return local[static_cast<std::size_t>(k)]; };
    const int low = i & -i;  // 0 for the first rank
    // In: children i + m for m below lowbit(i) (every m for i = 0), then the parent.
    for (int m = 1; m < n && (i == 0 || m < low); m <<= 1)
        if (i + m < n) s.push_back({BarrierStep::recv, -1, at(i + m)});
    if (i != 0) s.push_back({BarrierStep::send, at(i - low), -1});
    // Across: the first ranks.
    if (i == 0) {
        const bool pow2 = (hosts & (hosts - 1)) == 0;
        for (int k = 1; k < hosts; k <<= 1) {
            const int from = pow2 ? h ^ k : (h - k + hosts) % hosts, to = pow2 ? h ^ k : (h + k) % hosts;
            s.push_back({BarrierStep::exchange, l.members[static_cast<std::size_t>(to)].front(),
                         l.members[static_cast<std::size_t>(from)].front()});
        }
    }
    // Out: from the parent, then the children, the farthest first.
    if (i != 0) s.push_back({BarrierStep::recv, -1, at(i - low)});
    int top = 1;
    if (i == 0) {
        while (top < n) top <<= 1;
    } else {
        top = low;
    }
    for (int m = top >> 1; m > 0; m >>= 1)
        if (i + m < n) s.push_back({BarrierStep::send, at(i + m), -1});
    if (static_cast<int>(s.size()) > kBarrierMaxSteps) return Status::internal("barrier: too many steps");
    *out = std::move(s);
    return Status::ok();
}

}  // namespace topoar
