// Unit tests of the hierarchical ring planner (no MPI): plan structure and
// semantics on even and uneven trees and on explicit factorizations, the
// up-link traffic of the paper's model, and exact / bit-identical execution
// over the threaded fake transport.
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "exec/executor.hpp"
#include "exec_harness.hpp"
#include "fake_transport.hpp"
#include "plan_check.hpp"
#include "planners/planner_hring.hpp"
#include "planners/planners.hpp"
#include "topology/topology.hpp"

// cmocka last: its macros (fail, ...) clash with the C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace topoar;
using topoar_test::check_plan_semantics;

namespace {

// ------------------------------------------------------------- fixtures

Topology nodes(const std::vector<int>& sizes) {
    Topology t;
    Status s = Topology::from_node_sizes(sizes, Link{25e6, 50e-6}, Link{10e9, 3e-7}, &t);
    if (!s) fail_msg("from_node_sizes: %s", s.message().c_str());
    return t;
}

Topology text(const std::string& txt) {
    Topology t;
    Status s = Topology::from_text(txt, "fixture", &t);
    if (!s) fail_msg("fixture: %s\n%s", s.message().c_str(), txt.c_str());
    return t;
}

// Racks of 1 and 2 hosts (the single-host rack collapses into its host).
const char kRacks1and2[] =
    "rack r0\n  node a count=2\n"
    "rack r1\n  node b count=2\n  node c count=3\n";
// Racks of 2 and 3 hosts with 2+3 and 1+2+2 ranks.
const char kRacks2and3[] =
    "rack r0\n  node a count=2\n  node b count=3\n"
    "rack r1\n  node c count=1\n  node d count=2\n  node e count=2\n";
// Racks of 1 and 3 hosts of 3 ranks.
const char kRacks1and3[] =
    "rack r0\n  node a count=3\n"
    "rack r1\n  node b count=3\n  node c count=3\n  node d count=3\n";
// Depth 5: spines, racks, hosts, sockets; uneven everywhere.
const char kDeep[] =
    "spine s0\n"
    "  rack r0\n"
    "    node a\n"
    "      socket 0\n        ranks 0 1\n"
    "      socket 1\n        ranks 2 3 4\n"
    "    node b\n      ranks 5 6\n"
    "  rack r1\n"
    "    node c\n      ranks 7 8 9\n"
    "    node d\n      ranks 10\n"
    "spine s1\n"
    "  rack r2\n"
    "    node e\n      ranks 11 12\n"
    "    node f\n      ranks 13\n";
// Ranks placed round-robin over two hosts.
const char kRoundRobin[] = "node a\n  ranks 0 2 4\nnode b\n  ranks 1 3\n";
// Sockets inside one host next to plain hosts.
const char kSockets[] =
    "rack r0\n  node a\n    ranks 0 1\n  node b\n    ranks 2 3 4\n"
    "rack r1\n  node c\n    socket 0\n      ranks 5 6\n    socket 1\n      ranks 7 8 9\n";

std::vector<Topology> uneven_trees() {
    return {nodes({2, 3}),    nodes({1, 2, 3}), nodes({3, 1, 4, 1, 5}), nodes({1, 1, 1}), nodes({8, 1}),
            nodes({1}),       nodes({5}),       text(kRacks1and2),      text(kRacks2and3), text(kRacks1and3),
            text(kDeep),      text(kRoundRobin), text(kSockets)};
}

std::vector<Topology> even_trees() {
    return {nodes({2, 2}), nodes({3, 3}), nodes({4, 4, 4}), nodes({2, 2, 2, 2}), nodes({1, 1, 1, 1}),
            text("rack r0\n  node a count=2\n  node b count=2\n  node c count=2\n"
                 "rack r1\n  node d count=2\n  node e count=2\n  node f count=2\n")};
}

std::vector<std::size_t> counts_for(int p) {
    return {0, 1, static_cast<std::size_t>(p > 1 ? p - 1 : 1), static_cast<std::size_t>(p),
            static_cast<std::size_t>(p + 1), 7, 61, 1001};
}

Plan hring(const Topology& t, std::size_t n, int only_rank = -1, const std::vector<int>& factors = {}) {
    PlanOptions o;
    o.factors = factors;
    Plan plan;
    Status s = plan_hring(t, n, only_rank, o, &plan);
    if (!s) fail_msg("plan_hring: %s", s.message().c_str());
    return plan;
}

Plan flat(int p, const std::vector<int>& factors, std::size_t n, int only_rank = -1,
          const std::vector<int>& order = {}) {
    Plan plan;
    Status s = plan_hring_factors(p, factors, n, only_rank, PlanOptions{}, &plan, order);
    if (!s) fail_msg("plan_hring_factors %s: %s", format_hring_factors(factors).c_str(), s.message().c_str());
    return plan;
}

void expect_valid(const Plan& plan, const char* what) {
    Status s = validate_plan(plan);
    if (!s) fail_msg("%s p=%d count=%zu: %s", what, plan.nranks, plan.count, s.message().c_str());
    assert_true(plan.algorithm == Algorithm::hring);
    auto check = check_plan_semantics(plan);
    if (!check.ok) fail_msg("%s p=%d count=%zu: %s", what, plan.nranks, plan.count, check.error.c_str());
    if (plan.nranks > 1)
        for (std::size_t i = 0; i < plan.count; ++i)
            if (check.final_reducers[i] != 1)
                fail_msg("%s p=%d count=%zu: element %zu completed by %d ranks, expected exactly one owner", what,
                         plan.nranks, plan.count, i, check.final_reducers[i]);
}

// Elements each group sends to / receives from ranks outside it.
struct Traffic {
    std::map<int, std::size_t> out, in;
};
Traffic traffic(const Plan& plan, const std::function<int(int)>& group_of) {
    Traffic t;
    for (int r = 0; r < plan.nranks; ++r)
        for (const auto& round : plan.of(r).rounds)
            for (const auto& op : round.ops) {
                if (group_of(r) == group_of(op.peer)) continue;
                (op.kind == OpKind::send ? t.out : t.in)[group_of(r)] += op.count;
            }
    return t;
}

std::size_t sent_by(const Plan& plan, int r, const std::function<bool(int)>& to) {
    std::size_t n = 0;
    for (const auto& round : plan.of(r).rounds)
        for (const auto& op : round.ops)
            if (op.kind == OpKind::send && to(op.peer)) n += op.count;
    return n;
}

}  // namespace

// ------------------------------------------------------ factorizations

static void test_factorizations(void** state) {
    (void)state;
    auto f8 = hring_factorizations(8, 3);
    assert_true((f8 == std::vector<std::vector<int>>{{8}, {2, 4}, {4, 2}, {2, 2, 2}}));
    assert_true((hring_factorizations(8, 1) == std::vector<std::vector<int>>{{8}}));
    assert_true((hring_factorizations(1, 3) == std::vector<std::vector<int>>{{1}}));
    assert_true((hring_factorizations(7, 4) == std::vector<std::vector<int>>{{7}}));
    assert_true(hring_factorizations(0, 3).empty());
    // 2048 = 2^11 in at most 4 levels: compositions of 11 into <= 4 parts.
    assert_int_equal(hring_factorizations(2048, 4).size(), 1 + 10 + 45 + 120);
    for (int p : {12, 36, 128, 360}) {
        auto all = hring_factorizations(p, 4);
        for (std::size_t i = 0; i < all.size(); ++i) {
            long prod = 1;
            for (int f : all[i]) {
                assert_true(f >= 2);
                prod *= f;
            }
            assert_int_equal(prod, p);
            assert_true(all[i].size() <= 4);
            for (std::size_t j = 0; j < i; ++j) assert_false(all[i] == all[j]);
            if (i) assert_true(all[i - 1].size() <= all[i].size());
        }
    }
    auto f128 = hring_factorizations(128, 3);
    assert_true(std::find(f128.begin(), f128.end(), std::vector<int>{4, 8, 4}) != f128.end());
}

static void test_invalid_factors(void** state) {
    (void)state;
    Plan plan;
    Status s = plan_hring_factors(64, {4, 8, 4}, 100, -1, PlanOptions{}, &plan);
    assert_false(s.is_ok());
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::invalid_argument));
    assert_string_equal(s.message().c_str(), "hring factors 4x8x4 multiply to 128, but the communicator has 64 ranks");
    s = plan_hring_factors(6, {3, 0, 2}, 100, -1, PlanOptions{}, &plan);
    assert_false(s.is_ok());
    assert_true(s.message().find("factor 0") != std::string::npos);
    s = plan_hring_factors(6, {-2, -3}, 100, -1, PlanOptions{}, &plan);
    assert_false(s.is_ok());
    s = plan_hring_factors(4, {2, 2}, 100, -1, PlanOptions{}, &plan, {0, 1, 1, 3});
    assert_false(s.is_ok());
    assert_true(s.message().find("permutation") != std::string::npos);
    // Through the topology entry point (what the engine calls).
    PlanOptions o;
    o.factors = {2, 2};
    s = plan_hring(nodes({2, 3}), 10, -1, o, &plan);
    assert_false(s.is_ok());
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::invalid_argument));
    assert_true(s.message().find("has 5 ranks") != std::string::npos);
    assert_true(check_hring_factors({5}, 5).is_ok());
    assert_true(check_hring_factors({1, 5, 1}, 5).is_ok());
    assert_string_equal(format_hring_factors({4, 8, 4}).c_str(), "4x8x4");
}

// ------------------------------------------------- symbolic semantics

static void test_symbolic_even_trees(void** state) {
    (void)state;
    for (const Topology& t : even_trees())
        for (std::size_t n : counts_for(t.num_ranks())) expect_valid(hring(t, n), "even tree");
}

static void test_symbolic_uneven_trees(void** state) {
    (void)state;
    for (const Topology& t : uneven_trees())
        for (std::size_t n : counts_for(t.num_ranks())) expect_valid(hring(t, n), "uneven tree");
}

static void test_symbolic_factorizations(void** state) {
    (void)state;
    const std::vector<std::vector<int>> cases = {{2, 3}, {3, 2}, {2, 2, 2}, {6}, {}, {1, 6}, {2, 1, 3},
                                                 {4, 4}, {2, 2, 2, 2, 2, 2}, {8, 8}, {4, 4, 4}};
    for (const auto& f : cases) {
        int p = 1;
        for (int x : f) p *= x;
        if (f.empty()) p = 5;
        for (std::size_t n : counts_for(p)) expect_valid(flat(p, f, n), format_hring_factors(f).c_str());
    }
    // A permuted rank list (e.g. ranks placed round-robin).
    expect_valid(flat(6, {2, 3}, 100, -1, {0, 3, 1, 4, 2, 5}), "2x3 permuted");
    // Every factorization of 12 up to 4 levels.
    for (const auto& f : hring_factorizations(12, 4)) expect_valid(flat(12, f, 97), format_hring_factors(f).c_str());
}

// Level structure of an even machine: 2(p_i - 1) rounds per level, and a
// rank's messages stay inside its own group at every level.
static void test_rounds_and_peers(void** state) {
    (void)state;
    Plan p = flat(24, {2, 3, 4}, 240);
    for (int r = 0; r < 24; ++r) assert_int_equal(p.num_rounds(r), 2 * (1 + 2 + 3));
    Plan t = hring(nodes({4, 4, 4}), 120);
    for (int r = 0; r < 12; ++r) {
        assert_int_equal(t.num_rounds(r), 2 * 3 + 2 * 2);
        // Inter-node peers are the same lane (local index) on other nodes.
        for (const auto& round : t.of(r).rounds)
            for (const auto& op : round.ops)
                if (op.peer / 4 != r / 4) assert_int_equal(op.peer % 4, r % 4);
    }
    // One rank per node: the hierarchy is one flat ring.
    Plan one = hring(nodes({1, 1, 1, 1, 1}), 50);
    for (int r = 0; r < 5; ++r) assert_int_equal(one.num_rounds(r), 8);
    // Factors from options on the topology equal the topology's own tree.
    Topology even = nodes({3, 3});
    for (int r = 0; r < 6; ++r)
        assert_string_equal(describe_schedule(hring(even, 77), r).c_str(),
                            describe_schedule(hring(even, 77, -1, {3, 2}), r).c_str());
}

// Explicit factors on a topology apply to the ranks in topology order.
static void test_factors_on_topology(void** state) {
    (void)state;
    Topology rr = text(kRoundRobin);  // tree order 0 2 4 1 3
    for (const auto& f : std::vector<std::vector<int>>{{5}, {1, 5}, {5, 1}})
        for (std::size_t n : counts_for(5)) expect_valid(hring(rr, n, -1, f), "factors on round-robin");
    Topology t = nodes({3, 3});
    for (const auto& f : std::vector<std::vector<int>>{{2, 3}, {6}, {3, 2}, {3, 1, 2}})
        for (std::size_t n : counts_for(6)) expect_valid(hring(t, n, -1, f), "factors on 3+3");
    // {5} on the round-robin host layout: one ring in tree order 0 2 4 1 3.
    Plan ring = hring(rr, 50, -1, {5});
    const int next[] = {2, 3, 4, 0, 1};  // successor of each rank in 0 2 4 1 3
    for (int r = 0; r < 5; ++r)
        for (const auto& round : ring.of(r).rounds)
            for (const auto& op : round.ops)
                if (op.kind == OpKind::send) assert_int_equal(op.peer, next[r]);
}

static void test_only_rank_keeps_the_same_schedule(void** state) {
    (void)state;
    for (const Topology& t : {nodes({2, 3}), text(kDeep), text(kRacks2and3)}) {
        Plan full = hring(t, 1000);
        for (int r = 0; r < t.num_ranks(); ++r) {
            Plan mine = hring(t, 1000, r);
            assert_string_equal(describe_schedule(mine, r).c_str(), describe_schedule(full, r).c_str());
            assert_int_equal(mine.of(r).scratch_elems, full.of(r).scratch_elems);
            for (int q = 0; q < t.num_ranks(); ++q)
                if (q != r) assert_int_equal(mine.num_rounds(q), 0);
        }
    }
}

// ------------------------------------------------------------ traffic

// Paper section IV-C: with N nodes of L ranks, every lane's ring across
// nodes moves 2(N-1)/N of its M/L elements, so a node up-link carries
// 2(N-1)/N * M each way, and only inside each node does anything else move.
static void test_traffic_even_two_level(void** state) {
    (void)state;
    for (auto nl : std::vector<std::pair<int, int>>{{2, 3}, {4, 2}, {3, 4}, {8, 4}, {5, 1}, {1, 4}}) {
        const int n_nodes = nl.first, l = nl.second;
        Topology t = nodes(std::vector<int>(static_cast<std::size_t>(n_nodes), l));
        const std::size_t m = static_cast<std::size_t>(n_nodes * l) * 12;
        Plan plan = hring(t, m);
        auto node = [&](int r) { return t.node_of_rank(r); };
        Traffic tr = traffic(plan, node);
        std::size_t per_node = 2 * (n_nodes - 1) * m / n_nodes;
        for (int nd : t.nodes_at(Level::node)) {
            assert_int_equal(tr.out[nd], per_node);
            assert_int_equal(tr.in[nd], per_node);
        }
        for (int r = 0; r < n_nodes * l; ++r) {
            // Per lane: 2(N-1)/N * M/L across nodes, 2(L-1)/L * M inside.
            assert_int_equal(sent_by(plan, r, [&](int q) { return node(q) != node(r); }), per_node / l);
            assert_int_equal(sent_by(plan, r, [&](int q) { return node(q) == node(r); }), 2 * (l - 1) * m / l);
        }
    }
}

// Three levels (R racks x K nodes x L ranks): a rack up-link carries
// 2(R-1)/R * M each way, a node up-link 2(K-1)/K * M + 2(R-1)/R * M/K =
// 2(RK-1)/(RK) * M, the optimum for RK nodes.
static void test_traffic_even_three_level(void** state) {
    (void)state;
    for (auto rk : std::vector<std::pair<int, int>>{{2, 3}, {3, 2}, {4, 4}}) {
        const int racks = rk.first, k = rk.second, l = 2;
        std::string txt;
        for (int r = 0; r < racks; ++r) {
            txt += "rack r" + std::to_string(r) + "\n";
            for (int i = 0; i < k; ++i) txt += "  node n" + std::to_string(r * k + i) + " count=2\n";
        }
        Topology t = text(txt);
        const std::size_t m = static_cast<std::size_t>(racks * k * l) * 10;
        Plan plan = hring(t, m);
        Traffic by_rack = traffic(plan, [&](int r) { return t.ancestor_at(t.leaf_of_rank(r), Level::rack); });
        Traffic by_node = traffic(plan, [&](int r) { return t.node_of_rank(r); });
        for (int rack : t.nodes_at(Level::rack)) {
            assert_int_equal(by_rack.out[rack], 2 * (racks - 1) * m / racks);
            assert_int_equal(by_rack.in[rack], 2 * (racks - 1) * m / racks);
        }
        const int all = racks * k;
        for (int nd : t.nodes_at(Level::node)) {
            assert_int_equal(by_node.out[nd], 2 * (all - 1) * m / all);
            assert_int_equal(by_node.in[nd], 2 * (all - 1) * m / all);
        }
        if (racks * k * l <= 64) expect_valid(plan, "three-level");
    }
}

// Uneven levels keep every child's up-link at (k-1)/k of the vector per
// phase, and spread a node's share evenly over its ranks.
static void test_traffic_uneven(void** state) {
    (void)state;
    {
        // 2 + 3 ranks: each node sends and receives exactly M.
        Topology t = nodes({2, 3});
        const std::size_t m = 1200;
        Plan plan = hring(t, m);
        Traffic tr = traffic(plan, [&](int r) { return t.node_of_rank(r); });
        for (int nd : t.nodes_at(Level::node)) {
            assert_int_equal(tr.out[nd], m);
            assert_int_equal(tr.in[nd], m);
        }
        // Node a's two ranks each carry half of it, node b's three a third.
        for (int r = 0; r < 5; ++r)
            assert_int_equal(sent_by(plan, r, [&](int q) { return t.node_of_rank(q) != t.node_of_rank(r); }),
                             r < 2 ? m / 2 : m / 3);
        // The flat ring in topology order moves 2(P-1)/P * M = 1.6 M.
        Plan ring = plan_ring(5, m, -1, t.ranks_in_tree_order(t.root()));
        Traffic rt = traffic(ring, [&](int r) { return t.node_of_rank(r); });
        for (int nd : t.nodes_at(Level::node)) assert_int_equal(rt.out[nd], 2 * 4 * m / 5);
        // Overlaying 1/2 and 1/3 cuts gives 4 segments; pieces merged, every
        // rank owns one contiguous range after the top level.
        for (int r = 0; r < 5; ++r) {
            std::size_t inter_msgs = 0;
            for (const auto& round : plan.of(r).rounds)
                for (const auto& op : round.ops)
                    if (op.kind == OpKind::send && t.node_of_rank(op.peer) != t.node_of_rank(r)) ++inter_msgs;
            assert_true(inter_msgs <= 4);
        }
    }
    {
        // 1 + 2 + 3 ranks: each node 2 * 2/3 * M.
        Topology t = nodes({1, 2, 3});
        const std::size_t m = 3600;
        Traffic tr = traffic(hring(t, m), [&](int r) { return t.node_of_rank(r); });
        for (int nd : t.nodes_at(Level::node)) {
            assert_int_equal(tr.out[nd], 2 * 2 * m / 3);
            assert_int_equal(tr.in[nd], 2 * 2 * m / 3);
        }
    }
    {
        // Racks of 1 and 3 hosts: the cut between them carries M each way
        // (its minimum); hosts of the big rack 2*2/3*M + 2*1/2*M/3.
        Topology t = text(kRacks1and3);
        const std::size_t m = 3600;
        Plan plan = hring(t, m);
        Traffic tr = traffic(plan, [&](int r) { return t.node_of_rank(r); });
        int lone = t.find(Level::node, "a");
        assert_int_equal(tr.out[lone], m);
        assert_int_equal(tr.in[lone], m);
        for (const char* h : {"b", "c", "d"}) {
            assert_int_equal(tr.out[t.find(Level::node, h)], 4 * m / 3 + m / 3);
            assert_int_equal(tr.in[t.find(Level::node, h)], 4 * m / 3 + m / 3);
        }
    }
}

// 4 x 8 x 4 = 128 ranks, the paper's best intra-rack configuration on ABCI
// (Table II).  Too many ranks for the symbolic check: validate the plan,
// count the traffic per group, and execute it below.
static void test_4x8x4(void** state) {
    (void)state;
    const std::size_t m = 128 * 3;
    Plan plan = flat(128, {4, 8, 4}, m);
    assert_true(validate_plan(plan).is_ok());
    for (int r = 0; r < 128; ++r) assert_int_equal(plan.num_rounds(r), 2 * (3 + 7 + 3));
    // Level-1 groups ("nodes" of 4): 2(32-1)/32 * M each way; level-2
    // groups ("racks" of 32): 2(4-1)/4 * M.
    Traffic g1 = traffic(plan, [](int r) { return r / 4; });
    Traffic g2 = traffic(plan, [](int r) { return r / 32; });
    for (int g = 0; g < 32; ++g) {
        assert_int_equal(g1.out[g], 2 * 31 * m / 32);
        assert_int_equal(g1.in[g], 2 * 31 * m / 32);
    }
    for (int g = 0; g < 4; ++g) {
        assert_int_equal(g2.out[g], 2 * 3 * m / 4);
        assert_int_equal(g2.in[g], 2 * 3 * m / 4);
    }
    // The message sizes shrink as in the paper's Fig. 1: M/4, M/32, M/128.
    for (const auto& round : plan.of(0).rounds)
        for (const auto& op : round.ops) {
            if (op.peer / 4 == 0) assert_int_equal(op.count, m / 4);
            else if (op.peer / 32 == 0) assert_int_equal(op.count, m / 32);
            else assert_int_equal(op.count, m / 128);
        }
}

// Sends one rank posts in one round, at worst.  Even trees: one (the
// paper's lanes).  Uneven trees: one per segment a rank's range meets, which
// stays small for realistic mixes; a one-rank host beside big ones has to
// meet every lane of its neighbours (as in the paper's scheme with p1 = 1).
std::size_t worst_sends_per_round(const Plan& plan) {
    std::size_t worst = 0;
    for (int r = 0; r < plan.nranks; ++r)
        for (const auto& round : plan.of(r).rounds) {
            std::size_t sends = 0;
            for (const auto& op : round.ops) sends += op.kind == OpKind::send;
            worst = std::max(worst, sends);
        }
    return worst;
}

static void test_fragmentation_bounded(void** state) {
    (void)state;
    const std::size_t m = 1 << 20;
    assert_int_equal(worst_sends_per_round(hring(nodes(std::vector<int>(8, 4)), m)), 1);
    assert_int_equal(worst_sends_per_round(flat(128, {4, 8, 4}, m)), 1);
    assert_int_equal(worst_sends_per_round(hring(nodes({2, 3}), m)), 2);
    assert_true(worst_sends_per_round(hring(nodes({6, 8, 6, 8}), m)) <= 3);
    assert_true(worst_sends_per_round(hring(nodes({3, 5, 7, 3, 5, 7}), m)) <= 5);
    assert_true(worst_sends_per_round(hring(text(kRacks2and3), m)) <= 4);
    assert_int_equal(worst_sends_per_round(hring(nodes({1, 16}), m)), 16);
}

// ---------------------------------------------- execution (fake transport)

namespace {

using topoar_test::OrderedReducer;
using topoar_test::SumReducer;

using topoar_test::run_all;  // exec_harness.hpp

std::uint64_t mix(std::uint64_t x) {  // splitmix64
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Exact wrapping sums of random 64-bit inputs: a missing or doubled
// contribution changes the result.
void check_exact(const char* what, int p, const std::function<Plan(int, std::size_t)>& planner,
                 const std::vector<std::size_t>& counts, std::size_t seg) {
    for (std::size_t n : counts) {
        std::vector<std::vector<std::uint64_t>> bufs(static_cast<std::size_t>(p), std::vector<std::uint64_t>(n));
        std::vector<std::uint64_t> want(n, 0);
        for (int r = 0; r < p; ++r)
            for (std::size_t i = 0; i < n; ++i) {
                std::uint64_t x = mix(static_cast<std::uint64_t>(r) * 1000003u + i);
                bufs[static_cast<std::size_t>(r)][i] = x;
                want[i] += x;
            }
        SumReducer<std::uint64_t> sum;
        run_all<std::uint64_t>([&](int r) { return planner(r, n); }, bufs, sum, seg);
        for (int r = 0; r < p; ++r)
            for (std::size_t i = 0; i < n; ++i)
                if (bufs[static_cast<std::size_t>(r)][i] != want[i])
                    fail_msg("%s p=%d n=%zu seg=%zu rank %d elem %zu: wrong sum", what, p, n, seg, r, i);
    }
}

void check_bit_identical(const char* what, int p, const std::function<Plan(int, std::size_t)>& planner) {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> dist(-1e6, 1e6);
    const std::size_t n = 997;
    std::vector<std::vector<double>> bufs(static_cast<std::size_t>(p), std::vector<double>(n));
    for (auto& b : bufs)
        for (auto& x : b) x = dist(rng) / 3.0;
    SumReducer<double> sum;
    run_all<double>([&](int r) { return planner(r, n); }, bufs, sum, 100);
    for (int r = 1; r < p; ++r)
        if (std::memcmp(bufs[0].data(), bufs[static_cast<std::size_t>(r)].data(), n * sizeof(double)) != 0)
            fail_msg("%s: rank %d differs from rank 0 (double sums)", what, r);

    std::vector<std::vector<std::uint64_t>> obufs(static_cast<std::size_t>(p), std::vector<std::uint64_t>(n));
    for (int r = 0; r < p; ++r)
        for (std::size_t i = 0; i < n; ++i) obufs[static_cast<std::size_t>(r)][i] = static_cast<std::uint64_t>(r + 1) * 7919 + i;
    OrderedReducer ordered;
    run_all<std::uint64_t>([&](int r) { return planner(r, n); }, obufs, ordered, 0);
    for (int r = 1; r < p; ++r)
        if (std::memcmp(obufs[0].data(), obufs[static_cast<std::size_t>(r)].data(), n * 8) != 0)
            fail_msg("%s: rank %d differs from rank 0 (ordered op)", what, r);
}

}  // namespace

static void test_execute_trees_exact(void** state) {
    (void)state;
    std::vector<Topology> trees = uneven_trees();
    for (const Topology& t : even_trees()) trees.push_back(t);
    for (const Topology& t : trees) {
        const int p = t.num_ranks();
        auto planner = [&](int r, std::size_t n) { return hring(t, n, r); };
        std::vector<std::size_t> counts = {0, 1, static_cast<std::size_t>(p > 1 ? p - 1 : 1), 7, 1001, 100000};
        check_exact("tree", p, planner, counts, 0);
        check_exact("tree seg=3", p, planner, {1001}, 3);  // many segments per message
    }
}

static void test_execute_factorizations_exact(void** state) {
    (void)state;
    // Prime P (one flat ring), 2x3, 3x2, 2x2x2, and the 128-rank 4x8x4.
    const std::vector<std::vector<int>> cases = {{7}, {2, 3}, {3, 2}, {2, 2, 2}, {3, 1, 2}};
    for (const auto& f : cases) {
        int p = 1;
        for (int x : f) p *= x;
        auto planner = [&](int r, std::size_t n) { return flat(p, f, n, r); };
        check_exact(format_hring_factors(f).c_str(), p, planner, {0, 1, 5, 1001, 65536}, 0);
        check_exact(format_hring_factors(f).c_str(), p, planner, {1001}, 16);
    }
    auto big = [](int r, std::size_t n) { return flat(128, {4, 8, 4}, n, r); };
    check_exact("4x8x4", 128, big, {1, 127, 128 * 8 + 5}, 0);
}

static void test_execute_bit_identical(void** state) {
    (void)state;
    for (const Topology& t : {nodes({2, 3}), nodes({1, 2, 3}), text(kRacks2and3), text(kDeep)})
        check_bit_identical("tree", t.num_ranks(), [&](int r, std::size_t n) { return hring(t, n, r); });
    check_bit_identical("2x2x2", 8, [](int r, std::size_t n) { return flat(8, {2, 2, 2}, n, r); });
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_factorizations),
        cmocka_unit_test(test_invalid_factors),
        cmocka_unit_test(test_symbolic_even_trees),
        cmocka_unit_test(test_symbolic_uneven_trees),
        cmocka_unit_test(test_symbolic_factorizations),
        cmocka_unit_test(test_rounds_and_peers),
        cmocka_unit_test(test_factors_on_topology),
        cmocka_unit_test(test_only_rank_keeps_the_same_schedule),
        cmocka_unit_test(test_traffic_even_two_level),
        cmocka_unit_test(test_traffic_even_three_level),
        cmocka_unit_test(test_traffic_uneven),
        cmocka_unit_test(test_4x8x4),
        cmocka_unit_test(test_fragmentation_bounded),
        cmocka_unit_test(test_execute_trees_exact),
        cmocka_unit_test(test_execute_factorizations_exact),
        cmocka_unit_test(test_execute_bit_identical),
    };
    return cmocka_run_group_tests_name("hring", tests, NULL, NULL);
}
