// Unit tests of zero-configuration discovery: the probe schedule, the
// inference from a probe matrix to host links and racks (against a small
// model of shared links), restriction and digests of measured networks,
// the probes themselves over the in-process transport, and the engine's
// set-up that measures once and reuses the result.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
}

#include "core/max_min.hpp"
#include "core/units.hpp"
#include "engine.hpp"
#include "exec/tcp_retransmissions.hpp"
#include "model/default_table.hpp"
#include "topology/probe.hpp"
#include "topology/discovery.hpp"
#include "topology/measured.hpp"
#include "topology/nic_probe.hpp"
#include "cluster_fixtures.hpp"
#include "exec_harness.hpp"
#include "fake_transport.hpp"

using namespace topoar;

namespace {

bool near(double a, double b, double rel = 1e-9) { return std::fabs(a - b) <= rel * std::fabs(b); }

void expect_ok(const Status& s) {
    if (!s) print_error("unexpected error: %s\n", s.message().c_str());
    assert_true(static_cast<bool>(s));
}

void test_schedule(void**) {
    for (int n = 0; n <= 13; ++n) {
        auto rounds = probe_schedule(n);
        std::set<std::pair<int, int>> seen;
        for (const auto& round : rounds) {
            std::set<int> busy;
            for (const auto& p : round) {
                assert_true(p.first < p.second);
                assert_true(p.first >= 0 && p.second < n);
                assert_true(busy.insert(p.first).second);
                assert_true(busy.insert(p.second).second);
                assert_true(seen.insert(p).second);  // every pair once
            }
        }
        assert_int_equal(seen.size(), static_cast<std::size_t>(n * (n - 1) / 2));
        const int want = n < 2 ? 0 : (n % 2 ? n : n - 1);
        assert_int_equal(rounds.size(), static_cast<std::size_t>(want));
    }
}

// A small model of what the probes see: hosts with up-links, racks with an
// uplink per direction (both at rack_bw) that the streams crossing it in
// that direction in one round share equally (pair (i, j): i streams into
// j); a pair gets the slowest of its host links and its racks' shares.
// Latency: the two host links plus, across racks, the two rack links.
struct FakeNet {
    std::vector<double> host_bw;
    std::vector<int> rack;  // -1: no racks
    std::vector<double> rack_bw;
    double host_lat = 50e-6, rack_lat = 20e-6;
    // A factor on every measured rate (pairs and fan-ins); none: exact.
    std::function<double()> noise = nullptr;
    // Fan-ins as run_probe times them (timed_fan_in): each sender streams
    // its fan_in_fractions of the bytes, the streams share the links
    // max-min until each ends; the repeats then stream repeat_shares of
    // each sender's bytes over its end (the first shares where it gives
    // none), and the rate is their bytes over their last end.  Off:
    // the ideal min(b_R, what the senders feed).
    bool timed_fan_ins = false;
    // One stream of these byte shares: all bytes over the last end, and
    // each sender's end in *ends.
    double fan_in_stream(int receiver, const std::vector<int>& senders, const std::vector<double>& fractions,
                         std::vector<double>* ends) const {
        const std::size_t n = host_bw.size(), r = static_cast<std::size_t>(receiver);
        std::vector<double> capacity(host_bw);
        for (double b : rack_bw) {
            capacity.push_back(b);  // leaving rack g: n + 2g
            capacity.push_back(b);  // entering it: n + 2g + 1
        }
        std::vector<std::vector<int>> paths;
        for (int s : senders) {
            const std::size_t u = static_cast<std::size_t>(s);
            std::vector<int> path{s, receiver};
            if (rack[u] != rack[r]) {
                path.push_back(static_cast<int>(n + 2 * static_cast<std::size_t>(rack[u])));
                path.push_back(static_cast<int>(n + 2 * static_cast<std::size_t>(rack[r]) + 1));
            }
            paths.push_back(std::move(path));
        }
        std::vector<double> left(fractions);
        ends->assign(fractions.size(), 0.0);
        double total = 0, t = 0;
        for (double x : fractions) total += x;
        for (;;) {
            std::vector<std::vector<int>> active(paths.size());
            bool any = false;
            for (std::size_t p = 0; p < paths.size(); ++p)
                if (left[p] > 1e-12) {
                    active[p] = paths[p];
                    any = true;
                }
            if (!any) break;
            const std::vector<double> rate = max_min_rates(capacity, active);
            double step = std::numeric_limits<double>::infinity();
            for (std::size_t p = 0; p < paths.size(); ++p)
                if (left[p] > 1e-12) step = std::min(step, left[p] / rate[p]);
            t += step;
            for (std::size_t p = 0; p < paths.size(); ++p)
                if (left[p] > 1e-12) {
                    left[p] = std::max(0.0, left[p] - rate[p] * step);
                    if (left[p] <= 1e-12) (*ends)[p] = t;
                }
        }
        return t > 0 ? total / t : 0;
    }
    // What a fan-in with these fractions (per sender) reaches; *first:
    // its first streams' aggregate (the fractions' bytes over their last
    // end).
    double timed_fan_in(int receiver, const std::vector<int>& senders, const std::vector<double>& fractions,
                        double* first = nullptr) const {
        std::vector<double> ends;
        const double agg = fan_in_stream(receiver, senders, fractions, &ends);
        if (first) *first = agg;
        const std::vector<double> shares = repeat_shares(fractions, ends);
        return shares.empty() ? agg : fan_in_stream(receiver, senders, shares, &ends);
    }
    double noisy(double rate) const { return noise ? rate * noise() : rate; }

    ProbeMatrix probe() const {
        const int n = static_cast<int>(host_bw.size());
        ProbeMatrix m(n);
        for (const auto& round : probe_schedule(n)) {
            std::vector<int> leaving(rack_bw.size(), 0), entering(rack_bw.size(), 0);
            for (const auto& p : round)
                if (rack[static_cast<std::size_t>(p.first)] != rack[static_cast<std::size_t>(p.second)]) {
                    ++leaving[static_cast<std::size_t>(rack[static_cast<std::size_t>(p.first)])];
                    ++entering[static_cast<std::size_t>(rack[static_cast<std::size_t>(p.second)])];
                }
            for (const auto& p : round) {
                const int a = rack[static_cast<std::size_t>(p.first)], b = rack[static_cast<std::size_t>(p.second)];
                double bw = std::min(host_bw[static_cast<std::size_t>(p.first)], host_bw[static_cast<std::size_t>(p.second)]);
                double lat = 2 * host_lat;
                if (a != b) {
                    bw = std::min({bw, rack_bw[static_cast<std::size_t>(a)] / leaving[static_cast<std::size_t>(a)],
                                   rack_bw[static_cast<std::size_t>(b)] / entering[static_cast<std::size_t>(b)]});
                    lat += 2 * rack_lat;
                }
                m.set(p.first, p.second, noisy(bw), lat);
            }
        }
        return m;
    }

    // The pairs, then the fan-in rounds the matrix asks for (at most
    // kMaxFanIns, as run_probe): a fan-in into R moves min(b_R, the
    // senders' sum), and across a rack uplink no more than it.  *rounds:
    // how many ran.
    ProbeMatrix probe_with_fan_ins(int* rounds = nullptr) const { return with_fan_ins(probe(), rounds); }
    // The same fan-in rounds after pairs as given.
    ProbeMatrix with_fan_ins(ProbeMatrix m, int* rounds = nullptr) const {
        int ran = 0;
        for (; ran < kMaxFanIns; ++ran) {
            const std::vector<FanIn> round = next_fan_ins(m);
            if (round.empty()) break;
            std::vector<double> got;
            for (const FanIn& f : round) {
                const std::size_t r = static_cast<std::size_t>(f.receiver);
                double into = 0;
                std::vector<double> per_rack(rack_bw.size(), 0.0);
                for (int s : f.senders) {
                    const std::size_t u = static_cast<std::size_t>(s);
                    if (rack[u] == rack[r]) into += host_bw[u];
                    else per_rack[static_cast<std::size_t>(rack[u])] += host_bw[u];
                }
                double across = 0;
                for (std::size_t g = 0; g < per_rack.size(); ++g) across += std::min(per_rack[g], rack_bw[g]);
                if (across > 0) into += std::min(across, rack_bw[static_cast<std::size_t>(rack[r])]);
                got.push_back(noisy(timed_fan_ins ? timed_fan_in(f.receiver, f.senders, fan_in_fractions(f))
                                                  : std::min(host_bw[r], into)));
            }
            // Results enter the matrix after the round (the gather).
            for (std::size_t k = 0; k < round.size(); ++k) {
                const std::size_t r = static_cast<std::size_t>(round[k].receiver);
                m.fan_in[r] = got[k];
                m.fan_in_from[r] = round[k].senders_rate;
                m.fan_in_racks[r] = round[k].racks;
                m.fan_in_across[r] = round[k].across ? 1 : 0;
            }
        }
        if (rounds) *rounds = ran;
        return m;
    }
};

// Scenario s2's network: four 1 Gbit/s hosts, two racks joined at
// 200 Mbit/s; `rack` says which host is in which.
FakeNet s2_racks(std::vector<int> rack) {
    FakeNet f;
    f.host_bw = {125e6, 125e6, 125e6, 125e6};
    f.rack = std::move(rack);
    f.rack_bw = {25e6, 25e6};
    return f;
}

std::vector<std::string> names(int n) {
    std::vector<std::string> v;
    for (int i = 0; i < n; ++i) v.push_back("h" + std::to_string(i));
    return v;
}

void test_two_hosts(void**) {
    FakeNet f{{25e6, 25e6}, {-1, -1}, {}};
    f.rack = {0, 0};
    f.rack_bw = {1e12};
    MeasuredNetwork net;
    expect_ok(infer_network(f.probe(), names(2), &net));
    assert_int_equal(net.num_racks(), 0);
    assert_true(near(net.host_up[0].bandwidth, 25e6) && near(net.host_up[1].bandwidth, 25e6));
    assert_true(near(net.host_up[0].latency, 50e-6));
    assert_int_equal(net.rack_of[0], -1);
}

// Racks of scenario s2 (1 Gbit/s hosts, 200 Mbit/s between the racks),
// hosts in rack order and interleaved (--map-by node puts consecutive
// ranks on alternating racks).
void test_racks(void**) {
    for (int interleaved = 0; interleaved < 2; ++interleaved) {
        FakeNet f = s2_racks(interleaved ? std::vector<int>{0, 1, 0, 1} : std::vector<int>{0, 0, 1, 1});
        MeasuredNetwork net;
        expect_ok(infer_network(f.probe(), names(4), &net));
        assert_int_equal(net.num_racks(), 2);
        for (int h = 0; h < 4; ++h) {
            assert_int_equal(net.rack_of[static_cast<std::size_t>(h)], f.rack[static_cast<std::size_t>(h)]);
            assert_true(near(net.host_up[static_cast<std::size_t>(h)].bandwidth, 125e6));
            assert_true(near(net.host_up[static_cast<std::size_t>(h)].latency, 50e-6));
        }
        for (int g = 0; g < 2; ++g) {
            assert_true(near(net.rack_up[static_cast<std::size_t>(g)].bandwidth, 25e6));
            assert_true(near(net.rack_up[static_cast<std::size_t>(g)].latency, 20e-6));
        }
    }
    // Three racks of two hosts, in rack order and interleaved.
    for (const std::vector<int>& rack : {std::vector<int>{0, 0, 1, 1, 2, 2}, std::vector<int>{0, 1, 2, 0, 1, 2}}) {
        FakeNet f;
        f.host_bw = std::vector<double>(6, 125e6);
        f.rack = rack;
        f.rack_bw = {40e6, 40e6, 40e6};
        MeasuredNetwork net;
        expect_ok(infer_network(f.probe(), names(6), &net));
        assert_int_equal(net.num_racks(), 3);
        for (int h = 0; h < 6; ++h) assert_int_equal(net.rack_of[static_cast<std::size_t>(h)], f.rack[static_cast<std::size_t>(h)]);
        for (const Link& u : net.rack_up) assert_true(u.bandwidth > 0 && u.bandwidth <= 40e6 * 1.000001);
    }
    // Racks of 2, 3 and 1 hosts.  The last host is a rack alone; the
    // streams into it come one at a time (one per round, each from a lower
    // host), so to the pairs it is the same network as a host whose own
    // link is its rack's uplink (as a rack of one host always is to them,
    // infer_racks): the racks of two hosts or more, and that host's link
    // at the uplink's rate.  (Streams each way at once showed it: its
    // pairs shared the middle rack's uplink with the pairs entering it.)
    FakeNet f;
    f.host_bw = std::vector<double>(6, 125e6);
    f.rack = {0, 0, 1, 1, 1, 2};
    f.rack_bw = {40e6, 40e6, 40e6};
    MeasuredNetwork net;
    expect_ok(infer_network(f.probe(), names(6), &net));
    assert_true(net.num_racks() >= 2);
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 5; ++j)
            assert_true((f.rack[static_cast<std::size_t>(i)] == f.rack[static_cast<std::size_t>(j)]) ==
                        (net.rack_of[static_cast<std::size_t>(i)] == net.rack_of[static_cast<std::size_t>(j)]));
    assert_true(near(net.host_up[5].bandwidth, 40e6));
    for (int h = 0; h < 5; ++h) assert_true(near(net.host_up[static_cast<std::size_t>(h)].bandwidth, 125e6));
}

// One slow host among fast ones is a slow host link, not a rack.
void test_slow_host(void**) {
    FakeNet f;
    f.host_bw = {50e6, 50e6, 12.5e6};
    f.rack = {0, 0, 0};
    f.rack_bw = {1e12};
    MeasuredNetwork net;
    expect_ok(infer_network(f.probe(), names(3), &net));
    assert_int_equal(net.num_racks(), 0);
    assert_true(near(net.host_up[0].bandwidth, 50e6));
    assert_true(near(net.host_up[1].bandwidth, 50e6));
    assert_true(near(net.host_up[2].bandwidth, 12.5e6));
    // Two slow hosts among four.
    f.host_bw = {50e6, 12.5e6, 50e6, 12.5e6};
    f.rack = {0, 0, 0, 0};
    expect_ok(infer_network(f.probe(), names(4), &net));
    assert_int_equal(net.num_racks(), 0);
    assert_true(near(net.host_up[1].bandwidth, 12.5e6) && near(net.host_up[2].bandwidth, 50e6));
}

// Link classes: a host measured up to kSameLinkFactor below a faster one
// is that one's class (probe noise on busy cores, 826 / 826 / 595 Mbit/s
// measured on three 1 Gbit/s hosts); rates further apart stay apart, also
// when several classes chain (1000, 700, 490: 490 is not within 1.5x of
// the class's top, 1000).
void test_link_classes(void**) {
    std::vector<double> r = {826e6, 826e6, 595e6};
    snap_link_classes(&r);
    for (double x : r) assert_true(near(x, 826e6));
    r = {400e6, 250e6, 100e6, 1000e6};
    snap_link_classes(&r);
    assert_true(near(r[0], 400e6) && near(r[1], 250e6) && near(r[2], 100e6) && near(r[3], 1000e6));
    r = {700e6, 1000e6, 490e6, 0.0};
    snap_link_classes(&r);
    assert_true(near(r[0], 1000e6) && near(r[1], 1000e6) && near(r[2], 490e6));
    assert_true(r[3] == 0.0);
    // Through infer_network: the slightly slow host is taken at its
    // class's rate; a clearly slow one (4x, test_slow_host) stays slow.
    FakeNet f;
    f.host_bw = {103e6, 103e6, 74e6};
    f.rack = {0, 0, 0};
    f.rack_bw = {1e12};
    MeasuredNetwork net;
    expect_ok(infer_network(f.probe(), names(3), &net));
    assert_int_equal(net.num_racks(), 0);
    for (int h = 0; h < 3; ++h) assert_true(near(net.host_up[static_cast<std::size_t>(h)].bandwidth, 103e6));
    // ... but never above the host's own port.
    expect_ok(infer_network(f.probe(), names(3), &net, {0.0, 0.0, 80e6}));
    assert_true(near(net.host_up[2].bandwidth, 80e6) && near(net.host_up[0].bandwidth, 103e6));
}

// One disturbed pair in a rack (measured at 0.45 of its hosts, as in a CI
// run on 1+2+3 ranks at 200 Mbit/s) is not a shared uplink, which holds
// back every pair crossing it; the same host slow with both partners is a
// slow host link.
void test_one_slow_pair(void**) {
    FakeNet f{{25e6, 25e6, 25e6}, {0, 0, 0}, {1e12}};
    ProbeMatrix m = f.probe();
    m.set(0, 2, 0.45 * 25e6, m.lat_at(0, 2));
    MeasuredNetwork net;
    expect_ok(infer_network(m, names(3), &net));
    assert_int_equal(net.num_racks(), 0);
    assert_true(near(net.host_up[2].bandwidth, 25e6));
    m.set(1, 2, 0.45 * 25e6, m.lat_at(1, 2));
    expect_ok(infer_network(m, names(3), &net));
    assert_int_equal(net.num_racks(), 0);
    assert_true(near(net.host_up[2].bandwidth, 0.45 * 25e6));
    // The first pair measured low: host 1 meets a group of host 0 alone,
    // and must still end in the one rack (CI's cluster b once split {0, 2}
    // and {1} on this).
    ProbeMatrix first = f.probe();
    first.set(0, 1, 0.58 * 25e6, first.lat_at(0, 1));
    expect_ok(infer_network(first, names(3), &net));
    assert_int_equal(net.num_racks(), 0);
    for (int h = 0; h < 3; ++h) assert_true(near(net.host_up[static_cast<std::size_t>(h)].bandwidth, 25e6));
}

// Fan-ins (issue 22): pairs through one switch reach min(b_i, b_j), so
// the fastest host looks as fast as the second fastest; fan-ins into the
// hosts the pairs leave open pin them, and what they cannot pin stays a
// lower bound.  rates: Mbit/s.
FakeNet flat(std::vector<double> mbit) {
    FakeNet f;
    for (double r : mbit) f.host_bw.push_back(r * 1e6 / 8);
    f.rack.assign(mbit.size(), 0);
    f.rack_bw = {1e12};
    return f;
}

void test_fan_in(void**) {
    auto mbit = [](double v) { return v * 1e6 / 8; };
    // The session's cluster: 250/100/400/100 Mbit/s.  The pairs: 250 for
    // both fast hosts; the fan-ins into them pin both.
    {
        FakeNet f = flat({250, 100, 400, 100});
        MeasuredNetwork before, after;
        expect_ok(infer_network(f.probe(), names(4), &before));
        assert_true(near(before.host_up[2].bandwidth, mbit(250)));  // what the pairs alone say
        int fan_ins = 0;
        const ProbeMatrix m = f.probe_with_fan_ins(&fan_ins);
        assert_int_equal(fan_ins, 2);
        assert_true(m.fan_in[0] > 0 && m.fan_in[2] > 0 && m.fan_in[1] == 0 && m.fan_in[3] == 0);
        expect_ok(infer_network(m, names(4), &after));
        assert_int_equal(after.num_racks(), 0);
        for (int h = 0; h < 4; ++h)
            assert_true(near(after.host_up[static_cast<std::size_t>(h)].bandwidth, f.host_bw[static_cast<std::size_t>(h)]));
        const HostBounds b = host_bounds(m);
        for (int h = 0; h < 4; ++h) assert_true(b.exact[static_cast<std::size_t>(h)]);
        assert_true(next_fan_ins(m).empty());
    }
    // A fast host among slow ones: every pair says 100, so all four are
    // open; the fan-ins pin the slow ones at the receiver's rate, and the
    // fast one reaches what its three senders can send, 300: more than the
    // pairs said, and still a lower bound (true 400).  (The last slow host
    // has one partner known faster: not enough to pin it, so it gets its
    // own fan-in.)
    {
        FakeNet f = flat({100, 100, 400, 100});
        int fan_ins = 0;
        const ProbeMatrix m = f.probe_with_fan_ins(&fan_ins);
        assert_int_equal(fan_ins, 4);
        const HostBounds b = host_bounds(m);
        assert_true(near(b.rate[2], mbit(300)) && !b.exact[2]);
        for (int h : {0, 1, 3}) assert_true(b.exact[static_cast<std::size_t>(h)] && near(b.rate[static_cast<std::size_t>(h)], mbit(100)));
        MeasuredNetwork net;
        expect_ok(infer_network(m, names(4), &net));
        assert_true(near(net.host_up[2].bandwidth, mbit(300)));
        assert_true(near(net.host_up[1].bandwidth, mbit(100)));
    }
    // Two fast hosts: their pair shows their rate, the slow ones are pinned
    // by the pairs, and the fan-ins confirm the fast ones (1 rank each on
    // 400/400/250/1000: the 1000 host is found).
    {
        FakeNet f = flat({100, 400, 400, 100});
        int fan_ins = 0;
        const ProbeMatrix m = f.probe_with_fan_ins(&fan_ins);
        assert_int_equal(fan_ins, 2);
        assert_true(m.fan_in[0] == 0 && m.fan_in[3] == 0);
        const HostBounds b = host_bounds(m);
        for (int h = 0; h < 4; ++h)
            assert_true(b.exact[static_cast<std::size_t>(h)] && near(b.rate[static_cast<std::size_t>(h)], f.host_bw[static_cast<std::size_t>(h)]));
        FakeNet g = flat({400, 400, 250, 1000});
        const ProbeMatrix mg = g.probe_with_fan_ins(&fan_ins);
        assert_int_equal(fan_ins, 3);
        MeasuredNetwork net;
        expect_ok(infer_network(mg, names(4), &net));
        for (int h = 0; h < 3; ++h)
            assert_true(near(net.host_up[static_cast<std::size_t>(h)].bandwidth, g.host_bw[static_cast<std::size_t>(h)]));
        // 1000 reached, but its senders could send 1050 (within kPinMargin):
        // a lower bound, taken at what the senders feed (the most the probe
        // could observe; 5 % above the true rate here).
        assert_false(host_bounds(mg).exact[3]);
        assert_true(near(net.host_up[3].bandwidth, mbit(1050)));
    }
    // Equal links: every host open after the pairs; each fan-in pins one,
    // kMaxFanIns of them, and with more hosts the rest stay (correct)
    // lower bounds.
    {
        int fan_ins = 0;
        const ProbeMatrix m = flat({200, 200, 200}).probe_with_fan_ins(&fan_ins);
        assert_int_equal(fan_ins, 3);
        for (int h = 0; h < 3; ++h) assert_true(host_bounds(m).exact[static_cast<std::size_t>(h)]);
        FakeNet six = flat({200, 200, 200, 200, 200, 200});
        const ProbeMatrix m6 = six.probe_with_fan_ins(&fan_ins);
        assert_int_equal(fan_ins, kMaxFanIns);
        assert_false(next_fan_ins(m6).empty());  // more would be asked for
        MeasuredNetwork net;
        expect_ok(infer_network(m6, names(6), &net));
        for (int h = 0; h < 6; ++h) assert_true(near(net.host_up[static_cast<std::size_t>(h)].bandwidth, mbit(200)));
    }
    // Two hosts: nobody to fan in from (and nothing a two-host allreduce
    // would gain from knowing which is faster).
    {
        assert_true(next_fan_ins(flat({400, 100}).probe()).empty());
        assert_true(next_fan_ins(flat({400, 400}).probe()).empty());
    }
    // Racks (s2: two hosts a rack): a host's only rack mate is one sender,
    // which cannot show more than their pair; senders from the other rack
    // would measure the uplink.  No fan-in, the same network as before.
    for (int interleaved = 0; interleaved < 2; ++interleaved) {
        FakeNet f = s2_racks(interleaved ? std::vector<int>{0, 1, 0, 1} : std::vector<int>{0, 0, 1, 1});
        assert_true(next_fan_ins(f.probe()).empty());
    }
    // Racks of three with one fast host in each: its fan-in comes from its
    // own rack only (not across the 160 Mbit/s uplink), and reaches its
    // rack mates' sum; the rack uplinks stay what the pairs showed.
    {
        FakeNet f = flat({100, 400, 100, 100, 100, 1000});
        f.rack = {0, 0, 0, 1, 1, 1};
        f.rack_bw = {20e6, 20e6};
        MeasuredNetwork pairs_only, net;
        expect_ok(infer_network(f.probe(), names(6), &pairs_only));
        int fan_ins = 0;
        const ProbeMatrix m = f.probe_with_fan_ins(&fan_ins);
        expect_ok(infer_network(m, names(6), &net));
        assert_int_equal(net.num_racks(), 2);
        for (int h = 0; h < 6; ++h) assert_int_equal(net.rack_of[static_cast<std::size_t>(h)], f.rack[static_cast<std::size_t>(h)]);
        for (int g = 0; g < 2; ++g)
            assert_true(net.rack_up[static_cast<std::size_t>(g)].bandwidth == pairs_only.rack_up[static_cast<std::size_t>(g)].bandwidth);
        assert_true(near(net.host_up[1].bandwidth, mbit(200)) && near(net.host_up[5].bandwidth, mbit(200)));
        assert_true(near(net.host_up[0].bandwidth, mbit(100)));
        assert_true(m.fan_in[1] > 0 && m.fan_in[5] > 0);
        // Every round: one fan-in per rack, its senders in the receiver's
        // rack (replayed).
        assert_true(fan_ins >= 1 && fan_ins <= kMaxFanIns);
        ProbeMatrix replay = f.probe();
        for (int k = 0; k < fan_ins; ++k) {
            const std::vector<FanIn> round = next_fan_ins(replay);
            assert_true(!round.empty() && round.size() <= 2);
            std::set<int> racks_in_round;
            for (const FanIn& next : round) {
                const std::size_t r = static_cast<std::size_t>(next.receiver);
                assert_true(racks_in_round.insert(f.rack[r]).second);
                for (int s : next.senders) assert_int_equal(f.rack[static_cast<std::size_t>(s)], f.rack[r]);
                replay.fan_in[r] = m.fan_in[r];
                replay.fan_in_from[r] = m.fan_in_from[r];
                replay.fan_in_racks[r] = m.fan_in_racks[r];
                replay.fan_in_across[r] = m.fan_in_across[r];
            }
        }
        assert_true(next_fan_ins(replay).empty());
    }
    // One disturbed pair between the two fast hosts (measured on the
    // emulated cluster: 121.6 Mbit/s between the 250 and 400 Mbit/s
    // hosts): after the fan-in into one of them shows it faster, the other
    // is not taken as pinned by that one pair; it gets its own fan-in.
    {
        FakeNet f = flat({250, 100, 400, 100});
        ProbeMatrix m = f.probe();
        m.set(0, 2, mbit(121.6), m.lat_at(0, 2));
        m.set(0, 1, mbit(75.9), m.lat_at(0, 1));
        m.fan_in[0] = mbit(223);
        m.fan_in_from[0] = mbit(121.6 + 100 + 100);
        const HostBounds b = host_bounds(m);
        assert_false(b.exact[2]);
        const std::vector<FanIn> next = next_fan_ins(m);
        assert_int_equal(next.size(), 1);
        assert_int_equal(next[0].receiver, 2);
    }
    // A fan-in that measured less than the pairs (disturbed) lowers
    // nothing and pins nothing.
    {
        FakeNet f = flat({250, 100, 400, 100});
        ProbeMatrix m = f.probe();
        m.fan_in[2] = mbit(50);
        m.fan_in_from[2] = mbit(450);
        const HostBounds b = host_bounds(m);
        assert_true(near(b.rate[2], mbit(250)) && !b.exact[2]);
        MeasuredNetwork net;
        expect_ok(infer_network(m, names(4), &net));
        assert_true(near(net.host_up[2].bandwidth, mbit(250)));
    }
}

// Racks from shared bottlenecks (issue 22, item 3): pairs that cross one
// rack uplink in one round share it, pairs inside a rack never slow each
// other down; infer_racks takes the racks that explain the rounds' rates.
FakeNet racked(std::vector<double> mbit, std::vector<int> rack, double uplink_mbit) {
    FakeNet f = flat(std::move(mbit));
    f.rack = std::move(rack);
    int racks = 0;
    for (int g : f.rack) racks = std::max(racks, g + 1);
    f.rack_bw.assign(static_cast<std::size_t>(racks), uplink_mbit * 1e6 / 8);
    return f;
}

bool same_racks(const MeasuredNetwork& net, const std::vector<int>& rack) {
    if (net.num_racks() < 2) return false;
    for (std::size_t i = 0; i < rack.size(); ++i)
        for (std::size_t j = 0; j < rack.size(); ++j)
            if ((rack[i] == rack[j]) != (net.rack_of[i] == net.rack_of[j])) return false;
    return true;
}

// The auto table's choice at `bytes` on the network `net` of hosts
// h0..h3 with ranks 0 4 | 1 | 2 | 3 5 (the family's shapes on two racks,
// --map-by node), with the engine's defaults and a per-message software
// cost of 13 us (what the emulated cluster measures).
Algorithm auto_choice(const MeasuredNetwork& net, std::size_t bytes) {
    std::vector<RankInfo> ranks(6);
    const int host_of[] = {0, 1, 2, 3, 0, 3};
    for (int r = 0; r < 6; ++r) ranks[static_cast<std::size_t>(r)].host = "h" + std::to_string(host_of[r]);
    Topology topo;
    expect_ok(discover_measured(ranks, net, DiscoveryOptions{}, 13e-6, &topo));
    DefaultTableOptions o;
    EngineConfig cfg;
    o.plan = plan_options(cfg, o.elem_size);
    o.model.segment_bytes = cfg.segment_size;
    o.model.overhead = 13e-6;
    DecisionTable table;
    expect_ok(build_default_table(topo, o, &table));
    std::vector<int> per;
    for (int n : topo.nodes_at(Level::node)) per.push_back(topo.num_ranks_under(n));
    const Choice c = table.lookup(bytes, make_comm_shape(topo.num_ranks(), per, static_cast<int>(topo.nodes_at(Level::rack).size())),
                                  MemType::host);
    assert_true(c.matched());
    return c.algorithm;
}

void test_fan_in_shares(void**) {
    auto mbit = [](double v) { return v * 1e6 / 8; };
    // Shape 7 of the family (racks 1000/100 | 250/1000 Mbit/s under
    // 100 Mbit/s), fan-ins timed as run_probe times them: the fan-in into
    // host 0 from its 100 Mbit/s mate and the two hosts across the uplink
    // (50 each) streams bytes in proportion to those paths, so it shows
    // their sum, 200; with equal bytes its aggregate ended with the
    // slowest stream and showed 3 x 50 = 150 (measured 142-143 on the
    // cluster), which the model took for the host's link and chose tree
    // over flexrelay.  Equal first bytes reach 200 too, in the repeats
    // with shares from the senders' ends (repeat_shares): the pairs need
    // not have shown the racks.
    // The repeats' shares from a stream's ends: equal bytes in 1, 2 and 2
    // time units (paths at 100, 50 and 50) give 1 : 0.5 : 0.5; paths as
    // fast as their shares (0.95 : 1) or a missing end keep the shares;
    // a path 100x slower still gets 1/16.
    {
        const std::vector<double> sh = repeat_shares({1, 1, 1}, {1, 2, 2});
        assert_int_equal(sh.size(), 3);
        assert_true(near(sh[0], 1) && near(sh[1], 0.5) && near(sh[2], 0.5));
        assert_true(repeat_shares({1, 1}, {1.0 / 0.95, 1}).empty());
        assert_true(repeat_shares({1, 0.5}, {1, 1}).empty());  // shares 1 : 0.5, moved 1 : 0.5: kept
        assert_int_equal(repeat_shares({1, 0.5}, {1, 0.5}).size(), 2);  // shares 1 : 0.5, moved 1 : 1
        assert_true(repeat_shares({1, 1}, {1, 0}).empty());
        const std::vector<double> floor = repeat_shares({1, 1}, {1, 100});
        assert_int_equal(floor.size(), 2);
        assert_true(near(floor[1], kMinShare));
    }
    FakeNet f = racked({1000, 100, 250, 1000}, {0, 0, 1, 1}, 100);
    f.timed_fan_ins = true;
    {
        // The shares of that fan-in (the matrix of the pairs alone).
        const std::vector<FanIn> next = next_fan_ins(f.probe());
        int checked = 0;
        for (const FanIn& in : next) {
            if (in.receiver != 0) continue;
            ++checked;
            assert_int_equal(in.senders.size(), 3);
            assert_int_equal(in.shares.size(), 3);
            for (std::size_t p = 0; p < 3; ++p)
                assert_true(near(in.shares[p], in.senders[p] == 1 ? mbit(100) : mbit(50), 1e-6));
            assert_true(near(f.timed_fan_in(0, in.senders, fan_in_fractions(in)), mbit(200), 1e-6));
            double first = 0;
            assert_true(near(f.timed_fan_in(0, in.senders, {1, 1, 1}, &first), mbit(200), 1e-6));
            assert_true(near(first, mbit(150), 1e-6));
        }
        // (The first round asks for another host's; host 0's comes later.)
        const ProbeMatrix m = f.probe_with_fan_ins();
        assert_true(m.fan_in[0] > 0);
        assert_true(checked <= 1);
    }
    const ProbeMatrix m = f.probe_with_fan_ins();
    MeasuredNetwork net;
    expect_ok(infer_network(m, names(4), &net));
    assert_true(same_racks(net, f.rack));
    assert_true(net.host_up[0].bandwidth >= mbit(200) * 0.999);
    assert_true(net.host_up[3].bandwidth >= mbit(350) * 0.999);
    assert_int_equal(static_cast<int>(auto_choice(net, std::size_t(8) << 20)), static_cast<int>(Algorithm::flexrelay));
    // A fan-in that reached its senders' feed within kPinMargin inside a
    // rack (180 of 195) or kSameLinkFactor across racks (140 of 195: the
    // feed counts an uplink as the pairs read it, high on the cluster) did
    // not pin the host: it is taken at the feed; one further below pins it.
    {
        ProbeMatrix near_feed = f.probe();
        near_feed.fan_in_racks[0] = 2;
        near_feed.fan_in_from[0] = mbit(195);
        const struct {
            bool across;
            double got;
            bool pins;
        } cases[] = {{false, 180, false}, {false, 160, true}, {true, 140, false}, {true, 120, true}};
        for (const auto& c : cases) {
            near_feed.fan_in_across[0] = c.across ? 1 : 0;
            near_feed.fan_in[0] = mbit(c.got);
            expect_ok(infer_network(near_feed, names(4), &net));
            assert_int_equal(host_bounds(near_feed).exact[0], c.pins);
            if (c.pins)
                assert_true(near(net.host_up[0].bandwidth, mbit(c.got)));
            else
                assert_true(net.host_up[0].bandwidth >= mbit(195) * 0.999);  // (or the 250 Mbit/s hosts' class)
        }
        // Host 0 at 143, as the equal-bytes fan-ins measured it: the
        // model's choice is tree (the relay's 2M on host 0 seem slower than
        // the uplink's M).
        near_feed.fan_in[0] = mbit(143);
        near_feed.fan_in_from[0] = mbit(150);
        expect_ok(infer_network(near_feed, names(4), &net));
        net.host_up[0].bandwidth = mbit(143);
        assert_int_not_equal(static_cast<int>(auto_choice(net, std::size_t(8) << 20)),
                             static_cast<int>(Algorithm::flexrelay));
    }
    // The pairs as a set-up on the cluster read them (TOPOAR_PROBE_DEBUG,
    // 2026-11-28): one pair across the uplink at 119 instead of 50 (the
    // pairs of a round do not stream at the same moments), so the pairs
    // showed no racks and every fan-in ran inside "one rack", equal bytes
    // from every sender.  The aggregates then read 143-144 into hosts 0, 2
    // and 3, and host 1 (100, exact) joined host 0's class: both 143.
    // With the repeats' shares from the senders' ends the fan-ins show
    // what the paths let in (host 0: 200, host 3: 350), the 250 Mbit/s
    // host no more than its link, and host 1 stays apart.
    {
        FakeNet g = racked({1000, 100, 250, 1000}, {0, 0, 1, 1}, 100);
        g.timed_fan_ins = true;
        ProbeMatrix noisy = g.probe();
        noisy.set(0, 3, mbit(119), noisy.lat_at(0, 3));
        const std::vector<int> groups = host_bounds(noisy).group;
        assert_int_equal(groups.size(), 4);
        for (int r : groups) assert_int_equal(r, 0);  // no racks from these pairs
        const std::vector<FanIn> first = next_fan_ins(noisy);
        assert_int_equal(first.size(), 1);  // one fan-in "inside the one rack", equal bytes
        assert_false(first[0].across);
        const ProbeMatrix m = g.with_fan_ins(noisy);
        assert_true(m.fan_in[0] >= mbit(200) * 0.999);
        assert_true(m.fan_in[2] <= mbit(250) * 1.001);
        MeasuredNetwork seen;
        expect_ok(infer_network(m, names(4), &seen));
        assert_true(seen.host_up[0].bandwidth >= mbit(200) * 0.999);
        assert_true(seen.host_up[1].bandwidth <= mbit(100) * 1.001);
        assert_true(seen.host_up[3].bandwidth >= mbit(350) * 0.999);
    }
}

void test_racks_by_sharing(void**) {
    auto mbit = [](double v) { return v * 1e6 / 8; };
    // Shape 7 of the family: racks 1000/100 | 250/1000 Mbit/s under a
    // 100 Mbit/s uplink.  The 100 and 250 Mbit/s hosts' links are no
    // faster than the uplink.  The pairs that leave a rack together get
    // half of it each: the racks, from the pairs alone.
    {
        FakeNet f = racked({1000, 100, 250, 1000}, {0, 0, 1, 1}, 100);
        MeasuredNetwork pairs;
        expect_ok(infer_network(f.probe(), names(4), &pairs));
        assert_true(same_racks(pairs, f.rack));
        // The rack of two fast-and-slow hosts gets a fan-in across the
        // racks (its mate alone cannot show more than their pair): host 0
        // at least its mate's 100 plus the uplink's 100, host 3 at least
        // 250 + 100; the racks stay.
        int fan_ins = 0;
        const ProbeMatrix m = f.probe_with_fan_ins(&fan_ins);
        assert_true(fan_ins >= 2 && fan_ins <= kMaxFanIns);
        MeasuredNetwork net;
        expect_ok(infer_network(m, names(4), &net));
        assert_true(same_racks(net, f.rack));
        assert_true(net.host_up[0].bandwidth >= mbit(200) * 0.999);
        assert_true(net.host_up[3].bandwidth >= mbit(350) * 0.999);
        // (Host 2's 250 joins host 3's class, 350: kSameLinkFactor.)
        assert_true(near(net.host_up[1].bandwidth, mbit(100)) && net.host_up[2].bandwidth >= mbit(250) * 0.999);
        for (const Link& u : net.rack_up) assert_true(near(u.bandwidth, mbit(100)));
        // Every fan-in round that crosses racks runs alone.
        ProbeMatrix replay = f.probe();
        for (int k = 0; k < fan_ins; ++k) {
            const std::vector<FanIn> round = next_fan_ins(replay);
            assert_false(round.empty());
            for (const FanIn& next : round) {
                bool across = false;
                for (int s : next.senders)
                    across = across || f.rack[static_cast<std::size_t>(s)] != f.rack[static_cast<std::size_t>(next.receiver)];
                if (across) assert_int_equal(round.size(), 1);
                replay.fan_in[static_cast<std::size_t>(next.receiver)] = m.fan_in[static_cast<std::size_t>(next.receiver)];
                replay.fan_in_from[static_cast<std::size_t>(next.receiver)] = m.fan_in_from[static_cast<std::size_t>(next.receiver)];
                replay.fan_in_racks[static_cast<std::size_t>(next.receiver)] = m.fan_in_racks[static_cast<std::size_t>(next.receiver)];
                replay.fan_in_across[static_cast<std::size_t>(next.receiver)] = m.fan_in_across[static_cast<std::size_t>(next.receiver)];
            }
        }
    }
    // Shape 9: racks 1000/400 | 250/100 under 250 Mbit/s.  The pairs
    // alone fit no racks (the 250 Mbit/s host reached 125 with both fast
    // hosts, its share of the uplink, and looks that slow); it is not
    // taken as pinned by them, its fan-in shows 250, and then the pairs'
    // rates say racks.
    {
        FakeNet f = racked({1000, 400, 250, 100}, {0, 0, 1, 1}, 250);
        MeasuredNetwork pairs;
        expect_ok(infer_network(f.probe(), names(4), &pairs));
        assert_int_equal(pairs.num_racks(), 0);
        assert_false(host_bounds(f.probe()).exact[2]);
        const ProbeMatrix m = f.probe_with_fan_ins();
        MeasuredNetwork net;
        expect_ok(infer_network(m, names(4), &net));
        assert_true(same_racks(net, f.rack));
        assert_true(near(net.host_up[2].bandwidth, mbit(250)) && near(net.host_up[3].bandwidth, mbit(100)));
    }
    // Three hosts: no racks of two hosts or more on both sides, so none
    // (a rack of one is a slower host link).
    {
        FakeNet f = racked({400, 100, 100}, {0, 0, 1}, 50);
        MeasuredNetwork net;
        expect_ok(infer_network(f.probe_with_fan_ins(), names(3), &net));
        assert_int_equal(net.num_racks(), 0);
    }
    // s2 (1 Gbit/s hosts, racks of two under 200 Mbit/s), both mappings:
    // the racks, and no fan-in (a rack mate shows no more, and across the
    // uplink at most 1.2x).
    for (int interleaved = 0; interleaved < 2; ++interleaved) {
        FakeNet f = s2_racks(interleaved ? std::vector<int>{0, 1, 0, 1} : std::vector<int>{0, 0, 1, 1});
        int fan_ins = -1;
        const ProbeMatrix m = f.probe_with_fan_ins(&fan_ins);
        assert_int_equal(fan_ins, 0);
        MeasuredNetwork net;
        expect_ok(infer_network(m, names(4), &net));
        assert_true(same_racks(net, f.rack));
    }
}

// s2 as measured on the emulated cluster (Mbit/s): round 1's crossing
// pairs at 108.5 each, round 2's at 240.3 and 190.3 (a burst overlapped),
// the racks' own pairs at 864.5 and 877.7.  The racks, and no fan-in: the
// uplink surely adds only round 1's 217, under 0.4x a host's 877 (with the
// most, 430, every host got a cross-rack fan-in and set-up took 1 s).
void test_s2_measured(void**) {
    auto mbit = [](double v) { return v * 1e6 / 8; };
    ProbeMatrix m(4);
    m.set(0, 3, mbit(108.5), 1e-4);
    m.set(1, 2, mbit(108.5), 1e-4);
    m.set(1, 3, mbit(240.3), 1e-4);
    m.set(0, 2, mbit(190.3), 1e-4);
    m.set(2, 3, mbit(864.5), 5e-5);
    m.set(0, 1, mbit(877.7), 5e-5);
    assert_true(next_fan_ins(m).empty());
    MeasuredNetwork net;
    expect_ok(infer_network(m, names(4), &net));
    assert_true(same_racks(net, {0, 0, 1, 1}));
}

// Noise: every rate measured low by an independent factor, up to 1.4x
// (what probes on busy cores err by, downwards only) and up to 2x (seen on
// the emulated cluster with the machine loaded: a 100 Mbit/s pair at 50).
// One-rack shapes (the family's, and equal links) must show no racks at
// 1.4x and almost never at 2x; the racks shapes must show theirs in most
// draws.  Fixed seed: the same draws every run.
void test_racks_noise(void**) {
    unsigned seed = 22;
    auto uniform = [&seed] {
        seed = seed * 1103515245u + 12345u;
        return static_cast<double>((seed >> 8) & 0xffff) / 65535.0;
    };
    const std::vector<std::vector<double>> one_rack = {
        {400, 100, 400, 250}, {1000, 100, 250}, {250, 250, 100}, {100, 100, 400}, {200, 200, 200, 200},
        {1000, 1000, 1000, 1000, 1000}, {100, 250, 400, 1000}, {250, 1000, 250, 1000, 100, 400},
        {1000, 1000, 1000, 1000, 1000, 1000}};
    struct Racked {
        std::vector<double> mbit;
        std::vector<int> rack;
        double uplink;
    };
    const std::vector<Racked> racked_shapes = {{{1000, 100, 250, 1000}, {0, 0, 1, 1}, 100},
                                               {{1000, 400, 250, 100}, {0, 0, 1, 1}, 250},
                                               {{1000, 1000, 1000, 1000}, {0, 0, 1, 1}, 200},
                                               {{1000, 1000, 1000, 1000}, {0, 1, 0, 1}, 200}};
    for (double amplitude : {0.4, 1.0}) {
        auto noise = [&] { return 1.0 / (1.0 + amplitude * uniform()); };
        int false_racks = 0, draws = 0;
        for (const auto& shape : one_rack)
            for (int k = 0; k < 50; ++k) {
                FakeNet f = flat(shape);
                f.noise = noise;
                MeasuredNetwork net;
                expect_ok(infer_network(f.probe_with_fan_ins(), names(static_cast<int>(shape.size())), &net));
                false_racks += net.num_racks() > 0;
                ++draws;
            }
        print_message("noise up to %.1fx: racks found on one-rack shapes in %d of %d draws\n", 1 + amplitude,
                      false_racks, draws);
        if (amplitude < 0.5) assert_int_equal(false_racks, 0);
        else assert_true(false_racks * 20 <= draws);  // at most 5 %
        for (const Racked& r : racked_shapes) {
            int found = 0, with_fan_in = 0;
            for (int k = 0; k < 50; ++k) {
                FakeNet f = racked(r.mbit, r.rack, r.uplink);
                f.noise = noise;
                MeasuredNetwork net;
                int rounds = 0;
                expect_ok(infer_network(f.probe_with_fan_ins(&rounds), names(4), &net));
                found += same_racks(net, r.rack);
                with_fan_in += rounds > 0;
            }
            print_message("noise up to %.1fx: racks %g/%g/%g/%g Mbit/s under %g found in %d of 50 draws, "
                          "fan-ins in %d\n",
                          1 + amplitude, r.mbit[0], r.mbit[1], r.mbit[2], r.mbit[3], r.uplink, found, with_fan_in);
            if (amplitude < 0.5) assert_true(found >= 40);
            // s2 (1 Gbit/s hosts under 200 Mbit/s): its set-up gets no
            // fan-in rounds from noise alone (at most 1 draw in 10).
            if (amplitude < 0.5 && r.mbit[2] == 1000) assert_true(with_fan_in * 10 <= 50);
        }
    }
}

void test_restrict_and_digest(void**) {
    FakeNet f = s2_racks({0, 0, 1, 1});
    MeasuredNetwork net, sub;
    expect_ok(infer_network(f.probe(), names(4), &net));
    assert_true(net.digest() != 0);
    // Hosts of one rack: no rack level left.
    assert_true(net.restrict_to({"h1", "h0"}, &sub));
    assert_int_equal(sub.num_racks(), 0);
    assert_int_equal(sub.rack_of[0], -1);
    assert_string_equal(sub.hosts[0].c_str(), "h1");
    // One host of each rack, listed the other way round: racks renumbered
    // in the order of use.
    assert_true(net.restrict_to({"h3", "h0"}, &sub));
    assert_int_equal(sub.num_racks(), 2);
    assert_int_equal(sub.rack_of[0], 0);
    assert_int_equal(sub.rack_of[1], 1);
    assert_false(net.restrict_to({"h0", "elsewhere"}, &sub));
    // Equal networks, equal digests; any change, another one.
    MeasuredNetwork again;
    expect_ok(infer_network(f.probe(), names(4), &again));
    assert_true(again.digest() == net.digest());
    again.host_up[2].bandwidth *= 1.01;
    assert_true(again.digest() != net.digest());
    assert_true(net.restrict_to(net.hosts, &sub));
    assert_true(sub.digest() == net.digest());
}

void test_bytes_round_trip(void**) {
    FakeNet f = s2_racks({0, 1, 0, 1});
    MeasuredNetwork net, back;
    ProbeMatrix m = f.probe();
    m.local_bw[2] = 5e9;
    expect_ok(infer_network(m, {"a", "bb", "", "d d"}, &net));
    const std::string bytes = net.to_bytes();
    assert_true(MeasuredNetwork::from_bytes(bytes, &back));
    assert_true(back.digest() == net.digest());
    assert_true(back.hosts == net.hosts && back.rack_of == net.rack_of);
    // Every truncation and a trailing byte are refused.
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) assert_false(MeasuredNetwork::from_bytes(bytes.substr(0, cut), &back));
    assert_false(MeasuredNetwork::from_bytes(bytes + "x", &back));
}

// A fake sysfs tree: the fastest port that is up, Ethernet or InfiniBand.
void test_nic_prior(void**) {
    char tmpl[] = "/tmp/topoar-sysfs.XXXXXX";
    const char* root = mkdtemp(tmpl);
    assert_non_null(root);
    auto write = [&](const std::string& rel, const std::string& text) {
        const std::string path = std::string(root) + "/" + rel;
        std::string dir = path.substr(0, path.rfind('/'));
        std::string cmd = "mkdir -p '" + dir + "'";
        assert_int_equal(std::system(cmd.c_str()), 0);
        std::FILE* f = std::fopen(path.c_str(), "w");
        assert_non_null(f);
        std::fputs(text.c_str(), f);
        std::fclose(f);
    };
    assert_true(probe_nic_bandwidth(root) == 0);  // nothing there
    write("class/net/lo/operstate", "unknown\n");
    write("class/net/lo/speed", "100000\n");      // loopback: ignored
    write("class/net/eth0/operstate", "up\n");
    write("class/net/eth0/speed", "10000\n");     // 10 Gbit/s
    write("class/net/eth1/operstate", "down\n");
    write("class/net/eth1/speed", "100000\n");    // down: ignored
    write("class/net/wlan0/operstate", "up\n");
    write("class/net/wlan0/speed", "-1\n");       // unknown
    assert_true(near(probe_nic_bandwidth(root), 10e9 / 8));
    write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
    write("class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)\n");
    write("class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
    write("class/infiniband/mlx5_1/ports/1/rate", "400 Gb/sec (4X NDR)\n");
    assert_true(near(probe_nic_bandwidth(root), 100e9 / 8));
    std::string cmd = std::string("rm -rf '") + root + "'";
    assert_int_equal(std::system(cmd.c_str()), 0);

    // The prior caps what a host's pairs seemed to reach.
    FakeNet f{{25e6, 25e6}, {0, 0}, {1e12}};
    MeasuredNetwork net;
    expect_ok(infer_network(f.probe(), names(2), &net, {20e6, 0}));
    assert_true(near(net.host_up[0].bandwidth, 20e6) && near(net.host_up[1].bandwidth, 25e6));
    assert_true(net.nic[0] == 20e6 && net.nic[1] == 0);
    assert_false(static_cast<bool>(infer_network(f.probe(), names(2), &net, {1.0})));  // one per host
}

// The software cost per message from the measured network: the median of
// the hosts' inside one-way times (one disturbed host does not move it),
// the lower middle of an even count, else half the fastest pair's one-way
// time; 0 with nothing measured.  A pure function of the gathered data:
// it survives the network's trip to another rank, and a restriction to
// some hosts takes theirs.
void test_message_cost(void**) {
    FakeNet f = s2_racks({0, 1, 0, 1});
    ProbeMatrix m = f.probe();
    MeasuredNetwork net;
    expect_ok(infer_network(m, names(4), &net));
    // No host of two ranks: half the fastest pair's one-way time.
    double fastest = 1;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            if (m.measured(i, j)) fastest = std::min(fastest, m.lat_at(i, j));
    assert_true(near(net.message_cost(), fastest / 2));
    // Hosts with two ranks: their inside one-way times, median.
    m.local_lat = {3e-6, 250e-6, 4e-6, 0};  // host 1 disturbed, host 3 one rank
    expect_ok(infer_network(m, names(4), &net));
    assert_true(net.message_cost() == 4e-6);
    assert_true(net.local_lat == m.local_lat);
    m.local_lat = {5e-6, 0, 3e-6, 0};  // even count: the lower middle
    expect_ok(infer_network(m, names(4), &net));
    assert_true(net.message_cost() == 3e-6);
    // Another rank gets the same network, and so the same cost.
    MeasuredNetwork back;
    assert_true(MeasuredNetwork::from_bytes(net.to_bytes(), &back));
    assert_true(back.message_cost() == net.message_cost() && back.digest() == net.digest());
    // The digest sees the inside times.
    back.local_lat[0] = 6e-6;
    assert_true(back.digest() != net.digest());
    // A subset of the hosts: theirs.
    MeasuredNetwork sub;
    assert_true(net.restrict_to({"h0", "h1"}, &sub));
    assert_true(sub.message_cost() == 5e-6);
    assert_true(net.restrict_to({"h1", "h3"}, &sub));  // neither measured inside: half their fastest pair
    assert_true(sub.message_cost() > 0 && sub.message_cost() == std::min(sub.host_up[0].latency, sub.host_up[1].latency));
    // Nothing measured at all.
    assert_true(MeasuredNetwork{}.message_cost() == 0);
    // The model gets the measured one-way times back: the cost per message
    // plus the two host links' latencies (model_link takes half of the cost
    // out of each) is what the pair measured.
    const Link a = model_link(net.host_up[0], net.message_cost(), 0.5);
    const Link b = model_link(net.host_up[2], net.message_cost(), 0.5);
    assert_true(near(net.message_cost() + a.latency + b.latency, net.host_up[0].latency + net.host_up[2].latency));
}

// A session's rate from its streams' best times (stream_rate).  Between
// hosts the slope of the last two sizes cancels fixed costs and a token
// bucket's burst; inside a host the largest stream alone counts, so one
// delayed smaller stream cannot turn shared memory into hundreds of GB/s.
void test_stream_rate(void**) {
    const double MiB = 1 << 20;
    // A 25 MB/s link with a 128 KiB burst and 1 ms of fixed costs: the
    // slope is the link's rate, the largest stream alone is off by both.
    const double r = 25e6, burst = 128 * 1024, fixed = 1e-3;
    auto t = [&](double bytes) { return fixed + (bytes - burst) / r; };
    const std::vector<double> net_bytes = {2 * MiB, 8 * MiB};
    assert_true(near(stream_rate(net_bytes, {t(2 * MiB), t(8 * MiB)}, 0.2e-3, true), r));
    // Inside a host: 2 and 8 MiB copies at 10 GB/s (0.21 and 0.84 ms), the
    // smaller one's best time delayed by 0.63 ms (another process ran):
    // the slope makes TB/s of that (capped at kSlopeCap times the largest
    // stream alone); the largest stream alone says what the copy did.
    const double c = 10e9, rtt = 4e-6;
    const std::vector<double> in_bytes = {2 * MiB, 8 * MiB};
    const std::vector<double> delayed = {2 * MiB / c + 0.628e-3, 8 * MiB / c};
    assert_true(near(stream_rate(in_bytes, delayed, rtt, true), kSlopeCap * 8 * MiB / (delayed[1] - rtt)));
    // Between hosts, a pair with a 100 Mbit/s host whose 128K stream was
    // held back by another pair of its round (32 ms) and whose 512K one
    // was not (44 ms): 261 Mbit/s from the slope, 119 capped.
    {
        const double got = stream_rate({128 * 1024, 512 * 1024}, {32.21e-3, 44.26e-3}, 53e-6, true);
        assert_true(got < 1.3 * 12.5e6 && near(got, kSlopeCap * 512 * 1024 / (44.26e-3 - 53e-6)));
    }
    const double inside = stream_rate(in_bytes, delayed, rtt, false);
    assert_true(inside > 0.99 * c && inside < 1.01 * c);
    // Never above what the streams' best times allow.
    assert_true(inside <= 8 * MiB / (delayed[1] - rtt) * (1 + 1e-12));
    // The best of the streams of at least min_bytes: a 512 KiB stream from
    // the cache (40 GB/s) is left out, a delayed 8 MiB one (5 GB/s) loses
    // to the clean 2 MiB one (10 GB/s).
    const std::vector<double> three = {MiB / 2, 2 * MiB, 8 * MiB};
    const std::vector<double> times = {MiB / 2 / 40e9 + rtt, 2 * MiB / 10e9 + rtt, 8 * MiB / 5e9 + rtt};
    assert_true(near(stream_rate(three, times, rtt, false, MiB), 10e9));
    assert_true(near(stream_rate(three, times, rtt, false, 0), 40e9));
    assert_true(near(stream_rate(three, times, rtt, false, 16 * MiB), 5e9));  // none that large: the last
    // A slope that is not positive (the larger stream not slower): the
    // largest stream alone, also between hosts.
    assert_true(near(stream_rate(in_bytes, {1e-3, 1e-3}, 0, true), 8 * MiB / 1e-3));
    // One size only, or nothing timed.
    assert_true(near(stream_rate({MiB}, {1e-3}, 0, true), MiB / 1e-3));
    assert_true(stream_rate({}, {}, 0, true) == 0);
    assert_true(stream_rate({MiB}, {0}, 0, false) == 0);
}

void test_model_link(void**) {
    Link l = model_link(Link{1e9, 60e-6}, 40e-6, 0.5);
    assert_true(near(l.latency, 40e-6) && l.bandwidth == 1e9);
    l = model_link(Link{1e9, 10e-6}, 40e-6, 0.5);
    assert_true(l.latency == 1e-6);  // floor
}

// A measured network becomes the topology: racks, host links (software cost
// taken out of the latencies), ranks inside a host at the measured rate.
void test_discover_measured(void**) {
    std::vector<RankInfo> ranks(5);
    const char* host_of[] = {"h0", "h1", "h2", "h3", "h1"};
    for (int r = 0; r < 5; ++r) ranks[static_cast<std::size_t>(r)].host = host_of[r];
    FakeNet f = s2_racks({0, 1, 0, 1});
    MeasuredNetwork net;
    ProbeMatrix m = f.probe();
    m.local_bw[1] = 3e9;
    expect_ok(infer_network(m, names(4), &net));
    Topology t;
    expect_ok(discover_measured(ranks, net, DiscoveryOptions{}, 40e-6, &t));
    assert_int_equal(t.nodes_at(Level::rack).size(), 2);
    int h1 = t.find(Level::node, "h1");
    assert_true(h1 >= 0);
    assert_true(near(t.node(h1).up.bandwidth, 125e6));
    assert_true(near(t.node(h1).up.latency, 30e-6));  // 50 us measured - 20 us software
    assert_true(t.node(t.leaf_of_rank(4)).up.bandwidth == 3e9);
    assert_true(t.node(t.leaf_of_rank(0)).up.bandwidth == LinkDefaults{}.rank.bandwidth);  // one rank: unknown
    int r0 = t.ancestor_at(h1, Level::rack);
    assert_true(near(t.node(r0).up.bandwidth, 25e6));
    // Host names must match the network's.
    net.hosts[2] = "other";
    assert_false(static_cast<bool>(discover_measured(ranks, net, DiscoveryOptions{}, 40e-6, &t)));
}

// Threads as ranks: a barrier-based allgather for SetupIo.
class Gather {
public:
    explicit Gather(int n) : n_(n) {}
    void allgather(int rank, const void* mine, std::size_t bytes, void* all) {
        std::unique_lock<std::mutex> lock(mu_);
        if (buf_.size() < bytes * static_cast<std::size_t>(n_)) buf_.resize(bytes * static_cast<std::size_t>(n_));
        std::memcpy(buf_.data() + bytes * static_cast<std::size_t>(rank), mine, bytes);
        const long gen = gen_;
        if (++arrived_ == n_) {
            result_ = buf_;
            arrived_ = 0;
            ++gen_;
            cv_.notify_all();
        } else {
            cv_.wait(lock, [&] { return gen_ != gen; });
        }
        std::memcpy(all, result_.data(), bytes * static_cast<std::size_t>(n_));
        // Everyone copies before the next round may overwrite result_.
        if (++copied_ == n_) {
            copied_ = 0;
            ++copy_gen_;
            cv_.notify_all();
        } else {
            const long cg = copy_gen_;
            cv_.wait(lock, [&] { return copy_gen_ != cg; });
        }
    }

private:
    int n_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<unsigned char> buf_, result_;
    int arrived_ = 0, copied_ = 0;
    long gen_ = 0, copy_gen_ = 0;
};

// Rank r's set-up I/O over the in-process transport and the threads'
// allgather.
SetupIo thread_io(topoar_test::FakeTransport& t, Gather& gather, int r) {
    SetupIo io;
    io.transport = &t;
    io.allgather = [&gather, r](const void* mine, std::size_t bytes, void* all) {
        gather.allgather(r, mine, bytes, all);
        return Status::ok();
    };
    return io;
}

// Runs body(r, ranks, transport, io) on n threads as ranks r = 0..n-1 of
// hosts host_of[r], each with the in-process transport and the threads'
// allgather, and waits for them.
void run_rank_threads(int n, const char* const* host_of, topoar_test::FakeNetwork& network, Gather& gather,
                      const std::function<void(int, const std::vector<RankInfo>&, topoar_test::FakeTransport&,
                                               SetupIo&)>& body) {
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
            std::vector<RankInfo> ranks(static_cast<std::size_t>(n));
            for (int i = 0; i < n; ++i) ranks[static_cast<std::size_t>(i)].host = host_of[i];
            topoar_test::FakeTransport t(network, r);
            SetupIo io = thread_io(t, gather, r);
            body(r, ranks, t, io);
        });
    for (auto& th : threads) th.join();
}

// Every rank of `hosts` (n ranks) runs the probes over the in-process
// transport in its own thread; returns each rank's row.  With
// fail_after > 0 the network breaks at that call (FakeNetwork::fail_after);
// *status and *left (optional) then get each rank's result and the
// requests it left posted.  Without them every rank must succeed.
std::vector<std::vector<double>> probe_in_process(const std::vector<HostRanks>& hosts, int n, long fail_after = 0,
                                                  std::vector<Status>* status = nullptr,
                                                  std::vector<int>* left = nullptr) {
    topoar_test::FakeNetwork network(n);
    if (fail_after > 0) network.fail_after(fail_after);
    std::vector<std::vector<double>> rows(static_cast<std::size_t>(n));
    std::vector<Status> st(static_cast<std::size_t>(n));
    std::vector<int> posted(static_cast<std::size_t>(n), -1);
    ProbeOptions opt;
    opt.total_seconds = 0.01;
    opt.max_message = 64 << 10;
    Gather gather(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
            topoar_test::FakeTransport t(network, r);
            auto collect = [&gather, r](const void* mine, std::size_t bytes, void* all) {
                gather.allgather(r, mine, bytes, all);
                return Status::ok();
            };
            st[static_cast<std::size_t>(r)] = run_probe(t, r, hosts, opt, collect, &rows[static_cast<std::size_t>(r)]);
            posted[static_cast<std::size_t>(r)] = t.outstanding();
        });
    for (auto& th : threads) th.join();
    if (status) *status = st;
    else
        for (const Status& x : st) expect_ok(x);
    if (left) *left = posted;
    return rows;
}

// The probes over the in-process transport: every pair of hosts measured
// once by its lower host's leader, the inside rate of hosts with two or
// more ranks, nothing left in flight.
void test_run_probe(void**) {
    const std::vector<HostRanks> hosts = {{"a", {0, 3}}, {"b", {1}}, {"c", {2, 4}}};
    const int n = 5;
    const std::vector<std::vector<double>> rows = probe_in_process(hosts, n);
    std::vector<double> all;
    for (const auto& row : rows) all.insert(all.end(), row.begin(), row.end());
    ProbeMatrix m;
    assert_true(combine_probe_rows(all, n, 3, &m));
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            if (i != j) assert_true(m.bw_at(i, j) > 0 && m.lat_at(i, j) > 0);
    assert_true(m.local_bw[0] > 0 && m.local_bw[2] > 0);
    assert_true(m.local_bw[1] == 0);
    assert_true(m.local_lat[0] > 0 && m.local_lat[2] > 0);  // the inside pings
    assert_true(m.local_lat[1] == 0);
    // Ranks 3 and 4 lead nothing: zero rows.
    for (int r = 3; r < 5; ++r)
        for (double v : rows[static_cast<std::size_t>(r)]) assert_true(v == 0);
    // A rank whose probes failed marks its row; the matrix is refused.
    all[0] = 1;
    assert_false(combine_probe_rows(all, n, 3, &m));
}

// Probes whose network breaks at any point (during the pairs, the
// gathers' turns or a fan-in whose receiver tests its receives in turn):
// every rank returns, some rank says it failed, and no rank leaves a
// request posted on its buffers.
void test_run_probe_failures(void**) {
    const std::vector<HostRanks> hosts = {{"a", {0}}, {"b", {1}}, {"c", {2}}, {"d", {3}}};
    const int n = 4;
    int failed_runs = 0, runs = 0;
    for (long after : {1L, 3L, 10L, 30L, 100L, 300L, 1000L, 3000L, 10000L, 30000L, 100000L}) {
        std::vector<Status> st;
        std::vector<int> left;
        (void)probe_in_process(hosts, n, after, &st, &left);
        ++runs;
        bool any = false;
        for (int r = 0; r < n; ++r) {
            any = any || !st[static_cast<std::size_t>(r)];
            if (left[static_cast<std::size_t>(r)] != 0)
                fail_msg("fail_after(%ld), rank %d: %d requests left posted", after, r, left[static_cast<std::size_t>(r)]);
        }
        failed_runs += any ? 1 : 0;
    }
    assert_int_equal(runs, 11);
    print_message("probes broken at 11 points: %d failed\n", failed_runs);
    // The early breaks always land inside the probes; a probe of a few
    // thousand calls may end before the late ones.
    assert_true(failed_runs >= 6);
}

// Fan-in rounds over the in-process transport: four one-rank hosts.  Every
// rank ends with the same rows, and the fan-ins in the matrix are exactly
// the ones next_fan_ins asks for, round after round (replayed from the
// pairs; none when the pairs pinned every rate).  Whether a fan-in runs
// depends on the rates the threads measure (one-way pairs on a loaded
// machine can pin every host), so up to four probes run until one has a
// fan-in; test_fan_in covers the rounds with fixed rates.
void test_run_probe_fan_in(void**) {
    const std::vector<HostRanks> hosts = {{"a", {0}}, {"b", {1}}, {"c", {2}}, {"d", {3}}};
    const int n = 4;
    int with_fan_in = 0;
    for (int attempt = 0; attempt < 4 && with_fan_in == 0; ++attempt) {
        const std::vector<std::vector<double>> rows = probe_in_process(hosts, n);
        std::vector<double> all;
        for (const auto& row : rows) all.insert(all.end(), row.begin(), row.end());
        ProbeMatrix m;
        assert_true(combine_probe_rows(all, n, 4, &m));
        for (int h = 0; h < 4; ++h)
            if (m.fan_in[static_cast<std::size_t>(h)] > 0) {
                ++with_fan_in;
                assert_true(m.fan_in_from[static_cast<std::size_t>(h)] > 0);
            }
        ProbeMatrix replay = m;
        std::fill(replay.fan_in.begin(), replay.fan_in.end(), 0.0);
        std::fill(replay.fan_in_from.begin(), replay.fan_in_from.end(), 0.0);
        int replayed = 0;
        for (int k = 0; k < kMaxFanIns; ++k) {
            const std::vector<FanIn> round = next_fan_ins(replay);
            if (round.empty()) break;
            // One per rack the rates show: one, or two where the threads'
            // rates on a loaded machine split the hosts (seen once in a
            // unit run beside other tests).
            assert_true(round.size() == 1 || round.size() == 2);
            for (const FanIn& f : round) {
                const std::size_t r = static_cast<std::size_t>(f.receiver);
                assert_true(m.fan_in[r] > 0);
                assert_true(m.fan_in_from[r] == f.senders_rate);
                replay.fan_in[r] = m.fan_in[r];
                replay.fan_in_from[r] = m.fan_in_from[r];
                replay.fan_in_racks[r] = m.fan_in_racks[r];
                replay.fan_in_across[r] = m.fan_in_across[r];
                ++replayed;
            }
        }
        assert_int_equal(replayed, with_fan_in);
    }
    if (with_fan_in == 0) print_message("no fan-in ran in 4 probes (every rate pinned by the pairs)\n");
}

// Set-up measures on a communicator's first set-up, reuses the result on
// the next communicator over the same hosts (no message), and leaves links
// assumed where a file describes them or probing is off.
void test_engine_setup_probes(void**) {
    clear_probe_cache();
    const int n = 5;
    const char* host_of[] = {"a", "b", "a", "b", "b"};
    // Per rank: the model's software cost per message and what the network
    // it used measured (0: none).
    std::vector<double> overheads(n), costs(n);
    auto setup_all = [&](EngineConfig cfg, bool advertise, topoar_test::FakeNetwork& network,
                         std::vector<std::string>* texts, std::vector<NetworkSource>* sources) {
        Gather gather(n);
        std::vector<Status> st(n);
        texts->assign(n, "");
        sources->assign(n, NetworkSource::single_host);
        std::vector<RankInfo> ranks(n);
        for (int r = 0; r < n; ++r) {
            ranks[static_cast<std::size_t>(r)].host = host_of[r];
            if (advertise) ranks[static_cast<std::size_t>(r)].probe_digest = probe_cache_digest();
        }
        std::vector<std::thread> threads;
        for (int r = 0; r < n; ++r)
            threads.emplace_back([&, r] {
                topoar_test::FakeTransport t(network, r);
                SetupIo io = thread_io(t, gather, r);
                Engine e(r, n, cfg);
                st[static_cast<std::size_t>(r)] = e.setup(ranks, &io);
                (*texts)[static_cast<std::size_t>(r)] = e.topology().to_text();
                (*sources)[static_cast<std::size_t>(r)] = e.network_source();
                overheads[static_cast<std::size_t>(r)] = e.model_overhead();
                costs[static_cast<std::size_t>(r)] =
                    e.network_source() == NetworkSource::measured || e.network_source() == NetworkSource::cached
                        ? e.measured_network().message_cost()
                        : 0;
            });
        for (auto& th : threads) th.join();
        for (const Status& s : st) expect_ok(s);
    };
    EngineConfig cfg;
    cfg.probe_options.total_seconds = 0.01;
    cfg.probe_options.max_message = 64 << 10;
    std::vector<std::string> texts;
    std::vector<NetworkSource> sources;

    topoar_test::FakeNetwork first(n);
    setup_all(cfg, true, first, &texts, &sources);
    assert_true(first.messages() > 0);
    for (int r = 0; r < n; ++r) {
        assert_true(sources[static_cast<std::size_t>(r)] == NetworkSource::measured);
        assert_string_equal(texts[static_cast<std::size_t>(r)].c_str(), texts[0].c_str());  // identical everywhere
    }
    const std::string measured = texts[0];
    assert_true(probe_cache_digest() != 0);
    // The software cost per message: measured (both hosts have two ranks),
    // the same on every rank, and the model's.
    assert_true(costs[0] > 0);
    for (int r = 0; r < n; ++r) {
        assert_true(costs[static_cast<std::size_t>(r)] == costs[0]);
        assert_true(overheads[static_cast<std::size_t>(r)] == costs[0]);
    }

    topoar_test::FakeNetwork second(n);
    setup_all(cfg, true, second, &texts, &sources);
    assert_int_equal(second.messages(), 0);
    for (int r = 0; r < n; ++r) {
        assert_true(sources[static_cast<std::size_t>(r)] == NetworkSource::cached);
        assert_string_equal(texts[static_cast<std::size_t>(r)].c_str(), measured.c_str());
    }

    // Ranks that do not advertise the same network: the lowest rank that
    // has one holding every host sends it to the others (one message each,
    // no probe).  (Threads share one process cache, so every rank has it
    // here; in a job, ranks of different earlier communicators differ.)
    topoar_test::FakeNetwork third(n);
    setup_all(cfg, false, third, &texts, &sources);
    assert_int_equal(third.messages(), static_cast<std::size_t>(n - 1));
    for (int r = 0; r < n; ++r) {
        assert_true(sources[static_cast<std::size_t>(r)] == NetworkSource::cached);
        assert_string_equal(texts[static_cast<std::size_t>(r)].c_str(), measured.c_str());
    }
    for (int r = 0; r < n; ++r) assert_true(overheads[static_cast<std::size_t>(r)] == costs[0]);  // cached: same cost

    // coll_topoar_model_overhead set by the user wins over the measured cost
    // (the network is measured all the same), also at its default's value.
    for (const char* given : {"40us", "2us"}) {
        EngineConfig c = cfg;
        expect_ok(set_param(&c, "model_overhead", given));
        double want = 0;
        expect_ok(parse_latency(given, &want));
        topoar_test::FakeNetwork net(n);
        setup_all(c, true, net, &texts, &sources);
        for (int r = 0; r < n; ++r) {
            assert_true(sources[static_cast<std::size_t>(r)] == NetworkSource::cached);
            assert_true(overheads[static_cast<std::size_t>(r)] == want);
            assert_true(costs[static_cast<std::size_t>(r)] == costs[0]);
        }
    }

    // Nobody has one: measured again.
    clear_probe_cache();
    topoar_test::FakeNetwork third_b(n);
    setup_all(cfg, false, third_b, &texts, &sources);
    assert_true(third_b.messages() > static_cast<std::size_t>(n));
    assert_true(sources[0] == NetworkSource::measured);

    // Probing off, or the node links given: assumed, nothing sent.
    for (const char* setting : {"probe=0", "node_link=10Gbit"}) {
        const std::string kv = setting;
        EngineConfig c = cfg;
        expect_ok(set_param(&c, kv.substr(0, kv.find('=')), kv.substr(kv.find('=') + 1)));
        topoar_test::FakeNetwork quiet(n);
        setup_all(c, false, quiet, &texts, &sources);
        assert_int_equal(quiet.messages(), 0);
        assert_true(sources[0] == NetworkSource::assumed);
        assert_true(overheads[0] == EngineConfig{}.model_overhead);  // nothing measured: auto's assumed 40 us
    }
    clear_probe_cache();
}

// Online adaptation: windows of timed calls; a window much slower than the
// first after set-up measures again (every rank alike), at most adapt_max
// times; a window within the threshold does nothing.
void test_online_adaptation(void**) {
    clear_probe_cache();
    const int n = 4;
    const char* host_of[] = {"a", "b", "a", "b"};
    topoar_test::FakeNetwork network(n);
    Gather gather(n);
    std::vector<int> replans(n, -1);
    std::vector<std::string> notices(n);
    std::vector<Status> st(n);
    run_rank_threads(n, host_of, network, gather,
                     [&](int r, const std::vector<RankInfo>& ranks, topoar_test::FakeTransport&, SetupIo& io) {
            EngineConfig cfg;
            cfg.probe_options.total_seconds = 0.01;
            cfg.probe_options.max_message = 64 << 10;
            cfg.adapt_interval = 4;
            cfg.adapt_max = 1;
            cfg.algorithm = Algorithm::ring;
            Engine e(r, n, cfg);
            Status s = e.setup(ranks, &io);
            PreparedCall call;
            if (s) s = e.prepare(std::size_t(1) << 18, 4, MemType::host, &call);
            // Window 1: the baseline (1 s a call); window 2: 1.4x, within
            // the 50 % threshold; window 3: 3x, measured again; window 4
            // (new baseline) and 5: 10x, but adapt_max is 1.
            const double seconds[] = {1, 1.4, 3, 3, 30};
            std::string notice;
            for (double sec : seconds)
                for (int k = 0; k < 4 && s; ++k) {
                    s = e.note_call_time(call, sec, io);
                    std::string nn = e.take_notice();
                    if (!nn.empty()) notice += nn;
                    if (s && !nn.empty()) s = e.prepare(std::size_t(1) << 18, 4, MemType::host, &call);
                }
            st[static_cast<std::size_t>(r)] = s;
            replans[static_cast<std::size_t>(r)] = e.replans();
            notices[static_cast<std::size_t>(r)] = notice;
        });
    for (int r = 0; r < n; ++r) {
        expect_ok(st[static_cast<std::size_t>(r)]);
        assert_int_equal(replans[static_cast<std::size_t>(r)], 1);
        assert_non_null(std::strstr(notices[static_cast<std::size_t>(r)].c_str(), "links measured again"));
        // Window 3 (3x) did it, not window 2 (1.4x, within the threshold).
        assert_non_null(std::strstr(notices[static_cast<std::size_t>(r)].c_str(), "calls ran 3x slower"));
    }
    clear_probe_cache();
}

// The large-message check's tests: measured links (short probes), the
// check alone timing the calls.
static EngineConfig check_config() {
    EngineConfig cfg;
    cfg.probe_options.total_seconds = 0.01;
    cfg.probe_options.max_message = 64 << 10;
    cfg.adapt = false;  // the check alone times these calls
    return cfg;
}

// Runs call c (count int32 sums, rank r of n, call k) and counts a wrong
// result into *wrong.
static Status run_checked(Engine& e, const PreparedCall& c, std::size_t count, int r, int n, int k,
                          topoar_test::FakeTransport& t, int* wrong) {
    topoar_test::SumReducer<std::int32_t> sum;
    std::vector<std::int32_t> buf(count), want(count, 0);
    for (std::size_t i = 0; i < count; i += 997) {
        buf[i] = static_cast<std::int32_t>(r + i + k);
        for (int q = 0; q < n; ++q) want[i] += static_cast<std::int32_t>(q + i + k);
    }
    Status s = e.run(c, buf.data(), t, sum);  // no I/O: not timed here
    if (buf != want) ++*wrong;
    return s;
}

// What each rank of a check test reports, and what every such test asserts
// of it: no error, right sums, the same turns on every rank.
struct CheckRanks {
    explicit CheckRanks(int n)
        : traces(static_cast<std::size_t>(n)), notices(static_cast<std::size_t>(n)), st(static_cast<std::size_t>(n)),
          wrong(static_cast<std::size_t>(n), 0) {}
    void keep(int r, const Status& s, const std::string& trace, const std::string& notice) {
        st[static_cast<std::size_t>(r)] = s;
        traces[static_cast<std::size_t>(r)] = trace;
        notices[static_cast<std::size_t>(r)] = notice;
    }
    int* wrong_of(int r) { return &wrong[static_cast<std::size_t>(r)]; }
    void assert_alike() const {
        for (std::size_t r = 0; r < st.size(); ++r) {
            expect_ok(st[r]);
            assert_int_equal(wrong[r], 0);
            assert_string_equal(traces[r].c_str(), traces[0].c_str());
        }
    }
    std::vector<std::string> traces, notices;
    std::vector<Status> st;
    std::vector<int> wrong;
};

// The previous module's turn in the large-message check (ModelCheck::kLost)
// in the engine: every plan's window far slower than its prediction, the
// previous module's window (route check_down: handed down, so nothing runs
// here) fast: the class is handed down from then on.  A call whose
// previous-module result could differ (PairCaps::previous_differs) runs the
// fastest plan instead, during the turn (which waits for it) and after; a
// nonblocking call takes that plan too; every rank takes the same turns.
void test_large_message_check_previous(void**) {
    clear_probe_cache();
    const int n = 5;
    const char* host_of[] = {"a", "a", "b", "b", "b"};
    topoar_test::FakeNetwork network(n);
    Gather gather(n);
    CheckRanks out(n);
    run_rank_threads(n, host_of, network, gather,
                     [&](int r, const std::vector<RankInfo>& ranks, topoar_test::FakeTransport& t, SetupIo& io) {
            Engine e(r, n, check_config());
            Status s = e.setup(ranks, &io);
            const std::size_t count = std::size_t(3) << 18;
            std::string trace, notice;
            for (int k = 0; k < 18 && s; ++k) {
                PairCaps pair;
                pair.previous_differs = k == 8 || k == 16;  // an 8-bit sum under op/avx, say
                PreparedCall c;
                s = e.prepare(count, 4, MemType::host, &c, pair);
                if (!s) break;
                trace += std::string(route_name(c.route)) + (c.check.timed ? "/T" : "/") + (c.check.pool ? "P" : "") +
                         (c.check.decided ? "D" : "") + (pair.previous_differs ? "!" : "") + " ";
                if (is_hand_down(c.route)) {
                    if (pair.previous_differs) ++*out.wrong_of(r);
                    if (c.check.timed) s = e.note_check(c, 1e-6, io);  // what the glue's trial_done does
                } else {
                    s = run_checked(e, c, count, r, n, k, t, out.wrong_of(r));
                    if (s && c.check.timed) s = e.note_check(c, 100.0, io);  // far off any prediction
                }
                notice += e.take_notice();
            }
            if (s) {
                PreparedCall c;
                CallKind nb;
                nb.nonblocking = true;
                s = e.prepare(count, 4, MemType::host, &c, PairCaps{}, nb);
                trace += std::string("nb:") + route_name(c.route);
            }
            out.keep(r, s, trace, notice);
        });
    out.assert_alike();
    const std::string& tr = out.traces[0];
    const std::string& no = out.notices[0];
    std::printf("%s\n%s", tr.c_str(), no.c_str());
    // The choice's window (extended once), one alternative's, no more tries
    // (the network, not the plan), then the previous module's window, which
    // an int8-like call (!) interrupts untimed (its first timed call
    // pooled alone too), then handed down.
    assert_non_null(std::strstr(no.c_str(), "the previous module's turn next"));
    assert_non_null(std::strstr(no.c_str(), "the previous module from now on"));
    assert_non_null(std::strstr(tr.c_str(), "check_down/ host/! check_down/TP check_down/TP down/D "));
    assert_non_null(std::strstr(tr.c_str(), "down/D host/D! down/D nb:host"));
    clear_probe_cache();
}

// Counts the synchronous sends it forwards (the send credit's).
class CountingTransport final : public Transport {
public:
    explicit CountingTransport(Transport& t) : t_(t) {}
    Status isend(const void* b, std::size_t n, int p, Request* r) override { return t_.isend(b, n, p, r); }
    Status issend(const void* b, std::size_t n, int p, Request* r) override {
        ++issends;
        return t_.issend(b, n, p, r);
    }
    Status irecv(void* b, std::size_t n, int p, Request* r) override { return t_.irecv(b, n, p, r); }
    Status wait(Request* r) override { return t_.wait(r); }
    Status test(Request* r, bool* done) override { return t_.test(r, done); }
    void progress() override { t_.progress(); }
    Status cancel(Request* r) override { return t_.cancel(r); }
    int issends = 0;

private:
    Transport& t_;
};

// coll_topoar_send_credit (exec/tcp_retransmissions.hpp) in the engine:
// auto posts no synchronous send until a call has seen the host
// retransmit (here a counter that grows by 100 per read), then credits
// the same plan's sends from the next call on, says so once, and keeps
// the results right; always credits from the first call, never not even
// after retransmissions were seen.  Tree at 3 MiB on 2 + 3 ranks: its
// leaders send each other far more than 4x the flight bound.
void test_send_credit_after_retransmissions(void**) {
    const int n = 5;
    const char* host_of[] = {"a", "a", "b", "b", "b"};
    for (SendCredit mode : {SendCredit::automatic, SendCredit::always, SendCredit::never}) {
        clear_probe_cache();
        reset_credit_retransmitted();
        std::atomic<std::int64_t> counter{0};
        set_retransmission_reader([&counter] { return counter += 100; });
        topoar_test::FakeNetwork network(n);
        Gather gather(n);
        CheckRanks out(n);
        std::vector<std::vector<int>> issends(n);
        run_rank_threads(n, host_of, network, gather,
                         [&](int r, const std::vector<RankInfo>& ranks, topoar_test::FakeTransport& t, SetupIo& io) {
                EngineConfig cfg = check_config();
                cfg.algorithm = Algorithm::tree;
                cfg.send_credit = mode;
                cfg.unit_time = 0;  // the fake's fast links keep the 64 KiB bound
                Engine e(r, n, cfg);
                Status s = e.setup(ranks, &io);
                const std::size_t count = std::size_t(3) << 18;
                std::string trace, notice;
                for (int k = 0; k < 4 && s; ++k) {
                    // Past the watch's interval, so its end reads.
                    std::this_thread::sleep_for(std::chrono::milliseconds(15));
                    PreparedCall c;
                    s = e.prepare(count, 4, MemType::host, &c);
                    if (!s) break;
                    trace += std::string(c.credit ? "C" : "-") + (c.watch_retransmissions ? "W " : " ");
                    CountingTransport ct(t);
                    topoar_test::SumReducer<std::int32_t> sum;
                    std::vector<std::int32_t> buf(count), want(count, 0);
                    for (std::size_t i = 0; i < count; i += 997) {
                        buf[i] = static_cast<std::int32_t>(r + i + k);
                        for (int q = 0; q < n; ++q) want[i] += static_cast<std::int32_t>(q + i + k);
                    }
                    s = e.run(c, buf.data(), ct, sum);
                    if (buf != want) ++*out.wrong_of(r);
                    issends[static_cast<std::size_t>(r)].push_back(ct.issends);
                    notice += e.take_notice();
                    // Every rank's call k is done before any rank prepares
                    // call k + 1 (the credit is the process's, here all
                    // five ranks').
                    int one = 1;
                    std::vector<int> all(n);
                    if (s) s = io.allgather(&one, sizeof one, all.data());
                }
                out.keep(r, s, trace, notice);
            });
        set_retransmission_reader({});
        out.assert_alike();
        const std::string& tr = out.traces[0];
        std::printf("mode %d: %s\n", static_cast<int>(mode), tr.c_str());
        std::vector<int> per_call(4, 0);
        for (int r = 0; r < n; ++r)
            for (int k = 0; k < 4; ++k) per_call[static_cast<std::size_t>(k)] += issends[static_cast<std::size_t>(r)][static_cast<std::size_t>(k)];
        std::string notices;
        for (const auto& no : out.notices) notices += no;
        const bool said = std::strstr(notices.c_str(), "credited from now on") != nullptr;
        if (mode == SendCredit::automatic) {
            // Watched and not credited, until the first call's reads; then
            // credited and no longer watched.
            assert_string_equal(tr.c_str(), "-W C C C ");
            assert_int_equal(per_call[0], 0);
            for (int k = 1; k < 4; ++k) assert_true(per_call[static_cast<std::size_t>(k)] > 0);
            assert_true(said);
            assert_true(credit_retransmitted());
        } else if (mode == SendCredit::always) {
            assert_string_equal(tr.c_str(), "C C C C ");
            for (int k = 0; k < 4; ++k) assert_true(per_call[static_cast<std::size_t>(k)] > 0);
            assert_false(said);
        } else {
            note_credit_retransmitted();  // seen or not: never credits
            assert_string_equal(tr.c_str(), "- - - - ");
            for (int k = 0; k < 4; ++k) assert_int_equal(per_call[static_cast<std::size_t>(k)], 0);
            assert_false(said);
        }
    }
    reset_credit_retransmitted();
    clear_probe_cache();
}

// The large-message check (decide/model_check.hpp) in the engine, on
// measured links: the second call of a size class is timed and pooled;
// timed far above every prediction, the plan the table ranks next runs
// the third call (a real plan, results checked), and measured faster it
// keeps the class, for nonblocking calls too; a class whose choice ran as
// fast as predicted tries nothing, and is watched: a window of later calls
// far slower opens it again; every rank takes the same turns; the check
// off, or links not measured, leaves the table's choice alone.
void test_large_message_check(void**) {
    clear_probe_cache();
    const int n = 5;
    const char* host_of[] = {"a", "a", "b", "b", "b"};
    for (int variant = 0; variant < 3; ++variant) {  // 0: check on, 1: check off, 2: links not measured
        topoar_test::FakeNetwork network(n);
        Gather gather(n);
        CheckRanks out(n);
        run_rank_threads(n, host_of, network, gather,
                         [&](int r, const std::vector<RankInfo>& ranks, topoar_test::FakeTransport& t, SetupIo& io) {
                EngineConfig cfg = check_config();
                cfg.model_check = variant != 1;
                cfg.probe = variant != 2;
                Engine e(r, n, cfg);
                Status s = e.setup(ranks, &io);
                // Class 2-4 MiB: its second call "ran" 100 s (so its
                // choice's window of two, slower than any prediction), each
                // later timed turn 1 ns.  Class 1-2 MiB: 1 ns at once (its
                // choice as fast as predicted), then its decided plan's
                // first watched window 100 s a call, later ones 1 ns.
                std::string trace, notice;
                for (std::size_t count : {std::size_t(3) << 17, std::size_t(3) << 18})
                    for (int k = 0; k < (count == (std::size_t(3) << 17) ? 24 : 9) && s; ++k) {
                        PreparedCall c;
                        s = e.prepare(count, 4, MemType::host, &c);
                        if (!s) break;
                        trace += std::string(algorithm_name(c.algorithm)) + "/" + (c.check.timed ? "T" : "") +
                                 (c.check.pool ? "P" : "") + (c.check.decided ? "D" : "") + (c.origin == Origin::measured ? "M" : "") + " ";
                        if (c.check.decided && c.check.timed && !c.check.watched) ++*out.wrong_of(r);
                        if (c.check.pool && !c.check.timed) ++*out.wrong_of(r);
                        s = run_checked(e, c, count, r, n, k, t, out.wrong_of(r));
                        if (s && c.check.timed) {
                            const bool slow = (count == (std::size_t(3) << 18) && k == 1) ||
                                              (count == (std::size_t(3) << 17) && k >= 4 && k <= 19);
                            s = e.note_check(c, slow ? 100.0 : 1e-9, io);
                        }
                        notice += e.take_notice();
                    }
                // A nonblocking call of the checked class takes its plan.
                if (s) {
                    PreparedCall c;
                    CallKind nb;
                    nb.nonblocking = true;
                    s = e.prepare(std::size_t(3) << 18, 4, MemType::host, &c, PairCaps{}, nb);
                    trace += std::string("nb:") + algorithm_name(c.algorithm) + (c.check.cls >= 0 ? "!" : "");
                }
                out.keep(r, s, trace, notice);
            });
        out.assert_alike();
        const std::string& tr = out.traces[0];
        const std::string& no = out.notices[0];
        std::printf("variant %d: %s\n%s", variant, tr.c_str(), no.c_str());
        if (variant == 0) {
            // 1-2 MiB: warm-up, two timed (the second pools), then decided
            // on the choice, nothing tried; watched: a call not timed,
            // then two windows of kWatch (8) timed calls, far slower: the
            // class is checked again, predicted for the call's size, and
            // another plan gets its window (3 calls), faster: kept, no
            // more watching.
            const std::string a = tr.substr(0, tr.find('/'));
            std::string want = a + "/ " + a + "/T " + a + "/TP " + a + "/D ";
            for (int k = 1; k < 16; ++k) want += a + (k == 8 ? "/TPD " : "/TD ");
            want += a + "/TPD ";
            assert_true(tr.rfind(want, 0) == 0);
            assert_non_null(std::strstr(no.c_str(), "at most 5 % slower than its prediction"));
            const std::size_t again = no.find("'s later calls ran at ");
            assert_true(again != std::string::npos && no.rfind("checked again") > again);
            const std::size_t next = no.find(": its turn next", again);
            assert_true(next != std::string::npos);
            const std::size_t w_named = no.rfind(" predicted ", next), w_from = no.rfind(", ", w_named);
            const std::string w = no.substr(w_from + 2, w_named - w_from - 2);
            assert_true(w != a);
            assert_non_null(std::strstr(
                tr.c_str(), (a + "/TPD " + w + "/M " + w + "/TM " + w + "/TPM " + w + "/DM ").c_str()));
            // 2-4 MiB: another plan's turn after the slow window (its own
            // warm-up, two timed), then kept (the measured origin), and the
            // nonblocking call takes it.
            assert_non_null(std::strstr(no.c_str(), ": its turn next"));
            // The choice ran far slower than predicted: its window went on
            // for one more call (two pool turns), then the plans ranked
            // next were predicted for the call's size, once (that class
            // only); the alternative's window pools once.
            std::size_t pools = 0;
            for (std::size_t at = tr.find("TP"); at != std::string::npos; at = tr.find("TP", at + 1)) ++pools;
            assert_int_equal(pools, 4 + 3);  // and the 1-2 MiB class's two watched windows and retry
            const std::size_t exact = no.find("slower than predicted; predicted for this size (MB/s): ");
            assert_true(exact != std::string::npos && exact > no.find("checked again"));  // 1-2 MiB's
            const std::size_t exact2 =
                no.find("slower than predicted; predicted for this size", exact + 1);  // 2-4 MiB's, once
            assert_true(exact2 != std::string::npos &&
                        exact2 == no.rfind("slower than predicted; predicted for this size"));
            assert_true(next < exact2);  // the 1-2 MiB class's calls came first
            const std::size_t turn = no.find(": its turn next", exact2);
            const std::size_t named = no.rfind(" predicted ", turn);
            const std::size_t from = no.rfind(", ", named);
            assert_true(named != std::string::npos && from != std::string::npos);
            const std::string b = no.substr(from + 2, named - from - 2);
            assert_non_null(std::strstr(no.c_str(), (b + " from now on").c_str()));
            assert_non_null(
                std::strstr(tr.c_str(), (b + "/M " + b + "/TM " + b + "/TPM " + b + "/DM " + b + "/TDM").c_str()));
            assert_non_null(std::strstr(tr.c_str(), ("nb:" + b).c_str()));
            assert_null(std::strstr(tr.c_str(), "!"));
        } else {
            // Off, or on links a file or an assumption gives: no turns at all.
            assert_true(no.find("model check") == std::string::npos);
            assert_true(tr.find("T") == std::string::npos);
            assert_true(tr.find("M ") == std::string::npos);
        }
    }
    clear_probe_cache();
}

// auto's small-message contest (decide/trials.hpp) in the engine: every
// rank takes the same turn at the same call, the previous module's turns
// come as hand-downs, topoar's turns run real plans (results checked), the
// ranks' pooled times pick one winner for all even where one rank alone
// would pick another, and calls the contest does not cover have no trial.
void test_small_message_trials(void**) {
    clear_probe_cache();
    const int n = 5;
    const char* host_of[] = {"a", "a", "b", "b", "b"};
    topoar_test::FakeNetwork network(n);
    Gather gather(n);
    std::vector<std::string> traces(n), notices(n);
    std::vector<Status> st(n);
    std::vector<int> wrong(n, 0), decided_at(n, -1), untried(n, 0);
    run_rank_threads(n, host_of, network, gather,
                     [&](int r, const std::vector<RankInfo>& ranks, topoar_test::FakeTransport& t, SetupIo& io) {
            topoar_test::SumReducer<std::int32_t> sum;
            EngineConfig cfg;
            cfg.probe = false;     // assumed links; the I/O is still there for the agreement
            cfg.trial_calls = 3;   // one block per contender
            Engine e(r, n, cfg);
            Status s = e.setup(ranks, &io);
            const std::size_t count = 16;  // 64 bytes: size class 6
            std::string trace;
            // 3 x kBlock contest calls at most, then the winner's watched
            // window (kWatchSkip + kWatch calls), then a few more.
            for (int k = 0; k < 3 * SizeTrials::kBlock + SizeTrials::kWatchSkip + SizeTrials::kWatch + 4 && s; ++k) {
                PreparedCall c;
                s = e.prepare(count, 4, MemType::host, &c);
                if (!s) break;
                trace += std::to_string(c.trial.index) + (is_hand_down(c.route) ? "h" : "p") +
                         (c.trial.decided ? "d" : "") + (c.trial.watched ? "w " : " ");
                std::vector<std::int32_t> buf(count), want(count, 0);
                for (std::size_t i = 0; i < count; ++i) {
                    buf[i] = static_cast<std::int32_t>(r * 100 + static_cast<int>(i) + k);
                    for (int q = 0; q < n; ++q) want[i] += static_cast<std::int32_t>(q * 100 + static_cast<int>(i) + k);
                }
                // An undecided class's turns, and the winner's watched
                // calls after it, take a contest route, and only they.
                const bool turn = c.trial.cls >= 0 && (!c.trial.decided || c.trial.watched);
                if (turn != (c.route == Route::contest_host || c.route == Route::contest_down))
                    ++wrong[static_cast<std::size_t>(r)];
                if (is_hand_down(c.route)) {
                    buf = want;  // the previous module's turn (tested elsewhere)
                } else {
                    s = e.run(c, buf.data(), t, sum);
                    if (buf != want) ++wrong[static_cast<std::size_t>(r)];
                }
                if (s && turn) {
                    // Topoar's turns: 8 ms everywhere.  The previous module:
                    // 20 ms on rank 0 (alone it would keep topoar's choice),
                    // 1 ms on the others: pooled 24 against 40, it wins,
                    // and runs as fast in its watched window.
                    const double sec = !is_hand_down(c.route) ? 8e-3 : r == 0 ? 20e-3 : 1e-3;
                    s = e.note_trial(c, sec, io);
                    notices[static_cast<std::size_t>(r)] += e.take_notice();
                }
                if (c.trial.decided && decided_at[static_cast<std::size_t>(r)] < 0)
                    decided_at[static_cast<std::size_t>(r)] = k;
            }
            // Not covered: above trial_max_size, empty calls.
            PreparedCall big, empty;
            if (s) s = e.prepare(cfg.trial_max_size / 4 + 1, 4, MemType::host, &big);
            if (s) s = e.prepare(0, 4, MemType::host, &empty);
            if (s && big.trial.cls < 0 && empty.trial.cls < 0) untried[static_cast<std::size_t>(r)] = 1;
            traces[static_cast<std::size_t>(r)] = trace;
            st[static_cast<std::size_t>(r)] = s;
        });
    for (int r = 0; r < n; ++r) {
        const std::size_t i = static_cast<std::size_t>(r);
        expect_ok(st[i]);
        assert_int_equal(wrong[i], 0);
        assert_int_equal(untried[i], 1);
        assert_string_equal(traces[i].c_str(), traces[0].c_str());
        assert_int_equal(decided_at[i], decided_at[0]);
        assert_non_null(std::strstr(notices[i].c_str(), "previous module from now on"));
        // Its window pooled (4.8 ms per call, as in the contest): kept.
        assert_non_null(std::strstr(notices[i].c_str(),
                                    "previous module watched after the contest, 4800 us per call (4800 us in the "
                                    "contest; mean of 16 calls and of the ranks): previous module from now on"));
    }
    // Decided after every contender's block (2 or 3 contenders), then only
    // hand-downs: "1hdw" is the previous module's index, decided and
    // watched, "1hd" no longer watched.
    assert_true(decided_at[0] == 2 * SizeTrials::kBlock || decided_at[0] == 3 * SizeTrials::kBlock);
    assert_non_null(std::strstr(traces[0].c_str(), "0p 0p"));
    assert_non_null(std::strstr(traces[0].c_str(), "1h 1h"));
    std::size_t watched = 0;
    for (std::size_t at = traces[0].find("1hdw "); at != std::string::npos; at = traces[0].find("1hdw ", at + 1))
        ++watched;
    assert_int_equal(watched, SizeTrials::kWatchSkip + SizeTrials::kWatch);
    const std::string tail = traces[0].substr(traces[0].size() - 8);
    assert_string_equal(tail.c_str(), "1hd 1hd ");

    // A forced algorithm, trial_calls 0, and set-up without I/O: no trial.
    std::vector<RankInfo> ranks(n);
    for (int i = 0; i < n; ++i) ranks[static_cast<std::size_t>(i)].host = host_of[i];
    for (int variant = 0; variant < 3; ++variant) {
        EngineConfig cfg;
        cfg.probe = false;
        if (variant == 0) cfg.algorithm = Algorithm::ring;
        if (variant == 1) cfg.trial_calls = 0;
        Engine e(0, n, cfg);
        PreparedCall c;
        if (variant < 2) {
            // Without probes, set-up does not talk to the other ranks.
            topoar_test::FakeNetwork quiet(n);
            topoar_test::FakeTransport t(quiet, 0);
            SetupIo io;
            io.transport = &t;
            io.allgather = [](const void*, std::size_t, void*) { return Status::internal("not expected"); };
            expect_ok(e.setup(ranks, &io));
        } else {
            expect_ok(e.setup(ranks));
        }
        expect_ok(e.prepare(16, 4, MemType::host, &c));
        assert_int_equal(c.trial.cls, -1);
        assert_false(is_hand_down(c.route));
    }
    clear_probe_cache();
}

// A call whose result the previous module could compute otherwise
// (PairCaps::previous_differs: an 8-bit sum under Open MPI's op/avx) is never the
// previous module's, whatever the contest: not as a turn, not after the
// previous module won the class.  A class whose every call is such a call
// settles among topoar's own contenders.
void test_small_message_trials_own_result(void**) {
    clear_probe_cache();
    const int n = 5;
    const char* host_of[] = {"a", "a", "b", "b", "b"};
    topoar_test::FakeNetwork network(n);
    Gather gather(n);
    std::vector<std::string> notices(n);
    std::vector<Status> st(n);
    std::vector<int> wrong(n, 0), own_handed(n, 0), own_runs(n, 0), other_handed(n, 0), other_last(n, 0);
    run_rank_threads(n, host_of, network, gather,
                     [&](int r, const std::vector<RankInfo>& ranks, topoar_test::FakeTransport& t, SetupIo& io) {
            topoar_test::SumReducer<std::int32_t> sum;
            EngineConfig cfg;
            cfg.probe = false;
            cfg.trial_calls = 3;
            Engine e(r, n, cfg);
            Status s = e.setup(ranks, &io);
            // Class 7 (128 bytes): every call previous_differs.  Class 6 (64
            // bytes): calls of both kinds, the previous module measured
            // fastest by far.
            for (int k = 0; k < 60 && s; ++k) {
                const bool mixed = k % 2 == 1;
                const bool own_only = !mixed || k % 4 == 3;  // class 6: every other call
                const std::size_t count = mixed ? 16 : 32;
                PreparedCall c;
                PairCaps pair;
                pair.previous_differs = own_only;
                s = e.prepare(count, 4, MemType::host, &c, pair);
                if (!s) break;
                if (is_hand_down(c.route)) {
                    ++(own_only ? own_handed : other_handed)[static_cast<std::size_t>(r)];
                    if (!own_only && k >= 50) ++other_last[static_cast<std::size_t>(r)];
                } else {
                    std::vector<std::int32_t> buf(count, r + 1);
                    s = e.run(c, buf.data(), t, sum);
                    for (std::int32_t v : buf)
                        if (v != n * (n + 1) / 2) ++wrong[static_cast<std::size_t>(r)];
                    if (own_only) ++own_runs[static_cast<std::size_t>(r)];
                }
                if (s && c.trial.cls >= 0 && !c.trial.decided) {
                    s = e.note_trial(c, is_hand_down(c.route) ? 1e-3 : 8e-3, io);
                    notices[static_cast<std::size_t>(r)] += e.take_notice();
                }
            }
            st[static_cast<std::size_t>(r)] = s;
        });
    for (int r = 0; r < n; ++r) {
        const std::size_t i = static_cast<std::size_t>(r);
        expect_ok(st[i]);
        assert_int_equal(wrong[i], 0);
        assert_int_equal(own_handed[i], 0);   // never the previous module's
        assert_int_equal(own_runs[i], 30 + 15);  // all 30 of class 7, the own-only half of class 6
        // The other calls of class 6: the previous module's once it won
        // (of the last ten calls, 53 and 57), and during its turns.
        assert_int_equal(other_last[i], 2);
        assert_true(other_handed[i] > 5);
        // Class 7 settled without the previous module ever timed.
        assert_non_null(std::strstr(notices[i].c_str(), "allreduce of 128-256:"));
        assert_non_null(std::strstr(notices[i].c_str(), "previous module not run"));
        // Class 6: the previous module won on the calls it may take.
        assert_non_null(std::strstr(notices[i].c_str(), "previous module from now on"));
        assert_string_equal(notices[i].c_str(), notices[0].c_str());
    }
    clear_probe_cache();
}

// The contests' outcomes kept for the job (engine/outcome_store.hpp): a
// later communicator of the same shape starts decided in the classes every
// rank holds alike, and runs the contest in the others, taking the same
// turns on every rank.  Each simulated rank has its own store (they would
// be separate processes); their histories are made to differ: rank 1 lost
// class 3 (8 B), rank 3 alone holds an outcome for class 4 (16 B).
void test_contest_outcomes_agreed(void**) {
    clear_probe_cache();
    const int n = 5;
    const char* host_of[] = {"a", "a", "b", "b", "b"};
    std::vector<OutcomeStore> stores(n);
    EngineConfig cfg;
    cfg.probe = false;
    cfg.trial_calls = 3;
    // MPI_Barrier's kind (Selection::kBarrierSlot of the same codes): each
    // rank's barrier_outcome() after set-up, and what a rank keeps after
    // it (0: nothing).
    std::vector<int> barrier_seen(n, -1), barrier_keep(n, 0);
    // One communicator's life: `calls` calls cycling over `sizes` (bytes);
    // the previous module is timed 1 ms, topoar 8 ms (it wins every class).
    // Returns each rank's trace of turns; *agreed: rank 0's set-up line.
    auto job = [&](const std::vector<std::size_t>& sizes, int calls, std::string* agreed,
                   std::vector<std::uint64_t>* keys) {
        topoar_test::FakeNetwork network(n);
        Gather gather(n);
        std::vector<std::string> traces(n);
        std::vector<Status> st(n);
        std::vector<int> wrong(n, 0);
        // What each rank's record says it holds, taken before any rank runs
        // (a rank keeps its barrier's kind right after its set-up, while
        // others may still be reading: the records are one allgather).
        std::vector<int> held(n);
        for (int q = 0; q < n; ++q) held[static_cast<std::size_t>(q)] = stores[static_cast<std::size_t>(q)].count();
        run_rank_threads(n, host_of, network, gather,
                         [&](int r, const std::vector<RankInfo>& given, topoar_test::FakeTransport& t, SetupIo& io) {
                const std::size_t me = static_cast<std::size_t>(r);
                std::vector<RankInfo> ranks = given;
                for (int q = 0; q < n; ++q) ranks[static_cast<std::size_t>(q)].contest_outcomes = held[static_cast<std::size_t>(q)];
                topoar_test::SumReducer<std::int32_t> sum;
                Engine e(r, n, cfg);
                e.use_outcome_store(&stores[me]);
                Status s = e.setup(ranks, &io);
                if (r == 0 && s) *agreed = e.selection().agreed_outcomes();
                if (s && keys) (*keys)[me] = contest_key(e.topology(), cfg, table_options(cfg));
                barrier_seen[me] = e.barrier_outcome();
                if (s && barrier_keep[me] != 0) e.keep_barrier_outcome(barrier_keep[me]);
                for (int k = 0; k < calls && s; ++k) {
                    const std::size_t count = sizes[static_cast<std::size_t>(k) % sizes.size()] / 4;
                    PreparedCall c;
                    s = e.prepare(count, 4, MemType::host, &c);
                    if (!s) break;
                    traces[me] += std::to_string(c.trial.cls) + ":" + std::to_string(c.trial.index) +
                                  (c.trial.decided ? "d " : " ");
                    std::vector<std::int32_t> buf(count), want(count, 0);
                    for (std::size_t i = 0; i < count; ++i) {
                        buf[i] = static_cast<std::int32_t>(r * 100 + static_cast<int>(i) + k);
                        for (int q = 0; q < n; ++q) want[i] += static_cast<std::int32_t>(q * 100 + static_cast<int>(i) + k);
                    }
                    if (is_hand_down(c.route)) {
                        buf = want;  // the previous module's (tested elsewhere)
                    } else {
                        s = e.run(c, buf.data(), t, sum);
                        if (buf != want) ++wrong[me];
                    }
                    if (s && c.trial.cls >= 0 && !c.trial.decided)
                        s = e.note_trial(c, is_hand_down(c.route) ? 1e-3 : 8e-3, io);
                    (void) e.take_notice();
                }
                st[me] = s;
            });
        for (int r = 0; r < n; ++r) {
            expect_ok(st[static_cast<std::size_t>(r)]);
            assert_int_equal(wrong[static_cast<std::size_t>(r)], 0);
            assert_string_equal(traces[static_cast<std::size_t>(r)].c_str(), traces[0].c_str());
        }
        return traces[0];
    };
    // The first communicator settles classes 3 and 6 on every rank.
    std::string agreed;
    std::vector<std::uint64_t> keys(n, 0);
    std::string trace = job({8, 64}, 40, &agreed, &keys);
    assert_true(agreed.empty());  // nothing held yet: no exchange
    assert_true(trace.rfind("3:0 6:0 ", 0) == 0);  // both contested from the first call
    for (int r = 0; r < n; ++r) {
        assert_true(keys[static_cast<std::size_t>(r)] == keys[0]);
        assert_int_equal(stores[static_cast<std::size_t>(r)].count(), 2);
    }
    const OutcomeStore::Codes codes = stores[0].get(keys[0]);
    assert_true(codes[3] != 0 && codes[6] != 0);
    std::vector<Contender> who;
    int w = -1;
    assert_true(decode_outcome(codes[6], &who, &w));
    assert_true(who[static_cast<std::size_t>(w)].hand_down);  // 1 ms against 8 ms
    // Histories differ: rank 1 lost class 3; rank 3 alone holds class 4.
    stores[1].clear();
    stores[1].put(keys[0], 6, codes[6]);
    stores[3].put(keys[0], 4, codes[6]);
    // A later communicator of the same shape: class 6 starts decided (all
    // hold it alike), classes 3 and 4 run their contests, the same turns
    // on every rank (job() checks the traces match and the sums are right).
    trace = job({64, 8, 16}, 36, &agreed, nullptr);
    assert_non_null(std::strstr(agreed.c_str(), "1 size class start decided"));
    assert_non_null(std::strstr(agreed.c_str(), "64-128 previous module"));
    assert_true(trace.rfind("6:1d 3:0 4:0 ", 0) == 0);  // decided from the first call; 3 and 4 contested
    // Every rank holds class 3 again (settled alike); 4 on every rank now.
    for (int r = 0; r < n; ++r) {
        const OutcomeStore::Codes c = stores[static_cast<std::size_t>(r)].get(keys[0]);
        assert_true(c[3] != 0 && c[3] == codes[3]);
        assert_true(c[4] != 0);
    }
    // A third: every class decided from its first call, no contest turn.
    trace = job({64, 8, 16}, 6, &agreed, nullptr);
    assert_non_null(std::strstr(agreed.c_str(), "3 size classes start decided"));
    assert_string_equal(trace.c_str(), "6:1d 3:1d 4:1d 6:1d 3:1d 4:1d ");
    for (int r = 0; r < n; ++r) assert_int_equal(barrier_seen[static_cast<std::size_t>(r)], 0);
    // The barrier's kind: kept by every rank but rank 2 (which was not in
    // that communicator), nobody starts with it; once rank 2 holds it too,
    // every rank does, the kind it was; the size classes as before.
    std::fill(barrier_keep.begin(), barrier_keep.end(), Selection::kBarrierTopoar);
    barrier_keep[2] = 0;
    (void) job({64}, 1, &agreed, nullptr);
    for (int r = 0; r < n; ++r) assert_int_equal(barrier_seen[static_cast<std::size_t>(r)], 0);
    assert_true(stores[2].get(keys[0])[Selection::kBarrierSlot] == 0);
    assert_true(stores[0].get(keys[0])[Selection::kBarrierSlot] == Selection::kBarrierTopoar);
    std::fill(barrier_keep.begin(), barrier_keep.end(), 0);
    barrier_keep[2] = Selection::kBarrierPrevious;  // held unlike the others: still none agreed
    (void) job({64}, 1, &agreed, nullptr);
    for (int r = 0; r < n; ++r) assert_int_equal(barrier_seen[static_cast<std::size_t>(r)], 0);
    barrier_keep[2] = Selection::kBarrierTopoar;
    (void) job({64}, 1, &agreed, nullptr);
    barrier_keep[2] = 0;
    trace = job({64, 8, 16}, 3, &agreed, nullptr);
    for (int r = 0; r < n; ++r) assert_int_equal(barrier_seen[static_cast<std::size_t>(r)], Selection::kBarrierTopoar);
    assert_non_null(std::strstr(agreed.c_str(), "3 size classes start decided"));
    assert_string_equal(trace.c_str(), "6:1d 3:1d 4:1d ");
    // Another shape (2 + 3 ranks on other hosts alike would share the key;
    // 4 + 1 does not): its own key, nothing agreed.
    const Topology other = topoar_test::hosts_topology({4, 1});
    assert_true(contest_key(other, cfg, table_options(cfg)) != keys[0]);
    // Where no contest runs (trial_calls 0; an algorithm forced) the
    // barrier's kind is kept all the same: kept on one communicator, every
    // later one of the shape starts with it (the glue times no barriers).
    for (int variant = 0; variant < 2; ++variant) {
        for (auto& store : stores) store.clear();
        cfg = EngineConfig{};
        cfg.probe = false;
        if (variant == 0) cfg.trial_calls = 0;
        else cfg.algorithm = Algorithm::tree;
        std::fill(barrier_keep.begin(), barrier_keep.end(), Selection::kBarrierPrevious);
        (void) job({64}, 2, &agreed, nullptr);
        for (int r = 0; r < n; ++r) assert_int_equal(barrier_seen[static_cast<std::size_t>(r)], 0);
        for (int r = 0; r < n; ++r) assert_int_equal(stores[static_cast<std::size_t>(r)].count(), 1);
        std::fill(barrier_keep.begin(), barrier_keep.end(), 0);
        (void) job({64}, 2, &agreed, nullptr);
        for (int r = 0; r < n; ++r)
            assert_int_equal(barrier_seen[static_cast<std::size_t>(r)], Selection::kBarrierPrevious);
        assert_true(agreed.empty());  // no size class: none is contested
    }
    clear_probe_cache();
}

// Nonblocking calls (CallKind::nonblocking) are never timed: interleaved
// with a contest's blocking calls of the same class they take no turn, are
// never handed to the previous module (not even once it won the class: its
// blocking allreduce is not what a nonblocking call would get), and the
// contest still ends as it would without them.
void test_nonblocking_calls_take_no_turn(void**) {
    clear_probe_cache();
    const int n = 5;
    const char* host_of[] = {"a", "a", "b", "b", "b"};
    topoar_test::FakeNetwork network(n);
    Gather gather(n);
    std::vector<std::string> notices(n);
    std::vector<Status> st(n);
    std::vector<int> wrong(n, 0), nb_handed(n, 0), nb_turns(n, 0), nb_runs(n, 0), late_handed(n, 0);
    run_rank_threads(n, host_of, network, gather,
                     [&](int r, const std::vector<RankInfo>& ranks, topoar_test::FakeTransport& t, SetupIo& io) {
            const std::size_t R = static_cast<std::size_t>(r);
            topoar_test::SumReducer<std::int32_t> sum;
            EngineConfig cfg;
            cfg.probe = false;
            cfg.trial_calls = 3;
            Engine e(r, n, cfg);
            Status s = e.setup(ranks, &io);
            for (int k = 0; k < 80 && s; ++k) {
                const bool nonblocking = k % 2 == 1;
                PreparedCall c;
                CallKind kind;
                kind.nonblocking = nonblocking;
                s = e.prepare(16, 4, MemType::host, &c, PairCaps{}, kind);
                if (!s) break;
                if (nonblocking) {
                    if (is_hand_down(c.route)) ++nb_handed[R];
                    if (c.trial.cls >= 0) ++nb_turns[R];
                }
                if (is_hand_down(c.route)) {
                    if (!nonblocking && k >= 70) ++late_handed[R];
                } else {
                    std::vector<std::int32_t> buf(16, r + 1);
                    s = e.run(c, buf.data(), t, sum);
                    for (std::int32_t v : buf)
                        if (v != n * (n + 1) / 2) ++wrong[R];
                    if (nonblocking) ++nb_runs[R];
                }
                if (s && c.trial.cls >= 0 && !c.trial.decided) {
                    s = e.note_trial(c, is_hand_down(c.route) ? 1e-3 : 8e-3, io);
                    notices[R] += e.take_notice();
                }
            }
            st[R] = s;
        });
    for (int r = 0; r < n; ++r) {
        const std::size_t i = static_cast<std::size_t>(r);
        expect_ok(st[i]);
        assert_int_equal(wrong[i], 0);
        assert_int_equal(nb_handed[i], 0);
        assert_int_equal(nb_turns[i], 0);
        assert_int_equal(nb_runs[i], 40);
        assert_int_equal(late_handed[i], 5);  // blocking calls 70, 72, ... 78: the winner's
        assert_non_null(std::strstr(notices[i].c_str(), "previous module from now on"));
    }
}

void test_probe_params(void**) {
    EngineConfig c;
    assert_true(c.probe);
    assert_true(near(c.probe_options.total_seconds, 0.3));
    expect_ok(set_param(&c, "probe_time", "40ms"));
    assert_true(near(c.probe_options.total_seconds, 0.04));
    Status s = set_param(&c, "probe_time", "0s");
    assert_false(static_cast<bool>(s));
    assert_non_null(std::strstr(s.message().c_str(), "coll_topoar_probe_time '0s'"));
    assert_false(static_cast<bool>(set_param(&c, "probe_time", "fast")));
    assert_false(static_cast<bool>(set_param(&c, "probe", "maybe")));
    assert_true(c.adapt && c.adapt_interval == 8 && c.adapt_max == 4 && near(c.adapt_threshold, 0.5));
    expect_ok(set_param(&c, "adapt_interval", "3"));
    expect_ok(set_param(&c, "adapt_threshold", "25%"));
    assert_true(c.adapt_interval == 3 && near(c.adapt_threshold, 0.25));
    assert_false(static_cast<bool>(set_param(&c, "adapt_interval", "0")));
    assert_false(static_cast<bool>(set_param(&c, "adapt_interval", "8x")));
    assert_false(static_cast<bool>(set_param(&c, "adapt_max", "-1")));
    assert_false(static_cast<bool>(set_param(&c, "adapt_threshold", "0")));
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule),
        cmocka_unit_test(test_two_hosts),
        cmocka_unit_test(test_racks),
        cmocka_unit_test(test_slow_host),
        cmocka_unit_test(test_link_classes),
        cmocka_unit_test(test_one_slow_pair),
        cmocka_unit_test(test_fan_in),
        cmocka_unit_test(test_fan_in_shares),
        cmocka_unit_test(test_racks_by_sharing),
        cmocka_unit_test(test_racks_noise),
        cmocka_unit_test(test_s2_measured),
        cmocka_unit_test(test_restrict_and_digest),
        cmocka_unit_test(test_bytes_round_trip),
        cmocka_unit_test(test_nic_prior),
        cmocka_unit_test(test_message_cost),
        cmocka_unit_test(test_stream_rate),
        cmocka_unit_test(test_model_link),
        cmocka_unit_test(test_discover_measured),
        cmocka_unit_test(test_run_probe),
        cmocka_unit_test(test_run_probe_failures),
        cmocka_unit_test(test_run_probe_fan_in),
        cmocka_unit_test(test_engine_setup_probes),
        cmocka_unit_test(test_online_adaptation),
        cmocka_unit_test(test_large_message_check),
        cmocka_unit_test(test_send_credit_after_retransmissions),
        cmocka_unit_test(test_large_message_check_previous),
        cmocka_unit_test(test_small_message_trials),
        cmocka_unit_test(test_small_message_trials_own_result),
        cmocka_unit_test(test_contest_outcomes_agreed),
        cmocka_unit_test(test_nonblocking_calls_take_no_turn),
        cmocka_unit_test(test_probe_params),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
