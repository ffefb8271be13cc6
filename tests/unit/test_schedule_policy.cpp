// The executor and the cost model take the same scheduling decisions
// (common/exec/schedule_policy.hpp).
//
// The model replays a plan on a topology and records, per rank, every
// decision (post a receive, post a send, apply a segment) and every
// completion (a message arrived, a send finished, an apply finished) in
// the order it took them.  Each rank's schedule is then run by the real
// Executor over a scripted transport that completes a request exactly
// where the model's record has that completion next: same completions at
// the same points.  The executor's own record must equal the model's, and
// the transport checks that the executor really posted what it recorded.
//
// The reductions cost nothing in these replays (gamma = 0): the executor
// reduces synchronously, while the model puts a reduction on the rank's CPU
// and meanwhile lets the rank react to other completions (a difference of
// timing the model accepts; docs/cost-model.md).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "exec/executor.hpp"
#include "exec/tcp_retransmissions.hpp"
#include "fake_transport.hpp"
#include "model/cost_model.hpp"
#include "planners/planners.hpp"

// cmocka last: its macros (fail, ...) clash with the C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

#include "cluster_fixtures.hpp"

using namespace topoar;
using namespace topoar_test;

namespace {

std::size_t g_early = 0;  // receives whose message was there when posted

std::string show(const std::vector<ScheduleEvent>& t, std::size_t at) {
    std::string s;
    for (std::size_t i = at >= 3 ? at - 3 : 0; i < t.size() && i < at + 4; ++i)
        s += std::string(i == at ? " >" : "  ") + to_string(t[i].kind) + "(" + std::to_string(t[i].step) + ")";
    return s;
}

bool is_completion(const ScheduleEvent& e) {
    return e.kind == ScheduleEvent::arrived || e.kind == ScheduleEvent::send_done;
}

// Completes a request when the model's record, at the point the executor's
// record has reached, says that this request completes next.
class ScriptedTransport final : public Transport {
public:
    ScriptedTransport(const ExecProgram& prog, int nranks, const std::vector<ScheduleEvent>& model,
                      const std::vector<ScheduleEvent>& executor)
        : model_(model), exec_(executor), sends_(static_cast<std::size_t>(nranks)),
          recvs_(static_cast<std::size_t>(nranks)), next_send_(static_cast<std::size_t>(nranks), 0),
          next_recv_(static_cast<std::size_t>(nranks), 0), prog_(prog) {
        for (std::uint32_t i = 0; i < prog.steps.size(); ++i)
            (prog.steps[i].kind == OpKind::send ? sends_ : recvs_)[static_cast<std::size_t>(prog.steps[i].peer)]
                .push_back(i);
    }

    Status isend(const void*, std::size_t bytes, int peer, Request* req) override {
        return post(sends_, next_send_, ScheduleEvent::post_send, bytes, peer, req);
    }
    Status issend(const void* buf, std::size_t bytes, int peer, Request* req) override {
        Status s = isend(buf, bytes, peer, req);
        if (s) synced_.push_back(posted_.back().step);
        return s;
    }
    Status irecv(void*, std::size_t bytes, int peer, Request* req) override {
        return post(recvs_, next_recv_, ScheduleEvent::post_recv, bytes, peer, req);
    }
    Status wait(Request*) override { return Status::internal("scripted transport: wait() not expected"); }
    Status test(Request* req, bool* done) override {
        const std::uint32_t step = *static_cast<std::uint32_t*>(*req);
        const std::size_t at = exec_.size();
        *done = at < model_.size() && is_completion(model_[at]) && model_[at].step == step;
        if (*done) {
            delete static_cast<std::uint32_t*>(*req);
            *req = nullptr;
            --live_;
            idle_ = 0;
        } else if (idle_ > 10000) {
            return Status(Code::transport_error, "scripted transport: stuck; model's record at the executor's point:" +
                                                     show(model_, at));
        }
        return Status::ok();
    }
    void progress() override { ++idle_; }
    Status cancel(Request* req) override {
        delete static_cast<std::uint32_t*>(*req);
        *req = nullptr;
        --live_;
        return Status::ok();
    }

    const std::vector<ScheduleEvent>& posted() const { return posted_; }
    const std::vector<std::uint32_t>& synced() const { return synced_; }  // steps sent by issend
    int live() const { return live_; }

private:
    // The k-th post to a peer is that peer's k-th step of its kind: the
    // executor must post in schedule order per peer.
    Status post(const std::vector<std::vector<std::uint32_t>>& steps, std::vector<std::size_t>& next,
                ScheduleEvent::Kind kind, std::size_t bytes, int peer, Request* req) {
        auto& k = next[static_cast<std::size_t>(peer)];
        if (k >= steps[static_cast<std::size_t>(peer)].size())
            return Status::internal("scripted transport: more posts to a peer than steps");
        const std::uint32_t step = steps[static_cast<std::size_t>(peer)][k++];
        if (bytes != prog_.steps[step].count * 8) return Status::internal("scripted transport: wrong size");
        posted_.push_back(ScheduleEvent{kind, 0, step});
        *req = new std::uint32_t(step);
        ++live_;
        return Status::ok();
    }

    const std::vector<ScheduleEvent>& model_;
    const std::vector<ScheduleEvent>& exec_;
    std::vector<std::vector<std::uint32_t>> sends_, recvs_;
    std::vector<std::size_t> next_send_, next_recv_;
    const ExecProgram& prog_;
    std::vector<ScheduleEvent> posted_;
    std::vector<std::uint32_t> synced_;
    int live_ = 0;
    long idle_ = 0;
};

class NullReducer final : public Reducer {
public:
    void reduce(const void*, void*, std::size_t) override {}
};

// remote[q] != 0: rank q is on another host than rank r (as the engine and
// the model pass it to compile_schedule).
std::vector<char> remote_of(const Topology& topo, int r) {
    std::vector<char> remote(static_cast<std::size_t>(topo.num_ranks()));
    for (int q = 0; q < topo.num_ranks(); ++q) remote[static_cast<std::size_t>(q)] = topo.node_of_rank(q) != topo.node_of_rank(r);
    return remote;
}

// Replays every rank of `plan` on the executor against the model's record;
// returns the number of events compared.
std::size_t expect_same_decisions(const Topology& topo, const Plan& plan, const CostParams& params,
                                  const char* what) {
    const std::size_t elem = 8;
    std::vector<ScheduleEvent> model;
    Prediction pred;
    Status s = predict(topo, plan, elem, params, &pred, &model);
    if (!s) fail_msg("%s: %s", what, s.message().c_str());
    std::size_t compared = 0;
    for (int r = 0; r < plan.nranks; ++r) {
        std::vector<ScheduleEvent> mine;  // the model's record of rank r
        for (const auto& e : model)
            if (e.rank == r) mine.push_back(ScheduleEvent{e.kind, 0, e.step});
        const std::size_t flight =
            flight_bytes_for(params.flight_bytes, static_cast<int>(topo.nodes_at(Level::node).size()));
        const std::vector<char> remote = remote_of(topo, r);
        ExecProgram prog =
            compile_schedule(plan.of(r), segment_elems_of(params.segment_bytes, elem), elem, flight, &remote);
        std::vector<ScheduleEvent> exec;
        ScriptedTransport t(prog, plan.nranks, mine, exec);
        NullReducer red;
        Executor ex;
        ex.set_trace(&exec);
        std::vector<char> buf(plan.count * elem), scratch(prog.scratch_elems * elem + 1);
        s = ex.run(prog, buf.data(), scratch.data(), elem, t, red);
        if (!s) fail_msg("%s, rank %d: executor: %s", what, r, s.message().c_str());
        if (t.live() != 0) fail_msg("%s, rank %d: %d requests left posted", what, r, t.live());
        for (std::size_t i = 0; i < mine.size() || i < exec.size(); ++i)
            if (i >= mine.size() || i >= exec.size() || mine[i] != exec[i])
                fail_msg("%s, rank %d: decisions differ at event %zu of %zu/%zu\n  model:   %s\n  executor:%s", what,
                         r, i, mine.size(), exec.size(), show(mine, i).c_str(), show(exec, i).c_str());
        // What the executor recorded is what it posted.
        std::vector<ScheduleEvent> posts;
        for (const auto& e : exec)
            if (e.kind == ScheduleEvent::post_send || e.kind == ScheduleEvent::post_recv) posts.push_back(e);
        if (posts != t.posted()) fail_msg("%s, rank %d: the transport saw other posts than recorded", what, r);
        // Synchronous exactly where the program says (sends to other hosts under a credit).
        std::vector<std::uint32_t> sync_steps;
        for (const auto& e : exec)
            if (e.kind == ScheduleEvent::post_send && prog.steps[e.step].sync) sync_steps.push_back(e.step);
        if (sync_steps != t.synced()) fail_msg("%s, rank %d: other sends synchronous than the program's", what, r);
        compared += mine.size();
        for (std::size_t i = 0; i + 1 < mine.size(); ++i)
            if (mine[i].kind == ScheduleEvent::post_recv && mine[i + 1].kind == ScheduleEvent::arrived &&
                mine[i + 1].step == mine[i].step)
                ++g_early;
    }
    return compared;
}

CostParams zero_gamma() {
    CostParams p;
    p.gamma = 0;
    return p;
}

Plan plan_of(Algorithm alg, const Topology& topo, std::size_t count, std::size_t pipeline_elems) {
    PlanOptions opts;
    opts.pipeline_elems = pipeline_elems;
    Plan plan;
    Status s = make_plan(alg, topo, count, -1, opts, &plan);
    if (!s) fail_msg("%s: %s", algorithm_name(alg), s.message().c_str());
    return plan;
}

const Algorithm kAlgs[] = {Algorithm::ring, Algorithm::leader, Algorithm::hring, Algorithm::flexreduce,
                           Algorithm::tree};

// The planners' schedules on the emulated clusters' fixtures: eager and
// rendezvous sizes, segmented and pipelined.
void test_fixtures_same_decisions(void** state) {
    (void)state;
    const Topology topos[] = {cluster_2_3(), cluster_two_racks()};
    std::size_t events = 0, cases = 0;
    g_early = 0;
    for (const Topology& topo : topos)
        for (Algorithm alg : kAlgs)
            for (std::size_t count : {std::size_t(3), std::size_t(1000), std::size_t(40000)})
                // Flight bounds: none (four rounds open), one and two rounds
                // of the 8 KiB pipelining unit per peer.
                for (std::size_t flight : {std::size_t(0), std::size_t(8192), std::size_t(16384)})
                    // Without and with a rank's messages on its CPU (the
                    // engine's 25 %): arrivals move, the decisions must not.
                    for (double share : {0.0, 0.25}) {
                        CostParams p = zero_gamma();
                        p.segment_bytes = 4096;
                        p.eager_bytes = 16384;
                        p.handshake_queue_delay = 30e-6;
                        p.flight_bytes = flight;
                        p.message_cpu_share = share;
                        Plan plan = plan_of(alg, topo, count, 1024);
                        std::string what = std::string(algorithm_name(alg)) + " on " +
                                           std::to_string(topo.num_ranks()) + " ranks, " + std::to_string(count) +
                                           " elements, flight " + std::to_string(flight) + ", CPU share " +
                                           std::to_string(share);
                        events += expect_same_decisions(topo, plan, p, what.c_str());
                        ++cases;
                    }
    std::printf("  %zu events compared, %zu early arrivals\n", events, g_early);
    assert_int_equal(cases, 2 * 5 * 3 * 3 * 2);
    assert_true(g_early > 0);  // the path where a posted receive completes at once is covered
}

// Random machines (link speeds and latencies per link, host sizes) and
// model parameters: the completions come in other orders.
void test_random_orders_same_decisions(void** state) {
    (void)state;
    std::mt19937 rng(20240611);
    auto uni = [&rng](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    std::size_t events = 0;
    g_early = 0;
    for (int trial = 0; trial < 40; ++trial) {
        TopologyBuilder b;
        const int racks = 1 + static_cast<int>(rng() % 3);
        int next = 0;
        for (int k = 0; k < racks; ++k) {
            int parent = racks > 1 ? b.add(b.root(), Level::rack, "r" + std::to_string(k), {uni(1e7, 1e9), uni(1e-6, 5e-5)})
                                   : b.root();
            const int hosts = 1 + static_cast<int>(rng() % 4);
            for (int h = 0; h < hosts; ++h) {
                int host = b.add(parent, Level::node, "n" + std::to_string(k) + "_" + std::to_string(h),
                                 {uni(1e7, 1e9), uni(1e-6, 5e-5)});
                const int ranks = 1 + static_cast<int>(rng() % 4);
                for (int g = 0; g < ranks; ++g) b.add_rank(host, next++, {uni(1e8, 1e10), uni(1e-7, 2e-6)});
            }
        }
        if (next < 2) b.add_rank(b.add(b.root(), Level::node, "extra", {1e8, 1e-5}), next++, {1e9, 1e-6});
        Topology topo;
        Status s = b.build(&topo);
        if (!s) fail_msg("%s", s.message().c_str());
        CostParams p = zero_gamma();
        const std::size_t segs[] = {0, 512, 4096, 32768};
        const std::size_t eagers[] = {0, 2048, 65536};
        p.segment_bytes = segs[rng() % 4];
        p.eager_bytes = eagers[rng() % 3];
        p.overhead = uni(0, 5e-6);
        p.handshake_queue_delay = uni(0, 1e-4);
        p.message_cpu_share = trial % 2 ? uni(0, 0.5) : 0.0;
        const Algorithm alg = kAlgs[rng() % 5];
        const std::size_t count = 1 + rng() % 100000;
        Plan plan = plan_of(alg, topo, count, rng() % 2 ? 0 : 256);
        std::string what = "trial " + std::to_string(trial) + " (" + algorithm_name(alg) + ", " +
                           std::to_string(next) + " ranks, " + std::to_string(count) + " elements)";
        events += expect_same_decisions(topo, plan, p, what.c_str());
    }
    std::printf("  %zu events compared, %zu early arrivals\n", events, g_early);
    assert_true(g_early > 0);  // the path where a posted receive completes at once is covered
}

// A transport failure is final and clean: the executor cancels every
// request it still has posted and says where it failed.  The fake network
// breaks at the n-th call of any rank, so every rank stops sooner or later.
void test_failure_leaves_nothing_posted(void** state) {
    (void)state;
    const int p = 4;
    const std::size_t count = 1000, seg = 16;
    int failed_ranks = 0, cancelled = 0;
    for (long n : {1L, 2L, 3L, 7L, 30L, 100L, 400L, 2000L}) {
        FakeNetwork net(p);
        net.fail_after(n);
        std::vector<std::string> errors(p);
        std::vector<int> left(p, -1), cancels(p, 0);
        std::vector<std::thread> threads;
        for (int r = 0; r < p; ++r)
            threads.emplace_back([&, r] {
                Plan plan = plan_ring(p, count, r);
                std::vector<std::uint64_t> buf(count, 1);
                FakeTransport t(net, r);
                NullReducer red;
                Executor ex;
                Status s = ex.run(plan.of(r), buf.data(), nullptr, 8, seg, t, red);
                if (!s) errors[static_cast<std::size_t>(r)] = s.message();
                left[static_cast<std::size_t>(r)] = t.outstanding();
                cancels[static_cast<std::size_t>(r)] = t.cancelled();
            });
        for (auto& t : threads) t.join();
        for (int r = 0; r < p; ++r) {
            const std::string& e = errors[static_cast<std::size_t>(r)];
            if (left[static_cast<std::size_t>(r)] != 0)
                fail_msg("fail_after(%ld), rank %d: %d requests left posted (%s)", n, r,
                         left[static_cast<std::size_t>(r)], e.c_str());
            if (e.empty()) continue;
            ++failed_ranks;
            cancelled += cancels[static_cast<std::size_t>(r)];
            // Names the call, the step, its peer and size, and the cause.
            const bool named = (e.find("isend of step") != std::string::npos ||
                                e.find("irecv of step") != std::string::npos ||
                                e.find("test of step") != std::string::npos) &&
                               e.find("peer ") != std::string::npos && e.find(" bytes") != std::string::npos &&
                               e.find("injected") != std::string::npos;
            if (!named) fail_msg("fail_after(%ld), rank %d: message does not say where: %s", n, r, e.c_str());
        }
    }
    assert_true(failed_ranks > 0);
    assert_true(cancelled > 0);  // requests were posted when the failures came, and were cancelled
}

// TOPOAR_TRY notes where a failure passed, without changing the message.
Status inner_failure() { return Status::invalid("bad thing"); }
Status outer_call() {
    TOPOAR_TRY(inner_failure());
    return Status::ok();
}

void test_try_notes_location(void** state) {
    (void)state;
    Status s = outer_call();
    assert_false(s.is_ok());
    assert_string_equal(s.message().c_str(), "bad thing");
    assert_true(s.where().find("test_schedule_policy.cpp:") == 0);
    assert_true(s.where().find("(outer_call)") != std::string::npos);
    assert_true(s.describe().find("bad thing [at test_schedule_policy.cpp:") == 0);
}

}  // namespace

// The flight bound's window: rounds open so that what a rank sends to one
// peer in them stays within the bound, 1 to kWindowRounds; the scratch
// bands follow the window.
// coll_topoar_unit_time: the unit a link carries in that time, the nearest
// power of two, between the unit as set and kMaxLinkUnit.
void test_link_unit(void**) {
    const double t = 200e-6;
    assert_int_equal(link_unit(32768, 125e6, t), 32768);    // 1 Gbit/s: 25 KB, the unit as set
    assert_int_equal(link_unit(32768, 118e6, t), 32768);    // a 1 Gbit/s link as probes read it
    assert_int_equal(link_unit(32768, 25e6, t), 32768);     // 200 Mbit/s
    assert_int_equal(link_unit(32768, 257e6, t), 32768);    // 2 Gbit/s: 51 KB, less than 4x: as set
    assert_int_equal(link_unit(32768, 625e6, t), 131072);   // 5 Gbit/s: 125 KB
    assert_int_equal(link_unit(32768, 1.25e9, t), 262144);  // 10 Gbit/s: 250 KB
    assert_int_equal(link_unit(32768, 12.5e9, t), kMaxLinkUnit);  // 100 Gbit/s
    assert_int_equal(link_unit(32768, 1e300, t), kMaxLinkUnit);
    assert_int_equal(link_unit(0, 1.25e9, t), 0);  // no unit stays none
    assert_int_equal(link_unit(32768, 1.25e9, 0), 32768);  // off
    assert_int_equal(link_unit(32768, 0, t), 32768);       // rate unknown
    assert_int_equal(link_unit(std::size_t(2) << 20, 1.25e9, t), std::size_t(2) << 20);  // never below the unit
}

// The send credit: under a flight bound, sends to a peer on another host
// that the call sends at least kCreditFlights x the bound are synchronous
// and at most send_credit of them (flight / step size, at least
// kMinSendCredit) are posted and not done at once; sends within a host, and
// to a peer sent less, are neither.  Checked on the model's record, which the executor's
// equals (test_fixtures_same_decisions).
void test_send_credit(void** state) {
    (void)state;
    const std::size_t elem = 8;
    const Topology topo = cluster_2_3();
    std::size_t small_total = 0, cases = 0;
    for (Algorithm alg : kAlgs) {
        const Plan plan = plan_of(alg, topo, 100000, 1024);
        for (std::size_t flight : {std::size_t(0), std::size_t(8192), std::size_t(65536)}) {
            CostParams p = zero_gamma();
            p.segment_bytes = 4096;
            p.flight_bytes = flight;
            const std::size_t credit = flight ? std::max<std::size_t>(kMinSendCredit, flight / 4096) : 0;
            std::vector<ScheduleEvent> model;
            Prediction pred;
            Status st = predict(topo, plan, elem, p, &pred, &model);
            if (!st) fail_msg("%s: %s", algorithm_name(alg), st.message().c_str());
            std::size_t remote_sends = 0, most = 0, small_peers = 0;
            for (int r = 0; r < plan.nranks; ++r) {
                const std::vector<char> remote = remote_of(topo, r);
                const ExecProgram prog = compile_schedule(plan.of(r), 4096 / elem, elem, flight, &remote);
                assert_int_equal(prog.send_credit, static_cast<int>(credit));
                std::vector<std::size_t> out(static_cast<std::size_t>(plan.nranks), 0);
                std::vector<std::size_t> to_peer(static_cast<std::size_t>(plan.nranks), 0);
                for (const Round& round : plan.of(r).rounds)
                    for (const Op& op : round.ops)
                        if (op.kind == OpKind::send) to_peer[static_cast<std::size_t>(op.peer)] += op.count * elem;
                for (const auto& e : model) {
                    if (e.rank != r) continue;
                    const auto& step = prog.steps[e.step];
                    if (step.kind != OpKind::send) continue;
                    const bool far = remote[static_cast<std::size_t>(step.peer)] != 0;
                    const bool much = to_peer[static_cast<std::size_t>(step.peer)] >= kCreditFlights * flight;
                    assert_int_equal(step.sync, far && flight > 0 && much);
                    if (far && flight > 0 && !much) ++small_peers;
                    if (!step.sync) continue;
                    std::size_t& o = out[static_cast<std::size_t>(step.peer)];
                    if (e.kind == ScheduleEvent::post_send) {
                        ++remote_sends;
                        most = std::max(most, ++o);
                        if (o > credit) fail_msg("%s, rank %d: %zu sends to %d posted at once, credit %zu",
                                                 algorithm_name(alg), r, o, step.peer, credit);
                    } else if (e.kind == ScheduleEvent::send_done) {
                        --o;
                    }
                }
            }
            std::printf("  %s, flight %zu: %zu credited sends, %zu not (too few bytes)\n", algorithm_name(alg), flight,
                        remote_sends, small_peers);
            small_total += small_peers;
            ++cases;
            if (flight) {
                if (flight == 8192) assert_true(remote_sends > 0);
                if (flight == 8192 && alg != Algorithm::leader) assert_int_equal(most, credit);  // the bound binds
            } else {
                assert_int_equal(remote_sends, 0);
            }
        }
    }
    assert_int_equal(cases, 5 * 3);
    assert_true(small_total > 0);  // the threshold acts somewhere
    // No remote peers given, or whole transfers: the credit's floor.
    const Plan plan = plan_of(Algorithm::ring, topo, 4000, 0);
    assert_int_equal(compile_schedule(plan.of(0), 512, elem, 8192).send_credit, 0);
    const std::vector<char> remote = remote_of(topo, 0);
    assert_int_equal(compile_schedule(plan.of(0), 0, elem, 8192, &remote).send_credit, static_cast<int>(kMinSendCredit));
    assert_int_equal(compile_schedule(plan.of(0), 512, elem, 1 << 30, &remote).send_credit, static_cast<int>(kMaxSendCredit));
}

void test_flight_window(void** state) {
    (void)state;
    assert_int_equal(flight_window(0, 4096), kWindowRounds);
    assert_int_equal(flight_window(65536, 0), kWindowRounds);
    assert_int_equal(flight_window(65536, 32768), 2);
    assert_int_equal(flight_window(65536, 65536), 1);
    assert_int_equal(flight_window(65536, 40000), 1);
    assert_int_equal(flight_window(65536, 65537), kWindowRounds);  // not a unit: left alone
    assert_int_equal(flight_window(65536, 1 << 20), kWindowRounds);
    assert_int_equal(flight_window(65536, 8), kWindowRounds);
    // Rounds of a few units (each message within the bound): two open.
    assert_int_equal(flight_window(65536, 3 * 32768, 32768), kPipelinedWindow);
    assert_int_equal(flight_window(65536, 4 * 65536, 65536), kPipelinedWindow);
    assert_int_equal(flight_window(65536, 4 * 65536 + 1, 65536), kWindowRounds);  // more than a few
    assert_int_equal(flight_window(65536, 3 * 32768, 65537), kWindowRounds);      // a message over the bound
    assert_int_equal(flight_window(65536, 3 * 32768, 0), kWindowRounds);          // not known
    assert_int_equal(flight_window(65536, 32768, 32768), 2);                      // within the bound: as before
    assert_true(few_units(65536, 3 * 32768, 32768));
    assert_false(few_units(65536, 32768, 32768));  // within the bound: not "a few units over it"
    assert_false(few_units(0, 3 * 32768, 32768));
    assert_int_equal(flight_bytes_for(65536, 1), 0u);
    assert_int_equal(flight_bytes_for(65536, 2), 65536u);

    // tree on 2 + 3 ranks, 40000 doubles pipelined in 1024-element units:
    // the most a rank sends to one peer in one round is a unit or a few
    // (an aggregator of several trees); the window follows it.
    const Topology topo = cluster_2_3();
    Plan plan = plan_of(Algorithm::tree, topo, 40000, 1024);
    int aggregators = 0;  // ranks sending several units to one peer in a round
    for (int r = 0; r < plan.nranks; ++r) {
        std::size_t most = 0;
        for (const Round& round : plan.of(r).rounds) {
            std::vector<std::size_t> to(static_cast<std::size_t>(plan.nranks), 0);
            for (const Op& op : round.ops)
                if (op.kind == OpKind::send) most = std::max(most, to[static_cast<std::size_t>(op.peer)] += op.count * 8);
        }
        assert_true(most >= 8192 && most % 8192 == 0);
        const ExecProgram open = compile_schedule(plan.of(r), 512, 8);
        const ExecProgram one = compile_schedule(plan.of(r), 512, 8, most);
        const ExecProgram still_one = compile_schedule(plan.of(r), 512, 8, 2 * most - 1);
        const ExecProgram two = compile_schedule(plan.of(r), 512, 8, 2 * most);
        const ExecProgram big = compile_schedule(plan.of(r), 512, 8, 100 * most);
        assert_int_equal(open.window, kWindowRounds);
        assert_int_equal(one.window, 1);
        assert_int_equal(still_one.window, 1);
        assert_int_equal(two.window, 2);
        assert_int_equal(big.window, kWindowRounds);
        // A bound below that round but not below its messages (8 KiB
        // units): a few units per round, two rounds open.
        const std::size_t few = std::max<std::size_t>(8192, (most + kPipelinedRound - 1) / kPipelinedRound);
        if (few < most) {
            assert_int_equal(compile_schedule(plan.of(r), 512, 8, few).window, kPipelinedWindow);
            ++aggregators;
        }
        if (most > 8192) assert_int_equal(compile_schedule(plan.of(r), 512, 8, 4096).window, kWindowRounds);
        // One scratch band per open round.
        assert_int_equal(one.scratch_elems * 2, two.scratch_elems);
        assert_int_equal(one.scratch_elems * kWindowRounds, open.scratch_elems);
        for (const auto& st : one.steps)
            if (st.kind != OpKind::send) assert_true(st.slot + st.count <= one.scratch_elems);
    }
    assert_true(aggregators > 0);
}

// The send credit's signal (exec/tcp_retransmissions.hpp): RetransSegs out
// of /proc/net/snmp's text, by its header's column; -1 where the Tcp lines
// or the column are missing or the value is not a number.
void test_parse_tcp_retransmissions(void**) {
    const std::string snmp =
        "Ip: Forwarding DefaultTTL\nIp: 1 64\n"
        "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab "
        "InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
        "Tcp: 1 200 120000 -1 368926 104014 264883 56 0 19122968 19120457 2967 0 264911 0\n"
        "Udp: InDatagrams NoPorts\nUdp: 5 6\n";
    assert_int_equal(parse_tcp_retransmissions(snmp), 2967);
    assert_int_equal(parse_tcp_retransmissions("Tcp: InSegs RetransSegs\nTcp: 5 0\n"), 0);
    assert_int_equal(parse_tcp_retransmissions("Udp: InDatagrams\nUdp: 5\n"), -1);
    assert_int_equal(parse_tcp_retransmissions("Tcp: InSegs OutSegs\nTcp: 5 6\n"), -1);
    assert_int_equal(parse_tcp_retransmissions("Tcp: InSegs RetransSegs\nTcp: 5 x7\n"), -1);
    assert_int_equal(parse_tcp_retransmissions("Tcp: InSegs RetransSegs\n"), -1);
    assert_int_equal(parse_tcp_retransmissions(""), -1);
    // This machine's own counter reads as a number (Linux).
    assert_true(tcp_retransmissions() >= 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flight_window),
        cmocka_unit_test(test_send_credit),
        cmocka_unit_test(test_parse_tcp_retransmissions),
        cmocka_unit_test(test_link_unit),
        cmocka_unit_test(test_fixtures_same_decisions),
        cmocka_unit_test(test_random_orders_same_decisions),
        cmocka_unit_test(test_failure_leaves_nothing_posted),
        cmocka_unit_test(test_try_notes_location),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
