// Unit tests of the engine's plans and host executor (no MPI).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>


#include "core/units.hpp"
#include "engine.hpp"
#include "exec/executor.hpp"
#include "exec_harness.hpp"
#include "fake_transport.hpp"
#include "model/cost_model.hpp"
#include "model/default_table.hpp"
#include "plan_check.hpp"
#include "planners/planners.hpp"
#include "config/params.h"
#include "topoar_engine.h"

// cmocka last: its macros (fail, ...) clash with the C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

#include "cluster_fixtures.hpp"
using topoar_test::hosts_topology;

using namespace topoar;
using topoar_test::check_plan_semantics;

namespace {

const int kRankCounts[] = {1, 2, 3, 4, 5, 7, 8, 11, 13, 16};

std::vector<std::size_t> counts_for(int p) {
    return {0, 1, static_cast<std::size_t>(p > 1 ? p - 1 : 1), static_cast<std::size_t>(p),
            static_cast<std::size_t>(p + 1), 7, 1001};
}

void expect_valid(const Plan& plan, bool reduced_once) {
    Status s = validate_plan(plan);
    if (!s) fail_msg("p=%d count=%zu: %s", plan.nranks, plan.count, s.message().c_str());
    auto check = check_plan_semantics(plan);
    if (!check.ok) fail_msg("p=%d count=%zu: %s", plan.nranks, plan.count, check.error.c_str());
    if (reduced_once && plan.nranks > 1)
        for (std::size_t i = 0; i < plan.count; ++i)
            if (check.final_reducers[i] != 1)
                fail_msg("p=%d count=%zu: element %zu completed by %d ranks, expected exactly one owner",
                         plan.nranks, plan.count, i, check.final_reducers[i]);
}

}  // namespace

static void test_split_range_covers_exactly(void** state) {
    (void)state;
    for (std::size_t parts = 1; parts < 20; ++parts)
        for (std::size_t count : {0u, 1u, 5u, 19u, 20u, 21u, 1000u}) {
            std::size_t next = 0, lo = SIZE_MAX, hi = 0;
            for (std::size_t i = 0; i < parts; ++i) {
                Range r = split_range(count, parts, i);
                assert_int_equal(r.offset, next);
                next += r.count;
                lo = std::min(lo, r.count);
                hi = std::max(hi, r.count);
            }
            assert_int_equal(next, count);
            assert_true(hi - lo <= 1);
        }
}

static void test_ring_plan_invariants(void** state) {
    (void)state;
    for (int p : kRankCounts)
        for (std::size_t n : counts_for(p)) expect_valid(plan_ring(p, n, -1), true);
}

static void test_ring_plan_shape(void** state) {
    (void)state;
    // Bandwidth optimality: with count divisible by p, every rank sends
    // exactly 2(p-1)/p of the vector in 2(p-1) rounds.
    for (int p : {2, 3, 5, 8}) {
        std::size_t n = static_cast<std::size_t>(p) * 10;
        Plan plan = plan_ring(p, n, -1);
        for (int r = 0; r < p; ++r) {
            std::size_t sent = 0;
            for (const auto& round : plan.of(r).rounds)
                for (const auto& op : round.ops)
                    if (op.kind == OpKind::send) sent += op.count;
            assert_int_equal(plan.num_rounds(r), 2 * (p - 1));
            assert_int_equal(sent, 2 * (p - 1) * 10);
        }
    }
}

static void test_ring_follows_given_order(void** state) {
    (void)state;
    std::vector<int> order = {0, 3, 1, 4, 2};  // e.g. node A = {0,1,2}? any permutation
    Plan plan = plan_ring(5, 50, -1, order);
    expect_valid(plan, true);
    // Every message goes to the successor in `order`.
    for (std::size_t pos = 0; pos < order.size(); ++pos)
        for (const auto& round : plan.of(order[pos]).rounds)
            for (const auto& op : round.ops)
                if (op.kind == OpKind::send) assert_int_equal(op.peer, order[(pos + 1) % order.size()]);
}


// The algorithm table (algorithm.hpp) and what is generated from it.
static void test_algorithm_table(void** state) {
    (void)state;
    const AlgorithmInfo* t = algorithm_table();
    for (int i = 0; i < kNumAlgorithms; ++i) {
        assert_int_equal(static_cast<int>(t[i].id), i);
        Algorithm back;
        assert_true(algorithm_from_name(t[i].name, &back));
        assert_int_equal(static_cast<int>(back), i);
        if (t[i].alias) {
            assert_true(algorithm_from_name(t[i].alias, &back));
            assert_int_equal(static_cast<int>(back), i);
        }
        assert_true(std::strlen(t[i].description) > 0);
        for (int j = 0; j < i; ++j) assert_string_not_equal(t[i].name, t[j].name);
    }
    // The numbers are MPI_T values: never renumbered.
    assert_string_equal(algorithm_name(Algorithm::automatic), "auto");
    assert_int_equal(static_cast<int>(Algorithm::ring), 1);
    assert_int_equal(static_cast<int>(Algorithm::leader), 2);
    assert_int_equal(static_cast<int>(Algorithm::hring), 3);
    assert_int_equal(static_cast<int>(Algorithm::flexreduce), 4);
    assert_int_equal(static_cast<int>(Algorithm::tree), 5);
    // The latency algorithm's old name still reads.
    Algorithm a;
    assert_true(algorithm_from_name("recursive_doubling", &a));
    assert_int_equal(static_cast<int>(a), static_cast<int>(Algorithm::leader));
    assert_false(algorithm_from_name("bogus", &a));
    assert_string_equal(algorithm_name(static_cast<Algorithm>(kNumAlgorithms)), "unknown");
    // The model's candidates: every concrete algorithm with a simplicity,
    // simplest (the latency algorithm) first.
    std::vector<Algorithm> c = model_candidates();
    assert_false(c.empty());
    assert_int_equal(static_cast<int>(c.front()), static_cast<int>(Algorithm::leader));
    for (std::size_t i = 1; i < c.size(); ++i)
        assert_true(algorithm_info(c[i - 1]).simplicity <= algorithm_info(c[i]).simplicity);
    // Every host algorithm plans a valid plan through make_plan, on one
    // host and across hosts, and the plan says which algorithm it is; a
    // device-only one refuses to plan (the GPU path runs it).
    assert_int_equal(static_cast<int>(Algorithm::nccl), 6);
    assert_true(algorithm_info(Algorithm::nccl).device_only);
    assert_int_equal(static_cast<int>(Algorithm::nccl_hier), 7);
    assert_true(algorithm_info(Algorithm::nccl_hier).device_only);
    assert_int_equal(static_cast<int>(host_algorithms().size()) + 2, static_cast<int>(concrete_algorithms().size()));
    // Device-only rows are never host-table candidates; nccl_hier (with a
    // simplicity) is a device-table one, after every host candidate.
    for (Algorithm a : c) assert_false(algorithm_info(a).device_only);
    {
        std::vector<Algorithm> d = device_model_candidates();
        assert_int_equal(d.size(), c.size() + 1);
        assert_true(std::vector<Algorithm>(d.begin(), d.end() - 1) == c);
        assert_int_equal(static_cast<int>(d.back()), static_cast<int>(Algorithm::nccl_hier));
    }
    {
        Plan p;
        assert_int_equal(static_cast<int>(make_plan(Algorithm::nccl, hosts_topology({2}), 4, -1, PlanOptions{}, &p).code()),
                         static_cast<int>(Code::unsupported));
    }
    for (Algorithm alg : host_algorithms()) {
        for (const Topology& topo : {hosts_topology({5}), hosts_topology({2, 3, 1})}) {
            for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(1000)}) {
                Plan plan;
                Status st = make_plan(alg, topo, n, -1, PlanOptions{}, &plan);
                if (!st) fail_msg("%s: %s", algorithm_name(alg), st.message().c_str());
                assert_int_equal(static_cast<int>(plan.algorithm), static_cast<int>(alg));
                expect_valid(plan, false);
            }
        }
    }
    Plan plan;
    assert_int_equal(static_cast<int>(make_plan(Algorithm::automatic, hosts_topology({2}), 4, -1,
                                                        PlanOptions{}, &plan).code()),
                     static_cast<int>(Code::unsupported));
}

// halving: in topology order the reduce-scatter halves by doubling
// distance, so the largest halves go to the nearest ranks and a host's link
// carries its ranks' share of the vector, not the vector per rank.  On
// hosts of 1, 1 and 2 ranks the third host's link carries exactly the
// vector each way (the distance-halving order sent it twice); the first
// two hosts exchange half the vector between themselves.  Five ranks fold
// one rank into its neighbour first and hand it the result last.
static void test_halving_plan(void** state) {
    (void)state;
    const std::size_t n = 1024;
    {
        const Topology topo = hosts_topology({1, 1, 2});
        Plan plan;
        assert_true(make_plan(Algorithm::halving, topo, n, -1, PlanOptions{}, &plan).is_ok());
        expect_valid(plan, false);
        std::vector<std::size_t> out(3, 0), in(3, 0);
        for (int r = 0; r < plan.nranks; ++r)
            for (const Round& rd : plan.of(r).rounds)
                for (const Op& op : rd.ops) {
                    const int a = topo.node_of_rank(r), b = topo.node_of_rank(op.peer);
                    if (a == b) continue;
                    const int h = r < 2 ? r : 2;  // hosts h0, h1, h2 in rank order
                    (op.kind == OpKind::send ? out : in)[static_cast<std::size_t>(h)] += op.count;
                }
        assert_int_equal(out[2], n);
        assert_int_equal(in[2], n);
        // h0: n/2 to h1 (the first halving), n/4 to h2; the same back.
        assert_int_equal(out[0], n / 2 + n / 4 + n / 4 + n / 2);
        assert_int_equal(in[0], out[0]);
        // log2(4) rounds each way.
        assert_int_equal(static_cast<int>(plan.num_rounds(0)), 4);
    }
    {
        Plan plan;
        assert_true(make_plan(Algorithm::halving, hosts_topology({2, 3}), n, -1, PlanOptions{}, &plan).is_ok());
        expect_valid(plan, false);
        // Rank 0 sends its vector to rank 1 and receives the result: two rounds.
        assert_int_equal(static_cast<int>(plan.num_rounds(0)), 2);
        assert_int_equal(static_cast<int>(plan.num_rounds(1)), 6);
    }
}

// The parameter table (params.hpp): defaults parse, names are unique,
// set_param reaches the config.
static void test_param_table(void** state) {
    (void)state;
    const auto& t = param_table();
    // The engine's rows first, then the glue's own, which the engine never
    // parses; every row's index is its fingerprint slot (at most
    // TOPOAR_PARAM_MAX rows).
    const std::size_t engine_rows = engine_param_count();
    assert_true(engine_rows > 0 && t.size() <= TOPOAR_PARAM_MAX);
    std::size_t glue_rows = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
        assert_true(find_param(t[i].name) == &t[i]);
        assert_true(t[i].level >= 1 && t[i].level <= 9);
        assert_false(t[i].help.empty());
        assert_int_equal(t[i].glue_only, i >= engine_rows);
        topoar_param_glue_t g;
        assert_int_equal(topoar_param_glue(static_cast<int>(i), &g), TOPOAR_OK);
        assert_int_equal(g.glue_only, t[i].glue_only ? 1 : 0);
        assert_int_equal(g.scope, static_cast<int>(t[i].scope));
        if (t[i].glue_only) {
            ++glue_rows;
            assert_null(t[i].parse);
            // The glue's rows whose help asks for one value on all ranks
            // are compared at set-up like the engine's, and none of them
            // may change at run time (the glue keeps their texts).
            assert_int_equal(t[i].must_agree, t[i].help.find("Must be the same on all ranks") != std::string::npos);
            if (t[i].must_agree) assert_false(t[i].settable);
        } else {
            assert_non_null(t[i].parse);
            assert_int_equal(static_cast<int>(t[i].scope), static_cast<int>(ParamScope::all));
        }
        // A keyword row's default is one of its keywords.
        assert_int_equal(t[i].type == ParamType::keyword, t[i].keywords != nullptr);
        bool known = t[i].type != ParamType::keyword;
        for (int k = 0; t[i].keywords && t[i].keywords[k]; ++k)
            known = known || std::strcmp(t[i].keywords[k], t[i].default_value) == 0;
        assert_true(known);
        EngineConfig c;
        Status s = set_param(&c, t[i].name, t[i].default_value);
        if (!s) fail_msg("%s: default '%s': %s", t[i].name, t[i].default_value, s.message().c_str());
    }
    // priority, verbose, the GPU path's seven, barrier and barrier_trial.
    assert_int_equal(glue_rows, 11);
    assert_true(find_param("priority")->glue_only && find_param("cuda_aware_mpi")->glue_only &&
                find_param("barrier")->glue_only);
    assert_int_not_equal(topoar_param_glue(static_cast<int>(t.size()), nullptr), TOPOAR_OK);
    EngineConfig c;
    assert_int_equal(c.segment_size, 32768);
    assert_int_equal(c.pipeline_size, 32768);
    assert_int_equal(c.small_msg_size, 65536);
    assert_true(c.single_node_fallback && c.model_table);
    assert_true(std::fabs(c.model_overhead - 40e-6) < 1e-15);
    assert_true(std::fabs(c.model_margin - 0.15) < 1e-15);
    assert_int_equal(CostParams{}.segment_bytes, c.segment_size);
    assert_true(DefaultTableOptions{}.min_gain == c.model_margin);
    assert_true(set_param(&c, "segment_size", "4096").is_ok());
    assert_int_equal(c.segment_size, 4096);
    assert_true(set_param(&c, "allreduce_algorithm", "recursive_doubling").is_ok());
    assert_int_equal(static_cast<int>(c.algorithm), static_cast<int>(Algorithm::leader));
    assert_true(set_param(&c, "allreduce_algorithm", "3").is_ok());
    assert_int_equal(static_cast<int>(c.algorithm), static_cast<int>(Algorithm::hring));
    assert_false(set_param(&c, "allreduce_algorithm", "99").is_ok());
    assert_false(set_param(&c, "single_node_fallback", "maybe").is_ok());
    assert_false(set_param(&c, "no_such_thing", "1").is_ok());
    Status s = set_param(&c, "node_link", "fast");
    assert_false(s.is_ok());
    assert_non_null(std::strstr(s.message().c_str(), "coll_topoar_node_link 'fast'"));
    // Fingerprints: equal values agree, different values or file contents
    // do not.
    const ParamInfo* seg = find_param("segment_size");
    assert_true(param_fingerprint(*seg, "4096") == param_fingerprint(*seg, "4096"));
    assert_true(param_fingerprint(*seg, "4096") != param_fingerprint(*seg, "32768"));
    assert_true(param_fingerprint(*seg, "") == param_fingerprint(*seg, "32768"));  // "" is the default
    const ParamInfo* rules = find_param("rules_file");
    assert_true(rules->names_file && rules->must_agree);
    char path[] = "/tmp/topoar-test-rules-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_true(write(fd, "a", 1) == 1);
    std::uint64_t one = param_fingerprint(*rules, path);
    assert_true(write(fd, "b", 1) == 1);
    close(fd);
    assert_true(param_fingerprint(*rules, path) != one);
    unlink(path);
    assert_true(param_fingerprint(*rules, path) != one);  // unreadable
}

static void test_recursive_doubling_plan(void** state) {
    (void)state;
    for (int p : kRankCounts)
        for (std::size_t n : counts_for(p)) expect_valid(plan_recursive_doubling(p, n, -1), false);
    // Latency optimality: ceil(log2 p) exchange rounds, plus fold/unfold.
    Plan p8 = plan_recursive_doubling(8, 4, -1);
    for (int r = 0; r < 8; ++r) assert_int_equal(p8.num_rounds(r), 3);
    Plan p6 = plan_recursive_doubling(6, 4, -1);
    assert_int_equal(p6.num_rounds(0), 2);  // fold out, result back
    assert_int_equal(p6.num_rounds(1), 4);  // fold in, 2 exchanges, unfold
}

static void test_only_rank_keeps_the_same_schedule(void** state) {
    (void)state;
    Plan full = plan_ring(7, 100, -1);
    for (int r = 0; r < 7; ++r) {
        Plan mine = plan_ring(7, 100, r);
        assert_int_equal(mine.num_rounds(r), full.num_rounds(r));
        assert_string_equal(describe_schedule(mine, r).c_str(), describe_schedule(full, r).c_str());
        for (int q = 0; q < 7; ++q)
            if (q != r) assert_int_equal(mine.num_rounds(q), 0);
    }
}

static void test_validate_rejects_broken_plans(void** state) {
    (void)state;
    Plan plan = plan_ring(4, 40, -1);
    plan.ranks[1].rounds[0].ops.pop_back();  // drop a receive
    assert_false(validate_plan(plan).is_ok());
    Plan p2 = plan_ring(4, 40, -1);
    p2.ranks[2].rounds[0].ops[0].offset = 39;  // out of range
    assert_false(validate_plan(p2).is_ok());
    // Semantics: reducing a contribution twice is caught.
    PlanBuilder b(Algorithm::ring, 2, 4);
    b.transfer(0, 0, 1, 0, 4, OpKind::recv_reduce);
    b.transfer(1, 0, 1, 0, 4, OpKind::recv_reduce);
    assert_false(check_plan_semantics(b.finish()).ok);
}

// ---- executor over the fake transport, P ranks as threads ----------------

namespace {

using topoar_test::OrderedReducer;
using topoar_test::SumReducer;

using topoar_test::run_all;  // exec_harness.hpp

void check_exact_sums(const std::function<Plan(int, int, std::size_t)>& planner, std::size_t seg) {
    for (int p : {1, 2, 3, 5, 8}) {
        for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(p > 1 ? p - 1 : 1), std::size_t(7),
                              std::size_t(1001), std::size_t(100000)}) {
            std::vector<std::vector<std::int64_t>> bufs(static_cast<std::size_t>(p), std::vector<std::int64_t>(n));
            for (int r = 0; r < p; ++r)
                for (std::size_t i = 0; i < n; ++i) bufs[static_cast<std::size_t>(r)][i] = (r + 1) * 1000003LL + static_cast<long long>(i);
            SumReducer<std::int64_t> sum;
            run_all<std::int64_t>([&](int r) { return planner(p, r, n); }, bufs, sum, seg);
            for (int r = 0; r < p; ++r)
                for (std::size_t i = 0; i < n; ++i) {
                    std::int64_t want = 1000003LL * p * (p + 1) / 2 + static_cast<long long>(i) * p;
                    if (bufs[static_cast<std::size_t>(r)][i] != want)
                        fail_msg("p=%d n=%zu seg=%zu rank %d elem %zu: got %lld want %lld", p, n, seg, r, i,
                                 static_cast<long long>(bufs[static_cast<std::size_t>(r)][i]), static_cast<long long>(want));
                }
        }
    }
}

void check_bit_identical(const std::function<Plan(int, int, std::size_t)>& planner) {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> dist(-1e6, 1e6);
    for (int p : {3, 6, 7}) {
        std::size_t n = 997;
        std::vector<std::vector<double>> bufs(static_cast<std::size_t>(p), std::vector<double>(n));
        for (auto& b : bufs)
            for (auto& x : b) x = dist(rng) / 3.0;
        SumReducer<double> sum;
        run_all<double>([&](int r) { return planner(p, r, n); }, bufs, sum, 100);
        for (int r = 1; r < p; ++r) assert_memory_equal(bufs[0].data(), bufs[static_cast<std::size_t>(r)].data(), n * sizeof(double));

        std::vector<std::vector<std::uint64_t>> obufs(static_cast<std::size_t>(p), std::vector<std::uint64_t>(n));
        for (int r = 0; r < p; ++r)
            for (std::size_t i = 0; i < n; ++i) obufs[static_cast<std::size_t>(r)][i] = static_cast<std::uint64_t>(r + 1) * 7919 + i;
        OrderedReducer ordered;
        run_all<std::uint64_t>([&](int r) { return planner(p, r, n); }, obufs, ordered, 0);
        for (int r = 1; r < p; ++r) assert_memory_equal(obufs[0].data(), obufs[static_cast<std::size_t>(r)].data(), n * 8);
    }
}

Plan ring_of(int p, int r, std::size_t n) { return plan_ring(p, n, r); }
Plan rd_of(int p, int r, std::size_t n) { return plan_recursive_doubling(p, n, r); }

}  // namespace

static void test_executor_ring_exact(void** state) {
    (void)state;
    check_exact_sums(ring_of, 0);
    check_exact_sums(ring_of, 3);  // many segments per message
}

static void test_executor_rd_exact(void** state) {
    (void)state;
    check_exact_sums(rd_of, 0);
    check_exact_sums(rd_of, 64);
}

static void test_executor_bit_identical(void** state) {
    (void)state;
    check_bit_identical(ring_of);
    check_bit_identical(rd_of);
}

static void test_executor_reports_transport_errors(void** state) {
    (void)state;
    // A receive larger than the message is a truncation error, not a hang
    // or silent corruption.
    topoar_test::FakeNetwork net(2);
    PlanBuilder b(Algorithm::ring, 2, 4);
    b.transfer(0, 0, 1, 0, 4, OpKind::recv_copy);
    Plan plan = b.finish();
    std::vector<std::int32_t> buf0(4, 1), buf1(4, 0);
    topoar_test::FakeTransport t0(net, 0), t1(net, 1);
    SumReducer<std::int32_t> sum;
    Executor ex;
    assert_true(ex.run(plan.of(0), buf0.data(), nullptr, sizeof(std::int32_t), 0, t0, sum).is_ok());
    // Rank 1 believes elements are 8 bytes: sizes disagree.
    Status s = ex.run(plan.of(1), buf1.data(), nullptr, 8, 0, t1, sum);
    assert_false(s.is_ok());
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::transport_error));
}

static void test_auto_hands_single_host_down(void** state) {
    (void)state;
    std::vector<RankInfo> one_host(3), two_hosts(3);
    for (auto& r : one_host) r.host = "a";
    two_hosts[0].host = "a";
    two_hosts[1].host = "a";
    two_hosts[2].host = "b";
    topoar_test::FakeNetwork net(3);
    topoar_test::FakeTransport t(net, 0);
    SumReducer<double> sum;
    std::vector<double> buf(16, 1.0);
    Algorithm used = Algorithm::automatic;

    Engine single(0, 3, EngineConfig{});
    assert_true(single.setup(one_host).is_ok());
    Status s = single.allreduce(buf.data(), buf.size(), sizeof(double), t, sum, &used);
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::unsupported));
    assert_int_equal(net.messages(), 0);  // decided before anything moved
    // hands_down() says so up front, at every size, and agrees with
    // allreduce(); not before set-up, not on two hosts, not when kept.
    for (std::size_t bytes : {std::size_t(0), std::size_t(8), std::size_t(1) << 20, std::size_t(64) << 20})
        assert_true(single.hands_down(bytes));
    Engine unready(0, 3, EngineConfig{});
    assert_false(unready.hands_down(8));
    Engine two(0, 3, EngineConfig{});
    assert_true(two.setup(two_hosts).is_ok());
    assert_false(two.hands_down(8));
    assert_false(two.hands_down(std::size_t(64) << 20));
    EngineConfig forced_cfg;
    forced_cfg.algorithm = Algorithm::ring;
    Engine forced(0, 3, forced_cfg);
    assert_true(forced.setup(one_host).is_ok());
    assert_false(forced.hands_down(8));
    assert_true(single.hands_down_all());
    assert_false(unready.hands_down_all());
    assert_false(two.hands_down_all());
    assert_false(forced.hands_down_all());

    EngineConfig keep;
    keep.single_node_fallback = false;
    Engine kept(0, 3, keep);
    assert_true(kept.setup(one_host).is_ok());
    // Kept on one host, auto runs topoar's own choice (the model table).
    assert_false(kept.model_table().empty());
    assert_int_equal(static_cast<int>(kept.decide(1 << 20, MemType::host).origin), static_cast<int>(Origin::model));
    assert_false(kept.hands_down(8));

    EngineConfig fixed;
    fixed.model_table = false;
    Engine multi(0, 3, fixed);
    assert_true(multi.setup(two_hosts).is_ok());
    assert_true(multi.model_table().empty());
    assert_int_equal(static_cast<int>(multi.choose(8)), static_cast<int>(Algorithm::leader));
    assert_int_equal(static_cast<int>(multi.choose(1 << 20)), static_cast<int>(Algorithm::tree));
    assert_int_equal(static_cast<int>(multi.decide(1 << 20, MemType::host).origin), static_cast<int>(Origin::builtin));
    // Device buffers are never handed down unstaged: on one host they get
    // topoar's built-in choice.
    assert_int_equal(static_cast<int>(single.decide(8, MemType::cuda).origin), static_cast<int>(Origin::builtin));
    assert_int_equal(static_cast<int>(single.decide(8, MemType::cuda).algorithm), static_cast<int>(Algorithm::nccl));
    assert_int_not_equal(static_cast<int>(two.decide(8, MemType::cuda).algorithm), static_cast<int>(Algorithm::nccl));
    {
        // nccl is device-only: a device call carries the built-in plan
        // along (for pairs NCCL cannot reduce); a host call is refused.
        PreparedCall dc;
        assert_true(single.prepare(buf.size(), sizeof(double), MemType::cuda, &dc).is_ok());
        assert_int_equal(static_cast<int>(dc.algorithm), static_cast<int>(Algorithm::nccl));
        assert_int_not_equal(static_cast<int>(dc.plan_algorithm), static_cast<int>(Algorithm::nccl));
        assert_non_null(dc.plan.get());
        EngineConfig nc;
        nc.algorithm = Algorithm::nccl;
        Engine forced_nccl(0, 3, nc);
        assert_true(forced_nccl.setup(two_hosts).is_ok());
        Status hs = forced_nccl.prepare(buf.size(), sizeof(double), MemType::host, &dc);
        assert_int_equal(static_cast<int>(hs.code()), static_cast<int>(Code::unsupported));
        assert_true(forced_nccl.prepare(buf.size(), sizeof(double), MemType::cuda, &dc).is_ok());
        assert_non_null(dc.plan.get());
        // Across hosts, the device table is built at the first device call
        // (not before: host-only programs never pay for it) and decides
        // device calls; host calls keep the host table.
        Engine dev(0, 3, EngineConfig{});
        assert_true(dev.setup(two_hosts).is_ok());
        assert_true(dev.device_table().empty());
        assert_true(dev.prepare(buf.size(), sizeof(double), MemType::host, &dc).is_ok());
        assert_true(dev.device_table().empty());
        assert_true(dev.prepare(buf.size(), sizeof(double), MemType::cuda, &dc).is_ok());
        assert_false(dev.device_table().empty());
        assert_int_equal(static_cast<int>(dc.origin), static_cast<int>(Origin::model));
        for (const Rule& r : dev.device_table().rules())
            assert_int_equal(static_cast<int>(r.mem), static_cast<int>(MemType::cuda));
        // Device plans use coll_topoar_gpu_pipeline_size (1 MiB) instead of
        // pipeline_size (32 KiB): fewer rounds for the same call, cached apart.
        EngineConfig tc;
        tc.algorithm = Algorithm::tree;
        Engine t(0, 3, tc);
        assert_true(t.setup(two_hosts).is_ok());
        const std::size_t n = std::size_t(1) << 21;  // 8 MiB of floats
        PreparedCall hc, gc;
        assert_true(t.prepare(n, 4, MemType::host, &hc).is_ok());
        const std::size_t host_rounds = hc.plan->plan.num_rounds(0);
        assert_true(t.prepare(n, 4, MemType::cuda, &gc).is_ok());
        const std::size_t dev_rounds = gc.plan->plan.num_rounds(0);
        assert_true(dev_rounds < host_rounds);
        assert_true(t.prepare(n, 4, MemType::host, &hc).is_ok());
        assert_int_equal(hc.plan->plan.num_rounds(0), host_rounds);
    }
    assert_int_equal(static_cast<int>(single.decide(8, MemType::host).origin), static_cast<int>(Origin::hand_down));
    // prepare() asks once and says the same; a hand-down has no plan.
    PreparedCall call;
    assert_true(single.prepare(buf.size(), sizeof(double), MemType::host, &call).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::hand_down));
    assert_non_null(call.why);
    assert_null(call.plan.get());
    assert_true(two.prepare(buf.size(), sizeof(double), MemType::host, &call).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::host));
    assert_non_null(call.plan.get());
    assert_int_equal(static_cast<int>(call.algorithm), static_cast<int>(two.choose(buf.size() * sizeof(double))));
}

// n ranks on two hosts: ranks 0 and 1 on "a", the others on "b".
// Within one host: the model's per-message cost is shared memory's
// (assumed, 1 us), not TCP's, and a rank's messages queue on its CPU; so 8
// ranks get recursive doubling for small messages, where TCP's cost and no
// CPU share had made the star of the aggregation tree look cheaper
// (test_cost_model's test_dataflow_cpu_share checks the share alone; on a
// 16-core host that star measured 2.8x tuned's time at 8 B, recursive
// doubling 1.08x: docs/performance.md, "One host of 8 and 16 ranks").
static void test_one_host_message_cost(void** state) {
    (void)state;
    std::vector<RankInfo> ranks(8);
    for (auto& r : ranks) r.host = "a";
    auto choose8 = [&](const char* overhead, const char* share) {
        EngineConfig c;
        assert_true(set_param(&c, "single_node_fallback", "0").is_ok());  // topoar runs one host's calls
        if (overhead) assert_true(set_param(&c, "model_overhead", overhead).is_ok());
        if (share) assert_true(set_param(&c, "model_cpu_share", share).is_ok());
        Engine e(0, 8, c);
        assert_true(e.setup(ranks).is_ok());
        assert_true(e.model_overhead() > 0);
        if (!overhead) assert_true(std::fabs(e.model_overhead() - 1e-6) < 1e-15);
        return e.choose(8);
    };
    assert_int_equal(static_cast<int>(choose8(nullptr, nullptr)), static_cast<int>(Algorithm::leader));
    // The model before: TCP's cost and no share.
    assert_int_equal(static_cast<int>(choose8("40us", "0")), static_cast<int>(Algorithm::tree));
    // Across hosts the assumed cost stays TCP's.
    std::vector<RankInfo> two(5);
    for (int r = 0; r < 5; ++r) two[static_cast<std::size_t>(r)].host = r < 2 ? "a" : "b";
    EngineConfig c;
    assert_true(set_param(&c, "probe", "0").is_ok());
    Engine x(0, 5, c);
    assert_true(x.setup(two).is_ok());
    assert_true(std::fabs(x.model_overhead() - 40e-6) < 1e-15);
}

static std::vector<RankInfo> ranks_on_two_hosts(int n) {
    std::vector<RankInfo> ranks(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) ranks[static_cast<std::size_t>(r)].host = r < 2 ? "a" : "b";
    return ranks;
}

// A call's route (decide/route.hpp): host calls run or are handed down;
// device calls follow what the glue registered (NCCL, per-host
// communicators) and what reduces the pair.  A staged device call runs a
// plan prepared for host memory.
static void test_call_routes(void** state) {
    (void)state;
    std::vector<RankInfo> ranks = ranks_on_two_hosts(4);
    EngineConfig tc;
    tc.algorithm = Algorithm::tree;
    Engine e(0, 4, tc);
    assert_true(e.setup(ranks).is_ok());
    const std::size_t n = std::size_t(1) << 21;  // 8 MiB of floats
    PreparedCall call;
    assert_true(e.prepare(n, 4, MemType::host, &call).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::host));
    const std::size_t host_rounds = call.plan->plan.num_rounds(0);
    assert_true(e.prepare(n, 4, MemType::cuda, &call).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::nccl_plan));
    const std::size_t dev_rounds = call.plan->plan.num_rounds(0);
    assert_true(dev_rounds < host_rounds);
    {
        // A device route never runs on the host executor.
        topoar_test::FakeNetwork net(4);
        topoar_test::FakeTransport t(net, 0);
        topoar_test::SumReducer<float> red;
        std::vector<float> buf(n, 1.0f);
        assert_int_equal(static_cast<int>(e.run(call, buf.data(), t, red).code()),
                         static_cast<int>(Code::internal_error));
    }
    // No kernel for the pair: staged, with the host plan.
    PairCaps no_kernel;
    no_kernel.kernels_reduce = false;
    assert_true(e.prepare(n, 4, MemType::cuda, &call, no_kernel).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::staged));
    assert_int_equal(call.plan->plan.num_rounds(0), host_rounds);
    // No NCCL on the communicator: staged too.
    DeviceCaps no_nccl;
    no_nccl.nccl = false;
    e.set_device_caps(no_nccl);
    assert_true(e.prepare(n, 4, MemType::cuda, &call).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::staged));
    assert_int_equal(call.plan->plan.num_rounds(0), host_rounds);

    // nccl: ncclAllReduce where NCCL reduces the pair, else topoar's plan.
    EngineConfig nc;
    nc.algorithm = Algorithm::nccl;
    Engine ne(0, 4, nc);
    assert_true(ne.setup(ranks).is_ok());
    assert_true(ne.prepare(1000, 4, MemType::cuda, &call).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::nccl_allreduce));
    PairCaps no_nccl_pair;
    no_nccl_pair.nccl_reduces = false;
    assert_true(ne.prepare(1000, 4, MemType::cuda, &call, no_nccl_pair).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::nccl_plan));

    // nccl_hier: its route while its per-host communicators may be made,
    // topoar's plan over NCCL (with the reason) once they cannot.
    EngineConfig hc;
    hc.algorithm = Algorithm::nccl_hier;
    Engine he(0, 4, hc);
    assert_true(he.setup(ranks).is_ok());
    assert_true(he.prepare(1000, 4, MemType::cuda, &call).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::nccl_hier));
    assert_non_null(call.hier.get());
    DeviceCaps no_host;
    no_host.host_comms = false;
    he.set_device_caps(no_host);
    assert_true(he.prepare(1000, 4, MemType::cuda, &call).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::nccl_plan));
    assert_non_null(call.why);

    // The pure rule, every combination that matters.
    const DeviceCaps all;
    const PairCaps both;
    assert_int_equal(static_cast<int>(device_route(Algorithm::nccl_hier, false, all, both)),
                     static_cast<int>(Route::nccl_plan));
    assert_int_equal(static_cast<int>(device_route(Algorithm::nccl_hier, true, all, no_kernel)),
                     static_cast<int>(Route::staged));
    assert_int_equal(static_cast<int>(device_route(Algorithm::nccl, false, no_nccl, both)),
                     static_cast<int>(Route::staged));
    assert_int_equal(static_cast<int>(device_route(Algorithm::tree, true, all, both)),
                     static_cast<int>(Route::nccl_plan));
    // The route table: numbered 0.., every one named.
    for (int r = 0; r < TOPOAR_ROUTE_COUNT; ++r) assert_string_not_equal(topoar_route_name(r), "?");
    assert_string_equal(topoar_route_name(TOPOAR_ROUTE_COUNT), "?");
    assert_int_equal(topoar_size_class(0), 0);
    assert_int_equal(topoar_size_class(1), 0);
    assert_int_equal(topoar_size_class(1023), 9);
    assert_int_equal(topoar_size_class(1024), 10);
}

// A rules file's mem=cuda rule decides device calls only; prepare() carries
// the memory type into the lookup and reports the rule as the origin.
static void test_rules_by_memory_type(void** state) {
    (void)state;
    char path[] = "/tmp/topoar-test-rules-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "# topoar rules v1\nallreduce mem=cuda alg=ring\nallreduce size=0-1K mem=host alg=tree\n"
                        "allreduce size=1K-2K alg=nccl\n";
    assert_int_equal(write(fd, text, sizeof text - 1), static_cast<long>(sizeof text - 1));
    close(fd);
    std::vector<RankInfo> ranks = ranks_on_two_hosts(4);
    EngineConfig cfg;
    cfg.rules_file = path;
    Engine e(0, 4, cfg);
    Status st = e.setup(ranks);
    unlink(path);
    assert_true(st.is_ok());
    PreparedCall call;
    assert_true(e.prepare(1000, 4, MemType::cuda, &call).is_ok());
    assert_int_equal(static_cast<int>(call.algorithm), static_cast<int>(Algorithm::ring));
    assert_int_equal(static_cast<int>(call.origin), static_cast<int>(Origin::rule));
    assert_non_null(std::strstr(Engine::describe_origin(call).c_str(), ":2"));
    assert_true(e.prepare(100, 4, MemType::host, &call).is_ok());
    assert_int_equal(static_cast<int>(call.algorithm), static_cast<int>(Algorithm::tree));
    // nccl named for a host call: the built-in choice runs (falls through).
    assert_true(e.prepare(1500 / 4, 4, MemType::host, &call).is_ok());
    assert_int_equal(static_cast<int>(call.origin), static_cast<int>(Origin::rule));
    assert_true(call.fell_through);
    assert_int_not_equal(static_cast<int>(call.algorithm), static_cast<int>(Algorithm::nccl));
    assert_non_null(call.plan.get());
}

static void test_auto_uses_the_cost_model_table(void** state) {
    (void)state;
    // 2 + 3 ranks on two hosts joined by 200 Mbit/s (scenario 1 of
    // docs/performance.md).
    std::vector<RankInfo> ranks = ranks_on_two_hosts(5);
    EngineConfig cfg;
    assert_true(set_param(&cfg, "node_link", "200Mbit,1us").is_ok());
    Engine e(0, 5, cfg);
    assert_true(e.setup(ranks).is_ok());
    const DecisionTable& t = e.model_table();
    assert_false(t.empty());
    // The table is the one build_default_table makes from the same inputs:
    // every size gets its algorithm from there, origin "cost model".
    DecisionTable expect;
    assert_true(build_default_table(e.topology(), table_options(cfg), &expect).is_ok());
    assert_string_equal(t.to_text("x").c_str(), expect.to_text("x").c_str());
    // Every rank builds the same table without talking.
    for (int r = 1; r < 5; ++r) {
        Engine other(r, 5, cfg);
        assert_true(other.setup(ranks).is_ok());
        assert_string_equal(other.model_table().to_text("x").c_str(), t.to_text("x").c_str());
    }
    for (std::size_t bytes : {8ul, 1000ul, 65536ul, 1ul << 20, 64ul << 20}) {
        Decision c = e.decide(bytes, MemType::host);
        Choice want = expect.lookup(bytes, e.shape(), MemType::host);
        assert_true(want.matched());
        assert_int_equal(static_cast<int>(c.origin), static_cast<int>(Origin::model));
        assert_int_equal(static_cast<int>(c.algorithm), static_cast<int>(want.algorithm));
    }
    // Latency-bound sizes go to the latency algorithm, bandwidth-bound ones
    // to a bandwidth algorithm (on this shape the model says so clearly).
    assert_int_equal(static_cast<int>(e.choose(8)), static_cast<int>(Algorithm::leader));
    assert_int_not_equal(static_cast<int>(e.choose(64ul << 20)), static_cast<int>(Algorithm::leader));
    assert_int_not_equal(static_cast<int>(e.choose(64ul << 20)), static_cast<int>(Algorithm::ring));

    // A forced algorithm builds no table.
    EngineConfig forced = cfg;
    forced.algorithm = Algorithm::hring;
    Engine f(0, 5, forced);
    assert_true(f.setup(ranks).is_ok());
    assert_true(f.model_table().empty());
    assert_int_equal(static_cast<int>(f.decide(8, MemType::host).origin), static_cast<int>(Origin::forced));

    // The overhead moves the latency/bandwidth switch: more per-message
    // cost, latency algorithm up to larger sizes.
    auto last_rd = [&](const char* overhead) {
        EngineConfig c = cfg;
        assert_true(set_param(&c, "model_overhead", overhead).is_ok());
        Engine x(0, 5, c);
        assert_true(x.setup(ranks).is_ok());
        std::size_t last = 0;
        for (std::size_t b = 8; b <= (1u << 20); b *= 2)
            if (x.choose(b) == Algorithm::leader) last = b;
        return last;
    };
    assert_true(last_rd("1us") < last_rd("200us"));

    // A bad value is refused, naming the parameter.
    EngineConfig bad = cfg;
    Status s = set_param(&bad, "model_overhead", "fast");
    assert_false(s.is_ok());
    assert_non_null(std::strstr(s.message().c_str(), "coll_topoar_model_overhead 'fast'"));

    // The margin: a bad value is refused the same way; "15%" builds the
    // default's table ("" keeps the default).
    for (const char* m : {"1.5", "-0.1", "15", "x%", ""}) {
        EngineConfig c = cfg;
        Status st = set_param(&c, "model_margin", m);
        if (*m == 0) {
            assert_true(st.is_ok());
            assert_true(std::fabs(c.model_margin - 0.15) < 1e-15);
            continue;
        }
        assert_false(st.is_ok());
        assert_non_null(std::strstr(st.message().c_str(), "coll_topoar_model_margin"));
    }
    // The CPU share: a fraction up to one half, refused above, naming the
    // parameter.
    assert_true(std::fabs(EngineConfig{}.model_cpu_share - 0.25) < 1e-15);
    for (const char* m : {"60%", "0.51", "-0.1", "x"}) {
        EngineConfig c = cfg;
        Status st = set_param(&c, "model_cpu_share", m);
        assert_false(st.is_ok());
        assert_non_null(std::strstr(st.message().c_str(), "coll_topoar_model_cpu_share"));
    }
    {
        EngineConfig c = cfg;
        assert_true(set_param(&c, "model_cpu_share", "50%").is_ok() && c.model_cpu_share == 0.5);
        assert_true(set_param(&c, "model_cpu_share", "0").is_ok() && c.model_cpu_share == 0);
        assert_true(table_options(c).model.message_cpu_share == 0);
    }
    EngineConfig pct = cfg;
    assert_true(set_param(&pct, "model_margin", "15%").is_ok());
    Engine y(0, 5, pct);
    assert_true(y.setup(ranks).is_ok());
    assert_string_equal(y.model_table().to_text("x").c_str(), t.to_text("x").c_str());
    double frac = -1;
    assert_true(parse_fraction("15%", &frac).is_ok());
    assert_true(std::fabs(frac - 0.15) < 1e-15);
    assert_true(parse_fraction(" 0.25 ", &frac).is_ok());
    assert_true(std::fabs(frac - 0.25) < 1e-15);
    assert_true(parse_fraction("0", &frac).is_ok() && frac == 0);
    assert_false(parse_fraction("100%", &frac).is_ok());
    assert_false(parse_fraction("%", &frac).is_ok());
}

namespace {

// The dependency rule of compile_schedule (executor.cpp), stated directly
// over all pairs of steps: the compiler finds the same sets through an
// index of element ranges, which this checks.
std::vector<std::vector<std::uint32_t>> reference_deps(const ExecProgram& prog) {
    auto recv = [](OpKind k) { return k != OpKind::send; };
    const std::size_t n = prog.steps.size();
    std::vector<std::vector<std::uint32_t>> deps(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto& s = prog.steps[i];
        std::size_t end = recv(s.kind) ? prog.round_begin[static_cast<std::size_t>(s.round) + 1] : i;
        for (std::size_t j = 0; j < end; ++j) {
            const auto& t = prog.steps[j];
            if (j == i || !(s.offset < t.offset + t.count && t.offset < s.offset + s.count)) continue;
            bool dep = s.kind == OpKind::send ? (recv(t.kind) && t.round < s.round)
                                              : (j < i ? (recv(t.kind) || t.round <= s.round) : t.kind == OpKind::send);
            if (dep) deps[i].push_back(static_cast<std::uint32_t>(j));
        }
    }
    return deps;
}

void expect_reference_deps(const RankSchedule& rs, std::size_t seg, const char* what) {
    ExecProgram prog = compile_schedule(rs, seg, 8);
    auto ref = reference_deps(prog);
    for (std::size_t i = 0; i < prog.steps.size(); ++i) {
        if (prog.steps[i].deps != ref[i]) fail_msg("%s seg %zu: step %zu has other dependencies than the rule", what, seg, i);
        bool direct = prog.steps[i].kind == OpKind::recv_copy && ref[i].empty();
        if ((prog.direct[i] != 0) != direct) fail_msg("%s seg %zu: step %zu direct flag wrong", what, seg, i);
    }
}

}  // namespace

static void test_compiled_dependencies_follow_the_rule(void** state) {
    (void)state;
    for (int p : {2, 3, 5, 8})
        for (std::size_t count : {1ul, 7ul, 1001ul})
            for (std::size_t seg : {0ul, 1ul, 64ul}) {
                Plan ring = plan_ring(p, count, -1), rd = plan_recursive_doubling(p, count, -1);
                for (int r = 0; r < p; ++r) {
                    expect_reference_deps(ring.of(r), seg, "ring");
                    expect_reference_deps(rd.of(r), seg, "recursive doubling");
                }
            }
    // Random schedules with overlapping, uneven ranges and every op kind.
    std::mt19937 gen(12345);
    auto pick = [&gen](unsigned m) { return static_cast<unsigned>(gen() % m); };
    for (int it = 0; it < 2000; ++it) {
        RankSchedule rs;
        for (unsigned r = 0, nr = 1 + pick(6); r < nr; ++r) {
            Round round;
            for (unsigned k = 0, no = 1 + pick(5); k < no; ++k)
                round.ops.push_back(Op{static_cast<OpKind>(pick(3)), static_cast<Operand>(pick(2)),
                                       static_cast<int>(pick(4)), pick(50), 1 + pick(30)});
            rs.rounds.push_back(round);
        }
        for (std::size_t seg : {0ul, 1ul, 4ul, 9ul}) expect_reference_deps(rs, seg, "random");
    }
}

// Every host algorithm plans counts beyond 2^31 and 2^32 elements (any
// offset or count kept in 32 bits would show), checked without buffers:
// validate_plan, and the symbolic execution on element ranges
// (plan_check.hpp: every rank ends with every contribution exactly once).
// Also with the range check agreeing with the per-element one on a small
// count, so the range check itself is checked.
static void test_planners_at_huge_counts(void** state) {
    (void)state;
    const std::size_t huge[] = {(std::size_t(1) << 31) - 1, (std::size_t(1) << 31) + 1, (std::size_t(1) << 32) - 1,
                                (std::size_t(1) << 32) + 3, (std::size_t(5) << 32) + 7};
    const Topology topos[] = {hosts_topology({2, 1}), hosts_topology({2, 3}), hosts_topology({3, 1, 3}),
                              topoar_test::cluster_two_racks()};
    for (Algorithm alg : host_algorithms())
        for (const Topology& topo : topos) {
            for (std::size_t n : huge) {
                Plan plan;
                Status st = make_plan(alg, topo, n, -1, PlanOptions{}, &plan);
                if (!st) fail_msg("%s n=%zu: %s", algorithm_name(alg), n, st.message().c_str());
                Status v = validate_plan(plan);
                if (!v) fail_msg("%s n=%zu: %s", algorithm_name(alg), n, v.message().c_str());
                topoar_test::PlanCheck c = topoar_test::check_plan_ranges(plan);
                if (!c.ok) fail_msg("%s on %d ranks, n=%zu: %s", algorithm_name(alg), topo.num_ranks(), n,
                                    c.error.c_str());
                // The executor's steps stay below the PML's int limit.
                for (int r = 0; r < plan.nranks; ++r) {
                    ExecProgram prog = compile_schedule(plan.of(r), 0, 8);
                    for (const auto& s : prog.steps) assert_true(s.count * 8 <= kMaxMessageBytes);
                }
            }
            for (std::size_t n : {std::size_t(1), std::size_t(5), std::size_t(1001)}) {
                PlanOptions o;
                o.pipeline_elems = 64;
                Plan plan;
                assert_true(make_plan(alg, topo, n, -1, o, &plan).is_ok());
                topoar_test::PlanCheck a = topoar_test::check_plan_semantics(plan), b = topoar_test::check_plan_ranges(plan);
                assert_true(a.ok);
                if (!b.ok) fail_msg("%s n=%zu: %s", algorithm_name(alg), n, b.error.c_str());
            }
        }
    // The range check catches what the element check catches.
    Plan bad = plan_ring(3, (std::size_t(1) << 32) + 3, -1);
    bad.ranks[1].rounds[0].ops[1].kind = OpKind::recv_copy;  // loses a contribution
    assert_false(topoar_test::check_plan_ranges(bad).ok);
    Plan twice = plan_ring(3, 1000, -1);
    twice.ranks[2].rounds.push_back(twice.ranks[2].rounds[0]);
    twice.ranks[0].rounds.push_back(twice.ranks[0].rounds[0]);
    twice.ranks[1].rounds.push_back(twice.ranks[1].rounds[0]);
    assert_false(topoar_test::check_plan_ranges(twice).ok);
}

// Large units and chunks (schedule_policy.hpp, EngineConfig::chunk_size).
static void test_scaled_units(void** state) {
    (void)state;
    const std::size_t K = 1024, M = K * K, chunk = 64 * M;
    assert_int_equal(scaled_unit(32 * K, 8, chunk), 32 * K);
    assert_int_equal(scaled_unit(32 * K, 8 * M, chunk), 32 * K);  // unchanged up to 8 MiB
    assert_int_equal(scaled_unit(32 * K, 16 * M, chunk), 64 * K);
    assert_int_equal(scaled_unit(32 * K, 256 * M, chunk), M);
    assert_int_equal(scaled_unit(32 * K, 4096 * M, chunk), M);    // at most chunk / 64
    assert_int_equal(scaled_unit(32 * K, 4096 * M, 4096 * M), 4 * M);
    assert_int_equal(scaled_unit(0, 4096 * M, chunk), 0);         // 0 (none) stays
    assert_int_equal(scaled_unit(8 * M, 256 * M, chunk), 8 * M);  // never below the setting

    // call_units scales the segment (one message) on one host only: across
    // hosts it stays as set (over TCP a segment above the eager limit waits
    // for a handshake queued behind the data); the pipelining unit scales
    // on one host, and across hosts up to half the flight bound
    // (coll_topoar_flight_size, default 64 KiB: the unit stays at 32 KiB);
    // device calls keep their own unit.
    EngineConfig cfg;
    cfg.segment_size = 32 * K;
    cfg.pipeline_size = 32 * K;
    cfg.chunk_size = chunk;
    assert_int_equal(cfg.flight_size, 64 * K);
    const std::size_t count = 256 * M / 4;
    CallUnits one = call_units(cfg, count, 4, MemType::host, cfg.segment_size, 1);
    assert_int_equal(one.segment_bytes, M);
    assert_int_equal(one.pipeline_bytes, M);
    assert_int_equal(one.chunk_count, chunk / 4);
    for (int hosts : {2, 7}) {
        CallUnits across = call_units(cfg, count, 4, MemType::host, cfg.segment_size, hosts);
        assert_int_equal(across.segment_bytes, 32 * K);
        assert_int_equal(across.pipeline_bytes, 32 * K);
        assert_int_equal(across.chunk_count, chunk / 4);  // chunks still bound the call
    }
    for (auto fu : {std::pair<std::size_t, std::size_t>{0, M}, {M, M / 2}, {16 * M, M}, {16 * K, 32 * K}}) {
        EngineConfig f = cfg;
        f.flight_size = fu.first;
        assert_int_equal(call_units(f, count, 4, MemType::host, f.segment_size, 2).pipeline_bytes, fu.second);
        assert_int_equal(call_units(f, count, 4, MemType::host, f.segment_size, 1).pipeline_bytes, M);
    }
    CallUnits dev = call_units(cfg, count, 4, MemType::cuda, cfg.segment_size, 1);
    assert_int_equal(dev.segment_bytes, 32 * K);
    assert_int_equal(dev.pipeline_bytes, cfg.gpu_model.pipeline_bytes);
}

// A call larger than chunk_size runs chunk by chunk with one plan (and one
// for the remainder): results exact and the same as the whole call's, for
// every host algorithm, on uneven hosts.
static void test_chunked_calls(void** state) {
    (void)state;
    std::vector<RankInfo> infos(5);
    const char* host_of[5] = {"a", "a", "b", "b", "b"};
    for (int r = 0; r < 5; ++r) infos[static_cast<std::size_t>(r)].host = host_of[r];
    const std::size_t n = 1001;
    for (Algorithm alg : host_algorithms())
        for (std::size_t chunk_bytes : {std::size_t(0), std::size_t(8 * 125), std::size_t(8 * 1001), std::size_t(3)}) {
            EngineConfig cfg;
            cfg.algorithm = alg;
            cfg.chunk_size = chunk_bytes;
            cfg.segment_size = 8 * 16;
            topoar_test::FakeNetwork net(5);
            std::vector<std::vector<std::int64_t>> bufs(5, std::vector<std::int64_t>(n));
            std::vector<std::string> errors(5);
            // What rank 0's call looked like (its plans die with its engine).
            std::size_t chunks = 0, plan_count = 0;
            bool has_tail = false;
            std::vector<std::thread> threads;
            for (int r = 0; r < 5; ++r)
                threads.emplace_back([&, r] {
                    const std::size_t R = static_cast<std::size_t>(r);
                    for (std::size_t i = 0; i < n; ++i) bufs[R][i] = (r + 1) * 1000003LL + static_cast<long long>(i);
                    Engine e(r, 5, cfg);
                    SumReducer<std::int64_t> sum;
                    topoar_test::FakeTransport t(net, r);
                    PreparedCall call;
                    Status s = e.setup(infos);
                    if (s) s = e.prepare(n, 8, MemType::host, &call);
                    if (s) s = e.run(call, bufs[R].data(), t, sum);
                    if (!s) errors[R] = s.message();
                    if (s && r == 0) {
                        chunks = call.num_chunks();
                        has_tail = call.tail_plan != nullptr;
                        plan_count = call.plan->plan.count;
                    }
                });
            for (auto& th : threads) th.join();
            for (int r = 0; r < 5; ++r)
                if (!errors[static_cast<std::size_t>(r)].empty())
                    fail_msg("%s chunk %zu rank %d: %s", algorithm_name(alg), chunk_bytes, r,
                             errors[static_cast<std::size_t>(r)].c_str());
            for (int r = 0; r < 5; ++r)
                for (std::size_t i = 0; i < n; ++i)
                    if (bufs[static_cast<std::size_t>(r)][i] != 1000003LL * 15 + static_cast<long long>(i) * 5)
                        fail_msg("%s chunk %zu rank %d element %zu wrong", algorithm_name(alg), chunk_bytes, r, i);
            const std::size_t want_chunks = chunk_bytes == 8 * 125 ? 9 : chunk_bytes == 3 ? n : 1;
            assert_int_equal(chunks, want_chunks);
            assert_true(has_tail == (chunk_bytes == 8 * 125));  // 1001 = 8 x 125 + 1
            assert_int_equal(plan_count, chunk_bytes == 8 * 125 ? 125 : chunk_bytes == 3 ? 1 : n);
        }
}

// auto's tables are cached per process by (topology, options): a second
// engine over the same shape finds it; other links or options do not.
static void test_default_table_cache(void** state) {
    (void)state;
    std::vector<RankInfo> infos(6);
    for (int r = 0; r < 6; ++r) infos[static_cast<std::size_t>(r)].host = r < 2 ? "x" : (r < 5 ? "y" : "z");
    Engine a(0, 6, EngineConfig{}), b(3, 6, EngineConfig{});
    assert_true(a.setup(infos).is_ok());
    assert_true(b.setup(infos).is_ok());
    assert_false(a.model_table().empty());
    assert_true(b.model_table_cached());
    assert_string_equal(a.model_table().to_text("t").c_str(), b.model_table().to_text("t").c_str());
    EngineConfig other;
    other.model_overhead = 3e-6;  // another model: its own table
    Engine c(0, 6, other);
    assert_true(c.setup(infos).is_ok());
    assert_false(c.model_table_cached());
    Topology t1 = topoar_test::hosts({2, 3, 1}, {25e6, 20e-6}, topoar_test::kShm);
    Topology t2 = topoar_test::hosts({2, 3, 1}, {125e6, 20e-6}, topoar_test::kShm);
    DecisionTable d;
    DefaultTableReport rep;
    bool hit = true;
    assert_true(build_default_table_cached(t1, table_options(EngineConfig{}), &d, &rep, &hit).is_ok());
    assert_true(build_default_table_cached(t2, table_options(EngineConfig{}), &d, &rep, &hit).is_ok());
    assert_false(hit);  // other link rates, other key
    assert_true(build_default_table_cached(t1, table_options(EngineConfig{}), &d, &rep, &hit).is_ok());
    assert_true(hit);
    // Names are not part of the key: the same ranks per host and links on
    // other hosts find it (rotating groups); other ranks per host do not.
    std::vector<RankInfo> renamed = infos;
    for (int r = 0; r < 6; ++r) renamed[static_cast<std::size_t>(r)].host = r < 2 ? "p" : (r < 5 ? "q" : "r");
    Engine e(1, 6, EngineConfig{});
    assert_true(e.setup(renamed).is_ok());
    assert_true(e.model_table_cached());
    assert_string_equal(a.model_table().to_text("t").c_str(), e.model_table().to_text("t").c_str());
    std::vector<RankInfo> other_sizes = infos;
    for (int r = 0; r < 6; ++r) other_sizes[static_cast<std::size_t>(r)].host = r < 3 ? "x" : (r < 5 ? "y" : "z");
    Engine f(0, 6, EngineConfig{});
    assert_true(f.setup(other_sizes).is_ok());
    assert_false(f.model_table_cached());
    Topology t3 = topoar_test::hosts({3, 2, 1}, {25e6, 20e-6}, topoar_test::kShm);
    assert_true(build_default_table_cached(t3, table_options(EngineConfig{}), &d, &rep, &hit).is_ok());
    assert_false(hit);
}

// The C API's text results do not share a buffer: each stays valid until
// the next call of its own function.
static void test_c_api_text_results(void** state) {
    (void)state;
    topoar_engine_t* e = topoar_engine_create(0, 3, nullptr);
    assert_non_null(e);
    std::vector<topoar_rank_info_t> all(3);
    for (int r = 0; r < 3; ++r) {
        std::memset(&all[static_cast<std::size_t>(r)], 0, sizeof(topoar_rank_info_t));
        std::snprintf(all[static_cast<std::size_t>(r)].host, TOPOAR_NAME_MAX, "%s", r < 2 ? "a" : "b");
        all[static_cast<std::size_t>(r)].socket = -1;
    }
    assert_int_equal(topoar_engine_setup(e, all.data()), TOPOAR_OK);
    const char* described = topoar_engine_describe(e);
    const std::string described_copy = described;
    const char* text = topoar_engine_topology_text(e);
    const std::string text_copy = text;
    assert_true(text_copy != described_copy);
    const char* notice = topoar_engine_notice(e);  // nothing happened: NULL
    assert_null(notice);
    topoar_call_t call;
    assert_int_equal(topoar_engine_prepare(e, 1000, 4, TOPOAR_MEM_HOST, 0, &call), TOPOAR_OK);
    assert_int_equal(call.route, TOPOAR_ROUTE_HOST);
    const char* origin = topoar_engine_last_origin(e);
    assert_non_null(origin);
    // Every earlier result still reads as it was.
    assert_string_equal(described, described_copy.c_str());
    assert_string_equal(text, text_copy.c_str());
    assert_non_null(std::strstr(text, "a"));
    topoar_engine_destroy(e);
}

// Engines are made from the parameters' texts; the last parsed set is kept
// per process, so each engine must still get exactly its own texts: a
// changed value, a value that does not parse, and the texts back again.
static void test_c_api_config_texts(void** state) {
    (void)state;
    std::vector<topoar_rank_info_t> all(3);
    for (int r = 0; r < 3; ++r) {
        std::memset(&all[static_cast<std::size_t>(r)], 0, sizeof(topoar_rank_info_t));
        std::snprintf(all[static_cast<std::size_t>(r)].host, TOPOAR_NAME_MAX, "%s", r < 2 ? "a" : "b");
        all[static_cast<std::size_t>(r)].socket = -1;
    }
    const char* names[] = {"allreduce_algorithm"};
    auto algorithm_of = [&](const char* value, int* route_out) {
        const char* values[] = {value};
        topoar_config_t cfg{1, names, values};
        topoar_engine_t* e = topoar_engine_create(0, 3, &cfg);
        assert_non_null(e);
        const int rc = topoar_engine_setup(e, all.data());
        int algorithm = -1;
        if (rc == TOPOAR_OK) {
            topoar_call_t call;
            assert_int_equal(topoar_engine_prepare(e, 1000, 4, TOPOAR_MEM_HOST, 0, &call), TOPOAR_OK);
            *route_out = call.route;
            algorithm = call.plan_algorithm;
        } else {
            assert_non_null(std::strstr(topoar_engine_error(e), "allreduce_algorithm"));
        }
        topoar_engine_destroy(e);
        return rc == TOPOAR_OK ? algorithm : -2;
    };
    int route = -1;
    assert_int_equal(algorithm_of("ring", &route), static_cast<int>(Algorithm::ring));
    assert_int_equal(algorithm_of("ring", &route), static_cast<int>(Algorithm::ring));
    assert_int_equal(algorithm_of("tree", &route), static_cast<int>(Algorithm::tree));
    assert_int_equal(algorithm_of("no-such-algorithm", &route), -2);
    assert_int_equal(algorithm_of("no-such-algorithm", &route), -2);
    assert_int_equal(algorithm_of("ring", &route), static_cast<int>(Algorithm::ring));
    assert_int_equal(route, TOPOAR_ROUTE_HOST);
}

// Set-up's settings fingerprints: a rank whose value of a row that must
// agree differs, the glue's rows (coll_topoar_barrier) included, is found
// and named by its row; rows that need not agree (verbose) never differ;
// a glue row's text passes the engine's parsing (it sets nothing there).
static void test_settings_fingerprints(void** state) {
    (void)state;
    const auto& t = param_table();
    auto row = [&](const char* name) {
        for (std::size_t i = 0; i < t.size(); ++i)
            if (std::strcmp(t[i].name, name) == 0) return static_cast<int>(i);
        return -1;
    };
    auto info = [](const char* name, const char* value) {
        topoar_rank_info_t r;
        std::memset(&r, 0, sizeof r);
        const char* names[] = {name};
        const char* values[] = {value};
        topoar_config_t cfg{1, names, values};
        topoar_settings_fingerprint(&cfg, &r);
        return r;
    };
    const struct {
        const char* name;
        const char* a;
        const char* b;
        bool differs;
    } cases[] = {
        {"barrier", "auto", "never", true},      {"barrier_trial", "8", "16", true},
        {"nccl", "1", "0", true},                {"cuda_aware_mpi", "auto", "always", true},
        {"segment_size", "65536", "65536", false}, {"verbose", "0", "50", false},
        {"priority", "50", "60", false},
    };
    for (const auto& c : cases) {
        assert_true(row(c.name) >= 0);
        topoar_rank_info_t all[3] = {info(c.name, c.a), info(c.name, c.a), info(c.name, c.b)};
        int param = -1, rank = -1;
        const int found = topoar_settings_mismatch(all, 3, &param, &rank);
        if (found != (c.differs ? 1 : 0)) fail_msg("%s: '%s' against '%s': mismatch %d", c.name, c.a, c.b, found);
        if (c.differs) {
            assert_int_equal(param, row(c.name));
            assert_int_equal(rank, 2);
        }
        // Absent from the texts: its default, the same fingerprint.
        topoar_rank_info_t dflt = info("verbose", "0");
        topoar_rank_info_t given = info(c.name, t[static_cast<std::size_t>(row(c.name))].default_value);
        assert_memory_equal(dflt.settings, given.settings, sizeof dflt.settings);
        EngineConfig cfg;
        assert_true(set_param(&cfg, c.name, c.b).is_ok());
    }
}

// The plan cache hands out handles: a plan a call holds outlives its entry
// (the cache may drop entries at any prepare), and is freed once no call
// holds it.
static void test_plan_cache_handles(void** state) {
    (void)state;
    PlanCache cache;
    int built = 0;
    auto build = [&built](std::size_t n) {
        return [&built, n](CompiledPlan* p) {
            ++built;
            p->count = n;
            return Status::ok();
        };
    };
    auto key = [](std::size_t n) { return PlanCache::Key(1, n, 4, 0, 0, 1); };
    PlanHandle a, again;
    assert_true(cache.get(key(100), build(100), &a).is_ok());
    assert_true(cache.get(key(100), build(100), &again).is_ok());
    assert_int_equal(built, 1);
    assert_ptr_equal(a.get(), again.get());
    std::weak_ptr<const CompiledPlan> wa = a;
    cache.clear();
    assert_int_equal(cache.size(), 0);
    assert_false(wa.expired());  // dropped from the cache, still the call's
    assert_int_equal(a->count, 100);
    a.reset();
    again.reset();
    assert_true(wa.expired());  // freed with its last handle
    // Full: make_room drops every entry, the handles held keep theirs.
    PlanHandle first;
    for (std::size_t n = 1; n <= PlanCache::kMaxPlans; ++n) {
        PlanHandle h;
        assert_true(cache.get(key(n), build(n), &h).is_ok());
        if (n == 1) first = h;
    }
    assert_int_equal(cache.size(), PlanCache::kMaxPlans);
    cache.make_room(4);
    assert_int_equal(cache.size(), 0);
    assert_int_equal(first->count, 1);
    // A failed build caches nothing.
    PlanHandle none;
    Status st = cache.get(key(7), [](CompiledPlan*) { return Status::unsupported("no plan"); }, &none);
    assert_int_equal(static_cast<int>(st.code()), static_cast<int>(Code::unsupported));
    assert_null(none.get());
    assert_int_equal(cache.size(), 0);

    // Through the engine: a prepared call's plan survives the prepares of
    // many other sizes (which refill and drop the cache several times).
    std::vector<RankInfo> ranks = ranks_on_two_hosts(4);
    EngineConfig rc;
    rc.algorithm = Algorithm::ring;
    Engine e(0, 4, rc);
    assert_true(e.setup(ranks).is_ok());
    PreparedCall held, other;
    assert_true(e.prepare(1000, 4, MemType::host, &held).is_ok());
    std::weak_ptr<const CompiledPlan> wh = held.plan;
    for (std::size_t n = 1; n <= 3 * PlanCache::kMaxPlans; ++n)
        assert_true(e.prepare(2000 + n, 4, MemType::host, &other).is_ok());
    assert_false(wh.expired());
    assert_int_equal(held.plan->count, 1000);
    assert_int_equal(held.plan->plan.of(0).rounds.size() > 0, 1);
    held = PreparedCall{};
    assert_true(wh.expired());
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_range_covers_exactly),
        cmocka_unit_test(test_ring_plan_invariants),
        cmocka_unit_test(test_ring_plan_shape),
        cmocka_unit_test(test_ring_follows_given_order),
        cmocka_unit_test(test_algorithm_table),
        cmocka_unit_test(test_halving_plan),
        cmocka_unit_test(test_param_table),
        cmocka_unit_test(test_recursive_doubling_plan),
        cmocka_unit_test(test_only_rank_keeps_the_same_schedule),
        cmocka_unit_test(test_validate_rejects_broken_plans),
        cmocka_unit_test(test_executor_ring_exact),
        cmocka_unit_test(test_executor_rd_exact),
        cmocka_unit_test(test_executor_bit_identical),
        cmocka_unit_test(test_executor_reports_transport_errors),
        cmocka_unit_test(test_auto_hands_single_host_down),
        cmocka_unit_test(test_auto_uses_the_cost_model_table),
        cmocka_unit_test(test_one_host_message_cost),
        cmocka_unit_test(test_rules_by_memory_type),
        cmocka_unit_test(test_call_routes),
        cmocka_unit_test(test_c_api_text_results),
        cmocka_unit_test(test_c_api_config_texts),
        cmocka_unit_test(test_settings_fingerprints),
        cmocka_unit_test(test_plan_cache_handles),
        cmocka_unit_test(test_compiled_dependencies_follow_the_rule),
        cmocka_unit_test(test_planners_at_huge_counts),
        cmocka_unit_test(test_scaled_units),
        cmocka_unit_test(test_chunked_calls),
        cmocka_unit_test(test_default_table_cache),
    };
    return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
