// Aggregation trees (RAT) and the node-aware latency tree; see
// planner_tree.hpp for the algorithms, diagrams and the paper sections.
#include "planners/planner_tree.hpp"

#include <algorithm>
#include <numeric>

namespace topoar {

namespace {

std::size_t idx(int i) { return static_cast<std::size_t>(i); }

std::vector<int> heights_of(const Topology& topo) {
    // Vertex ids are a preorder walk: children have larger ids than their
    // parent, so one reverse sweep sees every child before its parent.
    std::vector<int> h(idx(topo.num_nodes()), 0);
    for (int v = topo.num_nodes() - 1; v >= 0; --v)
        for (int c : topo.node(v).children) h[idx(v)] = std::max(h[idx(v)], h[idx(c)] + 1);
    return h;
}

double bandwidth_of(const TopoNode& n) {
    if (n.up.bandwidth > 0) return n.up.bandwidth;
    double bw = LinkDefaults{}.for_level(n.level).bandwidth;
    return bw > 0 ? bw : 1.0;
}

}  // namespace

TreeLayout layout_trees(const Topology& topo, int num_trees) {
    TreeLayout t;
    const int K = std::max(1, num_trees);
    const int V = topo.num_nodes();
    t.num_trees = K;
    t.height = heights_of(topo);
    t.choice.assign(idx(K), std::vector<int>(idx(V), -1));
    t.agg.assign(idx(K), std::vector<int>(idx(V), -1));
    if (V == 0) return t;

    // use[v][k]: for how many levels above v the aggregator of v in tree k
    // also aggregates (0: only v itself).  Trees with a larger use are
    // spread first, so the ranks that serve high levels (the roots above
    // all) rotate over the children as evenly as the others.
    std::vector<std::vector<int>> use(idx(V), std::vector<int>(idx(K), 0));  // [v][k]
    std::vector<int> order(idx(K));
    for (int v = 0; v < V; ++v) {  // preorder: a parent before its children
        const TopoNode& n = topo.node(v);
        if (n.is_leaf()) continue;
        const int m = static_cast<int>(n.children.size());
        // Trees by decreasing use, then by k (a counting sort: use <= depth).
        order.clear();
        for (int u = topo.depth(); u >= 0; --u)
            for (int k = 0; k < K; ++k)
                if (use[idx(v)][idx(k)] == u) order.push_back(k);
        for (int pos = 0; pos < K; ++pos) {
            int k = order[idx(pos)];
            int c = pos % m;
            t.choice[idx(k)][idx(v)] = c;
            for (int i = 0; i < m; ++i)
                use[idx(n.children[idx(i)])][idx(k)] = i == c ? use[idx(v)][idx(k)] + 1 : 0;
        }
    }
    // Aggregators bottom-up: a region's aggregator is its chosen child's, so
    // the chosen child's partial never moves to reach it.
    for (int k = 0; k < K; ++k)
        for (int v = V - 1; v >= 0; --v) {
            const TopoNode& n = topo.node(v);
            t.agg[idx(k)][idx(v)] =
                n.is_leaf() ? n.rank : t.agg[idx(k)][idx(n.children[idx(t.choice[idx(k)][idx(v)])])];
        }
    return t;
}

double tree_bottleneck(const Topology& topo, const TreeLayout& t) {
    // A message from a child's aggregator to its region's aggregator goes up
    // the up-links of the chain of chosen descendants below the child and
    // down those below the chosen child.  The broadcast is the mirror image,
    // so the reduce phase alone decides: the phase lasts as long as the
    // busiest direction of the busiest edge needs.  (Summing both directions
    // would call any K balanced for two hosts, yet the reduce phase then
    // pushes 2M/3 up one host's link and M/3 up the other's.)
    const int V = topo.num_nodes();
    std::vector<double> up(idx(V), 0.0), down(idx(V), 0.0);
    const double w = 1.0 / t.num_trees;
    auto chain = [&](int k, int c, std::vector<double>& load) {
        for (int x = c;; x = topo.node(x).children[idx(t.choice[idx(k)][idx(x)])]) {
            load[idx(x)] += w;
            if (topo.node(x).is_leaf()) break;
        }
    };
    for (int k = 0; k < t.num_trees; ++k)
        for (int v = 0; v < V; ++v) {
            const TopoNode& n = topo.node(v);
            if (n.is_leaf()) continue;
            int chosen = n.children[idx(t.choice[idx(k)][idx(v)])];
            for (int c : n.children)
                if (c != chosen) {
                    chain(k, c, up);
                    chain(k, chosen, down);
                }
        }
    double worst = 0;
    for (int v = 0; v < V; ++v)
        if (topo.node(v).parent >= 0)
            worst = std::max(worst, std::max(up[idx(v)], down[idx(v)]) / bandwidth_of(topo.node(v)));
    return worst;
}

int default_num_trees(const Topology& topo) {
    constexpr long long kMaxTrees = 256;
    // Work bound for the search (edge visits of tree_bottleneck), so that
    // planning stays in the millisecond range for thousands of ranks.
    constexpr double kMaxWork = 3e6;
    long long maxfan = 1, maxhost = 1, lcm = 1;
    for (const auto& n : topo.nodes()) {
        long long m = static_cast<long long>(n.children.size());
        if (m == 0) continue;
        maxfan = std::max(maxfan, m);
        if (n.level == Level::node) maxhost = std::max(maxhost, m);
        if (lcm <= kMaxTrees) lcm = lcm / std::gcd(lcm, m) * m;
    }
    maxfan = std::min(maxfan, kMaxTrees);
    // Candidates: the largest fan-out (every vertex can give each child a
    // tree), a few above it, its multiples, and the counts that make every
    // level's round-robin exact.
    const long long root_fan = static_cast<long long>(topo.node(topo.root()).children.size());
    std::vector<long long> cand;
    for (long long k = maxfan; k <= maxfan + 3; ++k) cand.push_back(k);
    for (long long j = 2; j <= 4; ++j) cand.push_back(j * maxfan);
    cand.push_back(lcm);
    cand.push_back(root_fan / std::gcd(root_fan, maxhost) * maxhost);
    std::sort(cand.begin(), cand.end());
    cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
    cand.erase(std::remove_if(cand.begin(), cand.end(), [&](long long k) { return k > kMaxTrees; }), cand.end());
    if (cand.size() <= 1) return static_cast<int>(maxfan);

    const double per_tree = static_cast<double>(topo.num_nodes()) * (topo.depth() + 1);
    std::vector<std::pair<int, double>> scored;
    double work = 0, best = 0;
    for (long long k : cand) {
        if (!scored.empty() && work + per_tree * static_cast<double>(k) > kMaxWork) break;
        work += per_tree * static_cast<double>(k);
        double cost = tree_bottleneck(topo, layout_trees(topo, static_cast<int>(k)));
        scored.emplace_back(static_cast<int>(k), cost);
        if (scored.size() == 1 || cost < best) best = cost;
    }
    for (const auto& s : scored)
        if (s.second <= best * 1.01) return s.first;
    return static_cast<int>(maxfan);
}

Status plan_tree(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, Plan* out) {
    if (topo.empty()) return Status::invalid("plan_tree: empty topology");
    const int p = topo.num_ranks();
    if (only_rank < -1 || only_rank >= p) return Status::invalid("plan_tree: bad only_rank");
    if (opts.num_trees < 0) return Status::invalid("plan_tree: negative number of trees");
    const int K = opts.num_trees > 0 ? opts.num_trees : default_num_trees(topo);
    const TreeLayout t = layout_trees(topo, K);
    const int H = t.height[idx(topo.root())];

    // A rank only takes part at the vertices above it (as their aggregator
    // or as a child's), so a single rank's plan walks just its path; the
    // order of the transfers it keeps is the same as in the full plan.
    std::vector<int> vertices;
    if (only_rank >= 0) {
        vertices = topo.path_to_root(only_rank);
        std::sort(vertices.begin(), vertices.end());
    } else {
        vertices.resize(idx(topo.num_nodes()));
        std::iota(vertices.begin(), vertices.end(), 0);
    }

    // Transfers are collected first: when one rank sends several slices to
    // the same aggregator in the same round (K larger than the fan-out) and
    // the slices are adjacent, they travel as one message.
    struct Xfer {
        int round, src, dst;
        OpKind kind;
        std::size_t off, len;
    };
    std::vector<Xfer> xfers;
    auto add = [&](int round, int src, int dst, OpKind kind, std::size_t off, std::size_t len) {
        if (only_rank < 0 || src == only_rank || dst == only_rank) xfers.push_back({round, src, dst, kind, off, len});
    };
    for (int k = 0; k < K; ++k) {
        const Range slice = split_range(count, static_cast<std::size_t>(K), static_cast<std::size_t>(k));
        if (slice.count == 0) continue;
        const std::size_t seg = opts.pipeline_elems ? opts.pipeline_elems : slice.count;
        const std::size_t nseg = (slice.count + seg - 1) / seg;
        const auto& agg = t.agg[idx(k)];
        for (std::size_t s = 0; s < nseg; ++s) {
            const std::size_t off = slice.offset + s * seg;
            const std::size_t len = std::min(seg, slice.count - s * seg);
            const int si = static_cast<int>(s);
            for (int v : vertices) {
                const TopoNode& n = topo.node(v);
                if (n.is_leaf()) continue;
                const int h = t.height[idx(v)];
                const int chosen = n.children[idx(t.choice[idx(k)][idx(v)])];
                for (int c : n.children) {
                    if (c == chosen) continue;
                    // Reduce: the other children's partials (complete by
                    // round h-2+s at the latest) go to the aggregator.
                    add(h - 1 + si, agg[idx(c)], agg[idx(v)], OpKind::recv_reduce, off, len);
                    // Broadcast: the region's final segment goes back one
                    // round after the level above delivered it.
                    add(H + (H - h) + si, agg[idx(v)], agg[idx(c)], OpKind::recv_copy, off, len);
                }
            }
        }
    }
    // One canonical order, the same for a full plan and for one rank's: per
    // round and pair by offset.  An aggregator therefore adds its children's
    // partials in the order of their aggregators' ranks, incoming operand
    // first: a fixed expression tree per element.
    std::sort(xfers.begin(), xfers.end(), [](const Xfer& a, const Xfer& b) {
        if (a.round != b.round) return a.round < b.round;
        if (a.src != b.src) return a.src < b.src;
        if (a.dst != b.dst) return a.dst < b.dst;
        if (a.kind != b.kind) return a.kind < b.kind;
        return a.off < b.off;
    });
    PlanBuilder b(Algorithm::tree, p, count, only_rank);
    for (std::size_t i = 0; i < xfers.size();) {
        Xfer x = xfers[i++];
        while (i < xfers.size() && xfers[i].round == x.round && xfers[i].src == x.src && xfers[i].dst == x.dst &&
               xfers[i].kind == x.kind && xfers[i].off == x.off + x.len)
            x.len += xfers[i++].len;
        b.transfer(x.round, x.src, x.dst, x.off, x.len, x.kind, Operand::incoming_first);
    }
    *out = b.finish();
    return Status::ok();
}

// ---------------------------------------------------------------- leader tree

namespace {

// Rounds of a k-nomial tree over n members: ceil(log_radix n).
int knomial_rounds(int n, int radix) {
    int r = 0;
    for (long long span = 1; span < n; span *= radix) ++r;
    return r;
}

// k-nomial reduce of `members` to members[0] in rounds base, base+1, ...:
// in round j, member i whose base-radix digits below j are zero and digit j
// is not sends to i - digit_j * radix^j.  A parent receives its children in
// ascending order, incoming operand first.
void knomial_reduce(PlanBuilder& b, const std::vector<int>& members, int radix, int base, std::size_t count) {
    const int n = static_cast<int>(members.size());
    int j = 0;
    for (long long step = 1; step < n; step *= radix, ++j)
        for (long long parent = 0; parent < n; parent += step * radix)
            for (int d = 1; d < radix && parent + d * step < n; ++d)
                b.transfer(base + j, members[idx(static_cast<int>(parent + d * step))],
                           members[idx(static_cast<int>(parent))], 0, count, OpKind::recv_reduce,
                           Operand::incoming_first);
}

// The mirror image: members[0] first, the last level's children last.
void knomial_bcast(PlanBuilder& b, const std::vector<int>& members, int radix, int base, std::size_t count) {
    const int n = static_cast<int>(members.size());
    const int rounds = knomial_rounds(n, radix);
    long long step = 1;
    for (int j = 0; j + 1 < rounds; ++j) step *= radix;
    for (int j = rounds - 1; j >= 0; --j, step /= radix)
        for (long long parent = 0; parent < n; parent += step * radix)
            for (int d = 1; d < radix && parent + d * step < n; ++d)
                b.transfer(base + (rounds - 1 - j), members[idx(static_cast<int>(parent))],
                           members[idx(static_cast<int>(parent + d * step))], 0, count, OpKind::recv_copy);
}

int rd_rounds(int n) {
    if (n <= 1) return 0;
    int pof2 = 1, lg = 0;
    while (pof2 * 2 <= n) pof2 *= 2, ++lg;
    return lg + (n > pof2 ? 2 : 0);
}


}  // namespace

int leader_exchange_rounds(int leaders, const LeaderTreeOptions& lopts, LeaderExchange* chosen) {
    const int rb = 2 * knomial_rounds(leaders, std::max(2, lopts.leader_radix));
    const int rd = rd_rounds(leaders);
    LeaderExchange e = lopts.exchange;
    // On a tie recursive doubling wins: its messages cross each link in both
    // directions at once, where the reduce sends everything in towards the
    // first leader and the broadcast everything out again.
    if (e == LeaderExchange::automatic) e = rd <= rb ? LeaderExchange::recursive_doubling : LeaderExchange::reduce_bcast;
    if (chosen) *chosen = e;
    return e == LeaderExchange::recursive_doubling ? rd : rb;
}

Status plan_leader_tree(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                        Plan* out) {
    return plan_leader_tree(topo, count, only_rank, opts, LeaderTreeOptions{}, out);
}

Status plan_leader_tree(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts,
                        const LeaderTreeOptions& lopts, Plan* out) {
    (void)opts;
    if (topo.empty()) return Status::invalid("plan_leader_tree: empty topology");
    const int p = topo.num_ranks();
    if (only_rank < -1 || only_rank >= p) return Status::invalid("plan_leader_tree: bad only_rank");
    if (lopts.intra_radix < 2 || lopts.leader_radix < 2)
        return Status::invalid("plan_leader_tree: radix must be at least 2");

    // Hosts in the tree's leaf order (hosts of one rack next to each other,
    // so recursive doubling's first steps stay inside racks); the lowest
    // rank of a host leads.
    std::vector<std::vector<int>> hosts;
    std::vector<int> host_index(idx(topo.num_nodes()), -1);
    for (int r : topo.ranks_in_tree_order(topo.root())) {
        int h = topo.node_of_rank(r);
        if (h < 0) {
            hosts.push_back({r});
            continue;
        }
        if (host_index[idx(h)] < 0) {
            host_index[idx(h)] = static_cast<int>(hosts.size());
            hosts.emplace_back();
        }
        hosts[idx(host_index[idx(h)])].push_back(r);
    }
    for (auto& h : hosts) std::sort(h.begin(), h.end());
    std::vector<int> leaders;
    int intra = 0;
    for (const auto& h : hosts) {
        leaders.push_back(h.front());
        intra = std::max(intra, knomial_rounds(static_cast<int>(h.size()), lopts.intra_radix));
    }
    LeaderExchange ex;
    const int inter = leader_exchange_rounds(static_cast<int>(leaders.size()), lopts, &ex);

    PlanBuilder b(Algorithm::tree, p, count, only_rank);
    for (const auto& h : hosts) knomial_reduce(b, h, lopts.intra_radix, 0, count);
    if (ex == LeaderExchange::recursive_doubling) {
        add_recursive_doubling(b, leaders, intra, count);
    } else {
        const int half = inter / 2;
        knomial_reduce(b, leaders, lopts.leader_radix, intra, count);
        knomial_bcast(b, leaders, lopts.leader_radix, intra + half, count);
    }
    for (const auto& h : hosts) knomial_bcast(b, h, lopts.intra_radix, intra + inter, count);
    *out = b.finish();
    return Status::ok();
}

// The latency algorithm (the table's "leader").  Across hosts: reduce inside
// each host to a leader, exchange among leaders (recursive doubling or a
// tree, whichever takes fewer rounds), broadcast inside the host, so every
// slow link is crossed by one message per round.  On one host: plain
// recursive doubling.
Status plan_leader(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, Plan* out) {
    if (topo.nodes_at(Level::node).size() > 1) {
        TOPOAR_TRY(plan_leader_tree(topo, count, only_rank, opts, out));
    } else {
        *out = plan_recursive_doubling(topo.num_ranks(), count, only_rank);
    }
    out->algorithm = Algorithm::leader;
    return Status::ok();
}

}  // namespace topoar
