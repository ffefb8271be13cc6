// The network sharing model of the cost model (network.hpp).
#include "model/network.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace topoar {
namespace model {

Network::Network(const Topology& topo, const CostParams& params) : topo_(topo), params_(params) {
    const std::size_t nv = static_cast<std::size_t>(topo_.num_nodes());
    cap_.assign(2 * nv, kInf);
    for (std::size_t v = 0; v < nv; ++v) {
        const TopoNode& n = topo_.node(static_cast<int>(v));
        if (n.parent < 0) continue;
        double bw = n.up.bandwidth > 0 ? n.up.bandwidth : params_.unknown_bandwidth;
        if (bw > 0) cap_[2 * v] = cap_[2 * v + 1] = bw * params_.wire_efficiency;
    }
    add_device_links();
    const std::size_t nl = cap_.size();
    active_.assign(nl, {});
    link_bytes_.assign(nl, 0);
    link_stamp_.assign(nl, 0);
    dirty_stamp_.assign(nl, 0);
    rem_.assign(nl, 0);
    cnt_.assign(nl, 0);
    out_boxes_.assign(static_cast<std::size_t>(topo_.num_ranks()), {});
    used_.assign(nl, 0.0);
    quantum_ = params_.rate_quantum;
    if (quantum_ == 0) {  // auto: a segment's time on the fastest link
        double fastest = 0;
        for (double c : cap_)
            if (std::isfinite(c)) fastest = std::max(fastest, c);
        const double seg = static_cast<double>(params_.segment_bytes ? params_.segment_bytes : std::size_t(1) << 20);
        quantum_ = fastest > 0 ? seg / fastest : 0;
    }
}

int Network::add_link_pair(double bandwidth) {
    const int pair = static_cast<int>(cap_.size() / 2);
    const double c = bandwidth * params_.wire_efficiency;
    cap_.push_back(c);
    cap_.push_back(c);
    return pair;
}

// NICs shared by several GPUs and direct GPU pairs (CostParams::node_nics,
// peer_bandwidth): extra links that a flow crosses besides the tree's.
//
//   node up-link (all NICs, for the byte counts)      a flow from GPU i of G
//     NIC 0 (up, down)   NIC 1 ...  NIC k-1            leaves and enters
//    GPUs 0..G/k-1       ...                           through NIC i*k/G
//
// A peer pair (i, j), i < j, is one pair of links: i -> j up, j -> i down.
// A GPU-NIC path (nic_path_bandwidth) is one pair per rank: up towards the
// NICs, down from them.
void Network::add_device_links() {
    const std::size_t nv = static_cast<std::size_t>(topo_.num_nodes());
    nic_base_.assign(nv, -1);
    nic_count_.assign(nv, 0);
    peer_base_.assign(nv, -1);
    if (params_.node_nics <= 0 && !(params_.peer_bandwidth > 0) && !(params_.nic_path_bandwidth > 0)) return;
    if (params_.nic_path_bandwidth > 0)
        for (int r = 0; r < topo_.num_ranks(); ++r) {
            const int pair = add_link_pair(params_.nic_path_bandwidth);
            if (r == 0) path_base_ = pair;
        }
    rank_node_.assign(static_cast<std::size_t>(topo_.num_ranks()), -1);
    rank_local_.assign(static_cast<std::size_t>(topo_.num_ranks()), 0);
    for (int v : topo_.nodes_at(Level::node)) {
        const std::vector<int> ranks = topo_.ranks_in_tree_order(v);
        const int g = static_cast<int>(ranks.size());
        for (int i = 0; i < g; ++i) {
            rank_node_[static_cast<std::size_t>(ranks[static_cast<std::size_t>(i)])] = v;
            rank_local_[static_cast<std::size_t>(ranks[static_cast<std::size_t>(i)])] = i;
        }
        const TopoNode& n = topo_.node(v);
        const double up = n.up.bandwidth > 0 ? n.up.bandwidth : params_.unknown_bandwidth;
        if (params_.node_nics > 0 && n.parent >= 0 && up > 0 && g > 0) {
            const int k = std::min(params_.node_nics, g);
            nic_count_[static_cast<std::size_t>(v)] = k;
            for (int j = 0; j < k; ++j) {
                const int pair = add_link_pair(up / k);
                if (j == 0) nic_base_[static_cast<std::size_t>(v)] = pair;
            }
        }
        if (params_.peer_bandwidth > 0 && g > 1)
            for (int j = 0; j < g * g; ++j) {
                const int pair = add_link_pair(params_.peer_bandwidth);
                if (j == 0) peer_base_[static_cast<std::size_t>(v)] = pair;
            }
    }
}

void Network::report(Prediction* out) const {
    const std::size_t nv = static_cast<std::size_t>(topo_.num_nodes());
    out->messages = messages_;
    out->bytes_sent = bytes_sent_;
    out->rate_updates = rate_updates_;
    double best_s = -1, best_b = -1;
    for (std::size_t v = 1; v < nv; ++v)
        for (int d = 0; d < 2; ++d) {
            double bytes = link_bytes_[2 * v + static_cast<std::size_t>(d)];
            double c = cap_[2 * v + static_cast<std::size_t>(d)];
            double secs = std::isfinite(c) ? bytes / c : 0;
            (d == 0 ? out->link_bytes_up : out->link_bytes_down)[v] = bytes;
            if (bytes > 0 && (secs > best_s || (secs == best_s && bytes > best_b))) {
                best_s = secs;
                best_b = bytes;
                out->busiest_vertex = static_cast<int>(v);
                out->busiest_up = d == 0;
                out->busiest_bytes = bytes;
                out->busiest_seconds = secs;
            }
        }
}

int Network::box_of(int src, int dst) {
    auto& list = out_boxes_[static_cast<std::size_t>(src)];
    auto it = std::lower_bound(list.begin(), list.end(), std::make_pair(dst, -1));
    if (it != list.end() && it->first == dst) return it->second;
    Box b;
    b.src = src;
    b.dst = dst;
    int a = topo_.leaf_of_rank(src), c = topo_.leaf_of_rank(dst);
    int top = topo_.lca(a, c);
    // Dataflow mode charges 2 x message_cpu_share of the overhead on the
    // ranks' CPUs (replay_dataflow.cpp); the rest is the path's.
    double lat = params_.overhead * (1 - 2 * applied_cpu_share(params_));
    for (int v = a; v != top; v = topo_.node(v).parent) {
        b.path.push_back(2 * v);
        lat += topo_.node(v).up.latency;
    }
    std::vector<int> down;
    for (int v = c; v != top; v = topo_.node(v).parent) {
        down.push_back(2 * v + 1);
        lat += topo_.node(v).up.latency;
    }
    b.path.insert(b.path.end(), down.rbegin(), down.rend());
    for (int l : b.path)
        if (std::isfinite(cap_[static_cast<std::size_t>(l)])) b.links.push_back(l);
    if (!rank_node_.empty()) {  // device data: the NICs of both GPUs, or the pair's own links
        const std::size_t s = static_cast<std::size_t>(src), d = static_cast<std::size_t>(dst);
        const int vs = rank_node_[s], vd = rank_node_[d];
        if (vs >= 0 && vs == vd) {
            const int base = peer_base_[static_cast<std::size_t>(vs)];
            if (base >= 0) {
                const int g = topo_.num_ranks_under(vs), i = rank_local_[s], j = rank_local_[d];
                b.links.push_back(2 * (base + std::min(i, j) * g + std::max(i, j)) + (i < j ? 0 : 1));
            }
        } else {
            auto nic = [&](int v, std::size_t r, int dir) {
                if (v < 0 || nic_base_[static_cast<std::size_t>(v)] < 0) return;
                const int k = nic_count_[static_cast<std::size_t>(v)], g = topo_.num_ranks_under(v);
                b.links.push_back(2 * (nic_base_[static_cast<std::size_t>(v)] + rank_local_[r] * k / g) + dir);
            };
            nic(vs, s, 0);
            nic(vd, d, 1);
            if (path_base_ >= 0) {  // the GPUs' PCIe paths to and from the NICs
                if (vs >= 0) b.links.push_back(2 * (path_base_ + src));
                if (vd >= 0) b.links.push_back(2 * (path_base_ + dst) + 1);
            }
        }
    }
    b.latency = lat;
    int id = static_cast<int>(boxes_.size());
    boxes_.push_back(std::move(b));
    list.insert(it, std::make_pair(dst, id));
    return id;
}

void Network::try_start_wire(int box_id, double t) {
    Box& b = boxes_[static_cast<std::size_t>(box_id)];
    if (b.flowing || b.wire.empty()) return;
    double bytes = 0;
    int m = client_->ready_front(box_id, t, &bytes);
    if (m < 0) return;
    b.flowing = true;
    start_flow(m, box_id, bytes, t);
}

void Network::account(int box, double bytes, std::size_t messages) {
    messages_ += messages;
    bytes_sent_ += bytes;
    for (int l : boxes_[static_cast<std::size_t>(box)].path) link_bytes_[static_cast<std::size_t>(l)] += bytes;
}

void Network::count_message(int box, double bytes) {
    ++messages_;
    bytes_sent_ += bytes;
    for (int l : boxes_[static_cast<std::size_t>(box)].path) link_bytes_[static_cast<std::size_t>(l)] += bytes;
}

void Network::start_flow(int m, int box, double bytes, double t) {
    const Box& b = boxes_[static_cast<std::size_t>(box)];
    count_message(box, bytes);

    int f;
    if (!free_flows_.empty()) {
        f = free_flows_.back();
        free_flows_.pop_back();
    } else {
        f = static_cast<int>(flows_.size());
        flows_.emplace_back();
        flow_stamp_.push_back(0);
        new_rate_.push_back(0);
    }
    ++active_flows_;
    Flow& fl = flows_[static_cast<std::size_t>(f)];
    fl.msg = m;
    fl.box = box;
    fl.remaining = bytes;
    fl.rate = 0;
    fl.last = t;
    fl.version = (fl.version + 1) & kVersionMask;
    fl.links.assign(b.links.begin(), b.links.end());
    fl.pos.resize(b.links.size());
    // Alone on all its links (the common case: a ring's hops, a host's
    // single uplink flow): its rate is the bottleneck, no sharing to solve.
    bool alone = true;
    double bottleneck = kInf;
    for (std::size_t i = 0; i < b.links.size(); ++i) {
        auto& act = active_[static_cast<std::size_t>(b.links[i])];
        if (!act.empty()) alone = false;
        bottleneck = std::min(bottleneck, cap_[static_cast<std::size_t>(b.links[i])]);
        fl.pos[i] = static_cast<int>(act.size());
        act.push_back(f);
    }
    if (alone) {
        set_rate(f, bottleneck, t);  // infinite for a path without limits
        return;
    }
    for (int l : b.links) mark_dirty(l);
    unrated_.push_back(f);
}

void Network::set_rate(int f, double rate, double t) {
    Flow& fl = flows_[static_cast<std::size_t>(f)];
    if (std::isfinite(rate))
        for (int l : fl.links) used_[static_cast<std::size_t>(l)] += rate - fl.rate;
    if (fl.rate > 0 && t > fl.last) fl.remaining = std::max(0.0, fl.remaining - fl.rate * (t - fl.last));
    fl.last = t;
    fl.rate = rate;
    fl.version = (fl.version + 1) & kVersionMask;
    ++rate_updates_;
    double finish = rate > 0 ? t + fl.remaining / rate : kInf;
    push(finish, kFlowEnd, static_cast<std::uint32_t>(f), fl.version);
}

// Flow f has drained its message at t: the client hears of it (the
// sender's send is complete, the receiver gets the data one path latency
// later).  When the pair's next
// message may go at once, the flow carries it on: same path, so nobody's
// max-min share changes and no rates need recomputing (a stream of
// segments costs one event per segment, not a rate update of every flow
// in its component).
void Network::end_flow(int f, double t) {
    const int box_id = flows_[static_cast<std::size_t>(f)].box;
    const int m = flows_[static_cast<std::size_t>(f)].msg;
    boxes_[static_cast<std::size_t>(box_id)].wire.pop();
    client_->drained(box_id, m, t);  // the box still counts as flowing: nothing else starts on it

    double bytes = 0;
    const int next = boxes_[static_cast<std::size_t>(box_id)].wire.empty() ? -1 : client_->ready_front(box_id, t, &bytes);
    Flow& fl = flows_[static_cast<std::size_t>(f)];
    fl.version = (fl.version + 1) & kVersionMask;  // stale events of this flow are ignored
    if (next >= 0) {
        count_message(box_id, bytes);
        fl.msg = next;
        fl.remaining = bytes;
        fl.last = t;
        push(fl.rate > 0 ? t + bytes / fl.rate : kInf, kFlowEnd, static_cast<std::uint32_t>(f), fl.version);
        return;
    }
    --active_flows_;
    for (std::size_t i = 0; i < fl.links.size(); ++i) {
        int l = fl.links[i];
        used_[static_cast<std::size_t>(l)] -= fl.rate;
        auto& act = active_[static_cast<std::size_t>(l)];
        int idx = fl.pos[i];
        int moved = act.back();
        act[static_cast<std::size_t>(idx)] = moved;
        act.pop_back();
        if (moved != f) {
            Flow& mf = flows_[static_cast<std::size_t>(moved)];
            for (std::size_t j = 0; j < mf.links.size(); ++j)
                if (mf.links[j] == l) {
                    mf.pos[j] = idx;
                    break;
                }
        }
        if (!act.empty()) mark_dirty(l);  // the others may speed up
    }
    fl.msg = -1;
    fl.rate = 0;
    free_flows_.push_back(f);
    boxes_[static_cast<std::size_t>(box_id)].flowing = false;
}

// Max-min fair shares for the flows connected (through shared links) to the
// links touched since the last call.  Flows elsewhere keep their rates: a
// max-min allocation decomposes over connected components.
//
// With more than CostParams::exact_flows flows in flight, a component can
// hold thousands of flows and recomputing it at every start or end would
// cost O(flows) per message.  Then rates are recomputed at most once per
// quantum_ (a segment's time on the fastest link) times flows in flight /
// exact_flows: a flow starting in between gets a provisional rate, the
// larger of the link's unused capacity and its equal share, and flows keep
// their rates when others end until the next recomputation.  On 256 ranks
// this moved predictions by at most 2.4 % and made them 10-35x faster
// (docs/cost-model.md, "Performance").
void Network::recompute_rates(double t) {
    if (dirty_.empty()) return;
    if (quantum_ > 0 && active_flows_ > params_.exact_flows && t < next_recompute_) {
        for (int f : unrated_)
            if (flows_[static_cast<std::size_t>(f)].msg >= 0 && flows_[static_cast<std::size_t>(f)].rate == 0)
                set_rate(f, provisional_rate(f), t);
        unrated_.clear();
        if (!recompute_armed_) {
            recompute_armed_ = true;
            push(next_recompute_, kRecompute, 0);
        }
        return;
    }
    unrated_.clear();
    next_recompute_ =
        t + quantum_ * std::max(1.0, static_cast<double>(active_flows_) / static_cast<double>(params_.exact_flows ? params_.exact_flows : 1));
    ++bfs_epoch_;
    comp_links_.clear();
    comp_flows_.clear();
    stack_.clear();
    for (int l : dirty_) {
        if (link_stamp_[static_cast<std::size_t>(l)] == bfs_epoch_) continue;
        link_stamp_[static_cast<std::size_t>(l)] = bfs_epoch_;
        stack_.push_back(l);
    }
    dirty_.clear();
    ++dirty_epoch_;
    while (!stack_.empty()) {
        int l = stack_.back();
        stack_.pop_back();
        comp_links_.push_back(l);
        for (int f : active_[static_cast<std::size_t>(l)]) {
            if (flow_stamp_[static_cast<std::size_t>(f)] == bfs_epoch_) continue;
            flow_stamp_[static_cast<std::size_t>(f)] = bfs_epoch_;
            comp_flows_.push_back(f);
            for (int m : flows_[static_cast<std::size_t>(f)].links)
                if (link_stamp_[static_cast<std::size_t>(m)] != bfs_epoch_) {
                    link_stamp_[static_cast<std::size_t>(m)] = bfs_epoch_;
                    stack_.push_back(m);
                }
        }
    }
    if (comp_flows_.empty()) return;

    // Progressive filling: raise all unfrozen rates together; the link whose
    // fair share runs out first freezes its flows at that share.  Links sit
    // in a min-heap by share (rem / cnt); a link's share only grows as flows
    // elsewhere freeze, so an entry whose key is no longer the link's share
    // is stale and skipped.  O((links + flows * path) log links).
    using Key = std::pair<double, int>;
    auto& heap = link_heap_;
    heap.clear();
    for (int l : comp_links_) {
        const std::size_t i = static_cast<std::size_t>(l);
        rem_[i] = cap_[i];
        cnt_[i] = static_cast<int>(active_[i].size());
        if (cnt_[i] > 0) heap.emplace_back(rem_[i] / cnt_[i], l);
    }
    std::make_heap(heap.begin(), heap.end(), std::greater<Key>());
    for (int f : comp_flows_) new_rate_[static_cast<std::size_t>(f)] = -1;
    std::size_t left = comp_flows_.size();
    double level = 0;  // shares within a relative 1e-12 of each other freeze alike
    while (left > 0 && !heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<Key>());
        const Key top = heap.back();
        heap.pop_back();
        const std::size_t li = static_cast<std::size_t>(top.second);
        if (cnt_[li] == 0 || rem_[li] / cnt_[li] != top.first) continue;
        double best = std::max(top.first, 0.0);
        if (best <= level * (1 + 1e-12))
            best = level;
        else
            level = best;
        for (int f : active_[li]) {
            if (new_rate_[static_cast<std::size_t>(f)] >= 0) continue;
            new_rate_[static_cast<std::size_t>(f)] = best;
            --left;
            for (int m : flows_[static_cast<std::size_t>(f)].links) {
                const std::size_t mi = static_cast<std::size_t>(m);
                rem_[mi] = std::max(0.0, rem_[mi] - best);
                if (--cnt_[mi] > 0 && mi != li) {
                    heap.emplace_back(rem_[mi] / cnt_[mi], m);
                    std::push_heap(heap.begin(), heap.end(), std::greater<Key>());
                }
            }
        }
    }
    for (int f : comp_flows_) {
        double nr = new_rate_[static_cast<std::size_t>(f)];
        if (nr < 0) nr = kInf;  // cannot happen: every flow here has a finite link
        if (nr != flows_[static_cast<std::size_t>(f)].rate) set_rate(f, nr, t);
    }
}

// Whether the direction opposite to b's path carries data now (a handshake
// answer would queue behind it).
bool Network::reverse_busy(const Box& b) const {
    for (int l : b.links)
        if (!active_[static_cast<std::size_t>(l ^ 1)].empty()) return true;
    return false;
}

double Network::provisional_rate(int f) const {
    double rate = kInf;
    for (int l : flows_[static_cast<std::size_t>(f)].links) {
        const std::size_t i = static_cast<std::size_t>(l);
        rate = std::min(rate, std::max(cap_[i] - used_[i], cap_[i] / static_cast<double>(active_[i].size())));
    }
    return rate;
}

}  // namespace model
}  // namespace topoar
