// Unit tests of the small-message fast path (exec/fast_executor.hpp): for
// every host algorithm, rank layout, count and (op, type), the fast run
// gives on every rank the bits the host executor gives, the integer sums
// are exact, a failing transport leaves nothing posted, and the engine
// marks exactly the calls it may run (no MPI).
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine.hpp"
#include "exec/fast_executor.hpp"
#include "exec_harness.hpp"
#include "fake_transport.hpp"
#include "reduce/topoar_reduce.h"

// cmocka last: its macros (fail, ...) clash with the C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace topoar;
using topoar_test::FakeNetwork;
using topoar_test::FakeTransport;

namespace {

// topoar's own reduction of (op, type) as the executor's Reducer.
class OwnReducer final : public Reducer {
public:
    OwnReducer(int op, int type) : op_(op), type_(type) {}
    void reduce(const void* in, void* inout, std::size_t count) override {
        if (topoar_reduce_host(op_, type_, in, inout, count) != 0) fail_msg("pair %d/%d not reduced", op_, type_);
    }

private:
    int op_, type_;
};

// run_fast's Io over the fake PML.  wait_all polls (a broken network then
// fails the test call instead of blocking) and ends the rest on a failure.
class FakeFastIo {
public:
    FakeFastIo(FakeTransport& t, int op, int type, Reducer& fallback) : t_(t), own_(op, type), fallback_(fallback) {}
    int isend(const void* buf, std::size_t bytes, int peer, void** req) {
        return t_.isend(buf, bytes, peer, req).is_ok() ? 0 : 1;
    }
    int irecv(void* buf, std::size_t bytes, int peer, void** req) {
        return t_.irecv(buf, bytes, peer, req).is_ok() ? 0 : 2;
    }
    int wait_all(int n, void** reqs) {
        for (int k = 0; k < n; ++k) {
            bool done = false;
            while (!done)
                if (!t_.test(&reqs[k], &done).is_ok()) {  // the failed test ended reqs[k]
                    for (int j = k + 1; j < n; ++j) t_.cancel(&reqs[j]);
                    return 3;
                }
        }
        return 0;
    }
    void cancel(void** req) { t_.cancel(req); }
    void reduce(const void* in, void* inout, std::size_t count) {
        if (!own_(in, inout, count)) fallback_.reduce(in, inout, count);
    }

private:
    FakeTransport& t_;
    FastReduce own_;
    Reducer& fallback_;
};

struct Pair {
    int op, type;  // -1, -1: not topoar's own (the ordered reducer runs)
    std::size_t elem;
    const char* name;
};

const Pair kPairs[] = {
    {TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT64, 8, "sum f64"},   // inlined
    {TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT32, 4, "sum f32"},   // inlined
    {TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_INT8, 1, "sum i8"},       // inlined, wraps
    {TOPOAR_REDOP_MAX, TOPOAR_REDTYPE_INT32, 4, "max i32"},     // inlined
    {TOPOAR_REDOP_PROD, TOPOAR_REDTYPE_FLOAT64, 8, "prod f64"}, // topoar_reduce_host
    {TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_INT16, 2, "sum i16"},     // topoar_reduce_host
    {-1, -1, 8, "ordered u64"},                                 // the glue's reducer
};

// Rank r's input: random bytes, except for integer sums (small values, so
// the exact sum can be checked) -- the same for every run of the test.
std::vector<unsigned char> input(int r, std::size_t bytes, const Pair& p) {
    std::mt19937 gen(static_cast<unsigned>(1000 + r * 7919 + bytes));
    std::vector<unsigned char> b(bytes);
    for (auto& x : b) x = static_cast<unsigned char>(gen());
    if (p.op == TOPOAR_REDOP_SUM && p.type == TOPOAR_REDTYPE_INT8)
        for (std::size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>(i * 31 + r * 17);
    if (p.elem == 8 && p.op != -1) {  // finite doubles in [-1, 1)
        for (std::size_t i = 0; i < bytes / 8; ++i) {
            const double v = std::uniform_real_distribution<double>(-1.0, 1.0)(gen);
            std::memcpy(&b[i * 8], &v, 8);
        }
    }
    if (p.elem == 4 && p.type == TOPOAR_REDTYPE_FLOAT32) {
        for (std::size_t i = 0; i < bytes / 4; ++i) {
            const float v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(gen);
            std::memcpy(&b[i * 4], &v, 4);
        }
    }
    return b;
}

// One layout (ranks per host), algorithm, pair and count: every rank
// prepares the call on its own engine, runs it fast, then runs the same
// call on the host executor; both results must match bit for bit on every
// rank and across ranks.  Returns how many calls ran fast (all of them).
int check_case(const std::vector<int>& per_host, Algorithm alg, const Pair& pair, std::size_t count) {
    std::vector<RankInfo> infos;
    for (std::size_t h = 0; h < per_host.size(); ++h)
        for (int i = 0; i < per_host[h]; ++i) {
            RankInfo ri;
            ri.host = "h" + std::to_string(h);
            infos.push_back(ri);
        }
    const int p = static_cast<int>(infos.size());
    const std::size_t bytes = count * pair.elem;
    FakeNetwork net(p);
    std::vector<std::vector<unsigned char>> fast(static_cast<std::size_t>(p)), ref(static_cast<std::size_t>(p)),
        stepwise(static_cast<std::size_t>(p));
    std::vector<std::string> errors(static_cast<std::size_t>(p));
    std::vector<int> was_fast(static_cast<std::size_t>(p), 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r)
        threads.emplace_back([&, r] {
            const std::size_t R = static_cast<std::size_t>(r);
            EngineConfig cfg;
            cfg.algorithm = alg;
            Engine e(r, p, cfg);
            FakeTransport t(net, r);
            topoar_test::OrderedReducer ordered;
            OwnReducer own(pair.op, pair.type);
            Reducer& reducer = pair.op < 0 ? static_cast<Reducer&>(ordered) : own;
            PreparedCall call;
            Status s = e.setup(infos);
            if (s) s = e.prepare(count, pair.elem, MemType::host, &call);
            if (!s) {
                errors[R] = s.message();
                return;
            }
            fast[R] = ref[R] = stepwise[R] = input(r, bytes, pair);
            if (call.plan == nullptr) {  // nothing to move (count 0)
                was_fast[R] = count == 0;
                return;
            }
            if (!call.fast) {
                errors[R] = "not marked fast";
                return;
            }
            was_fast[R] = 1;
            std::vector<unsigned char> scratch(call.plan->fast.scratch_bytes + 1);
            FakeFastIo io(t, pair.op, pair.type, reducer);
            FastFailure f;
            if (run_fast(call.plan->fast, reinterpret_cast<char*>(fast[R].data()),
                         reinterpret_cast<char*>(scratch.data()), io, &f) != 0) {
                errors[R] = std::string("fast run failed at ") + f.call;
                return;
            }
            s = e.run(call, ref[R].data(), t, reducer);
            if (!s) errors[R] = s.message();
            else if (t.outstanding() != 0) errors[R] = "requests left outstanding";
            // The stepwise form (nonblocking and persistent calls), started
            // twice on one operation as a persistent request is: the second
            // run's result is compared.
            FastOperation op;
            for (int run = 0; run < 2 && errors[R].empty(); ++run) {
                stepwise[R] = input(r, bytes, pair);
                s = op.start(call.plan->fast, reinterpret_cast<char*>(stepwise[R].data()), t, reducer);
                bool done = false, moved = false;
                while (s && !done) s = op.advance(&done, &moved);
                if (!s) errors[R] = "stepwise: " + s.message();
                else if (op.running() || t.outstanding() != 0) errors[R] = "stepwise: requests left outstanding";
            }
        });
    for (auto& th : threads) th.join();
    for (int r = 0; r < p; ++r)
        if (!errors[static_cast<std::size_t>(r)].empty())
            fail_msg("%s, %s, %zu elements, %d ranks, rank %d: %s", algorithm_name(alg), pair.name, count, p, r,
                     errors[static_cast<std::size_t>(r)].c_str());
    for (int r = 0; r < p; ++r) {
        if (fast[static_cast<std::size_t>(r)] != ref[static_cast<std::size_t>(r)])
            fail_msg("%s, %s, %zu elements, %d ranks: rank %d's fast result differs from the executor's",
                     algorithm_name(alg), pair.name, count, p, r);
        if (count > 0 && stepwise[static_cast<std::size_t>(r)] != ref[static_cast<std::size_t>(r)])
            fail_msg("%s, %s, %zu elements, %d ranks: rank %d's stepwise result differs from the executor's",
                     algorithm_name(alg), pair.name, count, p, r);
        if (fast[static_cast<std::size_t>(r)] != fast[0])
            fail_msg("%s, %s, %zu elements, %d ranks: rank %d differs from rank 0", algorithm_name(alg), pair.name,
                     count, p, r);
    }
    if (pair.op == TOPOAR_REDOP_SUM && pair.type == TOPOAR_REDTYPE_INT8)
        for (std::size_t i = 0; i < bytes; ++i) {
            unsigned sum = 0;  // wraps modulo 256, as MPI's integer sum
            for (int r = 0; r < p; ++r) sum += static_cast<unsigned>(i * 31 + static_cast<unsigned>(r) * 17) & 0xffu;
            if (fast[0][i] != static_cast<unsigned char>(sum))
                fail_msg("%s, %d ranks: int8 sum element %zu is %u, not %u", algorithm_name(alg), p, i,
                         static_cast<unsigned>(fast[0][i]), sum & 0xffu);
        }
    int n = 0;
    for (int w : was_fast) n += w;
    return n;
}

const std::vector<std::vector<int>> kLayouts = {
    {2}, {3}, {4}, {5}, {7},          // one host: odd and prime rank counts
    {2, 3}, {1, 4}, {3, 1, 2}, {2, 2, 2, 1},  // uneven hosts
};

}  // namespace

// Every host algorithm, layout, pair and count (0, 1, fewer than the ranks,
// odd, and near the fast path's limit): bit-identical to the executor.
static void test_fast_matches_executor(void** state) {
    (void)state;
    int cases = 0, runs = 0;
    for (const auto& layout : kLayouts) {
        int p = 0;
        for (int n : layout) p += n;
        for (Algorithm alg : host_algorithms())
            for (const Pair& pair : kPairs)
                for (std::size_t count : {std::size_t(0), std::size_t(1), static_cast<std::size_t>(p - 1),
                                          std::size_t(7), std::size_t(33), kFastMaxBytes / pair.elem}) {
                    runs += check_case(layout, alg, pair, count);
                    ++cases;
                }
    }
    const int expected = 9 * static_cast<int>(host_algorithms().size()) * 7 * 6;
    assert_int_equal(cases, expected);
    // Every rank of every case ran fast (count 0: nothing to run).
    assert_int_equal(runs, (2 + 3 + 4 + 5 + 7 + 5 + 5 + 6 + 7) * static_cast<int>(host_algorithms().size()) * 7 * 6);
}

// What runs fast: small host calls in one chunk, not timed by online
// adaptation; larger calls, chunked calls and device calls run as before.
static void test_engine_marks_fast_calls(void** state) {
    (void)state;
    std::vector<RankInfo> infos(4);
    for (int r = 0; r < 4; ++r) infos[static_cast<std::size_t>(r)].host = r < 2 ? "a" : "b";
    EngineConfig cfg;
    cfg.algorithm = Algorithm::leader;
    Engine e(0, 4, cfg);
    assert_true(e.setup(infos).is_ok());
    PreparedCall call;
    assert_true(e.prepare(2, 4, MemType::host, &call).is_ok());
    assert_true(call.fast);
    assert_true(e.repeatable(call));
    assert_true(e.prepare(kFastMaxBytes / 8, 8, MemType::host, &call).is_ok());
    assert_true(call.fast);
    assert_true(e.prepare(kFastMaxBytes / 8 + 1, 8, MemType::host, &call).is_ok());
    assert_false(call.fast);
    assert_true(e.prepare(2, 4, MemType::cuda, &call).is_ok());
    assert_false(call.fast);
    // Chunked: the executor runs chunk after chunk.
    EngineConfig chunked = cfg;
    chunked.chunk_size = 16;
    Engine c(0, 4, chunked);
    assert_true(c.setup(infos).is_ok());
    assert_true(c.prepare(8, 4, MemType::host, &call).is_ok());
    assert_true(call.num_chunks() == 2);
    assert_false(call.fast);
    // Set-up again: every earlier answer is stale.
    const std::uint64_t g = e.generation();
    assert_true(e.setup(infos).is_ok());
    assert_true(e.generation() != g);
}

// A transport that fails at its k-th call, for every k up to a whole run:
// every rank's run (`run`: true when it ended with an error) ends and
// leaves nothing posted.  5 ranks on two hosts, leader, 3 doubles.
static void check_injected_failures(
    const std::function<bool(const PreparedCall&, FakeTransport&, Reducer&, std::vector<double>&)>& run) {
    const int p = 5;
    std::vector<RankInfo> infos(p);
    for (int r = 0; r < p; ++r) infos[static_cast<std::size_t>(r)].host = r < 2 ? "a" : "b";
    int failed_runs = 0, tried = 0;
    for (long k = 1; k <= 24; ++k) {
        FakeNetwork net(p);
        net.fail_after(k);
        std::vector<std::string> errors(p);
        std::vector<int> failed(p, 0);
        std::vector<std::thread> threads;
        for (int r = 0; r < p; ++r)
            threads.emplace_back([&, r] {
                EngineConfig cfg;
                cfg.algorithm = Algorithm::leader;
                Engine e(r, p, cfg);
                FakeTransport t(net, r);
                OwnReducer sum(TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT64);
                PreparedCall call;
                if (!e.setup(infos).is_ok() || !e.prepare(3, 8, MemType::host, &call).is_ok() || !call.fast) {
                    errors[static_cast<std::size_t>(r)] = "no fast call";
                    return;
                }
                std::vector<double> buf(3, 1.0);
                failed[static_cast<std::size_t>(r)] = run(call, t, sum, buf);
                if (t.outstanding() != 0) errors[static_cast<std::size_t>(r)] = "requests left posted";
            });
        for (auto& th : threads) th.join();
        for (int r = 0; r < p; ++r)
            if (!errors[static_cast<std::size_t>(r)].empty())
                fail_msg("failure at call %ld, rank %d: %s", k, r, errors[static_cast<std::size_t>(r)].c_str());
        for (int r = 0; r < p; ++r) failed_runs += failed[static_cast<std::size_t>(r)];
        ++tried;
    }
    assert_int_equal(tried, 24);
    assert_true(failed_runs > 0);  // the injected failures were seen
}

static void test_fast_failures_leave_nothing_posted(void** state) {
    (void)state;
    check_injected_failures([](const PreparedCall& call, FakeTransport& t, Reducer& sum, std::vector<double>& buf) {
        std::vector<unsigned char> scratch(call.plan->fast.scratch_bytes + 1);
        FakeFastIo io(t, TOPOAR_REDOP_SUM, TOPOAR_REDTYPE_FLOAT64, sum);
        FastFailure f;
        return run_fast(call.plan->fast, reinterpret_cast<char*>(buf.data()), reinterpret_cast<char*>(scratch.data()),
                        io, &f) != 0;
    });
}

// The stepwise form: every failure is reported, and nothing stays posted.
static void test_fast_operation_failures_leave_nothing_posted(void** state) {
    (void)state;
    check_injected_failures([](const PreparedCall& call, FakeTransport& t, Reducer& sum, std::vector<double>& buf) {
        FastOperation op;
        Status s = op.start(call.plan->fast, reinterpret_cast<char*>(buf.data()), t, sum);
        bool done = false, moved = false;
        // Bounded: every transport call fails once the network broke.
        for (long pass = 0; s && !done && pass < 200000; ++pass) s = op.advance(&done, &moved);
        const bool failed = !s || !done;
        op.abandon();
        return failed;
    });
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_matches_executor),
        cmocka_unit_test(test_engine_marks_fast_calls),
        cmocka_unit_test(test_fast_failures_leave_nothing_posted),
        cmocka_unit_test(test_fast_operation_failures_leave_nothing_posted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
