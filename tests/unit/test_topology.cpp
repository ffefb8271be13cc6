// Unit tests of the topology model: builder and normal form, queries, the
// text format (parsing, errors with line numbers, round trip), units,
// discovery from rank reports (rack file, Slurm, sockets, topology file),
// describe() and the hwloc probe.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
}

#include "core/units.hpp"
#include "topology/discovery.hpp"
#include "topology/hwloc_probe.hpp"
#include "topology/topology.hpp"

using namespace topoar;

namespace {

// cmocka 1.1.5 has no double assertion; these values must be exact.
#define assert_double_exact(a, b) assert_true((a) == (b))
// Sums of latencies, where the order of additions may differ.
#define assert_double_near(a, b) assert_true(std::fabs((a) - (b)) <= 1e-12 * std::fabs(b))

void expect_ok(const Status& s) {
    if (!s) print_error("unexpected error: %s\n", s.message().c_str());
    assert_true(s.is_ok());
}

Topology parse(const std::string& text) {
    Topology t;
    expect_ok(Topology::from_text(text, "t.topo", &t));
    return t;
}

// The message must start with "t.topo:LINE: " and mention `what`.
void expect_parse_error(const std::string& text, int line, const char* what) {
    Topology t;
    Status s = Topology::from_text(text, "t.topo", &t);
    assert_false(s.is_ok());
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::invalid_argument));
    std::string prefix = "t.topo:" + std::to_string(line) + ": ";
    if (s.message().compare(0, prefix.size(), prefix) != 0 || s.message().find(what) == std::string::npos)
        print_error("for input:\n%s\nexpected '%s...%s', got '%s'\n", text.c_str(), prefix.c_str(), what,
                    s.message().c_str());
    assert_true(s.message().compare(0, prefix.size(), prefix) == 0);
    assert_true(s.message().find(what) != std::string::npos);
}

void expect_error_containing(const Status& s, const char* what) {
    assert_false(s.is_ok());
    if (s.message().find(what) == std::string::npos) print_error("expected '%s' in '%s'\n", what, s.message().c_str());
    assert_true(s.message().find(what) != std::string::npos);
}

std::string write_temp(const std::string& content) {
    char name[] = "/tmp/topoar_test_XXXXXX";
    int fd = mkstemp(name);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    close(fd);
    return name;
}

std::vector<int> ints(std::initializer_list<int> l) { return std::vector<int>(l); }

const Link kNode{25e6, 50e-6};  // 200 Mbit/s, 50 us
const Link kRank{10e9, 0.3e-6};
const Link kRack{125e6, 100e-6};

// ------------------------------------------------------------------ units

void test_units_bandwidth(void**) {
    double v = 0;
    expect_ok(parse_bandwidth("200Mbit", &v));
    assert_double_exact(v, 25e6);
    expect_ok(parse_bandwidth("200mbit", &v));  // tc's spelling
    assert_double_exact(v, 25e6);
    expect_ok(parse_bandwidth("1Gbit/s", &v));
    assert_double_exact(v, 125e6);
    expect_ok(parse_bandwidth("8bit", &v));
    assert_double_exact(v, 1.0);
    expect_ok(parse_bandwidth("3kbit", &v));
    assert_double_exact(v, 375.0);
    expect_ok(parse_bandwidth("1Tbit", &v));
    assert_double_exact(v, 125e9);
    expect_ok(parse_bandwidth("1.5GB/s", &v));
    assert_double_exact(v, 1.5e9);
    expect_ok(parse_bandwidth("100MB/s", &v));
    assert_double_exact(v, 1e8);
    expect_ok(parse_bandwidth("7B/s", &v));
    assert_double_exact(v, 7.0);
    expect_ok(parse_bandwidth("2KB/s", &v));
    assert_double_exact(v, 2000.0);
    expect_ok(parse_bandwidth("2KiB/s", &v));
    assert_double_exact(v, 2048.0);
    expect_ok(parse_bandwidth("1GiB/s", &v));
    assert_double_exact(v, 1073741824.0);
    expect_ok(parse_bandwidth("2e3Mbit", &v));
    assert_double_exact(v, 250e6);
    expect_ok(parse_bandwidth("0.1Gbit", &v));
    assert_double_exact(v, 0.1e9 / 8);

    expect_error_containing(parse_bandwidth("200", &v), "missing unit");
    expect_error_containing(parse_bandwidth("200Mb", &v), "unknown unit 'Mb'");
    expect_error_containing(parse_bandwidth("5b/s", &v), "unknown unit");
    expect_error_containing(parse_bandwidth("0Gbit", &v), "positive");
    expect_error_containing(parse_bandwidth("-5Mbit", &v), "expected a number");
    expect_error_containing(parse_bandwidth("fast", &v), "expected a number");
    expect_error_containing(parse_bandwidth("", &v), "expected a number");
    expect_error_containing(parse_bandwidth("1e999GB/s", &v), "out of range");
    // A normal number that the bit unit (x 1/8) makes subnormal: out of range
    // like a subnormal number itself (what format_bandwidth wrote for it,
    // "3.7500000000000009e-309B/s", did not read back).
    expect_error_containing(parse_bandwidth("3e-308bit", &v), "out of range");
    expect_error_containing(parse_bandwidth("4e-320Tbit", &v), "out of range");
    expect_error_containing(parse_bandwidth("1e-310B/s", &v), "out of range");
    expect_ok(parse_bandwidth("2.3e-307bit", &v));
}

void test_units_latency(void**) {
    double v = 0;
    expect_ok(parse_latency("50us", &v));
    assert_double_exact(v, 50e-6);
    expect_ok(parse_latency("0.3us", &v));
    assert_double_exact(v, 0.3e-6);  // one rounding, not 0.3 * 1e-6
    expect_ok(parse_latency("100ns", &v));
    assert_double_exact(v, 100e-9);
    expect_ok(parse_latency("1.5ms", &v));
    assert_double_exact(v, 1.5e-3);
    expect_ok(parse_latency("2s", &v));
    assert_double_exact(v, 2.0);
    expect_ok(parse_latency("0us", &v));
    assert_double_exact(v, 0.0);

    expect_error_containing(parse_latency("5", &v), "missing unit");
    expect_error_containing(parse_latency("5Us", &v), "unknown unit");
    expect_error_containing(parse_latency("5min", &v), "unknown unit");
    expect_error_containing(parse_latency("us", &v), "expected a number");
}

void test_units_format(void**) {
    assert_string_equal(format_bandwidth(25e6, true).c_str(), "200Mbit");
    assert_string_equal(format_bandwidth(25e6, false).c_str(), "25MB/s");
    assert_string_equal(format_bandwidth(125e6, true).c_str(), "1Gbit");
    assert_string_equal(format_bandwidth(12.5e9, true).c_str(), "100Gbit");
    assert_string_equal(format_bandwidth(20e9, false).c_str(), "20GB/s");
    assert_string_equal(format_bandwidth(1.0, true).c_str(), "8bit");
    assert_string_equal(format_bandwidth(0.1, false).c_str(), "0.1B/s");
    assert_string_equal(format_latency(50e-6).c_str(), "50us");
    assert_string_equal(format_latency(0.3e-6).c_str(), "300ns");
    assert_string_equal(format_latency(0).c_str(), "0s");
    assert_string_equal(format_latency(2.5e-3).c_str(), "2.5ms");
    // Any value comes back exactly.
    const double bws[] = {25e6, 12.5e9, 1.0, 123456789.123, 1.0 / 3.0, 3e14, 0.1e9 / 8, 1e-30, 1e300};
    for (double b : bws) {
        double back = 0;
        expect_ok(parse_bandwidth(format_bandwidth(b, true), &back));
        assert_double_exact(back, b);
        expect_ok(parse_bandwidth(format_bandwidth(b, false), &back));
        assert_double_exact(back, b);
    }
    const double lats[] = {0.0, 50e-6, 1.0 / 3.0, 1e-9, 0.3e-6 + 0.5e-6, 7.25, 1e-12};
    for (double l : lats) {
        double back = -1;
        expect_ok(parse_latency(format_latency(l), &back));
        assert_double_exact(back, l);
    }
    assert_string_equal(human_bandwidth(25e6, true).c_str(), "200 Mbit/s");
    assert_string_equal(human_bandwidth(12.5e9, true).c_str(), "100 Gbit/s");
    assert_string_equal(human_bandwidth(12.5e9, false).c_str(), "12.5 GB/s");
    assert_string_equal(human_latency(100e-6).c_str(), "100 us");
    assert_string_equal(human_latency(0.3e-6).c_str(), "300 ns");
}

// ------------------------------------------------------- builder and model

// Two hosts, 2 + 3 ranks: the shape of the emulated test cluster.
void test_two_plus_three(void**) {
    TopologyBuilder b;
    int a = b.add(b.root(), Level::node, "a", kNode);
    int h = b.add(b.root(), Level::node, "b", kNode);
    b.add_rank(h, 4, kRank);
    b.add_rank(a, 1, kRank);
    b.add_rank(h, 2, kRank);
    b.add_rank(a, 0, kRank);
    b.add_rank(h, 3, kRank);
    Topology t;
    expect_ok(b.build(&t));

    assert_int_equal(t.num_ranks(), 5);
    assert_int_equal(t.num_nodes(), 8);
    assert_int_equal(t.depth(), 2);
    const TopoNode& root = t.node(t.root());
    assert_int_equal(t.root(), 0);
    assert_true(root.level == Level::root);
    assert_int_equal(root.children.size(), 2);
    const TopoNode& na = t.node(root.children[0]);
    const TopoNode& nb = t.node(root.children[1]);
    assert_string_equal(na.name.c_str(), "a");
    assert_string_equal(nb.name.c_str(), "b");
    assert_true(t.ranks_under(na.id) == ints({0, 1}));
    assert_true(t.ranks_under(nb.id) == ints({2, 3, 4}));
    assert_true(t.ranks_under(t.root()) == ints({0, 1, 2, 3, 4}));
    assert_int_equal(t.num_ranks_under(nb.id), 3);
    assert_int_equal(t.lowest_rank_under(nb.id), 2);
    // Leaves of a host ordered by rank, ids in preorder.
    assert_int_equal(t.node(nb.children[0]).rank, 2);
    assert_int_equal(t.node(nb.children[2]).rank, 4);
    for (int id = 0; id < t.num_nodes(); ++id) assert_int_equal(t.node(id).id, id);
    assert_true(na.id < nb.id);

    for (int r = 0; r < 5; ++r) {
        int leaf = t.leaf_of_rank(r);
        assert_int_equal(t.node(leaf).rank, r);
        assert_true(t.node(leaf).is_leaf());
        assert_int_equal(t.node_of_rank(r), r < 2 ? na.id : nb.id);
        assert_true(t.node(leaf).up == kRank);
    }
    std::vector<int> path = t.path_to_root(3);
    assert_int_equal(path.size(), 3);
    assert_int_equal(path[0], t.leaf_of_rank(3));
    assert_int_equal(path[1], nb.id);
    assert_int_equal(path[2], t.root());
    assert_true(nb.up == kNode);
    assert_true((root.up == Link{}));

    // Across hosts: rank, node, node, rank edges.
    Link across = t.path_link(0, 3);
    assert_double_exact(across.bandwidth, 25e6);
    assert_double_near(across.latency, kRank.latency + kNode.latency + kNode.latency + kRank.latency);
    Link within = t.path_link(2, 4);
    assert_double_exact(within.bandwidth, 10e9);
    assert_double_exact(within.latency, 2 * kRank.latency);
    assert_true(t.path_link(1, 1).bandwidth == std::numeric_limits<double>::infinity());
}

// Children are ordered by their lowest rank, not by insertion or name.
void test_child_order_and_queries(void**) {
    TopologyBuilder b;
    int z = b.add(b.root(), Level::node, "z", kNode);  // ranks 1 2
    int y = b.add(b.root(), Level::node, "y", kNode);  // ranks 0 3
    b.add_rank(z, 2, kRank);
    b.add_rank(y, 3, kRank);
    b.add_rank(z, 1, kRank);
    b.add_rank(y, 0, kRank);
    Topology t;
    expect_ok(b.build(&t));
    const TopoNode& root = t.node(t.root());
    assert_string_equal(t.node(root.children[0]).name.c_str(), "y");
    assert_string_equal(t.node(root.children[1]).name.c_str(), "z");
    assert_true(t.ranks_under(root.children[0]) == ints({0, 3}));
    assert_true(t.ranks_in_tree_order(t.root()) == ints({0, 3, 1, 2}));
    assert_int_equal(t.find(Level::node, "z"), root.children[1]);
    assert_int_equal(t.find(Level::node, "nope"), -1);
    assert_int_equal(t.find(Level::rack, "y"), -1);
    assert_true(t.siblings(root.children[0]) == ints({root.children[1]}));
    assert_true(t.siblings(t.root()).empty());
    assert_int_equal(t.lca(t.leaf_of_rank(0), t.leaf_of_rank(3)), root.children[0]);
    assert_int_equal(t.lca(t.leaf_of_rank(0), t.leaf_of_rank(1)), t.root());
    assert_int_equal(t.depth_of(t.leaf_of_rank(2)), 2);
    assert_true(t.nodes_at(Level::node) == ints({root.children[0], root.children[1]}));
    assert_int_equal(t.ancestor_at(t.leaf_of_rank(2), Level::root), t.root());
    assert_int_equal(t.ancestor_at(t.leaf_of_rank(2), Level::rack), -1);
}

// 1 + 2 + 3: a one-rank host stays a host.
void test_one_two_three(void**) {
    Topology t;
    expect_ok(Topology::from_node_sizes({1, 2, 3}, kNode, kRank, &t));
    assert_int_equal(t.num_ranks(), 6);
    assert_int_equal(t.depth(), 2);
    const TopoNode& root = t.node(t.root());
    assert_int_equal(root.children.size(), 3);
    int n0 = root.children[0];
    assert_true(t.node(n0).level == Level::node);
    assert_string_equal(t.node(n0).name.c_str(), "n0");
    assert_int_equal(t.node(n0).children.size(), 1);
    assert_int_equal(t.node_of_rank(0), n0);
    assert_true(t.node(n0).up == kNode);
    assert_true(t.node(t.leaf_of_rank(0)).up == kRank);
    assert_true(t.ranks_under(root.children[2]) == ints({3, 4, 5}));
    assert_true(t.siblings(n0) == ints({root.children[1], root.children[2]}));
}

// Racks of uneven size; a rack with a single host collapses into the host.
void test_uneven_racks_and_single_node_rack(void**) {
    TopologyBuilder b;
    int r0 = b.add(b.root(), Level::rack, "r0", kRack);
    int r1 = b.add(b.root(), Level::rack, "r1", Link{1e9, 5e-6});
    int a = b.add(r0, Level::node, "a", kNode);
    int bb = b.add(r0, Level::node, "b", Link{50e6, 20e-6});
    int c = b.add(r1, Level::node, "c", Link{2e9, 30e-6});
    b.add_rank(a, 0, kRank);
    b.add_rank(a, 1, kRank);
    b.add_rank(bb, 2, kRank);
    for (int r = 3; r < 6; ++r) b.add_rank(c, r, kRank);
    Topology t;
    expect_ok(b.build(&t));

    const TopoNode& root = t.node(t.root());
    assert_int_equal(root.children.size(), 2);
    const TopoNode& rack0 = t.node(root.children[0]);
    const TopoNode& hc = t.node(root.children[1]);
    assert_true(rack0.level == Level::rack);
    assert_int_equal(rack0.children.size(), 2);
    assert_true(t.ranks_under(rack0.id) == ints({0, 1, 2}));
    // r1 is gone: host c hangs off the root through both edges in series.
    assert_true(hc.level == Level::node);
    assert_string_equal(hc.name.c_str(), "c");
    assert_double_exact(hc.up.bandwidth, 1e9);
    assert_double_exact(hc.up.latency, 5e-6 + 30e-6);
    assert_int_equal(t.find(Level::rack, "r1"), -1);
    assert_int_equal(t.ancestor_at(t.leaf_of_rank(4), Level::rack), -1);
    assert_int_equal(t.ancestor_at(t.leaf_of_rank(2), Level::rack), rack0.id);
    assert_int_equal(t.depth(), 3);
    assert_int_equal(t.nodes_at(Level::node).size(), 3);
    assert_int_equal(t.nodes_at(Level::rack).size(), 1);

    // 2 -> 4 crosses rank, node b, rack r0, (root), node c, rank.
    Link l = t.path_link(2, 4);
    assert_double_exact(l.bandwidth, 50e6);
    assert_double_near(l.latency, kRank.latency + 20e-6 + kRack.latency + (5e-6 + 30e-6) + kRank.latency);
}

// A single-host job: the root is the host itself.
void test_single_node_collapses_to_node_root(void**) {
    TopologyBuilder b;
    int r = b.add(b.root(), Level::rack, "r0", kRack);
    int n = b.add(r, Level::node, "only", kNode);
    for (int k = 0; k < 3; ++k) b.add_rank(n, k, kRank);
    Topology t;
    expect_ok(b.build(&t));
    const TopoNode& root = t.node(t.root());
    assert_true(root.level == Level::node);
    assert_string_equal(root.name.c_str(), "only");
    assert_true((root.up == Link{}));
    assert_int_equal(root.parent, -1);
    assert_int_equal(t.num_nodes(), 4);
    assert_int_equal(t.depth(), 1);
    assert_int_equal(t.node_of_rank(2), t.root());

    // One rank on one host: the host and its leaf survive.
    Topology one;
    expect_ok(Topology::from_node_sizes({1}, kNode, kRank, &one));
    assert_int_equal(one.num_nodes(), 2);
    assert_true(one.node(one.root()).level == Level::node);
    assert_int_equal(one.depth(), 1);
    assert_int_equal(one.node_of_rank(0), one.root());
}

// Sockets: one socket on a host disappears into the host; a socket with one
// rank disappears too, its rank inheriting both edges.
void test_socket_collapse(void**) {
    const Link sock{20e9, 0.5e-6};
    TopologyBuilder b;
    int a = b.add(b.root(), Level::node, "a", kNode);
    int s0 = b.add(a, Level::socket, "0", sock);
    b.add_rank(s0, 0, kRank);
    b.add_rank(s0, 1, kRank);
    int h = b.add(b.root(), Level::node, "b", kNode);
    int t0 = b.add(h, Level::socket, "0", sock);
    int t1 = b.add(h, Level::socket, "1", sock);
    b.add_rank(t0, 2, kRank);
    b.add_rank(t0, 3, kRank);
    b.add_rank(t1, 4, kRank);
    Topology t;
    expect_ok(b.build(&t));
    int na = t.node_of_rank(0);
    assert_int_equal(t.node(na).children.size(), 2);
    assert_true(t.node(t.node(na).children[0]).is_leaf());
    Link merged = t.node(t.leaf_of_rank(0)).up;
    assert_double_exact(merged.bandwidth, 10e9);
    assert_double_exact(merged.latency, 0.3e-6 + 0.5e-6);

    int nb = t.node_of_rank(2);
    assert_int_equal(t.node(nb).children.size(), 2);
    int sock0 = t.node(nb).children[0];
    assert_true(t.node(sock0).level == Level::socket);
    assert_true(t.ranks_under(sock0) == ints({2, 3}));
    // Socket 1 had one rank: rank 4 hangs off host b directly.
    int leaf4 = t.leaf_of_rank(4);
    assert_int_equal(t.node(leaf4).parent, nb);
    assert_double_exact(t.node(leaf4).up.latency, 0.5e-6 + 0.3e-6);
    assert_int_equal(t.ancestor_at(leaf4, Level::socket), -1);
    assert_int_equal(t.ancestor_at(t.leaf_of_rank(3), Level::socket), sock0);
    assert_int_equal(t.depth(), 3);
}

void test_builder_errors(void**) {
    Topology t;
    {
        TopologyBuilder b;
        int n = b.add(b.root(), Level::node, "a", kNode);
        b.add_rank(n, 0, kRank);
        b.add_rank(n, 0, kRank);
        expect_error_containing(b.build(&t), "rank 0 appears twice");
    }
    {
        TopologyBuilder b;
        int n = b.add(b.root(), Level::node, "a", kNode);
        b.add_rank(n, 0, kRank);
        b.add_rank(n, 2, kRank);
        expect_error_containing(b.build(&t), "rank 2 out of range");
    }
    {
        TopologyBuilder b;
        int n = b.add(b.root(), Level::node, "a", kNode);
        b.add(b.root(), Level::node, "empty", kNode);
        b.add_rank(n, 0, kRank);
        expect_error_containing(b.build(&t), "node empty has no ranks");
    }
    {
        TopologyBuilder b;
        int n = b.add(b.root(), Level::node, "a", kNode);
        b.add(n, Level::node, "inner", kNode);
        expect_error_containing(b.build(&t), "node inner cannot be inside node a");
    }
    {
        TopologyBuilder b;
        int r = b.add(b.root(), Level::rack, "r", kRack);
        int n = b.add(r, Level::node, "a", kNode);
        int m = b.add(b.root(), Level::node, "a", kNode);
        b.add_rank(n, 0, kRank);
        b.add_rank(m, 1, kRank);
        expect_error_containing(b.build(&t), "duplicate node a");
    }
    {
        TopologyBuilder b;
        int n = b.add(b.root(), Level::node, "two words", kNode);
        b.add_rank(n, 0, kRank);
        expect_error_containing(b.build(&t), "one word");
    }
    {
        TopologyBuilder b;
        expect_error_containing(b.build(&t), "no ranks");
    }
    {
        TopologyBuilder b;
        b.add(7, Level::node, "a", kNode);
        expect_error_containing(b.build(&t), "no such parent");
    }
    // Switches may nest: a spine under a spine, a rack under a rack.
    {
        TopologyBuilder b;
        int s = b.add(b.root(), Level::spine, "s0", kRack);
        int s1 = b.add(s, Level::spine, "s1", kRack);
        int s2 = b.add(s, Level::spine, "s2", kRack);
        b.add_rank(b.add(s1, Level::node, "a", kNode), 0, kRank);
        b.add_rank(b.add(s2, Level::node, "b", kNode), 1, kRank);
        expect_ok(b.build(&t));
        assert_true(t.node(t.root()).level == Level::spine);
    }
}

// -------------------------------------------------------------- text format

const char kExample[] =
    "# topoar topology v1\n"
    "defaults node bw=200Mbit lat=50us       # default up-link of nodes\n"
    "rack r0 bw=200Mbit lat=100us\n"
    "  node host-a bw=1Gbit\n"
    "    ranks 0 1            # explicit comm ranks\n"
    "  node host-b\n"
    "    ranks 2 3 4\n"
    "rack r1\n"
    "  node host-c\n"
    "    socket 0\n"
    "      ranks 5 6\n"
    "    socket 1 lat=1us\n"
    "      ranks 7-9 bw=5GB/s\n";

void test_parse_example(void**) {
    Topology t = parse(kExample);
    assert_int_equal(t.num_ranks(), 10);
    const TopoNode& root = t.node(t.root());
    assert_true(root.level == Level::root);
    assert_int_equal(root.children.size(), 2);
    const TopoNode& r0 = t.node(root.children[0]);
    assert_string_equal(r0.name.c_str(), "r0");
    assert_double_exact(r0.up.bandwidth, 25e6);
    assert_double_exact(r0.up.latency, 100e-6);
    int a = t.find(Level::node, "host-a");
    assert_double_exact(t.node(a).up.bandwidth, 125e6);  // own bw=
    assert_double_exact(t.node(a).up.latency, 50e-6);    // defaults line
    int hb = t.find(Level::node, "host-b");
    assert_true((t.node(hb).up == Link{25e6, 50e-6}));
    assert_true(t.ranks_under(hb) == ints({2, 3, 4}));
    // Rack r1 holds one host: collapsed, host-c's up-link = r1 (built-in
    // rack default) in series with host-c (file default).
    int c = t.find(Level::node, "host-c");
    assert_int_equal(t.node(c).parent, t.root());
    assert_int_equal(t.find(Level::rack, "r1"), -1);
    LinkDefaults builtin;
    assert_double_exact(t.node(c).up.bandwidth, 25e6);
    assert_double_exact(t.node(c).up.latency, builtin.rack.latency + 50e-6);
    assert_int_equal(t.node(c).children.size(), 2);
    int s1 = t.node(c).children[1];
    assert_true(t.node(s1).level == Level::socket);
    assert_string_equal(t.node(s1).name.c_str(), "1");
    assert_double_exact(t.node(s1).up.latency, 1e-6);
    assert_double_exact(t.node(s1).up.bandwidth, builtin.socket.bandwidth);
    assert_true(t.ranks_under(s1) == ints({7, 8, 9}));
    assert_double_exact(t.node(t.leaf_of_rank(8)).up.bandwidth, 5e9);
    assert_double_exact(t.node(t.leaf_of_rank(5)).up.bandwidth, builtin.rank.bandwidth);
    assert_int_equal(t.depth(), 3);
}

void test_parse_count(void**) {
    Topology t = parse(
        "defaults rank bw=8GB/s\n"
        "spine core\n"
        "  rack r0\n"
        "    node n0 count=2\n"
        "    node n1 count=3 bw=100Mbit\n"
        "  rack r1\n"
        "    node n2 count=1\n"
        "    node n3\n"
        "      socket 0 count=2\n"
        "      socket 1 count=2\n");
    assert_int_equal(t.num_ranks(), 10);
    // Ranks numbered in file order.
    assert_true(t.ranks_under(t.find(Level::node, "n0")) == ints({0, 1}));
    assert_true(t.ranks_under(t.find(Level::node, "n1")) == ints({2, 3, 4}));
    assert_true(t.ranks_under(t.find(Level::node, "n2")) == ints({5}));
    assert_true(t.ranks_under(t.find(Level::node, "n3")) == ints({6, 7, 8, 9}));
    assert_double_exact(t.node(t.find(Level::node, "n1")).up.bandwidth, 12.5e6);
    assert_double_exact(t.node(t.leaf_of_rank(3)).up.bandwidth, 8e9);
    // A single top-level spine becomes the root.
    assert_true(t.node(t.root()).level == Level::spine);
    assert_string_equal(t.node(t.root()).name.c_str(), "core");
    assert_true((t.node(t.root()).up == Link{}));
    assert_int_equal(t.nodes_at(Level::socket).size(), 2);
}

// Ranks without hosts: a flat synthetic topology.
void test_parse_flat(void**) {
    Topology t = parse("ranks 0-3 bw=1GB/s lat=1us\n");
    assert_int_equal(t.num_ranks(), 4);
    assert_int_equal(t.depth(), 1);
    assert_int_equal(t.node_of_rank(2), -1);
    assert_double_exact(t.node(t.leaf_of_rank(2)).up.bandwidth, 1e9);
    Topology one = parse("ranks 0\n");
    assert_int_equal(one.num_nodes(), 1);
    assert_int_equal(one.depth(), 0);
    assert_true(one.node(one.root()).is_leaf());
}

void roundtrip(const Topology& t) {
    std::string text = t.to_text();
    Topology back;
    Status s = Topology::from_text(text, "dump", &back);
    if (!s) print_error("%s\n%s\n", s.message().c_str(), text.c_str());
    expect_ok(s);
    if (back != t) print_error("round trip changed the topology:\n%s\nvs\n%s\n", text.c_str(), back.to_text().c_str());
    assert_true(back == t);
    assert_string_equal(back.to_text().c_str(), text.c_str());
}

void test_roundtrip(void**) {
    roundtrip(parse(kExample));
    roundtrip(parse("node n0 count=3\nnode n1 count=2 bw=100Mbit lat=0.3ms\n"));
    roundtrip(parse("node only count=4\n"));
    roundtrip(parse("ranks 0-3 bw=1GB/s lat=1us\n"));
    roundtrip(parse("ranks 0\n"));
    roundtrip(parse("ranks 3 1\nranks 0 2 bw=1Gbit\n"));
    // Interleaved ranks across hosts, odd link values, nested switches.
    roundtrip(
        parse("spine s0 bw=123456789.123B/s lat=3.7us\n"
              "  spine s1\n"
              "    rack ra\n"
              "      node x\n"
              "        ranks 0 5\n"
              "      node y\n"
              "        ranks 2\n"
              "  rack rb\n"
              "    node z\n"
              "      socket 0\n"
              "        ranks 1 3\n"
              "      socket 1\n"
              "        ranks 4 6 lat=0.25us\n"));
    Topology t;
    expect_ok(Topology::from_node_sizes({1, 2, 3}, Link{1.0 / 3.0, 1e-7 / 3}, kRank, &t));
    roundtrip(t);
    // A topology that was built, not parsed.
    TopologyBuilder b;
    int r0 = b.add(b.root(), Level::rack, "r0", kRack);
    int a = b.add(r0, Level::node, "a", kNode);
    int c = b.add(r0, Level::node, "c", kNode);
    int d = b.add(b.root(), Level::node, "d", Link{7e9, 2e-6});
    b.add_rank(a, 1, kRank);
    b.add_rank(c, 0, kRank);
    b.add_rank(d, 2, Link{3e9, 1e-6});
    b.add_rank(d, 3, kRank);
    expect_ok(b.build(&t));
    roundtrip(t);

    // The written form, exactly.
    Topology small = parse("node a\n  ranks 0 1\nnode b bw=1Gbit lat=5us\n  ranks 2-4 bw=10GB/s lat=300ns\n");
    assert_string_equal(small.to_text().c_str(),
                        "# topoar topology v1\n"
                        "# 5 ranks, 2 nodes\n"
                        "node a bw=100Gbit lat=1us\n"
                        "  ranks 0 1 bw=10GB/s lat=300ns\n"
                        "node b bw=1Gbit lat=5us\n"
                        "  ranks 2-4 bw=10GB/s lat=300ns\n");
}

void test_parse_errors(void**) {
    expect_parse_error("node a\n\tranks 0\n", 2, "tab in indentation");
    expect_parse_error("rack r\n    node a\n      ranks 0\n  node b\n", 4, "indentation does not match");
    expect_parse_error("  node a\n    ranks 0\nnode b\n", 3, "indentation does not match");
    expect_parse_error("node a\n  ranks 0\n    ranks 1\n", 3, "line 2 cannot have nested lines");
    expect_parse_error("node a\n  rank 0\n", 2, "unknown keyword 'rank'");
    expect_parse_error("# c\n\nswitch s\n", 3, "unknown keyword 'switch'");
    expect_parse_error("node a bw=200Mb\n  ranks 0\n", 1, "unknown unit 'Mb'");
    expect_parse_error("node a\n  ranks 0 lat=5\n", 2, "missing unit");
    expect_parse_error("node a bw=1Gbit speed=3\n", 1, "unknown attribute 'speed='");
    expect_parse_error("rack r count=3\n", 1, "unknown attribute 'count='");
    expect_parse_error("node a bw=1Gbit bw=2Gbit\n", 1, "given twice");
    expect_parse_error("node a extra\n", 1, "unexpected word 'extra'");
    expect_parse_error("node\n", 1, "needs a name");
    expect_parse_error("node a\n  ranks 0 1\nnode b\n  ranks 2 1\n", 4, "duplicate rank 1 (first at line 2)");
    expect_parse_error("node a\n  ranks 0 1\nnode b\n  ranks 3\n", 4, "rank 3 out of range");
    expect_parse_error("node a\n  ranks 0 1\nnode b\n  ranks 3\n", 4, "(missing: 2)");
    expect_parse_error("node a\n  ranks 0 1\nnode b\n", 3, "node b has no ranks");
    expect_parse_error("rack r\nnode a\n  ranks 0\n", 1, "rack r has no ranks");
    expect_parse_error("node a count=2\nnode b\n  ranks 2 3\n", 3, "cannot be mixed (the other kind is at line 1)");
    expect_parse_error("node b\n  ranks 0\nnode a count=2\n", 3, "cannot be mixed");
    expect_parse_error("node a count=2\n  socket 0\n", 2, "nothing may be nested under a line with count=");
    expect_parse_error("node a count=0\n", 1, "bad count");
    expect_parse_error("node a count=x\n", 1, "bad count");
    expect_parse_error("node a\n  ranks\n", 2, "needs a list");
    expect_parse_error("node a\n  ranks 0 x\n", 2, "bad rank 'x'");
    expect_parse_error("node a\n  ranks 5-3\n", 2, "bad rank '5-3'");
    expect_parse_error("node a\n  ranks 0\ndefaults node bw=1Gbit\n", 3, "must come first");
    expect_parse_error("defaults nic bw=1Gbit\n", 1, "expected 'defaults LEVEL");
    expect_parse_error("defaults node\n", 1, "sets neither");
    expect_parse_error("node a\n  node b\n    ranks 0\n", 2, "node b cannot be inside node a (line 1)");
    expect_parse_error("node a\n  rack r\n", 2, "rack r cannot be inside node a");
    expect_parse_error("node a\n  ranks 0\nrack r\n  node a\n    ranks 1\n", 4,
                       "duplicate node name 'a' (first at line 1)");
    expect_parse_error("# nothing\n", 1, "no ranks");
    // Counts are digits, like rank numbers (strtol took "+5" and "5\0x").
    expect_parse_error("node a count=+5\n", 1, "bad count '+5'");
    const char nul[] = "node a count=5\0x\n";
    expect_parse_error(std::string(nul, sizeof nul - 1), 1, "bad count '5\\x00x'");
    // Latencies add up where levels collapse: their sum must stay finite
    // (to_text wrote "lat=infs", which did not read back).
    Topology t;
    const std::string far = "rack r lat=1e308s\n  node a lat=1e308s\n    ranks 0\nnode b\n  ranks 1\n";
    expect_error_containing(Topology::from_text(far, "t.topo", &t),
                            "t.topo: the latencies between rank 0 and the top of the tree add up to more than");
    const std::string near = "rack r lat=1e300s\n  node a lat=1e300s\n    ranks 0\nnode b\n  ranks 1\n";
    expect_ok(Topology::from_text(near, "t.topo", &t));
    roundtrip(t);
}

// Binary junk in a file: quoted escaped and cut, one printable line.
void test_parse_errors_binary(void**) {
    expect_parse_error("node a\x01\x7f\xff\n  ranks 0\n  rack r\n", 3,
                       "rack r cannot be inside node a\\x01\\x7f\\xff (line 1)");
    expect_parse_error("node a bw=1\x1b[0m\n", 1, "bad bandwidth '1\\x1b[0m': unknown unit '\\x1b[0m'");
    expect_parse_error("\xef\xbb\xbfnode a\n  ranks 0\n", 1, "unknown keyword '\\xef\\xbb\\xbfnode'");
    const std::string long_name(500, 'x');
    expect_parse_error("node " + long_name + "\nnode b\n  ranks 0\n", 1,
                       ("node " + long_name.substr(0, 80) + "... has no ranks").c_str());
}

void test_from_file(void**) {
    std::string path = write_temp(kExample);
    Topology t;
    expect_ok(Topology::from_file(path, &t));
    assert_true(t == parse(kExample));
    unlink(path.c_str());
    Status s = Topology::from_file("/nonexistent/x.topo", &t);
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::io_error));
    expect_error_containing(s, "/nonexistent/x.topo");

    path = write_temp("node a\n  ranks 0\n  ranks 2\n");
    s = Topology::from_file(path, &t);
    expect_error_containing(s, (path + ":3: rank 2 out of range").c_str());
    unlink(path.c_str());

    // Caller-supplied defaults fill links the file leaves out.
    LinkDefaults d;
    d.node = Link{1e6, 1e-3};
    expect_ok(Topology::from_text("node a\n  ranks 0 1\nnode b\n  ranks 2\n", "x", d, &t));
    assert_true(t.node(t.find(Level::node, "b")).up == d.node);
}

// ---------------------------------------------------------------- discovery

std::vector<RankInfo> on_hosts(std::initializer_list<const char*> hosts) {
    std::vector<RankInfo> r;
    for (const char* h : hosts) {
        RankInfo i;
        i.host = h;
        r.push_back(i);
    }
    return r;
}

void test_discover_plain(void**) {
    DiscoveryOptions opt;
    opt.default_node = Link{25e6, 50e-6};
    opt.default_rank = Link{0, 0};  // unset: built-in
    Topology t;
    expect_ok(discover_topology(on_hosts({"b", "b", "a", "b", "a"}), opt, &t));
    assert_int_equal(t.num_ranks(), 5);
    const TopoNode& root = t.node(t.root());
    assert_int_equal(root.children.size(), 2);
    assert_string_equal(t.node(root.children[0]).name.c_str(), "b");  // holds rank 0
    assert_true(t.ranks_under(root.children[0]) == ints({0, 1, 3}));
    assert_true(t.ranks_under(root.children[1]) == ints({2, 4}));
    assert_true(t.node(root.children[1]).up == opt.default_node);
    assert_true(t.node(t.leaf_of_rank(0)).up == LinkDefaults{}.rank);
    assert_int_equal(t.depth(), 2);

    // One host: the host is the root.
    expect_ok(discover_topology(on_hosts({"h", "h"}), opt, &t));
    assert_true(t.node(t.root()).level == Level::node);

    expect_error_containing(discover_topology(on_hosts({"a", ""}), opt, &t), "rank 1 reported no host name");
    expect_error_containing(discover_topology({}, opt, &t), "no ranks");
}

void test_discover_sockets(void**) {
    std::vector<RankInfo> r = on_hosts({"a", "a", "a", "b", "b", "c", "c", "d", "d", "d"});
    r[0].socket = 1;
    r[1].socket = 0;
    r[2].socket = 1;
    r[3].socket = 0;  // b: rank 4 unbound -> no socket level
    r[5].socket = 1;  // c: one socket only -> no socket level
    r[6].socket = 1;
    r[7].socket = 0;  // d: two sockets but rank 9 unbound -> no socket level
    r[8].socket = 1;
    DiscoveryOptions opt;
    opt.default_socket = Link{30e9, 0.4e-6};
    Topology t;
    expect_ok(discover_topology(r, opt, &t));
    int a = t.find(Level::node, "a");
    assert_int_equal(t.node(a).children.size(), 2);
    int first = t.node(a).children[0];
    assert_true(t.node(first).level == Level::socket);
    assert_string_equal(t.node(first).name.c_str(), "1");  // socket 1 holds rank 0
    assert_true(t.ranks_under(first) == ints({0, 2}));
    assert_true(t.node(first).up == opt.default_socket);
    // Socket 0 on host a has one rank: collapsed into the host.
    int leaf1 = t.leaf_of_rank(1);
    assert_int_equal(t.node(leaf1).parent, a);
    assert_double_exact(t.node(leaf1).up.latency, 0.4e-6 + LinkDefaults{}.rank.latency);
    for (const char* h : {"b", "c", "d"}) {
        int n = t.find(Level::node, h);
        for (int c : t.node(n).children) assert_true(t.node(c).is_leaf());
    }
    assert_true(t.ranks_under(t.find(Level::node, "d")) == ints({7, 8, 9}));
    for (int k = 0; k < t.num_ranks(); ++k)
        assert_string_equal(t.node(t.node_of_rank(k)).name.c_str(), r[static_cast<std::size_t>(k)].host.c_str());
    assert_int_equal(t.nodes_at(Level::socket).size(), 1);
}

const char kRackFile[] =
    "# host rack [bw=] [lat=]\n"
    "n1.cluster r0 bw=1Gbit\n"
    "n2 r0\n"
    "n3 r1 lat=7us\n"
    "n4 r1\n"
    "unused r9\n"
    "rack r0 bw=10Gbit lat=2us\n";

void test_discover_rack_file(void**) {
    std::string path = write_temp(kRackFile);
    DiscoveryOptions opt;
    opt.rack_file = path;
    opt.default_node = kNode;
    Topology t;
    // n1 is reported short, the file has the FQDN: matched by short name.
    expect_ok(discover_topology(on_hosts({"n1", "n1", "n3", "n2", "n4", "n4"}), opt, &t));
    const TopoNode& root = t.node(t.root());
    assert_int_equal(root.children.size(), 2);
    const TopoNode& r0 = t.node(root.children[0]);
    const TopoNode& r1 = t.node(root.children[1]);
    assert_string_equal(r0.name.c_str(), "r0");
    assert_string_equal(r1.name.c_str(), "r1");
    assert_true((r0.up == Link{1.25e9, 2e-6}));
    assert_true(r1.up == opt.default_rack);
    assert_true(t.ranks_under(r0.id) == ints({0, 1, 3}));
    assert_true(t.ranks_under(r1.id) == ints({2, 4, 5}));
    int n1 = t.find(Level::node, "n1");
    assert_true(n1 >= 0);
    assert_true((t.node(n1).up == Link{125e6, kNode.latency}));
    assert_true((t.node(t.find(Level::node, "n3")).up == Link{kNode.bandwidth, 7e-6}));
    assert_int_equal(t.find(Level::rack, "r9"), -1);

    // Only hosts of rack r1: the rack collapses away... and is the root.
    expect_ok(discover_topology(on_hosts({"n3", "n4"}), opt, &t));
    assert_true(t.node(t.root()).level == Level::rack);
    assert_string_equal(t.node(t.root()).name.c_str(), "r1");

    expect_error_containing(discover_topology(on_hosts({"n1", "n7"}), opt, &t),
                            "host n7 (ranks 1) is not in the rack file");
    unlink(path.c_str());

    path = write_temp("n1 r0\n\nn2\n");
    opt.rack_file = path;
    expect_error_containing(discover_topology(on_hosts({"n1"}), opt, &t), (path + ":3: expected").c_str());
    unlink(path.c_str());
    path = write_temp("n1 r0\nn1 r1\n");
    opt.rack_file = path;
    expect_error_containing(discover_topology(on_hosts({"n1"}), opt, &t),
                            (path + ":2: host n1 listed twice (first at line 1)").c_str());
    unlink(path.c_str());
    path = write_temp("n1 r0 bw=fast\n");
    opt.rack_file = path;
    expect_error_containing(discover_topology(on_hosts({"n1"}), opt, &t), (path + ":1: bad bandwidth").c_str());
    unlink(path.c_str());
    opt.rack_file = "/nonexistent/racks";
    Status s = discover_topology(on_hosts({"n1"}), opt, &t);
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::io_error));

    // The text itself, as discover_topology reads it from the file.
    Topology from_file;
    opt.rack_file = path = write_temp(kRackFile);
    expect_ok(discover_topology(on_hosts({"n1", "n3", "n2"}), opt, &from_file));
    unlink(path.c_str());
    expect_ok(discover_from_rack_text(on_hosts({"n1", "n3", "n2"}), kRackFile, "racks", opt, &t));
    assert_true(t == from_file);
    const char junk[] = "n1 r0\n\x01\xff r1\n\x01\xff r2\n";
    expect_error_containing(discover_from_rack_text(on_hosts({"n1"}), junk, "racks", opt, &t),
                            "racks:3: host \\x01\\xff listed twice (first at line 2)");
}

std::vector<RankInfo> slurm_ranks(std::initializer_list<std::pair<const char*, const char*>> host_addr,
                                  const char* pattern) {
    std::vector<RankInfo> r;
    for (const auto& ha : host_addr) {
        RankInfo i;
        i.host = ha.first;
        i.slurm_addr = ha.second;
        i.slurm_pattern = pattern;
        r.push_back(i);
    }
    return r;
}

void test_discover_slurm(void**) {
    DiscoveryOptions opt;
    Topology t;
    auto r = slurm_ranks({{"n1", "s0.s1.n1"},
                          {"n2", "s0.s1.n2"},
                          {"n1", "s0.s1.n1"},
                          {"n3", "s0.s2.n3"},
                          {"n4", "s0.s3.n4"},
                          {"n5", "s0.s3.n5"}},
                         "switch.switch.node");
    expect_ok(discover_topology(r, opt, &t));
    // s0 is common to all: it is the root (a spine).
    const TopoNode& root = t.node(t.root());
    assert_true(root.level == Level::spine);
    assert_string_equal(root.name.c_str(), "s0");
    assert_int_equal(root.children.size(), 3);
    int s1 = t.find(Level::rack, "s1");
    assert_true(s1 >= 0);
    assert_true(t.ranks_under(s1) == ints({0, 1, 2}));
    assert_true(t.node(s1).up == LinkDefaults{}.rack);
    // s2 holds one host: collapsed.
    assert_int_equal(t.find(Level::rack, "s2"), -1);
    assert_int_equal(t.node(t.find(Level::node, "n3")).parent, t.root());
    assert_true(t.ranks_under(t.find(Level::rack, "s3")) == ints({4, 5}));

    // Uneven depth: a host attached to the top switch.
    r = slurm_ranks({{"a", "top.l1.a"}, {"b", "top.l1.b"}, {"c", "top2.c"}}, "switch.switch.node");
    r[2].slurm_pattern = "switch.node";
    expect_ok(discover_topology(r, opt, &t));
    assert_true(t.node(t.root()).level == Level::root);
    assert_true(t.ranks_under(t.find(Level::rack, "l1")) == ints({0, 1}));

    // Node names may contain dots.
    r = slurm_ranks({{"a.x", "sw.a.x"}, {"b.x", "sw.b.x"}}, "switch.node");
    expect_ok(discover_topology(r, opt, &t));
    assert_true(t.node(t.root()).level == Level::rack);

    r = slurm_ranks({{"a", "s0.a"}}, "switch.switch.node");
    expect_error_containing(discover_topology(r, opt, &t), "does not match pattern");
    r = slurm_ranks({{"a", "s0.a"}}, "switch.host");
    expect_error_containing(discover_topology(r, opt, &t), "does not end with 'node'");
    r = slurm_ranks({{"a", "s0.a"}, {"a", "s1.a"}}, "switch.node");
    expect_error_containing(discover_topology(r, opt, &t), "ranks 0 and 1 on host a report different switches");
    r = slurm_ranks({{"a", "x.s0.a"}, {"b", "y.s0.b"}}, "switch.switch.node");
    expect_error_containing(discover_topology(r, opt, &t), "switch s0 appears at two places");
    // Names are words of the text format: no whitespace of any kind (a
    // switch "s\v0" was written as "rack s\v0", which reads as two words).
    r = slurm_ranks({{"a", "s\v0.a"}, {"b", "s\v0.b"}, {"c", "s1.c"}}, "switch.node");
    expect_error_containing(discover_topology(r, opt, &t), "rack name 's\\x0b0' must be one word");
    r = slurm_ranks({{"a", "s0.a"}}, "switch.\x1b[2Jnode");
    expect_error_containing(discover_topology(r, opt, &t), "PATTERN 'switch.\\x1b[2Jnode' does not end with 'node'");

    // A rank without a Slurm address: plain hosts.
    r = slurm_ranks({{"a", "s0.a"}, {"b", "s1.b"}}, "switch.node");
    r[1].slurm_addr.clear();
    expect_ok(discover_topology(r, opt, &t));
    assert_int_equal(t.nodes_at(Level::rack).size(), 0);
    // use_slurm = false ignores it too.
    r = slurm_ranks({{"a", "s0.a"}, {"b", "s0.b"}}, "switch.node");
    opt.use_slurm = false;
    expect_ok(discover_topology(r, opt, &t));
    assert_true(t.node(t.root()).level == Level::root);
}

void test_discover_topology_file(void**) {
    // A structure (no ranks): hosts are grafted in, unused parts dropped.
    std::string path = write_temp(
        "defaults node bw=200Mbit lat=50us\n"
        "rack r0 bw=1Gbit lat=100us\n"
        "  node h1\n"
        "  node h2 bw=100Mbit\n"
        "rack r1\n"
        "  node h3\n"
        "  node h4\n"
        "rack r2\n"
        "  node spare\n");
    DiscoveryOptions opt;
    opt.topology_file = path;
    std::vector<RankInfo> r = on_hosts({"h1", "h1", "h2.cluster", "h3", "h4", "h4"});
    r[4].socket = 0;
    r[5].socket = 1;
    Topology t;
    expect_ok(discover_topology(r, opt, &t));
    const TopoNode& root = t.node(t.root());
    assert_int_equal(root.children.size(), 2);
    assert_true((t.node(root.children[0]).up == Link{125e6, 100e-6}));
    assert_true((t.node(t.find(Level::node, "h2.cluster")).up == Link{12.5e6, 50e-6}));
    assert_true(t.ranks_under(t.find(Level::rack, "r1")) == ints({3, 4, 5}));
    assert_int_equal(t.find(Level::rack, "r2"), -1);
    assert_int_equal(t.find(Level::node, "spare"), -1);
    int h4 = t.find(Level::node, "h4");
    assert_int_equal(t.node(h4).children.size(), 2);  // one rank per socket: leaves
    expect_error_containing(discover_topology(on_hosts({"h1", "h9"}), opt, &t),
                            "host h9 (ranks 1) is not in the topology file");
    unlink(path.c_str());

    // With ranks: used as is, when every rank is on its host.
    const char* full = "node h1\n  socket 0\n    ranks 0 2\n  socket 1\n    ranks 1 3\nnode h2\n  ranks 4\n";
    path = write_temp(full);
    opt.topology_file = path;
    expect_ok(discover_topology(on_hosts({"h1", "h1", "h1", "h1", "h2"}), opt, &t));
    assert_true(t == parse(full));
    expect_error_containing(discover_topology(on_hosts({"h1", "h1", "h1", "h2", "h2"}), opt, &t),
                            "rank 3 runs on host h2 but the file puts it on node h1");
    expect_error_containing(discover_topology(on_hosts({"h1", "h1", "h1", "h1"}), opt, &t),
                            "the file lists 5 ranks, the communicator has 4");
    unlink(path.c_str());
    // The text itself, as discover_topology reads it from the file.
    expect_ok(discover_from_topology_text(on_hosts({"h1", "h1", "h1", "h1", "h2"}), full, "full.topo", opt, &t));
    assert_true(t == parse(full));
    expect_error_containing(discover_from_topology_text(on_hosts({"h1"}), "node h1\n\tranks 0\n", "t", opt, &t),
                            "t:2: tab in indentation");

    // Sockets need ranks; errors keep their line numbers.
    path = write_temp("node h1\n  socket 0\n");
    opt.topology_file = path;
    expect_error_containing(discover_topology(on_hosts({"h1"}), opt, &t), (path + ":2: a file without ranks").c_str());
    unlink(path.c_str());
    path = write_temp("node h1\n node h2\n");
    opt.topology_file = path;
    expect_error_containing(discover_topology(on_hosts({"h1"}), opt, &t),
                            (path + ":2: node h2 cannot be inside").c_str());
    unlink(path.c_str());

    // Precedence: the topology file wins over the rack file and Slurm.
    path = write_temp("rack tf\n  node a\n  node b\n");
    std::string racks = write_temp("a rf\nb rf\n");
    opt.topology_file = path;
    opt.rack_file = racks;
    r = slurm_ranks({{"a", "sl.a"}, {"b", "sl.b"}}, "switch.node");
    expect_ok(discover_topology(r, opt, &t));
    assert_string_equal(t.node(t.root()).name.c_str(), "tf");
    opt.topology_file.clear();
    expect_ok(discover_topology(r, opt, &t));
    assert_string_equal(t.node(t.root()).name.c_str(), "rf");
    opt.rack_file.clear();
    expect_ok(discover_topology(r, opt, &t));
    assert_string_equal(t.node(t.root()).name.c_str(), "sl");
    unlink(path.c_str());
    unlink(racks.c_str());
}

// ------------------------------------------------------------ describe, hwloc

void test_describe(void**) {
    std::ostringstream os;
    describe(parse(kExample), os);
    const std::string out = os.str();
    const char* expected[] = {
        "world (1 rack, 3 nodes, 2 sockets, 10 ranks)\n",
        "\n  rack r0 (2 nodes, 5 ranks) up 200 Mbit/s 100 us\n",
        "\n    node host-a (2 ranks) up 1 Gbit/s 50 us\n",
        "\n      ranks 0 1 up 10 GB/s 300 ns\n",
        "\n      ranks 2-4 up",
        "\n    socket 1 (3 ranks) up 20 GB/s 1 us\n",
        "\n      ranks 7-9 up 5 GB/s 300 ns\n",
    };
    for (const char* e : expected) {
        if (out.find(e) == std::string::npos) print_error("missing '%s' in:\n%s", e, out.c_str());
        assert_true(out.find(e) != std::string::npos);
    }
    std::ostringstream empty;
    describe(Topology(), empty);
    assert_string_equal(empty.str().c_str(), "(empty topology)\n");
}

void test_level_names(void**) {
    const Level all[] = {Level::root, Level::spine, Level::rack, Level::node, Level::socket, Level::rank};
    for (Level l : all) {
        Level back = Level::rank;
        assert_true(level_from_string(to_string(l), &back));
        assert_true(back == l);
    }
    Level x;
    assert_false(level_from_string("switch", &x));
    assert_true(level_may_contain(Level::rack, Level::rack));
    assert_true(level_may_contain(Level::root, Level::rank));
    assert_false(level_may_contain(Level::node, Level::node));
    assert_false(level_may_contain(Level::socket, Level::node));
    Link s = series(Link{0, 1e-6}, Link{5e9, 2e-6});
    assert_double_exact(s.bandwidth, 5e9);  // unknown loses
    assert_double_exact(s.latency, 3e-6);
    assert_true(format_rank_list({0, 1, 2, 3, 5, 7, 8}) == "0-3 5 7 8");
}

void test_hwloc_probe(void**) {
    // Several threads at once, first thing in the process (communicator
    // set-ups racing under MPI_THREAD_MULTIPLE): one loads the machine's
    // topology, all read it, all get the same answer.
    std::vector<int> got(8, -2);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < got.size(); ++i)
        threads.emplace_back([&got, i] {
            for (int k = 0; k < 20; ++k) got[i] = probe_socket_of_current_binding();
        });
    for (auto& t : threads) t.join();
    int s = probe_socket_of_current_binding();
    assert_true(s >= -1);
    assert_true(s < 4096);
    // Deterministic for an unchanged binding.
    assert_int_equal(probe_socket_of_current_binding(), s);
    for (int g : got) assert_int_equal(g, s);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_bandwidth),
        cmocka_unit_test(test_units_latency),
        cmocka_unit_test(test_units_format),
        cmocka_unit_test(test_two_plus_three),
        cmocka_unit_test(test_child_order_and_queries),
        cmocka_unit_test(test_one_two_three),
        cmocka_unit_test(test_uneven_racks_and_single_node_rack),
        cmocka_unit_test(test_single_node_collapses_to_node_root),
        cmocka_unit_test(test_socket_collapse),
        cmocka_unit_test(test_builder_errors),
        cmocka_unit_test(test_parse_example),
        cmocka_unit_test(test_parse_count),
        cmocka_unit_test(test_parse_flat),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_errors_binary),
        cmocka_unit_test(test_from_file),
        cmocka_unit_test(test_discover_plain),
        cmocka_unit_test(test_discover_sockets),
        cmocka_unit_test(test_discover_rack_file),
        cmocka_unit_test(test_discover_slurm),
        cmocka_unit_test(test_discover_topology_file),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_level_names),
        cmocka_unit_test(test_hwloc_probe),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
