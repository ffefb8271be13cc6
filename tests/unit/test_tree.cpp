// Unit tests of the aggregation-tree (RAT) planner and the node-aware leader
// tree (no MPI): symbolic plan checks on even and uneven topologies, load
// balance and uplink traffic, and execution over the threaded fake transport.
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
#include "planners/planner_tree.hpp"
#include "planners/planners.hpp"

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

const Link kRank{10e9, 0.3e-6};
const Link kSocket{20e9, 0.5e-6};
const Link kNode{25e6, 50e-6};  // 200 Mbit/s
const Link kRack{125e6, 100e-6};

// Topologies from a small shape language, ranks numbered in order of
// appearance (or through `perm`):
//   "(2 3)"            hosts of 2 and 3 ranks under the root
//   "((1 2)(2 3))"     two racks; a group nested in a group is a rack
//   "([2 2] 3)"        a host with two sockets of 2 ranks, and a host of 3
struct ShapeParser {
    explicit ShapeParser(const std::string& text) : s(text) {}
    const std::string& s;
    std::size_t i = 0;
    TopologyBuilder b;
    int next_rank = 0, hosts = 0, racks = 0;
    const std::vector<int>* perm = nullptr;

    void skip_blanks() {
        while (i < s.size() && s[i] == ' ') ++i;
    }
    int rank_id() {
        int r = next_rank++;
        return perm ? (*perm)[static_cast<std::size_t>(r)] : r;
    }
    int number() {
        int v = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') v = v * 10 + (s[i++] - '0');
        return v;
    }
    void host_of(int parent, int n) {
        int h = b.add(parent, Level::node, "h" + std::to_string(hosts++), kNode);
        for (int k = 0; k < n; ++k) b.add_rank(h, rank_id(), kRank);
    }
    void socket_host(int parent) {  // at '['
        ++i;
        int h = b.add(parent, Level::node, "h" + std::to_string(hosts++), kNode);
        int sock = 0;
        for (skip_blanks(); s[i] != ']'; skip_blanks()) {
            int n = number();
            int so = b.add(h, Level::socket, std::to_string(sock++), kSocket);
            for (int k = 0; k < n; ++k) b.add_rank(so, rank_id(), kRank);
        }
        ++i;
    }
    void group(int parent, bool top) {  // at '('
        ++i;
        int me = top ? parent : b.add(parent, Level::rack, "r" + std::to_string(racks++), kRack);
        for (skip_blanks(); s[i] != ')'; skip_blanks()) {
            if (s[i] == '(')
                group(me, false);
            else if (s[i] == '[')
                socket_host(me);
            else
                host_of(me, number());
        }
        ++i;
    }
};

Topology shape(const std::string& text, const std::vector<int>* perm = nullptr) {
    ShapeParser p(text);
    p.perm = perm;
    p.skip_blanks();
    p.group(p.b.root(), true);
    Topology t;
    Status st = p.b.build(&t);
    if (!st) fail_msg("shape %s: %s", text.c_str(), st.message().c_str());
    return t;
}

// Even and uneven trees, depth 1 to 4, single-rank hosts, prime P.
const char* const kShapes[] = {
    "(1)",                        // one rank
    "(4)",                        // one host: depth 1
    "(2 3)",                      // uneven hosts
    "(1 2 3)",                    // single-rank host, P = 6
    "(4 4)",                      // even
    "(3 3 3)",                    // even, odd fan-outs
    "((1 2)(2 3))",               // racks 1+2 / 2+3, P = 8
    "((2 2)(2 2))",               // even racks
    "((1)(2 2))",                 // a rack with one host collapses
    "(([2 2] 3)(1 [1 2]))",       // depth 4 with sockets, P = 11
    "(2 2 3 3 3)",                // P = 13 (prime)
    "(1 1 1 1 1 1 1)",            // one rank per host, P = 7
};

void expect_valid(const Plan& plan, const char* what, bool reduced_once) {
    Status s = validate_plan(plan);
    if (!s) fail_msg("%s count=%zu: %s", what, plan.count, s.message().c_str());
    auto check = check_plan_semantics(plan);
    if (!check.ok) fail_msg("%s count=%zu: %s", what, plan.count, check.error.c_str());
    if (reduced_once && plan.nranks > 1)
        for (std::size_t i = 0; i < plan.count; ++i)
            if (check.final_reducers[i] != 1)
                fail_msg("%s count=%zu: element %zu completed by %d ranks, expected exactly one", what, plan.count,
                         i, check.final_reducers[i]);
}

Plan tree_plan(const Topology& t, std::size_t n, int only, int K, std::size_t seg) {
    PlanOptions o;
    o.num_trees = K;
    o.pipeline_elems = seg;
    Plan plan;
    Status s = plan_tree(t, n, only, o, &plan);
    if (!s) fail_msg("plan_tree: %s", s.message().c_str());
    return plan;
}

Plan leader_plan(const Topology& t, std::size_t n, int only, LeaderExchange ex = LeaderExchange::automatic) {
    LeaderTreeOptions lo;
    lo.exchange = ex;
    Plan plan;
    Status s = plan_leader_tree(t, n, only, PlanOptions{}, lo, &plan);
    if (!s) fail_msg("plan_leader_tree: %s", s.message().c_str());
    return plan;
}

bool under(const Topology& t, int rank, int v) {
    for (int x = t.leaf_of_rank(rank); x >= 0; x = t.node(x).parent)
        if (x == v) return true;
    return false;
}

// Elements crossing each host's uplink, out of and into the host.
struct HostTraffic {
    std::map<int, std::size_t> out, in;
};
HostTraffic host_traffic(const Topology& t, const Plan& plan) {
    HostTraffic h;
    for (int r = 0; r < plan.nranks; ++r)
        for (const auto& round : plan.of(r).rounds)
            for (const auto& op : round.ops)
                if (op.kind == OpKind::send && t.node_of_rank(r) != t.node_of_rank(op.peer)) {
                    h.out[t.node_of_rank(r)] += op.count;
                    h.in[t.node_of_rank(op.peer)] += op.count;
                }
    return h;
}

}  // namespace

// ---------------------------------------------------------------- layout

static void test_layout_is_consistent(void** state) {
    (void)state;
    for (const char* sh : kShapes) {
        Topology t = shape(sh);
        for (int K = 1; K <= 7; ++K) {
            TreeLayout l = layout_trees(t, K);
            assert_int_equal(l.num_trees, K);
            for (int k = 0; k < K; ++k)
                for (int v = 0; v < t.num_nodes(); ++v) {
                    const TopoNode& n = t.node(v);
                    int a = l.agg[static_cast<std::size_t>(k)][static_cast<std::size_t>(v)];
                    assert_true(under(t, a, v));  // the aggregator lies in its region
                    if (n.is_leaf()) continue;
                    int c = n.children[static_cast<std::size_t>(l.choice[static_cast<std::size_t>(k)][static_cast<std::size_t>(v)])];
                    assert_int_equal(a, l.agg[static_cast<std::size_t>(k)][static_cast<std::size_t>(c)]);
                }
            // Deterministic: same input, same layout.
            TreeLayout again = layout_trees(t, K);
            assert_true(again.agg == l.agg);
        }
    }
}

static void test_layout_balances_aggregators(void** state) {
    (void)state;
    // K = ranks per host on even trees: every rank aggregates its host for
    // exactly one tree, and the roots are spread evenly over the hosts.
    for (const char* sh : {"(4 4)", "(3 3 3)", "(2 2 2 2)", "((2 2)(2 2))", "(6 6 6)"}) {
        Topology t = shape(sh);
        std::vector<int> hosts = t.nodes_at(Level::node);
        int n = t.num_ranks_under(hosts[0]);
        TreeLayout l = layout_trees(t, n);
        for (int h : hosts) {
            std::map<int, int> per_rank;
            for (int k = 0; k < n; ++k) per_rank[l.agg[static_cast<std::size_t>(k)][static_cast<std::size_t>(h)]]++;
            assert_int_equal(per_rank.size(), static_cast<std::size_t>(n));
            for (const auto& e : per_rank) assert_int_equal(e.second, 1);
        }
        // Multiples of n: still an equal share, and every child of the root
        // hosts K / (fan-out) roots.
        int m = static_cast<int>(t.node(t.root()).children.size());
        int K = n * m;
        TreeLayout l2 = layout_trees(t, K);
        std::map<int, int> roots_per_child, agg_per_rank;
        for (int k = 0; k < K; ++k) {
            int root = l2.agg[static_cast<std::size_t>(k)][0];
            for (int c : t.node(t.root()).children)
                if (under(t, root, c)) roots_per_child[c]++;
            for (int h : hosts) agg_per_rank[l2.agg[static_cast<std::size_t>(k)][static_cast<std::size_t>(h)]]++;
        }
        for (const auto& e : roots_per_child) assert_int_equal(e.second, K / m);
        assert_int_equal(agg_per_rank.size(), static_cast<std::size_t>(t.num_ranks()));
        for (const auto& e : agg_per_rank) assert_int_equal(e.second, K / n);
    }
}

static void test_default_num_trees(void** state) {
    (void)state;
    struct {
        const char* shape;
        int want;
    } cases[] = {
        {"(4 4)", 4}, {"(3 3 3)", 3}, {"(2 3)", 4}, {"(1)", 1}, {"(4)", 4}, {"(4 4 4)", 6}, {"(3 3 3 3)", 4},
    };
    for (const auto& c : cases) {
        int K = default_num_trees(shape(c.shape));
        if (K != c.want) fail_msg("%s: default K %d, expected %d", c.shape, K, c.want);
    }
    // Whatever K it picks, it is at least the largest fan-out and its
    // modelled bottleneck is no worse than K = largest fan-out.
    for (const char* sh : kShapes) {
        Topology t = shape(sh);
        int maxfan = 1;
        for (const auto& n : t.nodes()) maxfan = std::max(maxfan, static_cast<int>(n.children.size()));
        int K = default_num_trees(t);
        assert_true(K >= maxfan);
        assert_true(tree_bottleneck(t, layout_trees(t, K)) <= tree_bottleneck(t, layout_trees(t, maxfan)) * 1.0001);
    }
}

// ---------------------------------------------------------------- plans

static void test_tree_plan_semantics(void** state) {
    (void)state;
    for (const char* sh : kShapes) {
        Topology t = shape(sh);
        for (int K = 0; K <= 5; ++K)
            for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(K > 1 ? K - 1 : 2), std::size_t(7),
                                  std::size_t(1001), std::size_t(4099)})
                for (std::size_t seg : {std::size_t(0), std::size_t(3), std::size_t(100)}) {
                    if (n > 1001 && seg == 3) continue;  // many rounds, nothing new
                    std::string what = std::string(sh) + " K=" + std::to_string(K) + " seg=" + std::to_string(seg);
                    expect_valid(tree_plan(t, n, -1, K, seg), what.c_str(), true);
                }
    }
}

static void test_tree_plan_rounds(void** state) {
    (void)state;
    // Unpipelined: reduce up H levels, broadcast down H levels.
    struct {
        const char* shape;
        int height;
    } cases[] = {{"(4)", 1}, {"(2 3)", 2}, {"((1 2)(2 3))", 3}, {"(([2 2] 3)(1 [1 2]))", 4}};
    for (const auto& c : cases) {
        Topology t = shape(c.shape);
        Plan plan = tree_plan(t, 1200, -1, 0, 0);
        std::size_t most = 0;
        for (int r = 0; r < plan.nranks; ++r) most = std::max(most, plan.num_rounds(r));
        assert_int_equal(most, static_cast<std::size_t>(2 * c.height));
        // Pipelined: S segments per slice add S - 1 rounds, not S times.
        int K = default_num_trees(t);
        std::size_t seg = 1200 / static_cast<std::size_t>(K) / 5;
        std::size_t nseg = (split_range(1200, static_cast<std::size_t>(K), 0).count + seg - 1) / seg;
        Plan piped = tree_plan(t, 1200, -1, K, seg);
        most = 0;
        for (int r = 0; r < piped.nranks; ++r) most = std::max(most, piped.num_rounds(r));
        assert_int_equal(most, static_cast<std::size_t>(2 * c.height) + nseg - 1);
    }
}

static void test_tree_uplink_traffic_is_optimal(void** state) {
    (void)state;
    // N hosts of n ranks, M elements: with the default K each host uplink
    // carries 2 M (1 - 1/N) elements in each direction, the two-level
    // optimum, and M/n crosses per aggregator rank.
    for (const char* sh : {"(2 2)", "(4 4)", "(3 3 3)", "(2 2 2 2)", "(3 3 3 3)", "(2 3)", "(1 2 3)", "(1 4)"}) {
        Topology t = shape(sh);
        int K = default_num_trees(t);
        int N = static_cast<int>(t.nodes_at(Level::node).size());
        std::size_t M = static_cast<std::size_t>(K) * 12 * 5 * 7;  // divisible by K, N, 2N
        Plan plan = tree_plan(t, M, -1, K, 0);
        HostTraffic h = host_traffic(t, plan);
        std::size_t want = 2 * M * static_cast<std::size_t>(N - 1) / static_cast<std::size_t>(N);
        for (int host : t.nodes_at(Level::node)) {
            if (h.out[host] != want || h.in[host] != want)
                fail_msg("%s K=%d host %d: out %zu in %zu, optimum %zu", sh, K, host, h.out[host], h.in[host], want);
        }
    }
    // Racks: each rack uplink carries 2 M (1 - 1/racks) as well.
    Topology t = shape("((2 2)(2 2))");
    int K = default_num_trees(t);
    std::size_t M = static_cast<std::size_t>(K) * 100;
    Plan plan = tree_plan(t, M, -1, K, 0);
    std::map<int, std::size_t> rack_out;
    for (int r = 0; r < plan.nranks; ++r)
        for (const auto& round : plan.of(r).rounds)
            for (const auto& op : round.ops)
                if (op.kind == OpKind::send && t.ancestor_at(t.leaf_of_rank(r), Level::rack) !=
                                                   t.ancestor_at(t.leaf_of_rank(op.peer), Level::rack))
                    rack_out[t.ancestor_at(t.leaf_of_rank(r), Level::rack)] += op.count;
    assert_int_equal(rack_out.size(), 2);
    for (const auto& e : rack_out) assert_int_equal(e.second, M);  // 2 M (1 - 1/2)
}

static void test_tree_ranks_share_work(void** state) {
    (void)state;
    // Even tree, K = ranks per host: every rank receives (and sends) the same
    // number of elements.
    for (const char* sh : {"(4 4)", "(3 3 3)"}) {
        Topology t = shape(sh);
        int n = t.num_ranks_under(t.nodes_at(Level::node)[0]);
        std::size_t M = static_cast<std::size_t>(n) * 60;
        Plan plan = tree_plan(t, M, -1, n, 0);
        std::vector<std::size_t> reduced(static_cast<std::size_t>(plan.nranks), 0);
        for (int r = 0; r < plan.nranks; ++r)
            for (const auto& round : plan.of(r).rounds)
                for (const auto& op : round.ops)
                    if (op.kind == OpKind::recv_reduce) reduced[static_cast<std::size_t>(r)] += op.count;
        std::size_t lo = *std::min_element(reduced.begin(), reduced.end());
        std::size_t hi = *std::max_element(reduced.begin(), reduced.end());
        // Within a host everyone aggregates M/n; roots additionally reduce
        // the other hosts' partials, spread over the hosts' ranks.
        assert_true(lo >= M / static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
        assert_true(hi - lo <= M);
    }
}

static void test_only_rank_keeps_the_same_schedule(void** state) {
    (void)state;
    for (const char* sh : {"(2 3)", "((1 2)(2 3))", "(([2 2] 3)(1 [1 2]))"}) {
        Topology t = shape(sh);
        Plan full = tree_plan(t, 333, -1, 0, 10);
        Plan lfull = leader_plan(t, 5, -1);
        for (int r = 0; r < t.num_ranks(); ++r) {
            Plan mine = tree_plan(t, 333, r, 0, 10);
            assert_string_equal(describe_schedule(mine, r).c_str(), describe_schedule(full, r).c_str());
            Plan lmine = leader_plan(t, 5, r);
            assert_string_equal(describe_schedule(lmine, r).c_str(), describe_schedule(lfull, r).c_str());
        }
    }
}

static void test_bad_arguments(void** state) {
    (void)state;
    Topology t = shape("(2 3)");
    Plan plan;
    PlanOptions o;
    o.num_trees = -1;
    assert_false(plan_tree(t, 10, -1, o, &plan).is_ok());
    assert_false(plan_tree(t, 10, 5, PlanOptions{}, &plan).is_ok());
    assert_false(plan_tree(Topology{}, 10, -1, PlanOptions{}, &plan).is_ok());
    LeaderTreeOptions lo;
    lo.intra_radix = 1;
    assert_false(plan_leader_tree(t, 10, -1, PlanOptions{}, lo, &plan).is_ok());
    assert_false(plan_leader_tree(Topology{}, 10, -1, PlanOptions{}, &plan).is_ok());
}

// ---------------------------------------------------------------- leader tree

static void test_leader_tree_semantics(void** state) {
    (void)state;
    for (const char* sh : kShapes) {
        Topology t = shape(sh);
        for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(100)}) {
            std::string what = std::string(sh) + " leader";
            expect_valid(leader_plan(t, n, -1, LeaderExchange::reduce_bcast), what.c_str(), true);
            expect_valid(leader_plan(t, n, -1, LeaderExchange::recursive_doubling), what.c_str(), false);
            expect_valid(leader_plan(t, n, -1, LeaderExchange::automatic), what.c_str(), false);
        }
    }
    // Non-contiguous placement (ranks dealt round-robin to hosts) changes
    // nothing: the hosts come from the topology, not from rank numbers.
    std::vector<int> perm = {0, 2, 4, 1, 3, 5};
    Topology t = shape("(3 3)", &perm);
    expect_valid(leader_plan(t, 9, -1, LeaderExchange::reduce_bcast), "round-robin placement", true);
}

static void test_leader_tree_rounds_vs_recursive_doubling(void** state) {
    (void)state;
    // Rounds (R) and, on the busiest rank, rounds with a host-crossing
    // message (X); flat intra-host steps (radix 8), leaders by
    // LeaderExchange::automatic.  Plain RD ignores hosts.
    //   shape              leader tree R/X   plain RD R/X
    //   (4 4)              3/1               3/1
    //   (2 3)              3/1               4/2
    //   (1 2 3)            4/2               4/4
    //   (3 3 3)            4/2               5/3
    //   (8 8 8 8)          4/2               5/2
    //   (4 4 4 4)          4/2               4/2
    //   (2 2 2 2 2 2 2 2)  5/3               4/3
    //   (16 16)            5/1               5/1   (radix 8: two levels)
    //   (3 5)              3/1               3/2
    //   ((1 2)(2 3))       4/2               3/3
    //   (1 1 1 1 1 1 1)    4/4               4/4   (same algorithm)
    struct {
        const char* shape;
        int leader_rounds, leader_cross, rd_rounds, rd_cross;
    } cases[] = {
        {"(4 4)", 3, 1, 3, 1},         {"(2 3)", 3, 1, 4, 2},    {"(1 2 3)", 4, 2, 4, 4},
        {"(3 3 3)", 4, 2, 5, 3},       {"(8 8 8 8)", 4, 2, 5, 2}, {"(4 4 4 4)", 4, 2, 4, 2},
        {"(2 2 2 2 2 2 2 2)", 5, 3, 4, 3}, {"(16 16)", 5, 1, 5, 1}, {"(3 5)", 3, 1, 3, 2},
        {"((1 2)(2 3))", 4, 2, 3, 3},  {"(1 1 1 1 1 1 1)", 4, 4, 4, 4},
    };
    auto measure = [](const Topology& t, const Plan& plan, int* rounds, int* cross) {
        // Global rounds are not kept in a Plan; re-derive them from the
        // symbolic lock-step: count, per rank, rounds and those that cross.
        *rounds = 0;
        *cross = 0;
        for (int r = 0; r < plan.nranks; ++r) {
            *rounds = std::max(*rounds, static_cast<int>(plan.num_rounds(r)));
            int c = 0;
            for (const auto& round : plan.of(r).rounds)
                for (const auto& op : round.ops)
                    if (t.node_of_rank(r) != t.node_of_rank(op.peer)) {
                        ++c;
                        break;
                    }
            *cross = std::max(*cross, c);
        }
    };
    for (const auto& c : cases) {
        Topology t = shape(c.shape);
        int lr, lx, rr, rx;
        measure(t, leader_plan(t, 4, -1), &lr, &lx);
        measure(t, plan_recursive_doubling(t.num_ranks(), 4, -1), &rr, &rx);
        if (lr != c.leader_rounds || lx != c.leader_cross || rr != c.rd_rounds || rx != c.rd_cross)
            fail_msg("%s: leader %d/%d (want %d/%d), RD %d/%d (want %d/%d)", c.shape, lr, lx, c.leader_rounds,
                     c.leader_cross, rr, rx, c.rd_rounds, c.rd_cross);
    }
    // At most one message per host and direction crosses the network per
    // leader-exchange round (plain RD sends one per rank).
    Topology t = shape("(4 4 4)");
    Plan plan = leader_plan(t, 4, -1);
    for (int r = 0; r < plan.nranks; ++r)
        if (r % 4 != 0)
            for (const auto& round : plan.of(r).rounds)
                for (const auto& op : round.ops) assert_int_equal(t.node_of_rank(r), t.node_of_rank(op.peer));
}

// The leader exchange: recursive doubling when it takes at most as many
// rounds as the radix-4 reduce + broadcast (a tie goes to it: it uses both
// directions of every link at once), and with the hosts in tree order its
// first step pairs hosts of one rack, even when rank numbers are dealt
// round-robin over the hosts (--map-by node).
static void test_leader_exchange_choice(void** state) {
    (void)state;
    LeaderTreeOptions lo;
    LeaderExchange e;
    const struct {
        int leaders;
        LeaderExchange want;
    } cases[] = {{2, LeaderExchange::recursive_doubling}, {3, LeaderExchange::reduce_bcast},
                 {4, LeaderExchange::recursive_doubling}, {8, LeaderExchange::recursive_doubling},
                 {16, LeaderExchange::recursive_doubling}};
    for (const auto& c : cases) {
        leader_exchange_rounds(c.leaders, lo, &e);
        if (e != c.want) fail_msg("%d leaders: exchange %d, want %d", c.leaders, static_cast<int>(e), static_cast<int>(c.want));
    }
    // Racks 1+2 | 2+3 hosts, ranks dealt round-robin: hosts n0 {0}, n1 {1 4},
    // n2 {2 5}, n3 {3 6 7}; with these numbers rank order and tree order
    // of the leaders agree, so also try a permutation where they do not.
    for (const std::vector<int>& perm : {std::vector<int>{0, 1, 4, 2, 5, 3, 6, 7},
                                         std::vector<int>{0, 2, 4, 1, 5, 3, 6, 7}}) {
        Topology t = shape("((1 2)(2 3))", &perm);
        Plan plan = leader_plan(t, 6, -1);
        expect_valid(plan, "racks leader RD", false);
        auto rack_of = [&](int r) { return t.ancestor_at(t.leaf_of_rank(r), Level::rack); };
        for (int r = 0; r < plan.nranks; ++r) {
            if (t.lowest_rank_under(t.node_of_rank(r)) != r) continue;  // leaders only
            // The first round in which this leader talks to another host.
            for (const auto& round : plan.of(r).rounds) {
                const Op* across = nullptr;
                for (const auto& op : round.ops)
                    if (t.node_of_rank(op.peer) != t.node_of_rank(r)) across = &op;
                if (!across) continue;
                if (rack_of(across->peer) != rack_of(r))
                    fail_msg("leader %d: first exchange with %d in another rack", r, across->peer);
                break;
            }
        }
    }
}

// ---------------------------------------------------------------- execution

namespace {

using topoar_test::OrderedReducer;
using topoar_test::SumReducer;

using topoar_test::run_all;  // exec_harness.hpp

using Planner = std::function<Plan(const Topology&, int rank, std::size_t n)>;

void check_exact_sums(const Planner& planner, std::size_t seg, const char* what) {
    for (const char* sh : kShapes) {
        Topology t = shape(sh);
        const int p = t.num_ranks();
        for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(p > 1 ? p - 1 : 1), std::size_t(7),
                              std::size_t(1001), std::size_t(100000)}) {
            if (seg && n / seg > 2000) continue;  // thousands of rounds: slow, nothing new
            std::vector<std::vector<std::int64_t>> bufs(static_cast<std::size_t>(p), std::vector<std::int64_t>(n));
            for (int r = 0; r < p; ++r)
                for (std::size_t i = 0; i < n; ++i)
                    bufs[static_cast<std::size_t>(r)][i] = (r + 1) * 1000003LL + static_cast<long long>(i);
            SumReducer<std::int64_t> sum;
            run_all<std::int64_t>([&](int r) { return planner(t, r, n); }, bufs, sum, seg);
            for (int r = 0; r < p; ++r)
                for (std::size_t i = 0; i < n; ++i) {
                    std::int64_t want = 1000003LL * p * (p + 1) / 2 + static_cast<long long>(i) * p;
                    if (bufs[static_cast<std::size_t>(r)][i] != want)
                        fail_msg("%s %s n=%zu seg=%zu rank %d elem %zu: got %lld want %lld", what, sh, n, seg, r, i,
                                 static_cast<long long>(bufs[static_cast<std::size_t>(r)][i]),
                                 static_cast<long long>(want));
                }
        }
    }
}

void check_bit_identical(const Planner& planner, std::size_t seg) {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> dist(-1e6, 1e6);
    for (const char* sh : {"(2 3)", "(1 2 3)", "((1 2)(2 3))", "(([2 2] 3)(1 [1 2]))", "(2 2 3 3 3)"}) {
        Topology t = shape(sh);
        const int p = t.num_ranks();
        std::size_t n = 997;
        std::vector<std::vector<double>> bufs(static_cast<std::size_t>(p), std::vector<double>(n));
        for (auto& b : bufs)
            for (auto& x : b) x = dist(rng) / 3.0;
        SumReducer<double> sum;
        run_all<double>([&](int r) { return planner(t, r, n); }, bufs, sum, seg);
        for (int r = 1; r < p; ++r)
            assert_memory_equal(bufs[0].data(), bufs[static_cast<std::size_t>(r)].data(), n * sizeof(double));

        std::vector<std::vector<std::uint64_t>> obufs(static_cast<std::size_t>(p), std::vector<std::uint64_t>(n));
        for (int r = 0; r < p; ++r)
            for (std::size_t i = 0; i < n; ++i)
                obufs[static_cast<std::size_t>(r)][i] = static_cast<std::uint64_t>(r + 1) * 7919 + i;
        OrderedReducer ordered;
        run_all<std::uint64_t>([&](int r) { return planner(t, r, n); }, obufs, ordered, seg);
        for (int r = 1; r < p; ++r)
            assert_memory_equal(obufs[0].data(), obufs[static_cast<std::size_t>(r)].data(), n * 8);
    }
}

Planner tree_with(int K, std::size_t seg) {
    return [K, seg](const Topology& t, int r, std::size_t n) { return tree_plan(t, n, r, K, seg); };
}
Planner leader_with(LeaderExchange ex) {
    return [ex](const Topology& t, int r, std::size_t n) { return leader_plan(t, n, r, ex); };
}

}  // namespace

static void test_executor_tree_exact(void** state) {
    (void)state;
    check_exact_sums(tree_with(0, 0), 0, "tree K=default");
    check_exact_sums(tree_with(3, 0), 0, "tree K=3");
    // Plan-level pipelining; the executor must then segment alike.
    check_exact_sums(tree_with(0, 64), 64, "tree K=default seg=64");
    check_exact_sums(tree_with(5, 3), 3, "tree K=5 seg=3");
    check_exact_sums(tree_with(1, 1000), 1000, "tree K=1 seg=1000");
}

static void test_executor_leader_exact(void** state) {
    (void)state;
    check_exact_sums(leader_with(LeaderExchange::reduce_bcast), 0, "leader reduce+bcast");
    check_exact_sums(leader_with(LeaderExchange::recursive_doubling), 0, "leader RD");
    check_exact_sums(leader_with(LeaderExchange::automatic), 100, "leader auto seg=100");
}

static void test_executor_bit_identical(void** state) {
    (void)state;
    check_bit_identical(tree_with(0, 0), 0);
    check_bit_identical(tree_with(4, 50), 50);
    check_bit_identical(leader_with(LeaderExchange::reduce_bcast), 0);
    check_bit_identical(leader_with(LeaderExchange::recursive_doubling), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_is_consistent),
        cmocka_unit_test(test_layout_balances_aggregators),
        cmocka_unit_test(test_default_num_trees),
        cmocka_unit_test(test_tree_plan_semantics),
        cmocka_unit_test(test_tree_plan_rounds),
        cmocka_unit_test(test_tree_uplink_traffic_is_optimal),
        cmocka_unit_test(test_tree_ranks_share_work),
        cmocka_unit_test(test_only_rank_keeps_the_same_schedule),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_leader_tree_semantics),
        cmocka_unit_test(test_leader_tree_rounds_vs_recursive_doubling),
        cmocka_unit_test(test_leader_exchange_choice),
        cmocka_unit_test(test_executor_tree_exact),
        cmocka_unit_test(test_executor_leader_exact),
        cmocka_unit_test(test_executor_bit_identical),
    };
    return cmocka_run_group_tests_name("tree", tests, NULL, NULL);
}
