// Unit tests of the cost model (common/model/cost_model.*): max-min sharing, the
// event simulation of plans, and agreement with the papers' closed forms on
// symmetric machines (docs/cost-model.md, "Validation").
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine.hpp"
#include "model/cost_model.hpp"
#include "planners/planner_hring.hpp"
#include "planners/planner_tree.hpp"
#include "planners/planners.hpp"

// cmocka last: its macros (fail, ...) clash with the C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

#include "cluster_fixtures.hpp"
#include "model_check.hpp"

using namespace topoar;
using namespace topoar_test;

namespace {

const double kFast = 1e15;  // a link that never limits (bytes/s)

// R racks x N hosts x G ranks; racks == 1 puts the hosts under the root.
Topology machine(int racks, int nodes, int ranks, Link rack, Link node, Link rank) {
    TopologyBuilder b;
    int next = 0;
    for (int r = 0; r < racks; ++r) {
        int parent = b.root();
        if (racks > 1) parent = b.add(b.root(), Level::rack, "r" + std::to_string(r), rack);
        for (int n = 0; n < nodes; ++n) {
            int host = b.add(parent, Level::node, "n" + std::to_string(r * nodes + n), node);
            for (int g = 0; g < ranks; ++g) b.add_rank(host, next++, rank);
        }
    }
    Topology t;
    Status s = b.build(&t);
    if (!s) fail_msg("%s", s.message().c_str());
    return t;
}

// Parameters under which the closed forms are exact: no reduction cost, no
// segmentation; alpha = path latency + overhead.  The closed forms of the
// papers describe lock-step rounds whose messages start when sent, so they
// are checked in the round-synchronous mode: the dataflow mode (default)
// lets rounds overlap (trees finish earlier than the lock-step sum) and
// charges rendezvous messages their handshake (two more path latencies).
// The dataflow tests below check what differs and what must not.
CostParams exact(double overhead = 1e-6) {
    CostParams c;
    c.mode = CostMode::rounds;
    c.overhead = overhead;
    c.gamma = 0;
    c.segment_bytes = 0;
    return c;
}

// FlexReduce Eq. 2: ring reduce-scatter of n bytes on d learners.
double t_r(double n, double d, double w, double alpha) { return (d - 1) * (alpha + n / (d * w)); }

// BlueConnect Eq. 3 / hierarchical ring IV-C on a symmetric tree, levels
// innermost first: fan-out delta[l], link bandwidth omega[l] of the edge
// above a level-l subtree's members, latency alpha[l] of a message crossing
// level l.  Level l runs on n / prod(delta[0..l-1]) bytes, and its
// prod(delta[0..l-1]) parallel rings share every edge they cross.
double blueconnect(double n, const std::vector<int>& delta, const std::vector<double>& omega,
                   const std::vector<double>& alpha) {
    double t = 0, below = 1;
    for (std::size_t l = 0; l < delta.size(); ++l) {
        double w = kFast * 10, per_edge = 1;  // rings sharing an edge of level k
        for (std::size_t k = 0; k <= l; ++k) {
            w = std::min(w, omega[k] / per_edge);
            per_edge *= delta[k];
        }
        t += 2 * t_r(n / below, delta[l], w, alpha[l]);
        below *= delta[l];
    }
    return t;
}

// The plan of `alg` as the engine builds it; any failure fails the test
// (every host algorithm plans on these machines).
void engine_plan(Algorithm alg, const Topology& topo, std::size_t count, const PlanOptions& o, Plan* plan) {
    Status s = make_plan(alg, topo, count, -1, o, plan);
    if (!s) fail_msg("%s: %s", algorithm_name(alg), s.message().c_str());
}

// What a loop over planners checked: each skip named (a planner that
// says unsupported, e.g. a device-only one), and a failure when the loop
// checked none or fewer than it must.
struct Checked {
    std::vector<std::string> ran, skipped;
    // The plan, or false with the skip recorded (unsupported only).
    bool plan(Algorithm alg, const Topology& topo, std::size_t count, const PlanOptions& o, Plan* plan) {
        Status s = make_plan(alg, topo, count, -1, o, plan);
        if (s.code() == Code::unsupported) {
            skipped.push_back(std::string(algorithm_name(alg)) + " (" + s.message() + ")");
            return false;
        }
        if (!s) fail_msg("%s: %s", algorithm_name(alg), s.message().c_str());
        ran.push_back(algorithm_name(alg));
        return true;
    }
    void expect_at_least(std::size_t n, const char* what) const {
        std::string r, k;
        for (const std::string& a : ran) r += " " + a;
        for (const std::string& a : skipped) k += " " + a;
        print_message("%s: checked%s; skipped%s\n", what, r.empty() ? " none" : r.c_str(),
                      k.empty() ? " none" : k.c_str());
        if (ran.size() < n || ran.empty())
            fail_msg("%s: %zu planners checked, at least %zu expected", what, ran.size(), n);
    }
};

}  // namespace

// ------------------------------------------------------------ max-min shares

static void test_max_min_rates(void** state) {
    (void)state;
    const double inf = std::numeric_limits<double>::infinity();
    // Link 0 (0.6) carries f0, f1; link 1 (1.5) carries f0, f1, f2; f3 is
    // unlimited.  Link 0 is the bottleneck of f0/f1 (0.3 each); f2 gets what
    // they leave on link 1.
    auto r = max_min_rates({0.6, 1.5, inf}, {{0, 1}, {0, 1}, {1}, {2}});
    assert_true(std::fabs(r[0] - 0.3) < 1e-12 && std::fabs(r[1] - 0.3) < 1e-12);
    assert_true(std::fabs(r[2] - 0.9) < 1e-12);
    assert_true(std::isinf(r[3]));
    // Equal flows on one link split it evenly.
    auto e = max_min_rates({3.0}, {{0}, {0}, {0}});
    for (double x : e) assert_true(std::fabs(x - 1.0) < 1e-12);
}

// ------------------------------------------------------- single messages

static void test_one_message_is_alpha_plus_n_over_w(void** state) {
    (void)state;
    const double w = 1e9, lat = 2e-6, rlat = 0.3e-6, o = 1e-6;
    Topology t = hosts({1, 1}, {w, lat}, {kFast, rlat});
    PlanBuilder b(Algorithm::ring, 2, 1000);
    b.transfer(0, 0, 1, 0, 1000, OpKind::recv_copy);
    Prediction p = run(t, b.finish(), 8, exact(o));
    expect_near(p.time, 2 * rlat + 2 * lat + o + 8000 / w, 1e-9, "alpha + n/w");
    assert_int_equal(p.messages, 1);
    // The sender is done when its bytes have left, the receiver one latency later.
    expect_near(p.rank_time[0], 8000 / w, 1e-9, "send completion");
}

static void test_link_sharing(void** state) {
    (void)state;
    const double w = 1e9, lat = 1e-6, o = 0.5e-6;
    const double alpha = 2 * lat + o;
    const std::size_t n = 100000;  // elements of 8 bytes: 0.8 ms at w
    Topology t = hosts({2, 2}, {w, lat}, {kFast, 0});
    // One flow over host 0's uplink.
    PlanBuilder one(Algorithm::ring, 4, 2 * n);
    one.transfer(0, 0, 2, 0, n, OpKind::recv_copy);
    double t1 = run(t, one.finish(), 8, exact(o)).time;
    expect_near(t1, alpha + 8.0 * n / w, 1e-9, "one flow");
    // Two flows over the same uplink (0->2, 1->3) each get half of it.
    PlanBuilder two(Algorithm::ring, 4, 2 * n);
    two.transfer(0, 0, 2, 0, n, OpKind::recv_copy);
    two.transfer(0, 1, 3, n, n, OpKind::recv_copy);
    double t2 = run(t, two.finish(), 8, exact(o)).time;
    expect_near(t2, alpha + 2 * 8.0 * n / w, 1e-9, "two flows on one link");
    expect_near(t2 - alpha, 2 * (t1 - alpha), 1e-9, "twice as long");
    // Opposite directions do not share: links are full duplex.
    PlanBuilder duplex(Algorithm::ring, 4, 2 * n);
    duplex.transfer(0, 0, 2, 0, n, OpKind::recv_copy);
    duplex.transfer(0, 2, 0, n, n, OpKind::recv_copy);
    expect_near(run(t, duplex.finish(), 8, exact(o)).time, t1, 1e-9, "full duplex");
    // Flows of n and 2n: both at w/2 until the short one ends at 2n/w, then
    // the long one alone at w: all bytes in 3n/w, the link never idles.
    PlanBuilder uneven(Algorithm::ring, 4, 3 * n);
    uneven.transfer(0, 0, 2, 0, n, OpKind::recv_copy);
    uneven.transfer(0, 1, 3, n, 2 * n, OpKind::recv_copy);
    Prediction pu = run(t, uneven.finish(), 8, exact(o));
    expect_near(pu.rank_time[0], 2 * 8.0 * n / w, 1e-9, "short flow at half speed");
    expect_near(pu.rank_time[1], 3 * 8.0 * n / w, 1e-9, "long flow speeds up");
    expect_near(pu.time, alpha + 3 * 8.0 * n / w, 1e-9, "uneven sharing");
}

static void test_max_min_in_simulation(void** state) {
    (void)state;
    // Host X (ranks 0, 1, uplink 0.6 GB/s), host Y (rank 2, 1.5 GB/s), host
    // Z (rank 3, fast).  0->2 and 1->2 are held to 0.3 GB/s by X's uplink;
    // 3->2 gets the rest of Y's downlink, 0.9 GB/s.
    TopologyBuilder b;
    int x = b.add(b.root(), Level::node, "x", {0.6e9, 0});
    int y = b.add(b.root(), Level::node, "y", {1.5e9, 0});
    int z = b.add(b.root(), Level::node, "z", {kFast, 0});
    b.add_rank(x, 0, {kFast, 0});
    b.add_rank(x, 1, {kFast, 0});
    b.add_rank(y, 2, {kFast, 0});
    b.add_rank(z, 3, {kFast, 0});
    Topology t;
    assert_true(b.build(&t).is_ok());
    const std::size_t n = 900000;  // bytes (elements of 1 byte)
    PlanBuilder pb(Algorithm::ring, 4, 3 * n);
    pb.transfer(0, 0, 2, 0, n, OpKind::recv_copy);
    pb.transfer(0, 1, 2, n, n, OpKind::recv_copy);
    pb.transfer(0, 3, 2, 2 * n, n, OpKind::recv_copy);
    Prediction p = run(t, pb.finish(), 1, exact(0));
    expect_near(p.rank_time[3], n / 0.9e9, 1e-9, "0.9 GB/s flow");
    // After it ends, Y's downlink has room but X's uplink still holds the
    // other two at 0.3 GB/s each.
    expect_near(p.rank_time[0], n / 0.3e9, 1e-9, "0.3 GB/s flow");
    expect_near(p.time, n / 0.3e9, 1e-9, "round");
}

// ------------------------------------------------------------ closed forms

static void test_flat_ring_star_closed_form(void** state) {
    (void)state;
    // P hosts of one rank on one switch, every host link w: the flat ring's
    // 2(P-1) steps each move n/P bytes, T = 2(P-1)(alpha + n/(P w)).
    const double w = 12.5e9, lat = 1e-6, rlat = 0.3e-6, o = 1e-6;
    const double alpha = 2 * lat + 2 * rlat + o;
    for (int p : {2, 3, 4, 7, 8, 16, 64}) {
        Topology t = hosts(std::vector<int>(static_cast<std::size_t>(p), 1), {w, lat}, {kFast, rlat});
        for (std::size_t per : {std::size_t(1), std::size_t(1024), std::size_t(1) << 17}) {
            std::size_t count = per * static_cast<std::size_t>(p);
            Plan plan;
            assert_true(make_plan(Algorithm::ring, t, count, -1, PlanOptions{}, &plan).is_ok());
            double n = 8.0 * count;
            double want = 2 * (p - 1) * (alpha + n / (p * w));
            Prediction pr = run(t, plan, 8, exact(o));
            expect_near(pr.time, want, 0.01, "flat ring on a star");
            // Reduction cost: the reduce-scatter half reduces every step.
            CostParams g = exact(o);
            g.gamma = 1e-10;
            expect_near(run(t, plan, 8, g).time, want + (p - 1) * g.gamma * n / p, 0.01, "flat ring + gamma");
        }
    }
}

static void test_flat_ring_on_hosts_is_bandwidth_bound(void** state) {
    (void)state;
    // 4 hosts x 4 ranks, slow host links: the ring crosses each host uplink
    // with one hop per step, so for large n T -> 2(P-1)/P * n / w_node.
    const double w = 1e9;
    Topology t = machine(1, 4, 4, {}, {w, 2e-6}, {10e9, 0.3e-6});
    const int p = 16;
    std::size_t count = std::size_t(1) << 22;  // 32 MiB of doubles
    Plan plan;
    assert_true(make_plan(Algorithm::ring, t, count, -1, PlanOptions{}, &plan).is_ok());
    double n = 8.0 * count;
    Prediction pr = run(t, plan, 8, exact());
    double bound = 2.0 * (p - 1) / p * n / w;
    assert_true(pr.time >= bound);
    expect_near(pr.time, bound, 0.02, "ring over host uplinks");
    // Per-link bytes: each host uplink carries 2(P-1)/P n each way.
    for (int v : t.nodes_at(Level::node)) {
        expect_near(pr.link_bytes_up[static_cast<std::size_t>(v)], 2.0 * (p - 1) / p * n, 1e-9, "uplink bytes");
        expect_near(pr.link_bytes_down[static_cast<std::size_t>(v)], 2.0 * (p - 1) / p * n, 1e-9, "downlink bytes");
    }
    assert_int_equal(static_cast<int>(t.node(pr.busiest_vertex).level), static_cast<int>(Level::node));
    expect_near(pr.busiest_seconds, 2.0 * (p - 1) / p * n / w, 1e-9, "busiest link time");
    assert_true(link_name(t, pr.busiest_vertex, pr.busiest_up).rfind("node n", 0) == 0);
}

static void test_recursive_doubling_latency(void** state) {
    (void)state;
    // One element: log2(P) exchange rounds of alpha each; P not a power of
    // two adds the fold and unfold rounds.
    const double lat = 1e-6, o = 1e-6, alpha = 2 * lat + o;
    for (int p : {2, 4, 8, 16, 32, 64, 6, 12}) {
        Topology t = hosts(std::vector<int>(static_cast<std::size_t>(p), 1), {12.5e9, lat}, {kFast, 0});
        // The butterfly itself (the engine's recursive_doubling switches to
        // a node-aware leader tree when there are several hosts).
        Plan plan = plan_recursive_doubling(p, 1, -1);
        int pof2 = 1, lg = 0;
        while (pof2 * 2 <= p) pof2 *= 2, ++lg;
        const double step = alpha + 8 / 12.5e9;
        if (pof2 == p) {
            expect_near(run(t, plan, 8, exact(o)).time, lg * step, 1e-9, "RD latency");
            continue;
        }
        // Fold, lg exchanges, unfold in lock step when every message waits
        // for its receive (rendezvous)...
        CostParams rdv = exact(o);
        rdv.eager_bytes = 0;
        expect_near(run(t, plan, 8, rdv).time, (lg + 2) * step, 1e-9, "RD latency, rendezvous");
        // ...but eager sends let the ranks outside the fold run ahead: the
        // first exchange among them overlaps the fold, one step less.
        expect_near(run(t, plan, 8, exact(o)).time, (lg + 1) * step, 1e-3, "RD latency, eager");
    }
}

// Hierarchical ring (Section IV-C) = BlueConnect Eq. 3 on even machines.
static void test_hring_closed_form(void** state) {
    (void)state;
    const double w1 = 10e9, l1 = 0.3e-6, w2 = 1e9, l2 = 2e-6, w3 = 2e9, l3 = 3e-6, o = 1e-6;
    const double a1 = 2 * l1 + o, a2 = a1 + 2 * l2, a3 = a2 + 2 * l3;
    struct Case {
        int racks, nodes, ranks;
    } cases[] = {{1, 4, 4}, {1, 2, 8}, {1, 8, 2}, {2, 2, 4}, {4, 2, 2}};
    for (const Case& c : cases) {
        Topology t = machine(c.racks, c.nodes, c.ranks, {w3, l3}, {w2, l2}, {w1, l1});
        const int p = c.racks * c.nodes * c.ranks;
        std::size_t count = static_cast<std::size_t>(p) * 4096;
        Plan plan;
        Status s = plan_hring(t, count, -1, PlanOptions{}, &plan);
        if (!s) fail_msg("%s", s.message().c_str());
        std::vector<int> delta = {c.ranks, c.nodes};
        std::vector<double> omega = {w1, w2}, alpha = {a1, a2};
        if (c.racks > 1) {
            delta.push_back(c.racks);
            omega.push_back(w3);
            alpha.push_back(a3);
        }
        double want = blueconnect(8.0 * count, delta, omega, alpha);
        expect_near(run(t, plan, 8, exact(o)).time, want, 0.01, "hring vs Eq. 3");
    }
}

// RAT trees, unpipelined, K balanced over N hosts of G ranks: reduce inside
// hosts, reduce across, broadcast across, broadcast inside:
// T = 2 (a1 + n(G-1)/(G w1)) + 2 (a2 + n(N-1)/(N w2)).
static void test_tree_closed_form(void** state) {
    (void)state;
    const double w1 = 10e9, l1 = 0.3e-6, w2 = 1e9, l2 = 2e-6, o = 1e-6;
    const double a1 = 2 * l1 + o, a2 = a1 + 2 * l2;
    for (int n_hosts : {2, 4}) {
        const int g = 4;
        Topology t = machine(1, n_hosts, g, {}, {w2, l2}, {w1, l1});
        std::size_t count = 16 * 4096;
        PlanOptions opt;
        opt.num_trees = 16;
        Plan plan;
        Status s = plan_tree(t, count, -1, opt, &plan);
        if (!s) fail_msg("%s", s.message().c_str());
        double n = 8.0 * count;
        double want = 2 * (a1 + n * (g - 1) / (g * w1)) + 2 * (a2 + n * (n_hosts - 1) / (n_hosts * w2));
        expect_near(run(t, plan, 8, exact(o)).time, want, 0.02, "RAT trees");
    }
}

// FlexReduce Eq. 6 on a symmetric machine equals Eq. 3 (its Eq. 8-11); with
// alpha = 0 only the bandwidth term is left, which any bandwidth-optimal
// schedule (rings or direct reduce/broadcast) must reach.  Skipped until the
// engine plans flexreduce.
static void test_flexreduce_closed_form(void** state) {
    (void)state;
    const double w1 = 10e9, w2 = 1e9, w3 = 2e9;
    struct Case {
        int racks, nodes, ranks;
    } cases[] = {{1, 4, 4}, {1, 2, 8}, {2, 2, 4}};
    for (const Case& c : cases) {
        Topology t = machine(c.racks, c.nodes, c.ranks, {w3, 0}, {w2, 0}, {w1, 0});
        const int p = c.racks * c.nodes * c.ranks;
        std::size_t count = static_cast<std::size_t>(p) * 4096;
        Plan plan;
        engine_plan(Algorithm::flexreduce, t, count, PlanOptions{}, &plan);
        std::vector<int> delta = {c.ranks, c.nodes};
        std::vector<double> omega = {w1, w2}, alpha = {0, 0};
        if (c.racks > 1) {
            delta.push_back(c.racks);
            omega.push_back(w3);
            alpha.push_back(0);
        }
        double want = blueconnect(8.0 * count, delta, omega, alpha);
        expect_near(run(t, plan, 8, exact(0)).time, want, 0.02, "flexreduce vs Eq. 6/3");
    }
}

// The paper's Fig. 2 machine: hosts of 2 and 3 learners, slow root links.
// A node-aware all-reduce moves n/2 over each host uplink per phase, so
// T -> n / w_a (Eq. 6 with fast intra-host links); the flat ring pushes
// 2(P-1)/P n = 1.6 n through them.  The model must tell them apart.
static void test_uneven_two_plus_three(void** state) {
    (void)state;
    const double wa = 1e9;
    Topology t = hosts({2, 3}, {wa, 0}, {100e9, 0});
    std::size_t count = 60 * 4096;
    double n = 8.0 * count;
    Plan ring;
    assert_true(make_plan(Algorithm::ring, t, count, -1, PlanOptions{}, &ring).is_ok());
    expect_near(run(t, ring, 8, exact(0)).time, 1.6 * n / wa, 0.02, "ring on 2+3");
    Plan hr;
    assert_true(plan_hring(t, count, -1, PlanOptions{}, &hr).is_ok());
    expect_near(run(t, hr, 8, exact(0)).time, n / wa, 0.03, "hring on 2+3");
    Plan tr;
    PlanOptions to;
    to.num_trees = 6;
    assert_true(plan_tree(t, count, -1, to, &tr).is_ok());
    expect_near(run(t, tr, 8, exact(0)).time, n / wa, 0.03, "tree on 2+3");
    Plan fr;
    engine_plan(Algorithm::flexreduce, t, count, PlanOptions{}, &fr);
    expect_near(run(t, fr, 8, exact(0)).time, n / wa, 0.03, "flexreduce on 2+3 (Eq. 6)");
}

// ------------------------------------------------------ executor details

static void test_segments_pipeline_the_reduction(void** state) {
    (void)state;
    const double w = 1e9, lat = 1e-6, o = 1e-6, alpha = 2 * lat + o;
    Topology t = hosts({1, 1}, {w, lat}, {kFast, 0});
    const std::size_t count = 1 << 20;  // 8 MiB of doubles
    const double n = 8.0 * count;
    PlanBuilder b(Algorithm::ring, 2, count);
    b.transfer(0, 0, 1, 0, count, OpKind::recv_reduce);
    Plan plan = b.finish();
    CostParams c = exact(o);
    c.gamma = 0.5 / w;  // reducing is twice as fast as the wire
    // Whole: transfer, then reduce everything.
    expect_near(run(t, plan, 8, c).time, alpha + n / w + c.gamma * n, 1e-9, "unsegmented");
    // 16 segments leave back to back; each is reduced while the next one
    // travels, so only the last segment's reduction shows.
    c.segment_bytes = static_cast<std::size_t>(n / 16);
    Prediction p = run(t, plan, 8, c);
    assert_int_equal(p.messages, 16);
    expect_near(p.time, alpha + n / w + c.gamma * n / 16, 1e-9, "segmented");
}

static void test_eager_and_rendezvous(void** state) {
    (void)state;
    // Rank 1 first receives from 2, then from 0.  Rank 0's send is posted at
    // once; eager, it shares rank 1's downlink with 2's message; rendezvous,
    // it waits for rank 1 to post the receive.
    const double w = 1e9, lat = 10e-6, o = 0;
    const double alpha = 2 * lat;
    Topology t = hosts({1, 1, 1}, {w, lat}, {kFast, 0});
    const std::size_t bytes = 1000;
    PlanBuilder b(Algorithm::ring, 3, 2 * bytes);
    b.transfer(0, 2, 1, 0, bytes, OpKind::recv_copy);
    b.transfer(1, 0, 1, bytes, bytes, OpKind::recv_copy);
    Plan plan = b.finish();
    CostParams c = exact(o);
    c.eager_bytes = bytes;
    expect_near(run(t, plan, 1, c).time, alpha + 2 * bytes / w, 1e-9, "eager");
    c.eager_bytes = bytes - 1;
    expect_near(run(t, plan, 1, c).time, 2 * alpha + 2 * bytes / w, 1e-9, "rendezvous");
}

static void test_reduction_waits_for_overlapping_send(void** state) {
    (void)state;
    // A two-rank exchange of the whole vector (recursive doubling): each
    // rank reduces into the range it sends, so its reduction waits for its
    // send, then adds gamma * n.
    const double w = 1e9, lat = 1e-6, o = 1e-6, alpha = 2 * lat + o;
    Topology t = hosts({1, 1}, {w, lat}, {kFast, 0});
    Plan plan = plan_recursive_doubling(2, 1000, -1);
    CostParams c = exact(o);
    c.gamma = 1e-9;
    Prediction p = run(t, plan, 8, c);
    expect_near(p.time, alpha + 8000 / w + c.gamma * 8000, 1e-9, "exchange + reduction");
    expect_near(p.max_bytes_reduced, 8000, 1e-12, "bytes reduced");
}

// ------------------------------------------------------------- dataflow

// Dataflow parameters without handshakes (every message eager) and without
// segmentation: where the closed forms still hold.
CostParams dataflow_eager(double overhead = 1e-6) {
    CostParams c;
    c.overhead = overhead;
    c.gamma = 0;
    c.segment_bytes = 0;
    c.eager_bytes = SIZE_MAX;
    return c;
}

// A chain of dependent steps does not change: the flat ring's step k+1
// forwards what step k reduced, so the dataflow executor runs it in lock
// step too and the ring's closed form holds.
static void test_dataflow_ring_is_the_closed_form(void** state) {
    (void)state;
    const double w = 12.5e9, lat = 1e-6, rlat = 0.3e-6, o = 1e-6;
    const double alpha = 2 * lat + 2 * rlat + o;
    for (int p : {2, 5, 16}) {
        Topology t = hosts(std::vector<int>(static_cast<std::size_t>(p), 1), {w, lat}, {kFast, rlat});
        std::size_t count = 4096 * static_cast<std::size_t>(p);
        Plan plan;
        assert_true(make_plan(Algorithm::ring, t, count, -1, PlanOptions{}, &plan).is_ok());
        double n = 8.0 * count;
        Prediction pr = run(t, plan, 8, dataflow_eager(o));
        expect_near(pr.time, 2 * (p - 1) * (alpha + n / (p * w)), 1e-6, "dataflow flat ring");
        assert_int_equal(pr.steps, 4 * (p - 1) * p);  // a send and a receive per rank and step
    }
}

// A rendezvous message pays its handshake: request to the receiver, answer
// back (two more path latencies); an answer that travels against data
// queues behind it (handshake_queue_delay).
static void test_dataflow_rendezvous_handshake(void** state) {
    (void)state;
    const double w = 1e9, lat = 2e-6, o = 1e-6, alpha = 2 * lat + o;
    Topology t = hosts({1, 1}, {w, lat}, {kFast, 0});
    PlanBuilder b(Algorithm::ring, 2, 1000);
    b.transfer(0, 0, 1, 0, 1000, OpKind::recv_copy);
    Plan plan = b.finish();
    CostParams c = dataflow_eager(o);
    expect_near(run(t, plan, 8, c).time, alpha + 8000 / w, 1e-9, "eager");
    c.eager_bytes = 7999;
    expect_near(run(t, plan, 8, c).time, 3 * alpha + 8000 / w, 1e-9, "rendezvous");
    c.handshake_queue_delay = 0.05;  // nothing flows towards rank 0: no queue
    expect_near(run(t, plan, 8, c).time, 3 * alpha + 8000 / w, 1e-9, "rendezvous, idle reverse path");

    // Rank 2 streams 1 MB to rank 0; rank 3's 8000 bytes reach rank 0
    // while the stream flows (sharing rank 0's downlink), and rank 0 then
    // forwards them to rank 1.  That handshake's answer travels towards
    // rank 0, behind the stream: it waits handshake_queue_delay more.
    Topology four = hosts({1, 1, 1, 1}, {w, lat}, {kFast, 0});
    PlanBuilder x(Algorithm::ring, 4, 1000 + 125000);
    x.transfer(0, 2, 0, 1000, 125000, OpKind::recv_copy);
    x.transfer(0, 3, 0, 0, 1000, OpKind::recv_copy);
    x.transfer(1, 0, 1, 0, 1000, OpKind::recv_copy);
    Plan fwd = x.finish();
    // 3 -> 0 after its handshake (2 alpha) at w/2 for 16 us, arrives at
    // 3 alpha + 16 us; 0 -> 1 handshake (2 alpha), 8 us, one alpha.
    const double forwarded = 6 * alpha + 16e-6 + 8e-6;
    c.eager_bytes = 7999;
    c.handshake_queue_delay = 0;
    expect_near(run(four, fwd, 8, c).rank_time[1], forwarded, 1e-9, "forwarded, ideal queues");
    c.handshake_queue_delay = 0.05;
    expect_near(run(four, fwd, 8, c).rank_time[1], forwarded + 0.05, 1e-9, "answer queued behind the stream");
}

// Messages on a rank's CPU (CostParams::message_cpu_share): one message,
// eager or rendezvous, costs what it cost with the whole overhead on the
// path; a rank that receives or sends k messages at once pays k shares.
static void test_dataflow_cpu_share(void** state) {
    (void)state;
    const double w = 1e12, lat = 2e-6, o = 1e-6, alpha = 2 * lat + o;
    Topology two = hosts({1, 1}, {w, lat}, {kFast, 0});
    PlanBuilder b(Algorithm::ring, 2, 1000);
    b.transfer(0, 0, 1, 0, 1000, OpKind::recv_copy);
    const Plan one = b.finish();
    for (double share : {0.0, 0.1, 0.25, 0.5}) {
        CostParams c = dataflow_eager(o);
        c.message_cpu_share = share;
        expect_near(run(two, one, 8, c).time, alpha + 8000 / w, 1e-9, "one eager message");
        c.eager_bytes = 7999;
        expect_near(run(two, one, 8, c).time, 3 * alpha + 8000 / w, 1e-9, "one rendezvous message");
    }
    // A star on one host of 8: ranks 1-7 send to rank 0 at once (round 0),
    // rank 0 sends to each of them (round 1).  Rank 0 handles the 7
    // receives one after another, then posts the 7 sends one after
    // another: the last rank gets its answer 12 shares after the two
    // messages' plain time.
    const double in = 0.3e-6;
    Topology host = hosts({8}, {w, lat}, {kFast, in});
    PlanBuilder x(Algorithm::tree, 8, 8);
    for (int r = 1; r < 8; ++r) x.transfer(0, r, 0, 0, 8, OpKind::recv_reduce);
    for (int r = 1; r < 8; ++r) x.transfer(1, 0, r, 0, 8, OpKind::recv_copy);
    const Plan star = x.finish();
    const double a = 2 * in + o;  // one message between two ranks of the host
    for (double share : {0.0, 0.25}) {
        CostParams c = dataflow_eager(o);
        c.message_cpu_share = share;
        const double cpu = share * o;
        // In: the first arrives after a, the others queue behind it on rank
        // 0's CPU (6 more shares); out: rank 0's 7th send leaves 6 shares
        // after its first.
        expect_near(run(host, star, 8, c).time, 2 * a + 12 * cpu, 1e-6, "star of 8");
    }
    // Recursive doubling on the same host: every rank handles one message
    // each way per round, so no share queues: 3 messages' time, with the
    // shares or without.
    PlanBuilder y(Algorithm::leader, 8, 8);
    for (int k = 0; k < 3; ++k)
        for (int r = 0; r < 8; ++r) y.transfer(k, r ^ (1 << k), r, 0, 8, OpKind::recv_reduce);
    const Plan rd = y.finish();
    CostParams c0 = dataflow_eager(o), c1 = dataflow_eager(o);
    c1.message_cpu_share = 0.25;
    expect_near(run(host, rd, 8, c0).time, 3 * a, 1e-6, "recursive doubling, no share");
    expect_near(run(host, rd, 8, c1).time, 3 * a, 1e-6, "recursive doubling, shares");
    // So the star, ahead with the whole overhead on the path, falls behind.
    assert_true(run(host, star, 8, c0).time < run(host, rd, 8, c0).time);
    assert_true(run(host, star, 8, c1).time > run(host, rd, 8, c1).time);
}

// Rounds overlap: rank 1 receives slowly from rank 0 in round 0 and sends
// independent ranges to rank 2 in rounds 0..5.  The sends of rounds 1-3
// (inside the executor's window of kWindowRounds) go at once; those of
// rounds 4 and 5 wait until round 0 is finished.  Round-synchronously every
// send waits for the slow receive.
static void test_dataflow_window(void** state) {
    (void)state;
    static_assert(kWindowRounds == 4, "the expectation below counts rounds of a window of 4");
    const double w0 = 1e8, w = 1e9, lat = 1e-6, o = 0, alpha = 2 * lat + o;
    TopologyBuilder tb;
    int h0 = tb.add(tb.root(), Level::node, "slow", {w0, lat});
    int h1 = tb.add(tb.root(), Level::node, "a", {w, lat});
    int h2 = tb.add(tb.root(), Level::node, "b", {w, lat});
    tb.add_rank(h0, 0, {kFast, 0});
    tb.add_rank(h1, 1, {kFast, 0});
    tb.add_rank(h2, 2, {kFast, 0});
    Topology t;
    assert_true(tb.build(&t).is_ok());
    const std::size_t n = 100000, m = 10000;  // bytes (1-byte elements)
    PlanBuilder b(Algorithm::ring, 3, n + 6 * m);
    b.transfer(0, 0, 1, 0, n, OpKind::recv_copy);
    for (int r = 0; r < 6; ++r) b.transfer(r, 1, 2, n + r * m, m, OpKind::recv_copy);
    Plan plan = b.finish();
    const double slow = alpha + n / w0;  // 1.002 ms
    // Dataflow: 4 sends (rounds 0-3) back to back, then rounds 4, 5 once
    // round 0 is done at `slow`.
    Prediction d = run(t, plan, 1, dataflow_eager(o));
    expect_near(d.rank_time[0], n / w0, 1e-9, "sender");
    expect_near(d.time, slow + 2 * m / w + alpha, 1e-9, "window of 4 rounds");
    // Round by round: round 0 ends at `slow`, then five more sends, each
    // waiting for the previous one to drain.
    CostParams r = exact(o);
    r.eager_bytes = SIZE_MAX;
    expect_near(run(t, plan, 1, r).time, slow + 5 * m / w + alpha, 1e-9, "round by round");
}

// A pipelined chain 0 -> 1 -> 2 (segment s leaves rank 0 in round s and
// rank 1 in round s+1): S + 1 segment times plus two latencies.
static void test_dataflow_pipelined_chain(void** state) {
    (void)state;
    const double w = 1e9, lat = 5e-6, o = 1e-6, alpha = 2 * lat + o;
    Topology t = hosts({1, 1, 1}, {w, lat}, {kFast, 0});
    const int segs = 32;
    const std::size_t seg = 4096;  // elements of 8 bytes: 32 KiB
    PlanBuilder b(Algorithm::ring, 3, segs * seg);
    for (int s = 0; s < segs; ++s) {
        b.transfer(s, 0, 1, s * seg, seg, OpKind::recv_copy);
        b.transfer(s + 1, 1, 2, s * seg, seg, OpKind::recv_copy);
    }
    Plan plan = b.finish();
    CostParams c;  // defaults: dataflow, 32 KiB segments, eager
    c.overhead = o;
    c.gamma = 0;
    const double tau = 8.0 * seg / w;
    expect_near(run(t, plan, 8, c).time, (segs + 1) * tau + 2 * alpha, 1e-9, "pipelined chain");
}

// Reductions queue on the rank's CPU in dataflow mode too: 16 eager
// segments of one operation, each reduced while the next travels.
static void test_dataflow_reduction_pipelines(void** state) {
    (void)state;
    const double w = 1e9, lat = 1e-6, o = 1e-6, alpha = 2 * lat + o;
    Topology t = hosts({1, 1}, {w, lat}, {kFast, 0});
    const std::size_t count = 1 << 16;  // 512 KiB of doubles
    const double n = 8.0 * count;
    PlanBuilder b(Algorithm::ring, 2, count);
    b.transfer(0, 0, 1, 0, count, OpKind::recv_reduce);
    Plan plan = b.finish();
    CostParams c;
    c.overhead = o;
    c.gamma = 0.5 / w;
    c.segment_bytes = static_cast<std::size_t>(n / 16);  // 32 KiB, eager
    Prediction p = run(t, plan, 8, c);
    assert_int_equal(p.messages, 16);
    expect_near(p.time, alpha + n / w + c.gamma * n / 16, 1e-9, "segmented reduction");
    expect_near(p.max_bytes_reduced, n, 1e-12, "bytes reduced");
}

// Above exact_flows flows in flight, shares are recomputed per quantum: with
// a quarter of the default threshold on 64 ranks (hundreds of flows), the
// prediction stays within 5 % of the exact model (docs/cost-model.md has
// 256 and 2,048 ranks with the default).
static void test_dataflow_quantized_sharing(void** state) {
    (void)state;
    Topology t = machine(2, 4, 8, {12.5e9 / 2, 2e-6}, {12.5e9, 2e-6}, {10e9, 0.3e-6});
    Checked checked;
    for (Algorithm a : {Algorithm::tree, Algorithm::flexreduce, Algorithm::ring}) {
        Plan plan;
        if (!checked.plan(a, t, (4u << 20) / 4, plan_options(EngineConfig{}, 4), &plan)) continue;
        CostParams exact_c;
        exact_c.exact_flows = SIZE_MAX;
        CostParams coarse;
        coarse.exact_flows = 32;
        Prediction e = run(t, plan, 4, exact_c), q = run(t, plan, 4, coarse);
        print_message("%s: exact %.4f ms, quantized %.4f ms (%+.2f %%), rate updates %zu -> %zu\n", algorithm_name(a),
                      e.time * 1e3, q.time * 1e3, 100 * (q.time / e.time - 1), e.rate_updates, q.rate_updates);
        expect_near(q.time, e.time, 0.05, algorithm_name(a));
        // Fewer updates where hundreds of flows are in flight (the tree's);
        // where few are, the quanta's periodic recomputations may add a
        // few (flexreduce's one pipeline per owner's part: +1.3 %).
        assert_true(static_cast<double>(q.rate_updates) <= 1.05 * static_cast<double>(e.rate_updates));
        if (a == Algorithm::tree) assert_true(2 * q.rate_updates < e.rate_updates);
    }
    checked.expect_at_least(3, "quantized sharing");
}

// ----------------------------------------------- emulated cluster runs

// The emulated clusters of tests/cluster (Linux tbf at the node/rack rate,
// 100 ms queues, Open MPI ob1 over TCP, 32 KiB segments, MPI_FLOAT):
// payload is 94 % of the shaped rate (TCP/IP/Ethernet headers), shared
// memory inside a host is fast, handshakes wait behind the queue.
CostParams emulated() {
    CostParams c;
    c.wire_efficiency = 0.94;
    c.handshake_queue_delay = 0.1;
    return c;
}


double predict_engine(const Topology& t, Algorithm a, std::size_t bytes) {
    Plan plan;
    Status s = make_plan(a, t, bytes / 4, -1, plan_options(EngineConfig{}, 4), &plan);
    if (!s) fail_msg("%s: %s", algorithm_name(a), s.message().c_str());
    return run(t, plan, 4, emulated()).time;
}

// Medians measured on the emulated clusters (8 MiB, docs/cost-model.md,
// "Validation"): the model must be within 25 %, and must rank the flat ring
// behind the node-aware algorithms.
static void test_predicts_emulated_clusters(void** state) {
    (void)state;
    struct Case {
        const char* name;
        Topology topo;
        double tree, flex, hring, ring;
    } cases[] = {
        {"2+3 ranks, 200 Mbit/s", cluster_2_3(), 0.353, 0.358, 0.373, 0.54},
        {"racks 1+2 | 2+3, 1 Gbit/s hosts, 200 Mbit/s racks", cluster_two_racks(), 0.361, 0.362, 0.397, 0.59},
    };
    const std::size_t bytes = 8u << 20;
    for (const Case& c : cases) {
        double tree = predict_engine(c.topo, Algorithm::tree, bytes);
        double flex = predict_engine(c.topo, Algorithm::flexreduce, bytes);
        double hring = predict_engine(c.topo, Algorithm::hring, bytes);
        double ring = predict_engine(c.topo, Algorithm::ring, bytes);
        print_message("%s: tree %.3f (measured %.3f) flexreduce %.3f (%.3f) hring %.3f (%.3f) ring %.3f (%.3f)\n",
                      c.name, tree, c.tree, flex, c.flex, hring, c.hring, ring, c.ring);
        expect_near(tree, c.tree, 0.25, "tree vs measured");
        expect_near(flex, c.flex, 0.25, "flexreduce vs measured");
        expect_near(hring, c.hring, 0.25, "hring vs measured");
        expect_near(ring, c.ring, 0.25, "ring vs measured");
        assert_true(ring > 1.2 * tree);
        assert_true(ring > 1.2 * flex);
        assert_true(ring > 1.2 * hring);
    }
}

// ---------------------------------------------------------- interface

static void test_rejects_bad_input(void** state) {
    (void)state;
    Topology t = hosts({2, 2}, {1e9, 1e-6}, {1e10, 0});
    Plan mine = plan_ring(4, 100, 1);
    Prediction p;
    assert_int_equal(static_cast<int>(predict(t, mine, 8, CostParams{}, &p).code()),
                     static_cast<int>(Code::invalid_argument));
    Plan five = plan_ring(5, 100, -1);
    assert_int_equal(static_cast<int>(predict(t, five, 8, CostParams{}, &p).code()),
                     static_cast<int>(Code::invalid_argument));
    Plan ok = plan_ring(4, 100, -1);
    assert_int_equal(static_cast<int>(predict(t, ok, 0, CostParams{}, &p).code()),
                     static_cast<int>(Code::invalid_argument));
    // A receive nobody sends: the plan cannot complete.
    Plan broken = plan_ring(4, 100, -1);
    Op extra{OpKind::recv_copy, Operand::incoming_first, 0, 0, 10};
    broken.ranks[3].rounds.back().ops.push_back(extra);
    Status s = predict(t, broken, 8, CostParams{}, &p);
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::internal_error));
    assert_non_null(std::strstr(s.message().c_str(), "rank 3"));
}

static void test_bus_bandwidth_and_determinism(void** state) {
    (void)state;
    // NCCL's definition: 2(P-1)/P * M / t.
    assert_true(std::fabs(bus_bandwidth(8, 1e9, 1.0) - 1.75e9) < 1);
    assert_true(bus_bandwidth(1, 1e9, 1.0) == 0);
    // Same input, same prediction, bit for bit (uneven racks, all planners).
    Topology t = machine(3, 3, 3, {5e9, 2e-6}, {2e9, 1e-6}, {10e9, 0.3e-6});
    for (Algorithm a : {Algorithm::ring, Algorithm::leader}) {
        Plan plan;
        assert_true(make_plan(a, t, 100003, -1, PlanOptions{}, &plan).is_ok());
        Prediction x = run(t, plan, 4, CostParams{}), y = run(t, plan, 4, CostParams{});
        assert_true(x.time == y.time && x.rank_time == y.rank_time && x.link_bytes_up == y.link_bytes_up);
        assert_true(x.time > 0);
    }
}

// A mid-size machine with every planner: finishes, and nothing beats the
// bound set by the busiest link.
static void test_all_planners_respect_link_bound(void** state) {
    (void)state;
    Topology t = machine(4, 4, 4, {4e9, 2e-6}, {1.25e9, 1e-6}, {10e9, 0.3e-6});
    std::size_t count = 1 << 20;
    PlanOptions o;
    o.pipeline_elems = 65536;
    Checked checked;
    for (int a = 1; a < kNumAlgorithms; ++a) {
        Plan plan;
        if (!checked.plan(static_cast<Algorithm>(a), t, count, o, &plan)) continue;
        CostParams c;
        c.segment_bytes = 65536 * 4;
        Prediction p = run(t, plan, 4, c);
        if (!(p.time >= p.busiest_seconds)) fail_msg("%s: %g < %g", algorithm_name(plan.algorithm), p.time, p.busiest_seconds);
    }
    // Every host algorithm, and every algorithm planned or named as skipped.
    checked.expect_at_least(host_algorithms().size(), "link bound");
    assert_int_equal(checked.ran.size() + checked.skipped.size(), kNumAlgorithms - 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_min_rates),
        cmocka_unit_test(test_one_message_is_alpha_plus_n_over_w),
        cmocka_unit_test(test_link_sharing),
        cmocka_unit_test(test_max_min_in_simulation),
        cmocka_unit_test(test_flat_ring_star_closed_form),
        cmocka_unit_test(test_flat_ring_on_hosts_is_bandwidth_bound),
        cmocka_unit_test(test_recursive_doubling_latency),
        cmocka_unit_test(test_hring_closed_form),
        cmocka_unit_test(test_tree_closed_form),
        cmocka_unit_test(test_flexreduce_closed_form),
        cmocka_unit_test(test_uneven_two_plus_three),
        cmocka_unit_test(test_segments_pipeline_the_reduction),
        cmocka_unit_test(test_eager_and_rendezvous),
        cmocka_unit_test(test_reduction_waits_for_overlapping_send),
        cmocka_unit_test(test_dataflow_ring_is_the_closed_form),
        cmocka_unit_test(test_dataflow_rendezvous_handshake),
        cmocka_unit_test(test_dataflow_cpu_share),
        cmocka_unit_test(test_dataflow_window),
        cmocka_unit_test(test_dataflow_pipelined_chain),
        cmocka_unit_test(test_dataflow_reduction_pipelines),
        cmocka_unit_test(test_dataflow_quantized_sharing),
        cmocka_unit_test(test_predicts_emulated_clusters),
        cmocka_unit_test(test_rejects_bad_input),
        cmocka_unit_test(test_bus_bandwidth_and_determinism),
        cmocka_unit_test(test_all_planners_respect_link_bound),
    };
    return cmocka_run_group_tests_name("cost_model", tests, NULL, NULL);
}
