// topoar engine: hierarchical ring planner (see planner_hring.hpp for the
// algorithm, its paper and the treatment of uneven levels).
#include "planners/planner_hring.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

namespace topoar {

namespace {

// The hierarchy the planner walks: a tree whose leaves are comm ranks.  It
// comes either from the Topology (levels as they are) or from a
// factorization of a flat rank list; the planner does not care which.
struct Hierarchy {
    struct Vertex {
        std::vector<int> kids;
        int rank = -1;  // leaves only
    };
    std::vector<Vertex> v;
    int root = -1;

    int add_leaf(int rank) {
        v.push_back(Vertex{{}, rank});
        return static_cast<int>(v.size()) - 1;
    }
    int add_group(std::vector<int> kids) {
        v.push_back(Vertex{std::move(kids), -1});
        return static_cast<int>(v.size()) - 1;
    }
};

Hierarchy from_topology(const Topology& topo) {
    Hierarchy h;
    std::function<int(int)> copy = [&](int id) -> int {
        const TopoNode& n = topo.node(id);
        if (n.is_leaf()) return h.add_leaf(n.rank);
        std::vector<int> kids;
        for (int c : n.children) kids.push_back(copy(c));
        return h.add_group(std::move(kids));
    };
    h.root = copy(topo.root());
    return h;
}

// Level 1 groups factors[0] consecutive entries of order, level 2 groups
// factors[1] level-1 groups, ...; the caller checked the product.
Hierarchy from_factors(const std::vector<int>& order, const std::vector<int>& factors) {
    Hierarchy h;
    std::vector<int> layer;
    for (int r : order) layer.push_back(h.add_leaf(r));
    for (int f : factors) {
        std::vector<int> next;
        for (std::size_t i = 0; i < layer.size(); i += static_cast<std::size_t>(f))
            next.push_back(h.add_group(std::vector<int>(layer.begin() + static_cast<long>(i),
                                                        layer.begin() + static_cast<long>(i) + f)));
        layer = std::move(next);
    }
    h.root = layer.size() == 1 ? layer[0] : h.add_group(layer);
    return h;
}

// A range of the vector held, reduced over some subtree, by `owner`.
struct Piece {
    std::size_t offset;
    std::size_t count;
    int owner;
};
// Sorted, disjoint, non-empty pieces covering [0, count) exactly.
using Partition = std::vector<Piece>;

// One ring of a level: a range with one owner per child (owner[m] for child
// m, in ring order) and the part of it each child ends up owning.
struct Segment {
    std::size_t offset;
    std::size_t count;
    std::vector<int> owner;
    std::vector<Range> part;         // part[m]: child m's share
    std::vector<std::size_t> order;  // the children in the order of their shares
};

class HringPlanner {
public:
    HringPlanner(const Hierarchy& h, std::size_t count, PlanBuilder& b)
        : h_(h), count_(count), b_(b), segments_(h.v.size()) {}

    void plan() {
        Partition top;
        int end = reduce_scatter(h_.root, &top);
        all_gather(h_.root, end);
    }

private:
    // Plans the reduce-scatter of v's subtree: the children's first, then
    // the rings among them, starting when the slowest child is done.
    // Returns the first round after it; *part: who owns what afterwards.
    int reduce_scatter(int v, Partition* part) {
        const auto& vx = h_.v[static_cast<std::size_t>(v)];
        if (vx.kids.empty()) {
            part->clear();
            if (count_ > 0) part->push_back(Piece{0, count_, vx.rank});
            return 0;
        }
        const std::size_t k = vx.kids.size();
        std::vector<Partition> kid_parts(k);
        int start = 0;
        for (std::size_t m = 0; m < k; ++m)
            start = std::max(start, reduce_scatter(vx.kids[m], &kid_parts[m]));
        if (k == 1) {
            *part = std::move(kid_parts[0]);
            return start;
        }
        auto& segs = segments_[static_cast<std::size_t>(v)];
        segs = refine(kid_parts);
        place_parts(&segs, k);

        // Ring reduce-scatter per segment: in round s, ring position i hands
        // child (i-s-1)'s share to i+1, which adds its own; after k-1 rounds
        // child c's share sits, complete for this subtree, on child c.
        for (std::size_t s = 0; s + 1 < k; ++s)
            for (const Segment& g : segs)
                for (std::size_t i = 0; i < k; ++i) {
                    const Range& r = g.part[(i + 2 * k - s - 1) % k];
                    b_.transfer(start + static_cast<int>(s), g.owner[i], g.owner[(i + 1) % k], r.offset, r.count,
                                OpKind::recv_reduce, Operand::incoming_first);
                }

        // The new partition, merging a rank's touching pieces.
        part->clear();
        for (const Segment& g : segs)
            for (std::size_t m : g.order) {
                const Range& r = g.part[m];
                if (r.count == 0) continue;
                if (!part->empty() && part->back().owner == g.owner[m] &&
                    part->back().offset + part->back().count == r.offset)
                    part->back().count += r.count;
                else
                    part->push_back(Piece{r.offset, r.count, g.owner[m]});
            }
        return start + static_cast<int>(k) - 1;
    }

    // The reverse: per segment a ring all-gather from round `round`, then
    // the children's all-gathers.
    void all_gather(int v, int round) {
        const auto& vx = h_.v[static_cast<std::size_t>(v)];
        if (vx.kids.empty()) return;
        const std::size_t k = vx.kids.size();
        if (k > 1) {
            // Round s: position i forwards child (i-s)'s share (its own
            // in round 0, then what it received the round before).
            for (std::size_t s = 0; s + 1 < k; ++s)
                for (const Segment& g : segments_[static_cast<std::size_t>(v)])
                    for (std::size_t i = 0; i < k; ++i) {
                        const Range& r = g.part[(i + k - s) % k];
                        b_.transfer(round + static_cast<int>(s), g.owner[i], g.owner[(i + 1) % k], r.offset, r.count,
                                    OpKind::recv_copy);
                    }
            round += static_cast<int>(k) - 1;
        }
        for (int kid : vx.kids) all_gather(kid, round);
    }

    // The common refinement of the children's partitions: cut at every
    // piece boundary of every child, so each segment lies inside exactly one
    // piece (one owner) per child.
    std::vector<Segment> refine(const std::vector<Partition>& kids) const {
        const std::size_t k = kids.size();
        std::vector<Segment> segs;
        std::vector<std::size_t> idx(k, 0);
        std::size_t pos = 0;
        while (pos < count_) {
            Segment g{pos, 0, std::vector<int>(k), {}, {}};
            std::size_t end = count_;
            for (std::size_t m = 0; m < k; ++m) {
                const Partition& p = kids[m];
                while (p[idx[m]].offset + p[idx[m]].count <= pos) ++idx[m];
                g.owner[m] = p[idx[m]].owner;
                end = std::min(end, p[idx[m]].offset + p[idx[m]].count);
            }
            g.count = end - pos;
            segs.push_back(std::move(g));
            pos = end;
        }
        return segs;
    }

    // Decides where in each segment each child's 1/k lies.  The shares are
    // equal (the paper's split, balanced ring rounds); only their order
    // varies: a child whose owner is the same rank as at the end of the
    // previous segment goes first, and one whose owner carries on into the
    // next segment goes last, so those ranks' pieces touch and merge.
    static void place_parts(std::vector<Segment>* segs, std::size_t k) {
        int prev_last = -1;
        for (std::size_t j = 0; j < segs->size(); ++j) {
            Segment& g = (*segs)[j];
            const Segment* next = j + 1 < segs->size() ? &(*segs)[j + 1] : nullptr;
            std::vector<std::size_t> ord;
            std::vector<bool> used(k, false);
            for (std::size_t m = 0; m < k; ++m)
                if (g.owner[m] == prev_last) {
                    ord.push_back(m);
                    used[m] = true;
                    break;
                }
            std::size_t last = k;
            if (next)
                for (std::size_t m = 0; m < k; ++m)
                    if (!used[m] && next->owner[m] == g.owner[m]) {
                        last = m;
                        used[m] = true;
                        break;
                    }
            for (std::size_t m = 0; m < k; ++m)
                if (!used[m]) ord.push_back(m);
            if (last < k) ord.push_back(last);

            g.part.assign(k, Range{});
            std::size_t off = g.offset;
            prev_last = -1;
            for (std::size_t p = 0; p < k; ++p) {
                Range r = split_range(g.count, k, p);
                g.part[ord[p]] = Range{off, r.count};
                off += r.count;
                if (r.count) prev_last = g.owner[ord[p]];
            }
            g.order = std::move(ord);
        }
    }

    const Hierarchy& h_;
    std::size_t count_;
    PlanBuilder& b_;
    std::vector<std::vector<Segment>> segments_;  // per vertex, kept for the all-gather
};

Status check_order(const std::vector<int>& order, int nranks) {
    if (static_cast<int>(order.size()) != nranks)
        return Status::invalid("hring rank order lists " + std::to_string(order.size()) + " ranks, expected " +
                               std::to_string(nranks));
    std::vector<bool> seen(static_cast<std::size_t>(nranks), false);
    for (int r : order) {
        if (r < 0 || r >= nranks || seen[static_cast<std::size_t>(r)])
            return Status::invalid("hring rank order is not a permutation of 0.." + std::to_string(nranks - 1));
        seen[static_cast<std::size_t>(r)] = true;
    }
    return Status::ok();
}

void factorize(int p, int max_levels, std::vector<int>& prefix, std::vector<std::vector<int>>* out) {
    if (p == 1) {
        if (!prefix.empty()) out->push_back(prefix);
        return;
    }
    if (static_cast<int>(prefix.size()) >= max_levels) return;
    for (int f = 2; f <= p; ++f)
        if (p % f == 0) {
            prefix.push_back(f);
            factorize(p / f, max_levels, prefix, out);
            prefix.pop_back();
        }
}

}  // namespace

std::string format_hring_factors(const std::vector<int>& factors) {
    std::string s;
    for (std::size_t i = 0; i < factors.size(); ++i) s += (i ? "x" : "") + std::to_string(factors[i]);
    return s.empty() ? "(none)" : s;
}

Status check_hring_factors(const std::vector<int>& factors, int nranks) {
    long long product = 1;
    for (int f : factors) {
        if (f < 1)
            return Status::invalid("hring factors " + format_hring_factors(factors) + ": factor " +
                                   std::to_string(f) + " is not a positive group size");
        product *= f;
        if (product > (1LL << 40)) break;  // already far beyond any communicator
    }
    if (product != nranks)
        return Status::invalid("hring factors " + format_hring_factors(factors) + " multiply to " +
                               std::to_string(product) + ", but the communicator has " + std::to_string(nranks) +
                               " ranks");
    return Status::ok();
}

std::vector<std::vector<int>> hring_factorizations(int p, int max_levels) {
    std::vector<std::vector<int>> out;
    if (p < 1) return out;
    if (p == 1) return {{1}};
    std::vector<int> prefix;
    factorize(p, std::max(1, max_levels), prefix, &out);
    std::stable_sort(out.begin(), out.end(), [](const std::vector<int>& a, const std::vector<int>& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    return out;
}

Status plan_hring_factors(int nranks, const std::vector<int>& factors, std::size_t count, int only_rank,
                          const PlanOptions& opts, Plan* out, const std::vector<int>& order_in) {
    (void)opts;  // the rings pipeline themselves; see docs/algorithms.md
    if (nranks < 1) return Status::invalid("hring needs at least one rank");
    std::vector<int> order = order_in;
    if (order.empty()) {
        order.resize(static_cast<std::size_t>(nranks));
        std::iota(order.begin(), order.end(), 0);
    }
    TOPOAR_TRY(check_order(order, nranks));
    std::vector<int> f = factors.empty() ? std::vector<int>{nranks} : factors;
    TOPOAR_TRY(check_hring_factors(f, nranks));
    Hierarchy h = from_factors(order, f);
    PlanBuilder b(Algorithm::hring, nranks, count, only_rank);
    HringPlanner(h, count, b).plan();
    *out = b.finish();
    return Status::ok();
}

Status plan_hring(const Topology& topo, std::size_t count, int only_rank, const PlanOptions& opts, Plan* out) {
    if (topo.empty()) return Status::invalid("hring: empty topology");
    const int p = topo.num_ranks();
    if (!opts.factors.empty())
        return plan_hring_factors(p, opts.factors, count, only_rank, opts, out, topo.ranks_in_tree_order(topo.root()));
    Hierarchy h = from_topology(topo);
    PlanBuilder b(Algorithm::hring, p, count, only_rank);
    HringPlanner(h, count, b).plan();
    *out = b.finish();
    return Status::ok();
}

}  // namespace topoar
