// Chain calls pipelined in slices, and FlexReduce as its paper ran it
// (chain_calls.hpp).
#include "model/chain_calls.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/network.hpp"

namespace topoar {

Status predict_chain_calls(const Topology& topo, const std::vector<std::vector<ChainCall>>& phases,
                           std::size_t slice_bytes, const CostParams& params, Prediction* out) {
    if (slice_bytes == 0) return Status::invalid("chain calls: slice size 0");
    if (!(params.overhead >= 0) || params.node_nics < 0 || !(params.peer_bandwidth >= 0) ||
        !(params.nic_path_bandwidth >= 0))
        return Status::invalid("chain calls: negative or NaN parameter");
    const int p = topo.num_ranks();
    for (const auto& phase : phases)
        for (const ChainCall& c : phase) {
            if (c.ranks.size() < 2 || !(c.bytes >= 0))
                return Status::invalid("chain calls: a call needs 2 ranks or more and bytes >= 0");
            for (std::size_t i = 0; i < c.ranks.size(); ++i) {
                if (c.ranks[i] < 0 || c.ranks[i] >= p)
                    return Status::invalid("chain calls: rank " + std::to_string(c.ranks[i]) + " of a topology of " +
                                           std::to_string(p) + " ranks");
                if (i > 0 && c.ranks[i] == c.ranks[i - 1])
                    return Status::invalid("chain calls: rank " + std::to_string(c.ranks[i]) + " sends to itself");
            }
        }
    *out = Prediction{};
    out->rank_time.assign(static_cast<std::size_t>(p), 0.0);
    out->link_bytes_up.assign(static_cast<std::size_t>(topo.num_nodes()), 0.0);
    out->link_bytes_down.assign(static_cast<std::size_t>(topo.num_nodes()), 0.0);
    model::Network net(topo, params);
    std::vector<double> cap(net.num_links());
    for (std::size_t l = 0; l < cap.size(); ++l) cap[l] = net.capacity(static_cast<int>(l));
    const double slice = static_cast<double>(slice_bytes);

    double start = 0;  // the phase's start: the previous phase's end
    for (const auto& phase : phases) {
        // Per call: its links over all hops (with repeats), its latency, and
        // the bytes still to drain (n and the fill's k - 1 slices).
        const std::size_t nc = phase.size();
        std::vector<std::vector<int>> links(nc);
        std::vector<double> latency(nc, 0), left(nc, 0);
        for (std::size_t i = 0; i < nc; ++i) {
            const ChainCall& c = phase[i];
            const std::size_t hops = c.ranks.size() - 1;
            const std::size_t slices = c.bytes > 0 ? static_cast<std::size_t>(std::ceil(c.bytes / slice)) : 0;
            for (std::size_t h = 0; h < hops; ++h) {
                const int box = net.box_of(c.ranks[h], c.ranks[h + 1]);
                const model::Box& b = net.box(box);
                links[i].insert(links[i].end(), b.links.begin(), b.links.end());
                latency[i] += b.latency;
                net.account(box, c.bytes, slices);
            }
            left[i] = c.bytes > 0 ? c.bytes + static_cast<double>(hops - 1) * std::min(slice, c.bytes) : 0;
        }
        // Progressive filling over the phase: the calls still draining share
        // the links max-min; at each call's end the others' rates change.
        std::vector<double> done(nc, start);
        std::vector<std::size_t> active;
        for (std::size_t i = 0; i < nc; ++i)
            if (left[i] > 0) active.push_back(i);
        double now = start;
        while (!active.empty()) {
            std::vector<std::vector<int>> fl;
            fl.reserve(active.size());
            for (std::size_t i : active) fl.push_back(links[i]);
            const std::vector<double> rate = max_min_rates(cap, fl);
            double step = model::kInf;
            for (std::size_t j = 0; j < active.size(); ++j)
                if (rate[j] > 0) step = std::min(step, std::isfinite(rate[j]) ? left[active[j]] / rate[j] : 0.0);
            if (!std::isfinite(step))
                return Status::internal("chain calls: a call gets no bandwidth (a link of capacity 0)");
            now += step;
            std::vector<std::size_t> still;
            for (std::size_t j = 0; j < active.size(); ++j) {
                const std::size_t i = active[j];
                left[i] = std::isfinite(rate[j]) ? left[i] - rate[j] * step : 0;
                if (left[i] <= 1e-9 * (phase[i].bytes + slice)) {
                    done[i] = now;
                    ++out->rate_updates;
                } else {
                    still.push_back(i);
                }
            }
            active.swap(still);
            ++out->events;
        }
        double end = start;
        for (std::size_t i = 0; i < nc; ++i) {
            const double t = done[i] + latency[i];
            end = std::max(end, t);
            for (int r : phase[i].ranks)
                out->rank_time[static_cast<std::size_t>(r)] = std::max(out->rank_time[static_cast<std::size_t>(r)], t);
        }
        out->round_end.push_back(end);
        start = end;
    }
    out->time = start;
    net.report(out);
    return Status::ok();
}

std::vector<std::vector<ChainCall>> flex_chain_calls(const FlexLayout& layout, std::size_t elem_size) {
    std::vector<std::vector<ChainCall>> phases;
    auto calls = [&](const FlexLevel& level, bool reduce) {
        std::vector<ChainCall> phase;
        for (const FlexSubrange& s : level.subranges) {
            const std::vector<int>& ring = s.participants;
            const std::size_t k = ring.size();
            const std::size_t root =
                static_cast<std::size_t>(std::find(ring.begin(), ring.end(), s.owner) - ring.begin()) % k;
            ChainCall c;
            c.bytes = static_cast<double>(s.range.count * elem_size);
            // reduce: root + 1, ..., root; broadcast: root, root + 1, ..., root - 1
            for (std::size_t j = 0; j < k; ++j) c.ranks.push_back(ring[(root + (reduce ? 1 : 0) + j) % k]);
            if (k >= 2 && c.bytes > 0) phase.push_back(std::move(c));
        }
        phases.push_back(std::move(phase));
    };
    for (const FlexLevel& level : layout.levels) calls(level, true);
    for (auto it = layout.levels.rbegin(); it != layout.levels.rend(); ++it) calls(*it, false);
    return phases;
}

}  // namespace topoar
