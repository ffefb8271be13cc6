#include "planners/planners.hpp"

#include <algorithm>
#include <numeric>

#include "topology/topology.hpp"

namespace topoar {

Range split_range(std::size_t count, std::size_t parts, std::size_t i) {
    std::size_t base = count / parts, rem = count % parts;
    return Range{i * base + (i < rem ? i : rem), base + (i < rem ? 1 : 0)};
}

Plan plan_ring(int nranks, std::size_t count, int only_rank, const std::vector<int>& order_in) {
    PlanBuilder b(Algorithm::ring, nranks, count, only_rank);
    std::vector<int> order = order_in;
    if (order.empty()) {
        order.resize(static_cast<std::size_t>(nranks));
        std::iota(order.begin(), order.end(), 0);
    }
    const int p = nranks;
    auto at = [&](int pos) { return order[static_cast<std::size_t>(((pos % p) + p) % p)]; };
    auto chunk = [&](int c) { return split_range(count, static_cast<std::size_t>(p), static_cast<std::size_t>(((c % p) + p) % p)); };

    // Reduce-scatter: in round s, position i sends chunk i-s-1 to i+1, which
    // reduces it (incoming partial first, so chunk c's tree is
    // ((x_{c+1} op x_{c+2}) op ...) op x_c in ring order).
    for (int s = 0; s < p - 1; ++s)
        for (int i = 0; i < p; ++i) {
            Range r = chunk(i - s - 1);
            b.transfer(s, at(i), at(i + 1), r.offset, r.count, OpKind::recv_reduce);
        }
    // All-gather: in round s, position i forwards chunk i-s (finished) to i+1.
    for (int s = 0; s < p - 1; ++s)
        for (int i = 0; i < p; ++i) {
            Range r = chunk(i - s);
            b.transfer(p - 1 + s, at(i), at(i + 1), r.offset, r.count, OpKind::recv_copy);
        }
    return b.finish();
}

namespace {

// Recursive doubling and halving run among the largest power of two of
// `members`: member 2i (i < extra) first gives its vector to member 2i+1,
// which computes x_{2i} op x_{2i+1}, and gets the result back from it last;
// virtual member v (0 <= v < pof2) is real(v).
struct PowerOfTwo {
    const std::vector<int>& members;
    int pof2 = 1;
    int extra = 0;

    explicit PowerOfTwo(const std::vector<int>& m) : members(m) {
        const int n = static_cast<int>(m.size());
        while (pof2 * 2 <= n) pof2 *= 2;
        extra = n - pof2;
    }
    int at(int i) const { return members[static_cast<std::size_t>(i)]; }
    int real(int v) const { return v < extra ? at(2 * v + 1) : at(v + extra); }
    // The fold, in `round` when there is one; answers the next free round.
    int fold(PlanBuilder& b, int round, std::size_t count) const {
        if (extra == 0) return round;
        for (int i = 0; i < extra; ++i)
            b.transfer(round, at(2 * i), at(2 * i + 1), 0, count, OpKind::recv_reduce, Operand::incoming_first);
        return round + 1;
    }
    void unfold(PlanBuilder& b, int round, std::size_t count) const {
        for (int i = 0; i < extra; ++i) b.transfer(round, at(2 * i + 1), at(2 * i), 0, count, OpKind::recv_copy);
    }
};

}  // namespace

void add_recursive_doubling(PlanBuilder& b, const std::vector<int>& members, int base_round, std::size_t count) {
    if (members.size() <= 1) return;
    const PowerOfTwo g(members);
    int round = g.fold(b, base_round, count);
    // Butterfly among the virtual members.
    for (int dist = 1; dist < g.pof2; dist *= 2, ++round)
        for (int v = 0; v < g.pof2; ++v) {
            int partner = v ^ dist;
            // The lower group's value goes first on both sides.
            Operand order = partner < v ? Operand::incoming_first : Operand::local_first;
            b.transfer(round, g.real(partner), g.real(v), 0, count, OpKind::recv_reduce, order);
        }
    g.unfold(b, round, count);
}

Plan plan_recursive_doubling(int nranks, std::size_t count, int only_rank) {
    PlanBuilder b(Algorithm::leader, nranks, count, only_rank);
    std::vector<int> all(static_cast<std::size_t>(nranks));
    std::iota(all.begin(), all.end(), 0);
    add_recursive_doubling(b, all, 0, count);
    return b.finish();
}

// The ring row of the algorithm table: ring order = the topology's leaf
// order, so ranks sharing a node (and racks) sit next to each other.
Status plan_ring_algorithm(const Topology& topo, std::size_t count, int only_rank, const PlanOptions&, Plan* out) {
    *out = plan_ring(topo.num_ranks(), count, only_rank, topo.ranks_in_tree_order(topo.root()));
    return Status::ok();
}

// The halving row: Rabenseifner's reduce-scatter by recursive halving and
// all-gather by recursive doubling among the largest power of two of ranks
// in topology order; the others are folded into a neighbour first and
// handed the result last.  The reduce-scatter's distance doubles (1, 2, 4,
// ...) and the all-gather's halves, so the first and largest halves go
// between neighbours in topology order (a host's or a rack's ranks) and
// only the smaller ones cross the slower links: on hosts of 1, 1 and 2
// ranks the third host's link carries the vector once each way, as tuned's
// recursive-halving algorithm does with ranks in host order.  Not
// topology-aware beyond that order; the cost model decides where it wins
// (docs/algorithms.md, "halving").
Status plan_halving(const Topology& topo, std::size_t count, int only_rank, const PlanOptions&, Plan* out) {
    const std::vector<int> members = topo.ranks_in_tree_order(topo.root());
    const PowerOfTwo g(members);
    PlanBuilder b(Algorithm::halving, topo.num_ranks(), count, only_rank);
    int round = g.fold(b, 0, count);
    // Virtual member v's block [lo, lo + len): what it holds reduced.
    const auto P = static_cast<std::size_t>(g.pof2);
    std::vector<std::size_t> lo(P, 0), len(P, count);
    for (int dist = 1; dist < g.pof2; dist *= 2, ++round)
        for (int v = 0; v < g.pof2; ++v) {
            const auto V = static_cast<std::size_t>(v);
            const std::size_t half = len[V] / 2;
            const bool lower = (v & dist) == 0;
            if (!lower) lo[V] += half;
            len[V] = lower ? half : len[V] - half;
            const int partner = v ^ dist;
            b.transfer(round, g.real(partner), g.real(v), lo[V], len[V], OpKind::recv_reduce,
                       partner < v ? Operand::incoming_first : Operand::local_first);
        }
    for (int dist = g.pof2 / 2; dist >= 1; dist /= 2, ++round) {
        std::vector<std::size_t> nlo(P), nlen(P);
        for (int v = 0; v < g.pof2; ++v) {
            const auto V = static_cast<std::size_t>(v), W = static_cast<std::size_t>(v ^ dist);
            b.transfer(round, g.real(v ^ dist), g.real(v), lo[W], len[W], OpKind::recv_copy);
            nlo[V] = std::min(lo[V], lo[W]);
            nlen[V] = len[V] + len[W];
        }
        lo.swap(nlo);
        len.swap(nlen);
    }
    g.unfold(b, round, count);
    *out = b.finish();
    return Status::ok();
}

}  // namespace topoar
