// nccl_hier's planner (common/planners/planner_nccl_hier.*): hosts, shards
// and owners, the host-level topology, the host collectives of the header's
// worked example, the point-to-point plan the cost model predicts (valid,
// every element reduced once, exact when run by the host executor), and
// that plan's shard rounds being exactly what each rank runs.  The device
// execution is tested in test_device_executor.cpp.
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/algorithm.hpp"
#include "engine.hpp"
#include "planners/planner_nccl_hier.hpp"
#include "planners/planners.hpp"
#include "topology/topology.hpp"
#include "exec_harness.hpp"
#include "plan_check.hpp"

#include <setjmp.h>
extern "C" {
// clang-format off
#include <cmocka.h>
// clang-format on
}

#include "cluster_fixtures.hpp"

using namespace topoar;
using topoar_test::hosts_topology;

namespace {

using K = HostCollective::Kind;

void expect_coll(const HostCollective& c, K kind, std::size_t offset, std::size_t count, int root) {
    if (c.kind != kind || c.offset != offset || c.count != count || c.root != root)
        fail_msg("host collective: kind %d offset %zu count %zu root %d, expected kind %d offset %zu count %zu root %d",
                 static_cast<int>(c.kind), c.offset, c.count, c.root, static_cast<int>(kind), offset, count, root);
}

std::vector<Topology> topologies() {
    return {hosts_topology({1}),       hosts_topology({3}),    hosts_topology({1, 1}),
            hosts_topology({2, 1}),    hosts_topology({3, 2, 1}), hosts_topology({1, 4, 3}),
            hosts_topology({4, 4}),    hosts_topology({5, 3}),    hosts_topology({2, 2, 2, 1}),
            topoar_test::cluster_two_racks(), topoar_test::cluster_2_3()};
}

}  // namespace

static void test_layout_and_shards(void** state) {
    (void)state;
    HostLayout l;
    assert_true(host_layout(hosts_topology({3, 2, 1}), &l).is_ok());
    assert_int_equal(l.members.size(), 3);
    assert_true(l.members[0] == (std::vector<int>{0, 1, 2}));
    assert_true(l.members[1] == (std::vector<int>{3, 4}));
    assert_true(l.members[2] == (std::vector<int>{5}));
    assert_int_equal(l.shards, 3);
    assert_int_equal(l.host_of[4], 1);
    assert_int_equal(l.local_of[4], 1);
    // Ranks placed round robin over hosts (the racks fixture): members are
    // the ranks of each host, ascending, hosts in topology order.
    assert_true(host_layout(topoar_test::cluster_two_racks(), &l).is_ok());
    assert_int_equal(l.shards, 3);
    assert_true(l.members[3] == (std::vector<int>{3, 6, 7}));
    // Shards: q = count / S each, the last one takes the rest.
    const Range a = hier_shard(10, 3, 0), b = hier_shard(10, 3, 1), c = hier_shard(10, 3, 2);
    assert_true(a.offset == 0 && a.count == 3 && b.offset == 3 && b.count == 3 && c.offset == 6 && c.count == 4);
    const Range e = hier_shard(2, 3, 0), f = hier_shard(2, 3, 2);
    assert_true(e.count == 0 && f.offset == 0 && f.count == 2);
    // No host level: unsupported (the engine then runs the built-in plan).
    TopologyBuilder flat;
    flat.add_rank(flat.root(), 0, Link{});
    flat.add_rank(flat.root(), 1, Link{});
    Topology t;
    assert_true(flat.build(&t).is_ok());
    assert_int_equal(static_cast<int>(host_layout(t, &l).code()), static_cast<int>(Code::unsupported));
    HierPlan h;
    assert_int_equal(static_cast<int>(plan_nccl_hier_rank(t, 10, 0, PlanOptions{}, &h).code()),
                     static_cast<int>(Code::unsupported));
}

// One rank per host, switches and links kept: the racks fixture's hosts
// n0..n3 (1 Gbit/s) under rack0/rack1 (200 Mbit/s).
static void test_host_level_topology(void** state) {
    (void)state;
    const Topology racks = topoar_test::cluster_two_racks();
    Topology h;
    assert_true(host_level_topology(racks, &h).is_ok());
    assert_int_equal(h.num_ranks(), 4);
    assert_int_equal(h.nodes_at(Level::node).size(), 4);
    assert_int_equal(h.nodes_at(Level::rack).size(), 2);
    for (int k = 0; k < 4; ++k) {
        const TopoNode& host = h.node(h.node_of_rank(k));
        assert_string_equal(host.name.c_str(), ("n" + std::to_string(k)).c_str());
        assert_true(host.up.bandwidth == topoar_test::k1Gbit);
        assert_true(h.node(host.parent).up.bandwidth == topoar_test::k200Mbit);
    }
    // One host: one rank.
    assert_true(host_level_topology(hosts_topology({4}), &h).is_ok());
    assert_int_equal(h.num_ranks(), 1);
}

// The header's worked example: hosts {0,1,2}, {3,4}, {5}, 10 elements.
static void test_header_example(void** state) {
    (void)state;
    const Topology topo = hosts_topology({3, 2, 1});
    HierPlan a, b, c;
    assert_true(plan_nccl_hier_rank(topo, 10, 0, PlanOptions{}, &a).is_ok());
    assert_true(plan_nccl_hier_rank(topo, 10, 3, PlanOptions{}, &b).is_ok());
    assert_true(plan_nccl_hier_rank(topo, 10, 5, PlanOptions{}, &c).is_ok());
    assert_int_equal(a.shards, 3);
    assert_int_equal(a.scatter.size(), 2);
    expect_coll(a.scatter[0], K::reduce_scatter, 0, 3, -1);
    expect_coll(a.scatter[1], K::reduce, 9, 1, 2);
    expect_coll(a.gather[0], K::all_gather, 0, 3, -1);
    expect_coll(a.gather[1], K::broadcast, 9, 1, 2);
    assert_int_equal(b.scatter.size(), 2);
    expect_coll(b.scatter[0], K::reduce_scatter, 0, 3, -1);
    expect_coll(b.scatter[1], K::reduce, 6, 4, 0);
    expect_coll(b.gather[1], K::broadcast, 6, 4, 0);
    assert_true(c.scatter.empty() && c.gather.empty());
    // Owners: rank 0 shard 0; rank 3 shards 0 and 2; rank 5 all three.
    assert_int_equal(a.owned.size(), 1);
    assert_int_equal(a.owned[0].shard, 0);
    assert_int_equal(b.owned.size(), 2);
    assert_true(b.owned[0].shard == 0 && b.owned[1].shard == 2);
    assert_true(b.owned[1].offset == 6 && b.owned[1].count == 4);
    assert_int_equal(c.owned.size(), 3);
    // Peers across hosts: shard 2 among {2, 3, 5}.
    for (const Round& r : c.owned[2].schedule.rounds)
        for (const Op& op : r.ops) assert_true(op.peer == 2 || op.peer == 3);
    for (const Round& r : b.owned[1].schedule.rounds)
        for (const Op& op : r.ops) assert_true(op.peer == 2 || op.peer == 5);
    // Equal hosts, divisible count: one reduce-scatter, one all-gather.
    HierPlan e;
    assert_true(plan_nccl_hier_rank(hosts_topology({4, 4}), 1000, 5, PlanOptions{}, &e).is_ok());
    assert_int_equal(e.scatter.size(), 1);
    expect_coll(e.scatter[0], K::reduce_scatter, 0, 250, -1);
    assert_int_equal(e.owned.size(), 1);
    assert_true(e.owned[0].shard == 1 && e.owned[0].offset == 250 && e.owned[0].count == 250);
    // Fewer elements than shards: only the last shard has any, reduced to
    // its owner.
    assert_true(plan_nccl_hier_rank(hosts_topology({4, 4}), 3, 7, PlanOptions{}, &e).is_ok());
    assert_int_equal(e.scatter.size(), 1);
    expect_coll(e.scatter[0], K::reduce, 0, 3, 3);
    assert_int_equal(e.owned.size(), 1);
    assert_int_equal(e.owned[0].shard, 3);
    // Across hosts: the latency algorithm for small shards, trees above.
    PlanOptions o;
    o.hier_small_elems = 100;
    assert_true(hier_inter_algorithm(o, 100) == Algorithm::leader);
    assert_true(hier_inter_algorithm(o, 101) == Algorithm::tree);
    o.hier_inter = Algorithm::ring;
    assert_true(hier_inter_algorithm(o, 1) == Algorithm::ring);
    o.hier_inter = Algorithm::nccl;
    assert_int_equal(static_cast<int>(plan_nccl_hier_rank(hosts_topology({2, 2}), 100, 0, o, &e).code()),
                     static_cast<int>(Code::invalid_argument));
}

// The table's planner: a valid plan, every element reduced once by one
// rank, exact and bit-identical when the host executor runs it.
static void test_model_plan(void** state) {
    (void)state;
    for (const Topology& topo : topologies()) {
        const int p = topo.num_ranks();
        for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(7), std::size_t(10),
                                  std::size_t(1001)}) {
            Plan plan;
            Status s = make_plan(Algorithm::nccl_hier, topo, count, -1, PlanOptions{}, &plan);
            if (!s) fail_msg("%d ranks, %zu: %s", p, count, s.message().c_str());
            assert_int_equal(static_cast<int>(plan.algorithm), static_cast<int>(Algorithm::nccl_hier));
            s = validate_plan(plan);
            if (!s) fail_msg("%d ranks, %zu: %s", p, count, s.message().c_str());
            auto check = topoar_test::check_plan_semantics(plan);
            if (!check.ok) fail_msg("%d ranks, %zu: %s", p, count, check.error.c_str());
            if (p > 1)
                for (std::size_t i = 0; i < count; ++i)
                    if (check.final_reducers[i] != 1)
                        fail_msg("%d ranks, %zu: element %zu completed by %d ranks", p, count, i,
                                 check.final_reducers[i]);
            if (count == 0 || p == 1) continue;
            std::vector<std::vector<std::int64_t>> bufs(static_cast<std::size_t>(p));
            for (int r = 0; r < p; ++r)
                for (std::size_t i = 0; i < count; ++i) bufs[static_cast<std::size_t>(r)].push_back(r * 100003 + i);
            topoar_test::SumReducer<std::int64_t> sum;
            auto errors = topoar_test::run_ranks<std::int64_t>(
                [&](int r, Plan* out) { return make_plan(Algorithm::nccl_hier, topo, count, r, PlanOptions{}, out); },
                bufs, sum, 3);
            if (!errors.empty()) fail_msg("%d ranks, %zu: %s", p, count, errors[0].c_str());
            for (std::size_t i = 0; i < count; ++i) {
                std::int64_t want = 0;
                for (int r = 0; r < p; ++r) want += r * 100003 + static_cast<std::int64_t>(i);
                for (int r = 0; r < p; ++r)
                    if (bufs[static_cast<std::size_t>(r)][i] != want)
                        fail_msg("%d ranks, %zu: rank %d element %zu wrong", p, count, r, i);
            }
        }
    }
}

// What the model predicts is what runs: each rank's rounds between the
// host phases are its HierPlan's shard schedules, in order, shifted to the
// shards' offsets.
static void test_model_plan_is_what_runs(void** state) {
    (void)state;
    for (const Topology& topo : topologies())
        for (std::size_t count : {std::size_t(5), std::size_t(1001)}) {
            Plan plan;
            assert_true(make_plan(Algorithm::nccl_hier, topo, count, -1, PlanOptions{}, &plan).is_ok());
            for (int r = 0; r < topo.num_ranks(); ++r) {
                HierPlan h;
                assert_true(plan_nccl_hier_rank(topo, count, r, PlanOptions{}, &h).is_ok());
                std::vector<Round> want;
                for (const HierShard& s : h.owned)
                    for (Round x : s.schedule.rounds) {
                        for (Op& op : x.ops) op.offset += s.offset;
                        want.push_back(x);
                    }
                const auto& got = plan.of(r).rounds;
                const std::size_t first = h.scatter.empty() ? 0 : 1;
                assert_int_equal(got.size(), first + want.size() + (h.gather.empty() ? 0 : 1));
                for (std::size_t i = 0; i < want.size(); ++i) {
                    const auto& a = got[first + i].ops;
                    const auto& b = want[i].ops;
                    assert_int_equal(a.size(), b.size());
                    for (std::size_t k = 0; k < a.size(); ++k)
                        assert_true(a[k].kind == b[k].kind && a[k].peer == b[k].peer && a[k].offset == b[k].offset &&
                                    a[k].count == b[k].count);
                }
            }
        }
}

// The engine: nccl_hier forced prepares its plan for device buffers (and
// the built-in plan along with it), refuses host buffers, and without a
// host level says why and keeps only the built-in plan.
static void test_engine_prepares_hier(void** state) {
    (void)state;
    std::vector<RankInfo> ranks(5);
    for (int r = 0; r < 5; ++r) ranks[static_cast<std::size_t>(r)].host = r < 3 ? "a" : "b";
    EngineConfig cfg;
    assert_true(set_param(&cfg, "allreduce_algorithm", "nccl_hier").is_ok());
    Engine e(3, 5, cfg);
    assert_true(e.setup(ranks).is_ok());
    PreparedCall call;
    assert_true(e.prepare(1000, 8, MemType::cuda, &call).is_ok());
    assert_int_equal(static_cast<int>(call.algorithm), static_cast<int>(Algorithm::nccl_hier));
    assert_int_not_equal(static_cast<int>(call.plan_algorithm), static_cast<int>(Algorithm::nccl_hier));
    assert_non_null(call.plan.get());
    assert_non_null(call.hier.get());
    assert_int_equal(call.hier->host, 1);
    assert_int_equal(call.hier->local, 0);
    int host = -1, local = -1, hosts = -1;
    assert_true(e.host_position(&host, &local, &hosts).is_ok());
    assert_true(host == 1 && local == 0 && hosts == 2);
    assert_int_equal(static_cast<int>(e.prepare(1000, 8, MemType::host, &call).code()),
                     static_cast<int>(Code::unsupported));
    // Chunked: one plan per chunk size.
    EngineConfig chunked = cfg;
    assert_true(set_param(&chunked, "chunk_size", "4096").is_ok());
    Engine c(0, 5, chunked);
    assert_true(c.setup(ranks).is_ok());
    assert_true(c.prepare(1000, 8, MemType::cuda, &call).is_ok());
    assert_non_null(call.hier.get());
    assert_non_null(call.hier_tail.get());
    assert_int_equal(call.hier->count, 512);
    assert_int_equal(call.hier_tail->count, 1000 - 512);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_and_shards),
        cmocka_unit_test(test_host_level_topology),
        cmocka_unit_test(test_header_example),
        cmocka_unit_test(test_model_plan),
        cmocka_unit_test(test_model_plan_is_what_runs),
        cmocka_unit_test(test_engine_prepares_hier),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
