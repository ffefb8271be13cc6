// Operations (engine/call_operation.hpp, exec/executor.hpp): a prepared
// call run step by step, several outstanding on one engine, each over its
// own transport (its own tag: here its own fake network), advanced in any
// order, completing in any order; their plans outlive the engine's cache;
// a given-up operation leaves nothing posted.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine.hpp"
#include "engine/call_operation.hpp"
#include "exec_harness.hpp"
#include "fake_transport.hpp"

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
}

using namespace topoar;
using topoar_test::FakeNetwork;
using topoar_test::FakeTransport;
using topoar_test::SumReducer;

namespace {

const int kRanks = 5;
const char* const kHost[kRanks] = {"a", "a", "b", "b", "b"};

std::vector<RankInfo> infos() {
    std::vector<RankInfo> v(kRanks);
    for (int r = 0; r < kRanks; ++r) v[static_cast<std::size_t>(r)].host = kHost[r];
    return v;
}

std::int64_t input(int rank, int op, std::size_t i) {
    return (rank + 1) * 1000003LL + op * 7919LL + static_cast<long long>(i);
}
std::int64_t expected(int op, std::size_t i) {
    return 1000003LL * 15 + kRanks * (op * 7919LL + static_cast<long long>(i));
}

// One rank: K calls of different sizes (chunked ones among them) prepared
// on one engine, all started, then advanced in a rank-specific random
// order until every one finished; the engine's cache is flushed in between
// (other sizes prepared), so the operations' own handles keep the plans.
void run_rank(int r, const EngineConfig& cfg, const std::vector<std::size_t>& counts,
              std::vector<std::unique_ptr<FakeNetwork>>& nets, std::vector<std::vector<std::int64_t>>& bufs, std::string* err,
              int* max_outstanding) {
    const std::size_t K = counts.size();
    Engine e(r, kRanks, cfg);
    Status s = e.setup(infos());
    if (!s) {
        *err = s.message();
        return;
    }
    std::vector<std::unique_ptr<FakeTransport>> ts;
    std::vector<std::unique_ptr<CallOperation>> ops;
    std::vector<PreparedCall> calls(K);  // kept by their operations' caller, as topoar_op does
    SumReducer<std::int64_t> sum;
    for (std::size_t k = 0; k < K; ++k) {
        ts.emplace_back(new FakeTransport(*nets[k], r));
        ops.emplace_back(new CallOperation);
        PreparedCall& call = calls[k];
        CallKind nb;
        nb.nonblocking = true;
        s = e.prepare(counts[k], 8, MemType::host, &call, PairCaps{}, nb);
        if (s && call.route != Route::host) s = Status::internal("route is not host");
        if (s) s = ops[k]->start(call, bufs[k].data(), *ts[k], sum);
        if (!s) {
            *err = "op " + std::to_string(k) + ": " + s.message();
            return;
        }
    }
    // Flush the engine's plan cache under the running operations.
    for (std::size_t n = 3; n < 40; ++n) {
        PreparedCall other;
        s = e.prepare(n * 13, 8, MemType::host, &other);
        if (!s) {
            *err = "flush: " + s.message();
            return;
        }
    }
    std::mt19937 rng(static_cast<unsigned>(r) * 7u + 1u);
    std::vector<bool> done(K, false);
    std::size_t left = K;
    while (left) {
        std::size_t k = rng() % K;
        if (done[k]) continue;
        bool d = false, moved = false;
        s = ops[k]->advance(&d, &moved);
        if (!s) {
            *err = "op " + std::to_string(k) + ": " + s.message();
            return;
        }
        int out = 0;
        for (auto& t : ts) out += t->outstanding();
        if (out > *max_outstanding) *max_outstanding = out;
        if (d) {
            done[k] = true;
            --left;
            if (ts[k]->outstanding() != 0) *err = "op " + std::to_string(k) + " finished with requests posted";
        }
    }
}

void outstanding_any_order(Algorithm alg, std::size_t chunk_bytes) {
    const std::vector<std::size_t> counts = {1, 4, 1001, 3, 4096, 77};
    const std::size_t K = counts.size();
    EngineConfig cfg;
    cfg.algorithm = alg;
    cfg.chunk_size = chunk_bytes;
    cfg.segment_size = 8 * 16;
    std::vector<std::unique_ptr<FakeNetwork>> nets;
    for (std::size_t k = 0; k < K; ++k) nets.emplace_back(new FakeNetwork(kRanks));
    // bufs[rank][op]
    std::vector<std::vector<std::vector<std::int64_t>>> bufs(kRanks);
    for (int r = 0; r < kRanks; ++r)
        for (std::size_t k = 0; k < K; ++k) {
            std::vector<std::int64_t> b(counts[k]);
            for (std::size_t i = 0; i < counts[k]; ++i) b[i] = input(r, static_cast<int>(k), i);
            bufs[static_cast<std::size_t>(r)].push_back(b);
        }
    std::vector<std::string> errors(kRanks);
    std::vector<int> outstanding(kRanks, 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
        threads.emplace_back([&, r] {
            const std::size_t R = static_cast<std::size_t>(r);
            run_rank(r, cfg, counts, nets, bufs[R], &errors[R], &outstanding[R]);
        });
    for (auto& t : threads) t.join();
    int most = 0;
    for (int r = 0; r < kRanks; ++r) {
        if (!errors[static_cast<std::size_t>(r)].empty())
            fail_msg("%s chunk %zu rank %d: %s", algorithm_name(alg), chunk_bytes, r,
                     errors[static_cast<std::size_t>(r)].c_str());
        if (outstanding[static_cast<std::size_t>(r)] > most) most = outstanding[static_cast<std::size_t>(r)];
    }
    for (int r = 0; r < kRanks; ++r)
        for (std::size_t k = 0; k < K; ++k)
            for (std::size_t i = 0; i < counts[k]; ++i)
                if (bufs[static_cast<std::size_t>(r)][k][i] != expected(static_cast<int>(k), i))
                    fail_msg("%s chunk %zu rank %d op %zu element %zu: %lld, want %lld", algorithm_name(alg),
                             chunk_bytes, r, k, i, static_cast<long long>(bufs[static_cast<std::size_t>(r)][k][i]),
                             static_cast<long long>(expected(static_cast<int>(k), i)));
    // Receives of more than one operation were posted at once somewhere
    // (else the test ran them one after another and proved nothing).
    if (most < 2) fail_msg("%s: never two receives outstanding at once", algorithm_name(alg));
}

}  // namespace

static void test_outstanding_operations_any_order(void** state) {
    (void)state;
    int checked = 0;
    for (Algorithm alg : {Algorithm::automatic, Algorithm::ring, Algorithm::tree, Algorithm::hring,
                          Algorithm::flexreduce, Algorithm::leader}) {
        outstanding_any_order(alg, 0);
        ++checked;
    }
    outstanding_any_order(Algorithm::ring, 8 * 125);  // chunked: 1001 and 4096 run in chunks
    outstanding_any_order(Algorithm::tree, 8 * 125);
    assert_int_equal(checked, 6);
}

// A started operation that is given up cancels what it posted (here: its
// receives from ranks that never send).
static void test_abandon_cancels(void** state) {
    (void)state;
    EngineConfig cfg;
    cfg.algorithm = Algorithm::ring;
    Engine e(0, kRanks, cfg);
    assert_true(e.setup(infos()).is_ok());
    FakeNetwork net(kRanks);
    FakeTransport t(net, 0);
    SumReducer<std::int64_t> sum;
    std::vector<std::int64_t> buf(1000, 1);
    PreparedCall call;
    assert_true(e.prepare(buf.size(), 8, MemType::host, &call).is_ok());
    CallOperation op;
    assert_true(op.start(call, buf.data(), t, sum).is_ok());
    bool done = false, moved = false;
    for (int i = 0; i < 10; ++i) assert_true(op.advance(&done, &moved).is_ok());
    assert_false(done);
    assert_true(op.running());
    assert_true(t.outstanding() > 0);
    op.abandon();
    assert_false(op.running());
    assert_int_equal(t.outstanding(), 0);
    assert_true(t.cancelled() > 0);
    // Reusable after: a second start is accepted.
    FakeNetwork net2(kRanks);
    FakeTransport t2(net2, 0);
    assert_true(op.start(call, buf.data(), t2, sum).is_ok());
    op.abandon();
    assert_int_equal(t2.outstanding(), 0);
}

// no_hand_down: a one-host communicator that auto hands down runs the
// built-in choice instead (calls queued behind a nonblocking set-up).
static void test_no_hand_down(void** state) {
    (void)state;
    EngineConfig cfg;  // auto
    CallKind nb;
    nb.nonblocking = true;
    PreparedCall call;
    std::vector<RankInfo> one(3);
    for (auto& i : one) i.host = "a";
    Engine single(0, 3, cfg);
    assert_true(single.setup(one).is_ok());
    assert_true(single.prepare(100, 8, MemType::host, &call, PairCaps{}, nb).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::hand_down));
    CallKind queued = nb;
    queued.no_hand_down = true;
    assert_true(single.prepare(100, 8, MemType::host, &call, PairCaps{}, queued).is_ok());
    assert_int_equal(static_cast<int>(call.route), static_cast<int>(Route::host));
    assert_non_null(call.plan.get());
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outstanding_operations_any_order),
        cmocka_unit_test(test_abandon_cancels),
        cmocka_unit_test(test_no_hand_down),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
