// topoar engine: FlexReduce (Lee et al., "FlexReduce: Flexible All-reduce for
// Distributed Deep Learning on Asymmetric Network Topology"), section III.
//
// Layout (section III-A, Fig. 3 "FlexReduce_plan"): the tree is processed
// level by level from the deepest branch vertices up.  At a branch X every
// leaf under X divides its portion by deg(X); the leaves are sorted by their
// current range (end, then start, then rank) and take consecutive new ranges
// of their portion's size; find_bounds() splits each new range where the set
// of current holders changes.  Each piece is one reduce(): its participants
// are the holders (one per child of X), its owner the leaf taking the range
// -- or, where that leaf's subtree holds the piece on another leaf, that
// other leaf (see FlexSubrange: no element moves twice).  After the top
// level every element has one owner holding it fully reduced, each subtree
// of a branch owning the same share; the all-gather replays the reduces
// backwards as broadcasts.
//
// Fig. 2, 2 + 3 learners, 12 items (ranks 0 1 | 2 3 4; paper: D E | F G H):
//
//   level 0, per host      host B: 0 [0,6)  1 [6,12)       (reduce among 0 1)
//                          host C: 2 [0,4)  3 [4,8)  4 [8,12)
//   level 1, root          sorted by (end, start, rank): 2 0 3 1 4
//                          new ranges 2 [0,2) 0 [2,5) 3 [5,7) 1 [7,10) 4 [10,12)
//                          find_bounds: [0,2){0,2}->2 [2,4){0,2}->0 [4,5){0,3}->0
//                          [5,6){0,3}->3 [6,7){1,3}->3 [7,8){1,3}->1
//                          [8,10){1,4}->1 [10,12){1,4}->4
//   all-gather             the same 8 + 5 subranges backwards, owner -> others
//
// Execution (Fig. 3 "FlexReduce_execute"), compiled into rounds once:
//
//   reduce of a subrange among participants c0..c(k-1), owner under child o:
//     chain starts at the child after o (cyclically) and ends at o, so every
//     element crosses each child's uplink once out and once in -- the
//     alpha-beta optimum 2M(1-1/d) per link over reduce and broadcast
//
//       seg 0:  c1 -> c2 -> c0          round t, t+1
//       seg 1:        c1 -> c2 -> c0    round t+1, t+2   (pipelined)
//
//     segments of opts.pipeline_elems move one hop per round; a new segment
//     enters each hop every round.  The broadcast runs the chain backwards
//     with plain copies.
//
//   rounds are assigned as soon as the data is there (per rank, per element:
//   the round its value was last written; a copy also waits for the round
//   the old value was last sent), not level by level with a barrier:
//   a segment reduced inside a host goes up to the next level in the next
//   round, and the top level's broadcast of a segment follows its reduction
//   at once.  This is the paper's order of calls (levels bottom-up, then in
//   exact reverse), with the waits reduced to true data dependencies.
//
// Every element is completed by exactly one reduction (the last hop of its
// top-level chain) and copied everywhere else, with incoming_first along
// every chain: one expression tree, bit-identical results on all ranks.
//
// Exact arithmetic: portions are fractions 1/(product of degrees on the
// path).  The layout works in integer units of 1/U with U the least common
// multiple of those products, so the sort and the tie-breaking of the paper
// are exact; unit boundaries map to elements by floor(b * count / U).  For
// trees where U would overflow, U = 2^62 and portions are split top-down
// with the remainders going to the first children (still a partition).
#include "planners/planner_flex.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <map>
#include <numeric>
#include <sstream>
#include <tuple>

namespace topoar {

namespace {

using u64 = std::uint64_t;
using u128 = unsigned __int128;

constexpr u64 kMaxUnits = u64(1) << 62;

// A range in units of 1/U of the vector.
struct URange {
    u64 begin = 0, end = 0;
};

// Whether a branch's shares differ (an empty list: a leaf, even).
bool uneven(const std::vector<double>& w) {
    for (double x : w)
        if (x != w[0]) return true;
    return false;
}

// The unit count U (see the header comment).
u64 choose_units(const Topology& topo) {
    u64 lcm = 1;
    for (int r = 0; r < topo.num_ranks(); ++r) {
        u128 prod = 1;
        for (int v : topo.path_to_root(r)) {
            const TopoNode& n = topo.node(v);
            if (n.is_leaf()) continue;
            prod *= static_cast<u128>(n.children.size());
            if (prod > kMaxUnits) return kMaxUnits;
        }
        u64 p = static_cast<u64>(prod);
        u128 next = static_cast<u128>(lcm / std::gcd(lcm, p)) * p;
        if (next > kMaxUnits) return kMaxUnits;
        lcm = static_cast<u64>(next);
    }
    return lcm;
}

// Index of the child of `branch` that contains vertex `v` (v under branch).
int child_index_under(const Topology& topo, int branch, int v) {
    while (topo.node(v).parent != branch) v = topo.node(v).parent;
    const auto& kids = topo.node(branch).children;
    return static_cast<int>(std::find(kids.begin(), kids.end(), v) - kids.begin());
}

}  // namespace

// Shares of the children of a branch whose uplinks differ (see
// planner_flex.hpp and docs/cost-model.md, "Weighted shares").  Along
// FlexReduce's chains every element of a subrange crosses each child's
// uplink once each way, twice for the children inside the chain: child i
// carries M (2 - s_i - s_{i-1}) per direction, s_i its share and i-1 the
// child before it in the cyclic child order (the first of the chains of
// i-1's subranges).  The shares minimise the slowest child's time, then
// the next slowest, and so on (water-filling): a binary search on the time
// tau, each step asking for the least total share meeting the demands
// s_i + s_{i-1} >= 2 - tau b_i on the cycle (with s_0 fixed, the least
// choice along the path is greedy; s_0 by ternary search, the least total
// being convex in it); the children that cannot do better are fixed at
// that tau and the search goes on for the others.  Equal links, two
// children, or an unknown link: equal shares, the paper's.
namespace {

// Whether a branch's children get weighted shares: more than two, every
// up-link known, and not all alike.
bool weighted(const std::vector<double>& bw) {
    if (bw.size() <= 2) return false;
    const double lo = *std::min_element(bw.begin(), bw.end());
    const double hi = *std::max_element(bw.begin(), bw.end());
    return lo > 0 && hi > lo * (1 + 1e-9);
}

// The up-link bandwidths of the children of vertex v.
std::vector<double> child_bandwidths(const Topology& topo, int v) {
    std::vector<double> bw;
    for (int c : topo.node(v).children) bw.push_back(topo.node(c).up.bandwidth);
    return bw;
}

}  // namespace

std::vector<double> weighted_shares(const std::vector<double>& bw) {
    const std::size_t d = bw.size();
    std::vector<double> equal(d, d ? 1.0 / static_cast<double>(d) : 0.0);
    if (!weighted(bw)) return equal;
    std::vector<double> s(d);
    // The least total share meeting demands a (s_i + s_{i-1} >= a_i); the
    // shares in s.
    auto least = [&](const std::vector<double>& a) {
        auto total = [&](double x) {
            s[0] = x;
            for (std::size_t i = 1; i < d; ++i) s[i] = std::max(0.0, a[i] - s[i - 1]);
            if (s[0] + s[d - 1] < a[0]) s[d - 1] = a[0] - s[0];
            double t = 0;
            for (double y : s) t += y;
            return t;
        };
        double l = 0, h = 1;
        for (int it = 0; it < 80; ++it) {
            const double m1 = l + (h - l) / 3, m2 = h - (h - l) / 3;
            if (total(m1) <= total(m2)) h = m2; else l = m1;
        }
        return total((l + h) / 2);
    };
    std::vector<double> fixed(d, -1);  // a fixed child's demand
    auto demands = [&](double tau, std::size_t raised, double factor) {
        std::vector<double> a(d);
        for (std::size_t i = 0; i < d; ++i)
            a[i] = fixed[i] >= 0 ? fixed[i]
                                 : std::max(0.0, 2.0 - tau * (i == raised ? factor : 1.0) * bw[i]);
        return a;
    };
    auto feasible = [&](const std::vector<double>& a) {
        for (double x : a)
            if (x > 1.0) return false;  // s_i + s_{i-1} <= 1
        return least(a) <= 1.0 + 1e-12;
    };
    // Equal shares meet every child at this time.
    double hi = 0;
    for (double b : bw) hi = std::max(hi, (2.0 - 2.0 / static_cast<double>(d)) / b);
    for (std::size_t phase = 0; phase < d; ++phase) {
        double lo = 0;
        for (int it = 0; it < 100 && hi - lo > hi * 1e-12; ++it) {
            const double mid = (lo + hi) / 2;
            if (feasible(demands(mid, d, 1))) hi = mid; else lo = mid;
        }
        // The children that cannot go faster than hi are fixed there.
        bool any = false, open = false;
        std::vector<std::size_t> critical;
        for (std::size_t j = 0; j < d; ++j) {
            if (fixed[j] >= 0) continue;
            if (!feasible(demands(hi, j, 1 - 1e-6))) critical.push_back(j);
        }
        for (std::size_t j : critical) {
            fixed[j] = std::max(0.0, 2.0 - hi * bw[j]);
            any = true;
        }
        for (std::size_t j = 0; j < d; ++j) open = open || fixed[j] < 0;
        if (!any || !open) break;
    }
    for (std::size_t j = 0; j < d; ++j)
        if (fixed[j] < 0) fixed[j] = std::max(0.0, 2.0 - hi * bw[j]);
    if (!feasible(fixed)) return equal;  // cannot happen: the last search's answer
    least(fixed);
    // What the least shares leave over goes to every child alike (more
    // share only lightens a child's and its successor's links).
    double total = 0;
    for (double y : s) total += y;
    for (double& y : s) y = std::max(0.0, y + (1.0 - total) / static_cast<double>(d));
    total = 0;
    for (double y : s) total += y;
    for (double& y : s) y /= total;
    return s;
}

std::vector<double> star_shares(const std::vector<double>& bw) {
    const std::size_t d = bw.size();
    std::vector<double> s(d, d ? 1.0 / static_cast<double>(d) : 0.0);
    if (d < 3) return s;
    double lo = bw[0], sum = 0;
    for (double b : bw) {
        if (!(b > 0)) return s;  // an unknown link: even
        lo = std::min(lo, b);
        sum += b;
    }
    const double dd = static_cast<double>(d);
    const double t = std::max(1.0 / lo, 2.0 * (dd - 1) / sum);  // the bound for M = 1
    double total = 0;
    for (std::size_t i = 0; i < d; ++i) {
        s[i] = std::max(0.0, (bw[i] * t - 1.0) / (dd - 2));
        total += s[i];
    }
    for (double& x : s) x /= total;  // total >= 1: every x stays within its cap
    return s;
}

bool star_branch(const std::vector<double>& bw) {
    if (!weighted(bw)) return false;
    const std::size_t d = bw.size();
    const std::vector<double> c = weighted_shares(bw), st = star_shares(bw);
    double chain = 0, star = 0;
    for (std::size_t i = 0; i < d; ++i) {
        chain = std::max(chain, (2.0 - c[i] - c[(i + d - 1) % d]) / bw[i]);
        star = std::max(star, (1.0 + static_cast<double>(d - 2) * st[i]) / bw[i]);
    }
    return star < chain * (1 - 1e-6);
}

std::vector<double> relay_shares(const std::vector<double>& bw, double upper) {
    const std::size_t d = bw.size();
    std::vector<double> s(d, d ? 1.0 / static_cast<double>(d) : 0.0);
    const double dd = static_cast<double>(d);
    const double extra = dd - 2 + std::max(0.0, upper);  // transfers per unit of share beyond one each way
    if (d < 2 || !(extra > 1e-12)) return s;
    double lo = bw[0], sum = 0;
    for (double b : bw) {
        if (!(b > 0)) return s;  // an unknown link: even
        lo = std::min(lo, b);
        sum += b;
    }
    // The least T with sum_i max(0, b_i T - 1) >= extra, and never below
    // the slowest child's one transfer each way.
    const double t = std::max(1.0 / lo, (dd + extra) / sum);
    double total = 0;
    for (std::size_t i = 0; i < d; ++i) {
        s[i] = std::max(0.0, (bw[i] * t - 1.0) / extra);
        total += s[i];
    }
    for (double& x : s) x /= total;  // total >= 1: every child stays within its time
    return s;
}

namespace {

// The shares of the children of vertex v: the star's where v reduces by
// direct transfers, else the chains' (even unless their links differ).
std::vector<double> branch_shares(const std::vector<double>& bw) {
    return star_branch(bw) ? star_shares(bw) : weighted_shares(bw);
}

// Per vertex, the shares of its children (empty for leaves), top-down.
// FlexReduce: branch_shares.  Relay (plan_flexrelay): relay_shares with
// the load that the levels above put on the vertex's own up-link per unit
// of its vector (`upper`, 0 at the root; a child c of v then carries
// L_c + s_c upper_v, L_c = 1 + (d - 2) s_c its direct transfers at v, and
// that is its own `upper`); a vertex with no share at its parent, and
// everything below it, funnels: its first child takes all of it.
std::vector<std::vector<double>> share_table(const Topology& topo, bool relay) {
    std::vector<std::vector<double>> table(topo.nodes().size());
    std::vector<double> upper(topo.nodes().size(), 0.0);
    std::vector<char> funnel(topo.nodes().size(), 0);
    // Parents come before their children in a breadth-first walk from the root.
    std::vector<int> order{topo.root()};
    for (std::size_t i = 0; i < order.size(); ++i)
        for (int c : topo.node(order[i]).children) order.push_back(c);
    for (int v : order) {
        const TopoNode& n = topo.node(v);
        if (n.is_leaf()) continue;
        const std::size_t vi = static_cast<std::size_t>(v);
        const std::vector<double> bw = child_bandwidths(topo, v);
        if (!relay) {
            table[vi] = branch_shares(bw);
            continue;
        }
        std::vector<double>& w = table[vi];
        if (funnel[vi]) {
            w.assign(bw.size(), 0.0);
            w[0] = 1.0;
        } else {
            w = relay_shares(bw, upper[vi]);
        }
        const double d = static_cast<double>(bw.size());
        for (std::size_t i = 0; i < n.children.size(); ++i) {
            const std::size_t c = static_cast<std::size_t>(n.children[i]);
            upper[c] = 1.0 + (d - 2.0) * w[i] + w[i] * upper[vi];
            funnel[c] = funnel[vi] || w[i] <= 0.0;
        }
    }
    return table;
}

// The unit count U (see the header comment).  Weighted shares are not
// fractions of small products: they use the largest U (FlexReduce: wherever
// links differ, as before relay existed; relay: wherever its shares do).
u64 choose_units_for(const Topology& topo, const std::vector<std::vector<double>>& shares, bool relay) {
    for (const TopoNode& n : topo.nodes())
        if (!relay && !n.is_leaf() && weighted(child_bandwidths(topo, n.id))) return kMaxUnits;
    if (relay)
        for (const auto& w : shares)
            if (uneven(w)) return kMaxUnits;
    return choose_units(topo);
}

// The portions: `share` split among the children of `v` by their shares
// (share_table: evenly unless their uplinks differ), and so on down to
// the leaves.  Integer units; the remainders go to the first children, so
// the portions still partition `share`.
void split_portions(const Topology& topo, const std::vector<std::vector<double>>& shares, int v, u64 share,
                    std::vector<u64>& portion) {
    const TopoNode& n = topo.node(v);
    if (n.is_leaf()) {
        portion[static_cast<std::size_t>(n.rank)] = share;
        return;
    }
    const u64 deg = n.children.size();
    const std::vector<double>& w = shares[static_cast<std::size_t>(v)];
    if (!uneven(w)) {
        for (std::size_t i = 0; i < n.children.size(); ++i)
            split_portions(topo, shares, n.children[i], share / deg + (i < share % deg ? 1 : 0), portion);
        return;
    }
    // Shares as multiples of 2^-20 adding up to exactly one (the search's
    // 0.4999999 becomes the 1/2 it stands for), then exact integer parts.
    constexpr u64 kGrid = u64(1) << 20;
    std::vector<u64> q(n.children.size());
    u64 qsum = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
        q[i] = static_cast<u64>(std::llround(w[i] * static_cast<double>(kGrid)));
        qsum += q[i];
    }
    const std::size_t big = static_cast<std::size_t>(std::max_element(q.begin(), q.end()) - q.begin());
    if (qsum > kGrid) q[big] -= std::min(q[big], qsum - kGrid);
    else q[big] += kGrid - qsum;
    std::vector<u64> part(n.children.size());
    u64 given = 0;
    for (std::size_t i = 0; i < part.size(); ++i) {
        part[i] = static_cast<u64>(static_cast<u128>(share) * q[i] / kGrid);
        given += part[i];
    }
    for (std::size_t i = 0; given < share; i = (i + 1) % part.size(), ++given) ++part[i];
    for (std::size_t i = 0; i < n.children.size(); ++i) split_portions(topo, shares, n.children[i], part[i], portion);
}

// flex_layout with the shares of share_table(topo, relay) (plan_flex uses
// them too).
Status flex_layout_of(const Topology& topo, std::size_t count, const std::vector<std::vector<double>>& shares,
                      bool relay, FlexLayout* out) {
    const int p = topo.num_ranks();
    const u64 units = choose_units_for(topo, shares, relay);
    auto to_elem = [&](u64 b) { return static_cast<std::size_t>(static_cast<u128>(b) * count / units); };
    auto to_range = [&](const URange& u) {
        std::size_t a = to_elem(u.begin);
        return Range{a, to_elem(u.end) - a};
    };

    FlexLayout lay;
    lay.count = count;
    lay.nranks = p;

    // Branch vertices by depth; processed deepest first (Fig. 3 line 5).
    std::vector<std::vector<int>> by_depth;
    for (const TopoNode& n : topo.nodes()) {
        if (n.is_leaf()) continue;
        std::size_t d = static_cast<std::size_t>(topo.depth_of(n.id));
        if (by_depth.size() <= d) by_depth.resize(d + 1);
        by_depth[d].push_back(n.id);
    }

    // cur: each leaf's range in the paper's sense (drives the sort); held:
    // what it really holds after the previous level (see FlexSubrange).
    std::vector<URange> cur(static_cast<std::size_t>(p), URange{0, units});
    std::vector<std::vector<URange>> held(static_cast<std::size_t>(p), std::vector<URange>{URange{0, units}});
    std::vector<u64> portion(static_cast<std::size_t>(p), 0);
    std::vector<int> child_of(static_cast<std::size_t>(p), -1);
    using Piece = std::pair<URange, int>;  // a held range and its rank
    for (std::size_t di = by_depth.size(); di-- > 0;) {
        if (by_depth[di].empty()) continue;
        FlexLevel level;
        level.depth = static_cast<int>(di);
        level.branches = by_depth[di];
        level.calls.assign(static_cast<std::size_t>(p), 0);
        level.joins.assign(static_cast<std::size_t>(p), 0);
        const int li = static_cast<int>(lay.levels.size());
        std::vector<URange> next = cur;
        std::vector<std::vector<URange>> next_held = held;

        for (int x : level.branches) {
            const TopoNode& xn = topo.node(x);
            const std::size_t deg = xn.children.size();
            split_portions(topo, shares, x, units, portion);
            std::vector<int> leaves = topo.ranks_under(x);

            // Holders per child: the pieces under one child partition [0, U).
            std::vector<std::vector<Piece>> holders(deg);
            for (std::size_t c = 0; c < deg; ++c) {
                for (int r : topo.ranks_under(xn.children[c])) {
                    child_of[static_cast<std::size_t>(r)] = static_cast<int>(c);
                    for (const URange& u : held[static_cast<std::size_t>(r)]) holders[c].push_back({u, r});
                }
                std::sort(holders[c].begin(), holders[c].end(),
                          [](const Piece& a, const Piece& b) { return a.first.begin < b.first.begin; });
            }
            auto holder_of = [&](std::size_t c, u64 at) -> const Piece& {
                const auto& h = holders[c];
                auto it = std::upper_bound(h.begin(), h.end(), at,
                                           [](u64 v, const Piece& e) { return v < e.first.begin; });
                return *(it - 1);  // the pieces start at 0 and are non-empty
            };
            if (deg >= 2)
                for (int v : leaves) next_held[static_cast<std::size_t>(v)].clear();

            // Sort rule of section III-A: by range end, then start, then rank.
            std::sort(leaves.begin(), leaves.end(), [&](int a, int b) {
                const URange& ra = cur[static_cast<std::size_t>(a)];
                const URange& rb = cur[static_cast<std::size_t>(b)];
                return std::tie(ra.end, ra.begin, a) < std::tie(rb.end, rb.begin, b);
            });

            u64 progress = 0;
            for (int v : leaves) {
                URange nr{progress, progress + portion[static_cast<std::size_t>(v)]};
                progress = nr.end;
                next[static_cast<std::size_t>(v)] = nr;
                if (deg < 2) continue;  // a one-rank host: nothing to combine
                // find_bounds (Fig. 3 (b) lines 13-21).
                for (u64 b = nr.begin; b < nr.end;) {
                    FlexSubrange s;
                    s.level = li;
                    s.branch = x;
                    s.assigned = v;
                    u64 e = nr.end;
                    for (std::size_t c = 0; c < deg; ++c) {
                        const Piece& h = holder_of(c, b);
                        s.participants.push_back(h.second);
                        e = std::min(e, h.first.end);
                    }
                    // The result stays where v's child already has the data.
                    s.owner = s.participants[static_cast<std::size_t>(child_of[static_cast<std::size_t>(v)])];
                    next_held[static_cast<std::size_t>(s.owner)].push_back(URange{b, e});
                    s.range = to_range(URange{b, e});
                    b = e;
                    if (s.range.count == 0) continue;
                    level.calls[static_cast<std::size_t>(s.owner)]++;
                    for (int q : s.participants) level.joins[static_cast<std::size_t>(q)]++;
                    level.subranges.push_back(std::move(s));
                }
            }
            if (progress != units) return Status::internal("flexreduce: portions under a branch do not add up");
        }
        cur = next;
        held = std::move(next_held);
        for (int r = 0; r < p; ++r) {
            auto& h = held[static_cast<std::size_t>(r)];
            std::sort(h.begin(), h.end(), [](const URange& a, const URange& b) { return a.begin < b.begin; });
            std::vector<URange> merged;
            for (const URange& u : h) {
                if (!merged.empty() && merged.back().end == u.begin) merged.back().end = u.end;
                else merged.push_back(u);
            }
            h = merged;
            level.ranges.push_back(to_range(cur[static_cast<std::size_t>(r)]));
            std::vector<Range> owned;
            for (const URange& u : h) {
                Range e = to_range(u);
                if (e.count == 0) continue;
                if (!owned.empty() && owned.back().offset + owned.back().count == e.offset) owned.back().count += e.count;
                else owned.push_back(e);
            }
            level.owned.push_back(std::move(owned));
        }
        lay.levels.push_back(std::move(level));
    }
    *out = std::move(lay);
    return Status::ok();
}

}  // namespace

Status flex_layout(const Topology& topo, std::size_t count, FlexLayout* out, bool relay) {
    if (topo.empty()) return Status::invalid("flexreduce: empty topology");
    return flex_layout_of(topo, count, share_table(topo, relay), relay, out);
}

namespace {

// Per rank and element: a round number, piecewise constant over [0, count).
// Used for "ready from round" (last write + 1) and "last read in round".
class RoundMap {
public:
    RoundMap() { pieces_[0] = 0; }

    int max_over(std::size_t a, std::size_t b) const {
        auto it = std::prev(pieces_.upper_bound(a));
        int m = it->second;
        for (++it; it != pieces_.end() && it->first < b; ++it) m = std::max(m, it->second);
        return m;
    }
    // Raises every value in [a, b) to at least v.
    void raise(std::size_t a, std::size_t b, int v) {
        split_at(a);
        split_at(b);
        for (auto it = pieces_.find(a); it != pieces_.end() && it->first < b; ++it) it->second = std::max(it->second, v);
    }

private:
    void split_at(std::size_t x) {
        auto it = std::prev(pieces_.upper_bound(x));
        if (it->first != x) pieces_.emplace(x, it->second);
    }
    std::map<std::size_t, int> pieces_;
};

class FlexScheduler {
public:
    FlexScheduler(PlanBuilder& b, int p) : b_(b), ready_(static_cast<std::size_t>(p)), read_(static_cast<std::size_t>(p)) {}

    // One hop of a chain for elements [a, a+n); `after` is the round of the
    // same hop's previous segment (-1 for none).  Returns the round used.
    int hop(int src, int dst, std::size_t a, std::size_t n, OpKind kind, int after) {
        const std::size_t e = a + n;
        int t = std::max({after + 1, ready(src).max_over(a, e), ready(dst).max_over(a, e)});
        // A copy must not overwrite data the receiver still sends this round.
        if (kind == OpKind::recv_copy) t = std::max(t, read(dst).max_over(a, e) + 1);
        b_.transfer(t, src, dst, a, n, kind, Operand::incoming_first);
        ready(dst).raise(a, e, t + 1);
        read(src).raise(a, e, t);
        return t;
    }

private:
    RoundMap& ready(int r) { return ready_[static_cast<std::size_t>(r)]; }
    RoundMap& read(int r) { return read_[static_cast<std::size_t>(r)]; }
    PlanBuilder& b_;
    std::vector<RoundMap> ready_, read_;
};

// The reduce chain of one subrange: participants from the child after the
// owner's, cyclically, to the owner (see the header comment).
std::vector<int> reduce_chain(const Topology& topo, const FlexSubrange& s) {
    const int k = static_cast<int>(s.participants.size());
    const int o = child_index_under(topo, s.branch, topo.leaf_of_rank(s.owner));
    std::vector<int> chain;
    for (int i = 1; i <= k; ++i) chain.push_back(s.participants[static_cast<std::size_t>((o + i) % k)]);
    return chain;
}

}  // namespace

namespace {

// FlexReduce (relay false) or its relay variant (plan_flexrelay).
Status plan_flex(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, bool relay,
                 Plan* out) {
    const char* name = relay ? "flexrelay" : "flexreduce";
    if (topo.empty()) return Status::invalid(std::string(name) + ": empty topology");
    const int p = topo.num_ranks();
    if (only_rank < -1 || only_rank >= p)
        return Status::invalid(std::string(name) + ": only_rank " + std::to_string(only_rank) + " out of range");
    FlexLayout lay;
    const std::vector<std::vector<double>> shares = share_table(topo, relay);
    TOPOAR_TRY(flex_layout_of(topo, count, shares, relay, &lay));

    PlanBuilder b(relay ? Algorithm::flexrelay : Algorithm::flexreduce, p, count, only_rank);
    FlexScheduler sched(b, p);
    const std::size_t seg = opts.pipeline_elems ? opts.pipeline_elems : SIZE_MAX;
    // The segments of a subrange, as the level above takes them: cut at the
    // subrange boundaries of the next level up, each piece its own pipeline
    // (its own rounds per hop), segment k of every piece before segment
    // k + 1 of any.  As one pipeline in element order, a host that reduces
    // its ranks into one (a relay, or a chain's last hop) offered the level
    // above one owner's part after another, one segment a round, while a
    // one-rank host beside it sent every owner a segment each round: the
    // results that one's round windows wait for then came at a quarter of
    // its pace, and the rest only after it had sent everything (1+4+3
    // ranks at 100/250/100 Mbit/s, 8 MiB: flexrelay predicted at 1.74x the
    // bound, 1.0x with every host holding one rank).
    std::vector<std::vector<std::size_t>> cuts(lay.levels.size());  // per level: the boundaries of the next
    for (std::size_t li = lay.levels.size(); li-- > 1;) {
        for (const FlexSubrange& x : lay.levels[li].subranges) {
            cuts[li - 1].push_back(x.range.offset);
            cuts[li - 1].push_back(x.range.offset + x.range.count);
        }
        std::sort(cuts[li - 1].begin(), cuts[li - 1].end());
        cuts[li - 1].erase(std::unique(cuts[li - 1].begin(), cuts[li - 1].end()), cuts[li - 1].end());
    }
    // f(last, a, n): last holds, per hop, the round of the piece's previous
    // segment (-1: none), for FlexScheduler::hop's `after`.
    auto for_segments = [&](std::size_t li, const Range& r, std::size_t hops,
                            const std::function<void(std::vector<int>&, std::size_t, std::size_t)>& f) {
        const std::size_t end = r.offset + r.count;
        std::vector<Range> pieces;
        std::size_t at = r.offset;
        for (std::size_t c : cuts[li])
            if (c > at && c < end) {
                pieces.push_back(Range{at, c - at});
                at = c;
            }
        pieces.push_back(Range{at, end - at});
        // A piece below a segment gains nothing from a pipeline of its own:
        // it joins the piece before it (the first, the one after it), so
        // small messages keep the one pipeline in element order and a tiny
        // share beside large ones does not undo theirs.
        std::vector<Range> merged;
        for (const Range& x : pieces) {
            if (!merged.empty() && (x.count < seg || merged.back().count < seg))
                merged.back().count += x.count;
            else
                merged.push_back(x);
        }
        pieces.swap(merged);
        std::vector<std::vector<int>> last(pieces.size(), std::vector<int>(hops, -1));
        for (std::size_t done = 0, more = 1; more; done += seg) {
            more = 0;
            for (std::size_t k = 0; k < pieces.size(); ++k)
                if (done < pieces[k].count) {
                    f(last[k], pieces[k].offset + done, std::min(seg, pieces[k].count - done));
                    more |= pieces[k].count - done > seg;
                }
        }
    };

    // Branches that reduce by direct transfers (star_branch), asked once.
    // Relay: also wherever its shares are uneven (a funnel, or links that
    // differ); even shares keep the chains.
    std::vector<char> star(topo.nodes().size(), 0);
    for (const FlexLevel& level : lay.levels)
        for (int x : level.branches)
            star[static_cast<std::size_t>(x)] =
                (relay && uneven(shares[static_cast<std::size_t>(x)])) || star_branch(child_bandwidths(topo, x));
    auto is_star = [&](const FlexSubrange& s) { return star[static_cast<std::size_t>(s.branch)] != 0; };

    // Uneven reduce-scatter: levels bottom-up, every subrange a pipelined
    // chain, or at a star branch every participant straight to the owner
    // (the owner reduces in participant order, segment by segment).
    for (std::size_t li = 0; li < lay.levels.size(); ++li)
        for (const FlexSubrange& s : lay.levels[li].subranges) {
            if (is_star(s)) {
                for_segments(li, s.range, s.participants.size(),
                             [&](std::vector<int>& last, std::size_t a, std::size_t n) {
                    for (std::size_t j = 0; j < s.participants.size(); ++j)
                        if (s.participants[j] != s.owner)
                            last[j] = sched.hop(s.participants[j], s.owner, a, n, OpKind::recv_reduce, last[j]);
                });
                continue;
            }
            std::vector<int> chain = reduce_chain(topo, s);
            for_segments(li, s.range, chain.size(), [&](std::vector<int>& last, std::size_t a, std::size_t n) {
                for (std::size_t j = 0; j + 1 < chain.size(); ++j)
                    last[j] = sched.hop(chain[j], chain[j + 1], a, n, OpKind::recv_reduce, last[j]);
            });
        }

    // Uneven all-gather: the same calls in exact reverse order, as broadcasts
    // from the owner back along the chain.
    for (std::size_t li = lay.levels.size(); li-- > 0;)
        for (auto s = lay.levels[li].subranges.rbegin(); s != lay.levels[li].subranges.rend(); ++s) {
            if (is_star(*s)) {
                for_segments(li, s->range, s->participants.size(),
                             [&](std::vector<int>& last, std::size_t a, std::size_t n) {
                    for (std::size_t j = 0; j < s->participants.size(); ++j)
                        if (s->participants[j] != s->owner)
                            last[j] = sched.hop(s->owner, s->participants[j], a, n, OpKind::recv_copy, last[j]);
                });
                continue;
            }
            std::vector<int> chain = reduce_chain(topo, *s);
            std::vector<int> path(chain.rbegin(), chain.rend());  // owner first
            for_segments(li, s->range, path.size(), [&](std::vector<int>& last, std::size_t a, std::size_t n) {
                for (std::size_t j = 0; j + 1 < path.size(); ++j)
                    last[j] = sched.hop(path[j], path[j + 1], a, n, OpKind::recv_copy, last[j]);
            });
        }
    *out = b.finish();
    return Status::ok();
}

}  // namespace

Status plan_flexreduce(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, Plan* out) {
    return plan_flex(topo, count, only_rank, opts, false, out);
}

Status plan_flexrelay(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, Plan* out) {
    return plan_flex(topo, count, only_rank, opts, true, out);
}

std::string describe_flex_layout(const Topology& topo, const FlexLayout& lay) {
    std::ostringstream s;
    s << "FlexReduce layout: " << lay.count << " elements, " << lay.nranks << " ranks, " << lay.levels.size()
      << (lay.levels.size() == 1 ? " level\n" : " levels\n");
    auto range = [](const Range& r) {
        return "[" + std::to_string(r.offset) + "," + std::to_string(r.offset + r.count) + ")";
    };
    for (std::size_t li = 0; li < lay.levels.size(); ++li) {
        const FlexLevel& l = lay.levels[li];
        s << "level " << li << " (tree depth " << l.depth << "):";
        for (int x : l.branches) {
            const TopoNode& n = topo.node(x);
            s << " " << to_string(n.level) << " " << n.name << (x == l.branches.back() ? "" : ",");
        }
        s << "\n";
        for (const FlexSubrange& sr : l.subranges) {
            std::string parts;
            for (int q : sr.participants) parts += (parts.empty() ? "" : " ") + std::to_string(q);
            s << "  " << std::left << std::setw(16) << range(sr.range) << " participants " << std::setw(12) << parts
              << " owner " << sr.owner;
            if (sr.assigned != sr.owner) s << " (paper: " << sr.assigned << ")";
            s << "\n";
        }
        s << "  owned after level " << li << ":";
        for (int r = 0; r < lay.nranks; ++r) {
            s << " " << r;
            const auto& o = l.owned[static_cast<std::size_t>(r)];
            if (o.empty()) s << "[]";
            for (const Range& x : o) s << range(x);
        }
        s << "\n  reduce calls per rank (owned/joined):";
        int most = 0;
        for (int r = 0; r < lay.nranks; ++r) {
            s << " " << r << ":" << l.calls[static_cast<std::size_t>(r)] << "/" << l.joins[static_cast<std::size_t>(r)];
            most = std::max(most, l.calls[static_cast<std::size_t>(r)]);
        }
        s << "  (max " << most << ")\n";
    }
    return s.str();
}

}  // namespace topoar
