// Unit tests of MPI_Barrier's steps across hosts
// (planners/planner_barrier.hpp), no MPI: every rank's steps run over a
// simulated network of FIFO channels (zero-byte sends never block, as
// with an eager PML), in random interleavings, two barriers back to back
// (a rank may run ahead into the second).  Each rank carries what it
// knows of the others' entries (per rank the latest barrier it entered);
// a message carries its sender's knowledge.  Checked: no deadlock, no
// rank leaves barrier e before every rank entered it, no message left
// over, and how many messages cross hosts (one each way per round
// between the first ranks).
#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "planners/planner_barrier.hpp"

// cmocka last: its macros (fail, ...) clash with the C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace topoar;

namespace {

// Hosts of the given sizes; ranks dealt to hosts by `order` (a
// permutation of the comm ranks: order[k] is the k-th rank placed), each
// host's members ascending as host_layout() has them.
HostLayout layout_of(const std::vector<int>& sizes, const std::vector<int>& order) {
    HostLayout l;
    const std::size_t p = order.size();
    l.host_of.assign(p, -1);
    l.local_of.assign(p, -1);
    std::size_t k = 0;
    for (int n : sizes) {
        std::vector<int> m(order.begin() + static_cast<long>(k), order.begin() + static_cast<long>(k) + n);
        std::sort(m.begin(), m.end());
        const int h = static_cast<int>(l.members.size());
        for (std::size_t j = 0; j < m.size(); ++j) {
            l.host_of[static_cast<std::size_t>(m[j])] = h;
            l.local_of[static_cast<std::size_t>(m[j])] = static_cast<int>(j);
        }
        l.shards = std::max(l.shards, n);
        l.members.push_back(std::move(m));
        k += static_cast<std::size_t>(n);
    }
    return l;
}

struct Outcome {
    bool deadlock = false;
    bool early_exit = false;  // a rank left a barrier before every rank entered it
    bool leftover = false;    // a message never received
    int cross_host = 0;       // messages between hosts, both barriers
    std::string what;
};

// Every rank's steps from plan_barrier.
std::vector<std::vector<BarrierStep>> plan_all(const HostLayout& l) {
    const int p = static_cast<int>(l.host_of.size());
    std::vector<std::vector<BarrierStep>> steps(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) {
        const Status s = plan_barrier(l, r, &steps[static_cast<std::size_t>(r)]);
        assert_true(s.is_ok());
        assert_true(static_cast<int>(steps[static_cast<std::size_t>(r)].size()) <= kBarrierMaxSteps);
    }
    return steps;
}

// Runs `barriers` barriers of `steps` (per rank) back to back on every
// rank of l, choosing the next rank to move at random (seed).
Outcome simulate(const HostLayout& l, const std::vector<std::vector<BarrierStep>>& steps, int barriers,
                 unsigned seed) {
    const int p = static_cast<int>(l.host_of.size());
    using Knowledge = std::vector<int>;  // per rank: the latest barrier known entered (-1 none)
    std::map<std::pair<int, int>, std::deque<Knowledge>> chan;  // (from, to)
    std::vector<Knowledge> know(static_cast<std::size_t>(p), Knowledge(static_cast<std::size_t>(p), -1));
    std::vector<int> epoch(static_cast<std::size_t>(p), 0), cursor(static_cast<std::size_t>(p), 0);
    std::vector<bool> sent_half(static_cast<std::size_t>(p), false);  // an exchange's send went out
    Outcome out;
    std::mt19937 rng(seed);
    auto merge = [](Knowledge* a, const Knowledge& b) {
        for (std::size_t q = 0; q < a->size(); ++q) (*a)[q] = std::max((*a)[q], b[q]);
    };
    auto send = [&](int from, int to) {
        chan[{from, to}].push_back(know[static_cast<std::size_t>(from)]);
        if (l.host_of[static_cast<std::size_t>(from)] != l.host_of[static_cast<std::size_t>(to)]) ++out.cross_host;
    };
    auto take = [&](int from, int to) {
        auto it = chan.find({from, to});
        if (it == chan.end() || it->second.empty()) return false;
        merge(&know[static_cast<std::size_t>(to)], it->second.front());
        it->second.pop_front();
        return true;
    };
    // One move of rank r; false when it is waiting (or done).
    auto move = [&](int r) {
        const std::size_t u = static_cast<std::size_t>(r);
        if (epoch[u] >= barriers) return false;
        const auto& mine = steps[u];
        if (cursor[u] == 0 && know[u][u] < epoch[u]) know[u][u] = epoch[u];  // enters barrier epoch[u]
        if (cursor[u] < static_cast<int>(mine.size())) {
            const BarrierStep& s = mine[static_cast<std::size_t>(cursor[u])];
            switch (s.kind) {
            case BarrierStep::send: send(r, s.to); break;
            case BarrierStep::recv:
                if (!take(s.from, r)) return false;
                break;
            case BarrierStep::exchange:
                if (!sent_half[u]) {
                    send(r, s.to);
                    sent_half[u] = true;
                    if (!take(s.from, r)) return true;  // the send went out: a move
                } else if (!take(s.from, r)) {
                    return false;
                }
                sent_half[u] = false;
                break;
            }
            ++cursor[u];
            return true;
        }
        // Leaves barrier epoch[u].
        for (int q = 0; q < p; ++q)
            if (know[u][static_cast<std::size_t>(q)] < epoch[u]) {
                out.early_exit = true;
                out.what = "rank " + std::to_string(r) + " left barrier " + std::to_string(epoch[u]) +
                           " not knowing rank " + std::to_string(q) + " entered it";
            }
        ++epoch[u];
        cursor[u] = 0;
        return true;
    };
    std::vector<int> order(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) order[static_cast<std::size_t>(r)] = r;
    for (;;) {
        std::shuffle(order.begin(), order.end(), rng);
        bool moved = false;
        for (int r : order)
            if (move(r)) {
                moved = true;
                break;
            }
        if (!moved) break;
    }
    for (int r = 0; r < p; ++r)
        if (epoch[static_cast<std::size_t>(r)] < barriers) {
            out.deadlock = true;
            out.what = "rank " + std::to_string(r) + " stuck at step " + std::to_string(cursor[static_cast<std::size_t>(r)]) +
                       " of barrier " + std::to_string(epoch[static_cast<std::size_t>(r)]);
        }
    for (const auto& c : chan)
        if (!c.second.empty()) out.leftover = true;
    return out;
}

int ceil_log2(int n) {
    int k = 0;
    while ((1 << k) < n) ++k;
    return k;
}

// Every host count 1-9, hosts of 1-5 ranks (sizes drawn), ranks dealt in
// order and shuffled, several interleavings each.
void test_barrier_steps_hold(void**) {
    std::mt19937 rng(24);
    int checked = 0;
    for (int hosts = 1; hosts <= 9; ++hosts)
        for (int variant = 0; variant < 6; ++variant) {
            std::vector<int> sizes(static_cast<std::size_t>(hosts));
            int p = 0;
            for (int& n : sizes) {
                n = variant == 0 ? 1 : 1 + static_cast<int>(rng() % 5);
                p += n;
            }
            std::vector<int> order(static_cast<std::size_t>(p));
            for (int r = 0; r < p; ++r) order[static_cast<std::size_t>(r)] = r;
            if (variant % 2 == 1) std::shuffle(order.begin(), order.end(), rng);
            const HostLayout l = layout_of(sizes, order);
            for (unsigned seed = 0; seed < 8; ++seed) {
                const Outcome o = simulate(l, plan_all(l), 2, 1000u * static_cast<unsigned>(hosts) + 10u * variant + seed);
                if (o.deadlock || o.early_exit || o.leftover)
                    fail_msg("%d hosts, variant %d, seed %u: %s%s", hosts, variant, seed, o.what.c_str(),
                             o.leftover ? " (a message left over)" : "");
                // Between hosts: the first ranks only, one message each way per round.
                assert_int_equal(o.cross_host, 2 * hosts * ceil_log2(hosts));
                ++checked;
            }
        }
    assert_int_equal(checked, 9 * 6 * 8);
}

// The steps themselves on 2+3 ranks (ranks 0 1 | 2 3 4): the first ranks
// 0 and 2 exchange once; 2 hears from 3 and 4 (binomial: 2 <- 3, 2 <- 4)
// and releases 4 then 3.
void test_barrier_steps_shape(void**) {
    const HostLayout l = layout_of({2, 3}, {0, 1, 2, 3, 4});
    std::vector<BarrierStep> s;
    assert_true(plan_barrier(l, 2, &s).is_ok());
    assert_int_equal(s.size(), 5);
    assert_int_equal(s[0].kind, BarrierStep::recv);
    assert_int_equal(s[0].from, 3);
    assert_int_equal(s[1].kind, BarrierStep::recv);
    assert_int_equal(s[1].from, 4);
    assert_int_equal(s[2].kind, BarrierStep::exchange);
    assert_int_equal(s[2].to, 0);
    assert_int_equal(s[2].from, 0);
    assert_int_equal(s[3].kind, BarrierStep::send);
    assert_int_equal(s[3].to, 4);
    assert_int_equal(s[4].kind, BarrierStep::send);
    assert_int_equal(s[4].to, 3);
    assert_true(plan_barrier(l, 4, &s).is_ok());  // local 2: to 2, from 2
    assert_int_equal(s.size(), 2);
    assert_int_equal(s[0].kind, BarrierStep::send);
    assert_int_equal(s[0].to, 2);
    assert_int_equal(s[1].kind, BarrierStep::recv);
    assert_int_equal(s[1].from, 2);
    // Three hosts: dissemination (to h + 1, from h - 1; then h + 2, h - 2).
    const HostLayout t = layout_of({1, 1, 1}, {0, 1, 2});
    assert_true(plan_barrier(t, 0, &s).is_ok());
    assert_int_equal(s.size(), 2);
    assert_int_equal(s[0].to, 1);
    assert_int_equal(s[0].from, 2);
    assert_int_equal(s[1].to, 2);
    assert_int_equal(s[1].from, 1);
    // Not in the layout.
    assert_int_equal(plan_barrier(l, 5, &s).code(), Code::invalid_argument);
    assert_int_equal(plan_barrier(l, -1, &s).code(), Code::invalid_argument);
}

// The simulation can fail: with the first ranks' exchange left out, each
// host's barrier is its own, and some interleaving lets a rank leave
// before the other host's ranks entered; with it dropped on one side
// only, a first rank waits for ever.
void test_simulation_catches_broken_steps(void**) {
    const HostLayout l = layout_of({2, 3}, {0, 1, 2, 3, 4});
    auto skipped = plan_all(l);
    for (int leader : {0, 2}) {
        auto& s = skipped[static_cast<std::size_t>(leader)];
        s.erase(std::remove_if(s.begin(), s.end(), [](const BarrierStep& x) { return x.kind == BarrierStep::exchange; }),
                s.end());
    }
    int early = 0;
    for (unsigned seed = 0; seed < 8; ++seed) {
        const Outcome o = simulate(l, skipped, 2, seed);
        assert_false(o.deadlock);
        early += o.early_exit;
    }
    assert_true(early > 0);
    auto one_sided = plan_all(l);
    auto& s0 = one_sided[0];
    s0.erase(std::remove_if(s0.begin(), s0.end(), [](const BarrierStep& x) { return x.kind == BarrierStep::exchange; }),
             s0.end());
    assert_true(simulate(l, one_sided, 2, 1).deadlock || simulate(l, one_sided, 2, 1).leftover);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_barrier_steps_hold),
        cmocka_unit_test(test_barrier_steps_shape),
        cmocka_unit_test(test_simulation_catches_broken_steps),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
