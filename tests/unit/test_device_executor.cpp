// The device executor (common/exec/device_executor.*) over an in-process,
// stream-ordered fake device transport: every planner's schedule on uneven
// hosts, exact results, bit-identical floating point, and the stream
// discipline (nothing happens before synchronize; a send reads the buffer
// as it is when the stream reaches it, not when it was enqueued).
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <setjmp.h>
extern "C" {
// clang-format off
#include <cmocka.h>
// clang-format on
}

#include "cluster_fixtures.hpp"
using topoar_test::hosts_topology;

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/algorithm.hpp"
#include "exec/device_executor.hpp"
#include "planners/planners.hpp"
#include "topology/discovery.hpp"
#include "topology/topology.hpp"

using namespace topoar;

namespace {

// Mailboxes between ranks: FIFO per (src, dst), like NCCL's per-peer order.
class FakeFabric {
public:
    explicit FakeFabric(int n) : n_(n) {}
    void post(int src, int dst, std::vector<unsigned char> data) {
        std::lock_guard<std::mutex> g(m_);
        box_[{src, dst}].push_back(std::move(data));
        cv_.notify_all();
    }
    std::vector<unsigned char> take(int src, int dst) {
        std::unique_lock<std::mutex> g(m_);
        auto& q = box_[{src, dst}];
        cv_.wait(g, [&] { return !q.empty(); });
        auto d = std::move(q.front());
        q.pop_front();
        return d;
    }
    int size() const { return n_; }

private:
    int n_;
    std::mutex m_;
    std::condition_variable cv_;
    std::map<std::pair<int, int>, std::deque<std::vector<unsigned char>>> box_;
};

// Enqueues everything; synchronize() runs the queue in order.  A group
// posts all its sends (copying the buffer as it is then), then receives.
template <typename T>
class FakeDevice final : public DeviceTransport {
public:
    FakeDevice(FakeFabric& f, int rank) : f_(f), rank_(rank) {}
    Status group_start() override {
        if (in_group_) return Status::internal("nested group");
        in_group_ = true;
        group_.clear();
        return Status::ok();
    }
    Status send(const void* buf, std::size_t bytes, int peer) override {
        if (!in_group_) return Status::internal("send outside a group");
        group_.push_back(Msg{true, const_cast<void*>(buf), bytes, peer});
        return Status::ok();
    }
    Status recv(void* buf, std::size_t bytes, int peer) override {
        if (!in_group_) return Status::internal("recv outside a group");
        group_.push_back(Msg{false, buf, bytes, peer});
        return Status::ok();
    }
    Status group_end() override {
        in_group_ = false;
        auto g = group_;
        queue_.push_back([this, g] {
            for (const Msg& m : g)
                if (m.send) {
                    const auto* p = static_cast<const unsigned char*>(m.buf);
                    std::vector<unsigned char> d(p, p + m.bytes);
                    f_.post(rank_, m.peer, std::move(d));
                }
            for (const Msg& m : g)
                if (!m.send) {
                    auto d = f_.take(m.peer, rank_);
                    if (d.size() != m.bytes) {
                        mismatch_ = true;
                        continue;
                    }
                    std::memcpy(m.buf, d.data(), m.bytes);
                }
        });
        ++groups_;
        return Status::ok();
    }
    Status reduce(const void* in, void* inout, std::size_t count) override {
        queue_.push_back([in, inout, count] {
            const T* a = static_cast<const T*>(in);
            T* b = static_cast<T*>(inout);
            for (std::size_t i = 0; i < count; ++i) b[i] = a[i] + b[i];
        });
        return Status::ok();
    }
    Status scratch(std::size_t bytes, void** out) override {
        scratch_.resize(bytes / sizeof(T) + 1);
        *out = scratch_.data();
        return Status::ok();
    }
    Status synchronize() override {
        for (auto& f : queue_) f();
        queue_.clear();
        ++syncs_;
        return mismatch_ ? Status(Code::transport_error, "send/recv byte counts differ") : Status::ok();
    }
    std::size_t pending() const { return queue_.size(); }
    int syncs() const { return syncs_; }
    int groups() const { return groups_; }

private:
    struct Msg {
        bool send;
        void* buf;
        std::size_t bytes;
        int peer;
    };
    FakeFabric& f_;
    int rank_;
    bool in_group_ = false;
    bool mismatch_ = false;
    int syncs_ = 0, groups_ = 0;
    std::vector<Msg> group_;
    std::vector<std::function<void()>> queue_;
    std::vector<T> scratch_;
};


template <typename T>
void run_all(Algorithm alg, const Topology& topo, std::size_t count, std::vector<std::vector<T>>& bufs) {
    const int p = topo.num_ranks();
    FakeFabric fabric(p);
    std::vector<std::string> errors(static_cast<std::size_t>(p));
    std::vector<std::thread> th;
    for (int r = 0; r < p; ++r)
        th.emplace_back([&, r] {
            Plan plan;
            PlanOptions opts;
            opts.pipeline_elems = 5;  // several pipelined rounds on small counts
            Status s = make_plan(alg, topo, count, r, opts, &plan);
            if (s) {
                FakeDevice<T> dev(fabric, r);
                s = run_device_schedule(plan.of(r), bufs[static_cast<std::size_t>(r)].data(), sizeof(T), dev);
                if (s && dev.pending() != 0) s = Status::internal("work left queued");
                if (s && dev.syncs() != 1) s = Status::internal("synchronized " + std::to_string(dev.syncs()) + " times");
            }
            if (!s) errors[static_cast<std::size_t>(r)] = s.message();
        });
    for (auto& t : th) t.join();
    for (int r = 0; r < p; ++r) {
        if (!errors[static_cast<std::size_t>(r)].empty())
            fail_msg("%s, %zu elements, rank %d: %s", algorithm_name(alg), count, r,
                     errors[static_cast<std::size_t>(r)].c_str());
    }
}

// Every algorithm of the table (algorithm.hpp).
const std::vector<Algorithm> kAlgs = host_algorithms();

}  // namespace

static void test_every_planner_exact_on_uneven_hosts(void** state) {
    (void)state;
    const std::vector<std::vector<int>> shapes = {{1}, {2, 3}, {1, 2, 3}, {3, 1}, {2, 2, 3}, {7}};
    for (const auto& shape : shapes) {
        Topology topo = hosts_topology(shape);
        const int p = topo.num_ranks();
        for (Algorithm alg : kAlgs)
            for (std::size_t count : {std::size_t(1), std::size_t(p > 1 ? p - 1 : 1), std::size_t(13), std::size_t(1000)}) {
                if (p == 1) continue;
                std::vector<std::vector<std::int64_t>> bufs(static_cast<std::size_t>(p));
                for (int r = 0; r < p; ++r)
                    for (std::size_t i = 0; i < count; ++i)
                        bufs[static_cast<std::size_t>(r)].push_back(static_cast<std::int64_t>((r + 1) * 1000003 + i * 7));
                run_all(alg, topo, count, bufs);
                for (std::size_t i = 0; i < count; ++i) {
                    std::int64_t want = 0;
                    for (int r = 0; r < p; ++r) want += static_cast<std::int64_t>((r + 1) * 1000003 + i * 7);
                    for (int r = 0; r < p; ++r)
                        if (bufs[static_cast<std::size_t>(r)][i] != want)
                            fail_msg("%s on %d ranks, count %zu: rank %d element %zu is %lld, want %lld",
                                     algorithm_name(alg), p, count, r, i,
                                     static_cast<long long>(bufs[static_cast<std::size_t>(r)][i]),
                                     static_cast<long long>(want));
                }
            }
    }
}

static void test_doubles_bit_identical(void** state) {
    (void)state;
    Topology topo = hosts_topology({2, 3, 1});
    const int p = topo.num_ranks();
    const std::size_t count = 777;
    for (Algorithm alg : kAlgs) {
        std::vector<std::vector<double>> bufs(static_cast<std::size_t>(p));
        for (int r = 0; r < p; ++r)
            for (std::size_t i = 0; i < count; ++i) bufs[static_cast<std::size_t>(r)].push_back(1.0 / (3.0 + r + i * 0.37));
        run_all(alg, topo, count, bufs);
        for (int r = 1; r < p; ++r)
            assert_memory_equal(bufs[0].data(), bufs[static_cast<std::size_t>(r)].data(), count * sizeof(double));
    }
}

// The executor must not depend on anything happening before synchronize:
// a transport that runs nothing until then still gets the right answer (the
// tests above), and the executor itself synchronizes exactly once and uses
// one group per round.
static void test_one_group_per_round_one_sync(void** state) {
    (void)state;
    Topology topo = hosts_topology({2, 2});
    Plan plan;
    PlanOptions opts;
    assert_true(make_plan(Algorithm::ring, topo, 64, -1, opts, &plan).is_ok());
    FakeFabric fabric(4);
    std::vector<std::thread> th;
    std::vector<int> groups(4), syncs(4);
    std::vector<std::vector<float>> bufs(4, std::vector<float>(64, 1.0f));
    for (int r = 0; r < 4; ++r)
        th.emplace_back([&, r] {
            FakeDevice<float> dev(fabric, r);
            (void)run_device_schedule(plan.of(r), bufs[static_cast<std::size_t>(r)].data(), sizeof(float), dev);
            groups[static_cast<std::size_t>(r)] = dev.groups();
            syncs[static_cast<std::size_t>(r)] = dev.syncs();
        });
    for (auto& t : th) t.join();
    for (int r = 0; r < 4; ++r) {
        assert_int_equal(groups[static_cast<std::size_t>(r)], static_cast<int>(plan.num_rounds(r)));
        assert_int_equal(syncs[static_cast<std::size_t>(r)], 1);
        for (float v : bufs[static_cast<std::size_t>(r)]) assert_true(v == 4.0f);
    }
}

// A failing transport call: the message names the round and the peer, and
// the stream is still synchronized (nothing left in flight).
class FailingDevice final : public DeviceTransport {
public:
    Status group_start() override { return Status::ok(); }
    Status send(const void*, std::size_t, int peer) override {
        return Status(Code::transport_error, "injected failure to " + std::to_string(peer));
    }
    Status recv(void*, std::size_t, int) override { return Status::ok(); }
    Status group_end() override {
        ++ended;
        return Status::ok();
    }
    Status reduce(const void*, void*, std::size_t) override { return Status::ok(); }
    Status scratch(std::size_t, void** out) override {
        static char s[1 << 16];
        *out = s;
        return Status::ok();
    }
    Status synchronize() override {
        ++synced;
        return Status::ok();
    }
    int ended = 0, synced = 0;
};

static void test_failure_names_round_and_syncs(void** state) {
    (void)state;
    Plan plan;
    assert_true(make_plan(Algorithm::ring, hosts_topology({2, 1}), 30, -1, PlanOptions{}, &plan).is_ok());
    FailingDevice dev;
    std::vector<int> buf(30, 1);
    Status s = run_device_schedule(plan.of(0), buf.data(), sizeof(int), dev);
    assert_false(s.is_ok());
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::transport_error));
    assert_non_null(std::strstr(s.message().c_str(), "device round 0 send to"));
    assert_int_equal(dev.ended, 1);  // the group was closed
    assert_int_equal(dev.synced, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_planner_exact_on_uneven_hosts),
        cmocka_unit_test(test_doubles_bit_identical),
        cmocka_unit_test(test_one_group_per_round_one_sync),
        cmocka_unit_test(test_failure_names_round_and_syncs),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
