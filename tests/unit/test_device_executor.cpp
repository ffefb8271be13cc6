// The device executor (common/exec/device_executor.*) over an in-process,
// stream-ordered fake device transport: every planner's schedule on uneven
// hosts, exact results, bit-identical floating point, and the stream
// discipline (nothing happens before synchronize; a send reads the buffer
// as it is when the stream reaches it, not when it was enqueued).  Also
// nccl_hier (run_device_hier): the fake's host collectives check, as the
// fake NCCL does, that every member of a host called the same collective
// with the same count in the same order.
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

#include <algorithm>
#include <chrono>
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
#include "planners/planner_nccl_hier.hpp"
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
    // Empty after 20 s without a message (a plan that does not pair would
    // otherwise hang the test; the receiver reports a mismatch).
    std::vector<unsigned char> take(int src, int dst) {
        std::unique_lock<std::mutex> g(m_);
        auto& q = box_[{src, dst}];
        if (!cv_.wait_for(g, std::chrono::seconds(20), [&] { return !q.empty(); })) return {};
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
// With set_host(), host collectives too: a member sends every other member
// what that one needs (a header with the collective's kind and count
// first), then reduces what it received in local order (so every member
// gets the same bits).
template <typename T>
class FakeDevice final : public DeviceTransport {
public:
    FakeDevice(FakeFabric& f, int rank) : f_(f), rank_(rank) {}
    void set_host(std::vector<int> members, int local) {
        host_ = std::move(members);
        local_ = local;
    }
    Status host_reduce_scatter(const void* send, void* recv, std::size_t n) override {
        return coll(kRS, send, recv, n, -1);
    }
    Status host_reduce(const void* send, void* recv, std::size_t n, int root) override {
        return coll(kReduce, send, recv, n, root);
    }
    Status host_all_gather(const void* send, void* recv, std::size_t n) override {
        return coll(kAG, send, recv, n, -1);
    }
    Status host_broadcast(const void* send, void* recv, std::size_t n, int root) override {
        return coll(kBcast, send, recv, n, root);
    }
    int collectives() const { return colls_; }
    Status group_start() override {
        if (in_group_) return Status::internal("nested group");
        in_group_ = true;
        group_.clear();
        return Status::ok();
    }
    Status send(const void* buf, std::size_t bytes, int peer) override {
        if (!in_group_) return Status::internal("send outside a group");
        group_.push_back(Msg{kSend, const_cast<void*>(buf), nullptr, bytes, peer});
        return Status::ok();
    }
    Status recv(void* buf, std::size_t bytes, int peer) override {
        if (!in_group_) return Status::internal("recv outside a group");
        group_.push_back(Msg{kRecv, buf, nullptr, bytes, peer});
        return Status::ok();
    }
    Status group_end() override {
        in_group_ = false;
        auto g = group_;
        queue_.push_back([this, g] {
            for (const Msg& m : g) {
                if (m.kind == kSend) {
                    const auto* p = static_cast<const unsigned char*>(m.buf);
                    std::vector<unsigned char> d(p, p + m.bytes);
                    f_.post(rank_, m.peer, std::move(d));
                } else if (m.kind != kRecv) {
                    post_coll(m);
                }
            }
            for (const Msg& m : g) {
                if (m.kind == kRecv) {
                    auto d = f_.take(m.peer, rank_);
                    if (d.size() != m.bytes) {
                        mismatch_ = true;
                        continue;
                    }
                    std::memcpy(m.buf, d.data(), m.bytes);
                } else if (m.kind != kSend) {
                    finish_coll(m);
                }
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
        return mismatch_ ? Status(Code::transport_error, "send/recv byte counts or host collectives differ")
                         : Status::ok();
    }
    std::size_t pending() const { return queue_.size(); }
    int syncs() const { return syncs_; }
    int groups() const { return groups_; }

private:
    enum Kind { kSend, kRecv, kRS, kReduce, kAG, kBcast };
    struct Msg {
        Kind kind;
        void* buf;    // send/recv buffer; a collective's send
        void* recv;   // a collective's recv
        std::size_t bytes;  // send/recv: bytes; a collective: its count
        int peer;     // send/recv: peer; reduce/broadcast: root
    };
    Status coll(Kind k, const void* send, void* recv, std::size_t n, int root) {
        if (host_.empty()) return Status::unsupported("no host collectives without set_host");
        if (!in_group_) return Status::internal("host collective outside a group");
        if ((k == kReduce || k == kBcast) && (root < 0 || root >= static_cast<int>(host_.size())))
            return Status::internal("root out of range");
        group_.push_back(Msg{k, const_cast<void*>(send), recv, n, root});
        ++colls_;
        return Status::ok();
    }
    void post_to(int member, Kind k, std::size_t n, const T* data) {
        std::vector<unsigned char> d(2 * sizeof(std::uint64_t) + n * sizeof(T));
        const std::uint64_t hdr[2] = {static_cast<std::uint64_t>(k), n};
        std::memcpy(d.data(), hdr, sizeof hdr);
        if (n) std::memcpy(d.data() + sizeof hdr, data, n * sizeof(T));
        f_.post(rank_, host_[static_cast<std::size_t>(member)], std::move(d));
    }
    std::vector<T> take_from(int member, Kind k, std::size_t n) {
        auto d = f_.take(host_[static_cast<std::size_t>(member)], rank_);
        std::uint64_t hdr[2] = {0, 0};
        if (d.size() >= sizeof hdr) std::memcpy(hdr, d.data(), sizeof hdr);
        if (d.size() != sizeof hdr + n * sizeof(T) || hdr[0] != static_cast<std::uint64_t>(k) || hdr[1] != n) {
            mismatch_ = true;  // another collective or count on the other member
            return std::vector<T>(n);
        }
        std::vector<T> v(n);
        if (n) std::memcpy(v.data(), d.data() + sizeof hdr, n * sizeof(T));
        return v;
    }
    void post_coll(const Msg& m) {
        const T* send = static_cast<const T*>(m.buf);
        const int n = static_cast<int>(host_.size());
        for (int j = 0; j < n; ++j) {
            if (j == local_) continue;
            switch (m.kind) {
            case kRS: post_to(j, m.kind, m.bytes, send + static_cast<std::size_t>(j) * m.bytes); break;
            case kReduce: if (j == m.peer) post_to(j, m.kind, m.bytes, send); break;
            case kAG: post_to(j, m.kind, m.bytes, send); break;
            case kBcast: if (local_ == m.peer) post_to(j, m.kind, m.bytes, send); break;
            default: break;
            }
        }
    }
    void finish_coll(const Msg& m) {
        const T* send = static_cast<const T*>(m.buf);
        T* recv = static_cast<T*>(m.recv);
        const int n = static_cast<int>(host_.size());
        const std::size_t c = m.bytes;
        auto reduce_in_order = [&](const T* mine) {
            std::vector<T> acc;
            for (int j = 0; j < n; ++j) {
                std::vector<T> x = j == local_ ? std::vector<T>(mine, mine + c) : take_from(j, m.kind, c);
                if (j == 0) acc = x;
                else
                    for (std::size_t i = 0; i < c; ++i) acc[i] = acc[i] + x[i];
            }
            std::copy(acc.begin(), acc.end(), recv);
        };
        switch (m.kind) {
        case kRS: reduce_in_order(send + static_cast<std::size_t>(local_) * c); break;
        case kReduce:
            if (local_ == m.peer) reduce_in_order(send);
            break;
        case kAG: {
            std::vector<T> mine(send, send + c);
            for (int j = 0; j < n; ++j) {
                std::vector<T> x = j == local_ ? mine : take_from(j, m.kind, c);
                std::copy(x.begin(), x.end(), recv + static_cast<std::size_t>(j) * c);
            }
            break;
        }
        case kBcast:
            if (local_ == m.peer) {
                if (send != recv) std::memmove(recv, send, c * sizeof(T));
            } else {
                std::vector<T> x = take_from(m.peer, m.kind, c);
                std::copy(x.begin(), x.end(), recv);
            }
            break;
        default: break;
        }
    }
    std::vector<int> host_;
    int local_ = 0, colls_ = 0;
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

// ---- nccl_hier ---------------------------------------------------------

namespace {

// Every rank runs its HierPlan (plan_nccl_hier_rank) with run_device_hier.
template <typename T>
void run_hier_all(const Topology& topo, std::size_t count, std::vector<std::vector<T>>& bufs,
                  const PlanOptions& opts = PlanOptions{}, std::vector<int>* groups = nullptr) {
    const int p = topo.num_ranks();
    HostLayout layout;
    assert_true(host_layout(topo, &layout).is_ok());
    FakeFabric fabric(p);
    std::vector<std::string> errors(static_cast<std::size_t>(p));
    if (groups) groups->assign(static_cast<std::size_t>(p), 0);
    std::vector<std::thread> th;
    for (int r = 0; r < p; ++r)
        th.emplace_back([&, r] {
            HierPlan h;
            Status s = plan_nccl_hier_rank(topo, count, r, opts, &h);
            if (s) {
                FakeDevice<T> dev(fabric, r);
                dev.set_host(layout.members[static_cast<std::size_t>(h.host)], h.local);
                s = run_device_hier(h, bufs[static_cast<std::size_t>(r)].data(), sizeof(T), dev);
                if (s && dev.pending() != 0) s = Status::internal("work left queued");
                if (s && dev.syncs() != 1) s = Status::internal("synchronized " + std::to_string(dev.syncs()) + " times");
                if (groups) (*groups)[static_cast<std::size_t>(r)] = dev.groups();
            }
            if (!s) errors[static_cast<std::size_t>(r)] = s.message();
        });
    for (auto& t : th) t.join();
    for (int r = 0; r < p; ++r)
        if (!errors[static_cast<std::size_t>(r)].empty())
            fail_msg("nccl_hier, %d ranks, %zu elements, rank %d: %s", p, count, r,
                     errors[static_cast<std::size_t>(r)].c_str());
}

}  // namespace

// Uneven hosts (the largest first, last, in the middle; hosts of one rank;
// counts below, at and above the shard count, not divisible): every element
// exact on every rank, with each algorithm across hosts.
static void test_hier_exact_on_uneven_hosts(void** state) {
    (void)state;
    const std::vector<std::vector<int>> shapes = {{1},    {2},       {1, 1},    {2, 1},    {3, 2, 1}, {1, 4, 3},
                                                  {4, 4}, {2, 2, 3}, {5, 3},    {1, 1, 1}, {3, 1, 3}};
    for (const auto& shape : shapes) {
        Topology topo = hosts_topology(shape);
        const int p = topo.num_ranks();
        for (Algorithm inter : {Algorithm::automatic, Algorithm::ring, Algorithm::flexreduce, Algorithm::hring})
            for (std::size_t count : {std::size_t(1), std::size_t(2), std::size_t(5), std::size_t(13), std::size_t(1000)}) {
                PlanOptions opts;
                opts.hier_inter = inter;
                opts.pipeline_elems = 3;
                std::vector<std::vector<std::int64_t>> bufs(static_cast<std::size_t>(p));
                for (int r = 0; r < p; ++r)
                    for (std::size_t i = 0; i < count; ++i)
                        bufs[static_cast<std::size_t>(r)].push_back(static_cast<std::int64_t>((r + 1) * 1000003 + i * 7));
                run_hier_all(topo, count, bufs, opts);
                for (std::size_t i = 0; i < count; ++i) {
                    std::int64_t want = 0;
                    for (int r = 0; r < p; ++r) want += static_cast<std::int64_t>((r + 1) * 1000003 + i * 7);
                    for (int r = 0; r < p; ++r)
                        if (bufs[static_cast<std::size_t>(r)][i] != want)
                            fail_msg("nccl_hier (%s across hosts) on %d ranks, count %zu: rank %d element %zu is %lld, "
                                     "want %lld", algorithm_name(inter), p, count, r, i,
                                     static_cast<long long>(bufs[static_cast<std::size_t>(r)][i]),
                                     static_cast<long long>(want));
                }
            }
    }
}

// Floating point whose sum depends on the order: bit-identical everywhere,
// also where ranks own several shards, on racks with ranks placed round
// robin over the hosts.
static void test_hier_doubles_bit_identical(void** state) {
    (void)state;
    for (const Topology& topo : {hosts_topology({3, 1, 2}), topoar_test::cluster_two_racks()}) {
        const int p = topo.num_ranks();
        const std::size_t count = 777;
        std::vector<std::vector<double>> bufs(static_cast<std::size_t>(p));
        for (int r = 0; r < p; ++r)
            for (std::size_t i = 0; i < count; ++i) bufs[static_cast<std::size_t>(r)].push_back(1.0 / (3.0 + r + i * 0.37));
        run_hier_all(topo, count, bufs);
        for (int r = 1; r < p; ++r)
            assert_memory_equal(bufs[0].data(), bufs[static_cast<std::size_t>(r)].data(), count * sizeof(double));
    }
}

// Equal hosts: one group of host collectives, the shard's rounds, one group
// of host collectives; one synchronize (run_hier_all checks it).
static void test_hier_groups(void** state) {
    (void)state;
    Topology topo = hosts_topology({4, 4, 4});
    std::vector<std::vector<float>> bufs(12, std::vector<float>(1000, 1.0f));
    std::vector<int> groups;
    run_hier_all(topo, 1000, bufs, PlanOptions{}, &groups);
    for (int r = 0; r < 12; ++r) {
        HierPlan h;
        assert_true(plan_nccl_hier_rank(topo, 1000, r, PlanOptions{}, &h).is_ok());
        assert_int_equal(h.owned.size(), 1);
        assert_int_equal(groups[static_cast<std::size_t>(r)], 2 + static_cast<int>(h.owned[0].schedule.rounds.size()));
        for (float v : bufs[static_cast<std::size_t>(r)]) assert_true(v == 12.0f);
    }
}

// A transport without host collectives: the error names the phase, and
// the stream is synchronized.
static void test_hier_without_host_collectives(void** state) {
    (void)state;
    HierPlan h;
    assert_true(plan_nccl_hier_rank(hosts_topology({2, 1}), 30, 0, PlanOptions{}, &h).is_ok());
    FailingDevice dev;
    std::vector<int> buf(30, 1);
    Status s = run_device_hier(h, buf.data(), sizeof(int), dev);
    assert_int_equal(static_cast<int>(s.code()), static_cast<int>(Code::unsupported));
    assert_non_null(std::strstr(s.message().c_str(), "nccl_hier reduce-scatter in the host"));
    assert_int_equal(dev.ended, 1);
    assert_int_equal(dev.synced, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hier_exact_on_uneven_hosts),
        cmocka_unit_test(test_hier_doubles_bit_identical),
        cmocka_unit_test(test_hier_groups),
        cmocka_unit_test(test_hier_without_host_collectives),
        cmocka_unit_test(test_every_planner_exact_on_uneven_hosts),
        cmocka_unit_test(test_doubles_bit_identical),
        cmocka_unit_test(test_one_group_per_round_one_sync),
        cmocka_unit_test(test_failure_names_round_and_syncs),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
