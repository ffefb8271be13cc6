// Symbolic execution of a full Plan, for tests of every planner.
//
// Each element of each rank's buffer is tracked as the set of ranks whose
// input it contains (a bitmask, so up to 64 ranks).  Running the rounds with
// the executor's semantics (sends read the state at the start of the round)
// checks that no contribution is ever added twice, and at the end that every
// rank holds every contribution for every element.  It also counts, per
// element, how many ranks computed the final value by reduction rather than
// receiving a copy: 1 means "reduced once by its owner, then broadcast".
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace topoar_test {

struct PlanCheck {
    bool ok = true;
    std::string error;
    std::vector<int> final_reducers;  // per element: ranks that reduced it to complete
};

inline PlanCheck check_plan_semantics(const topoar::Plan& plan) {
    using topoar::OpKind;
    PlanCheck res;
    const int p = plan.nranks;
    const std::size_t n = plan.count;
    if (p > 64) {
        res.ok = false;
        res.error = "symbolic check supports at most 64 ranks";
        return res;
    }
    const std::uint64_t all = p == 64 ? ~0ull : ((1ull << p) - 1);
    std::vector<std::vector<std::uint64_t>> state(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) state[static_cast<std::size_t>(r)].assign(n, 1ull << r);
    res.final_reducers.assign(n, 0);

    // Execute globally in lock-step: a rank's k-th non-empty round is not
    // globally aligned, so walk "waves": repeatedly run, for each rank, its
    // next round once every message it waits for has been sent.
    struct Msg { std::vector<std::uint64_t> data; };
    std::vector<std::vector<std::vector<Msg>>> chan(static_cast<std::size_t>(p),
                                                    std::vector<std::vector<Msg>>(static_cast<std::size_t>(p)));
    std::vector<std::vector<std::size_t>> consumed(static_cast<std::size_t>(p),
                                                   std::vector<std::size_t>(static_cast<std::size_t>(p), 0));
    std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
    std::vector<bool> sent_this_round(static_cast<std::size_t>(p), false);
    auto failed = [&](const std::string& m) {
        res.ok = false;
        res.error = m;
        return res;
    };
    bool progress = true;
    while (progress) {
        progress = false;
        for (int r = 0; r < p; ++r) {
            auto& sched = plan.ranks[static_cast<std::size_t>(r)];
            std::size_t k = next[static_cast<std::size_t>(r)];
            if (k >= sched.rounds.size()) continue;
            const auto& ops = sched.rounds[k].ops;
            auto& st = state[static_cast<std::size_t>(r)];
            // Sends of this round go out once (the rank posts them at start).
            if (!sent_this_round[static_cast<std::size_t>(r)]) {
                for (const auto& op : ops)
                    if (op.kind == OpKind::send)
                        chan[static_cast<std::size_t>(r)][static_cast<std::size_t>(op.peer)].push_back(
                            Msg{std::vector<std::uint64_t>(st.begin() + static_cast<long>(op.offset),
                                                           st.begin() + static_cast<long>(op.offset + op.count))});
                sent_this_round[static_cast<std::size_t>(r)] = true;
                progress = true;
            }
            // Can every receive be matched?
            std::vector<std::size_t> need(static_cast<std::size_t>(p), 0);
            bool ready = true;
            for (const auto& op : ops)
                if (op.kind != OpKind::send) {
                    std::size_t idx = consumed[static_cast<std::size_t>(op.peer)][static_cast<std::size_t>(r)] +
                                      need[static_cast<std::size_t>(op.peer)]++;
                    if (chan[static_cast<std::size_t>(op.peer)][static_cast<std::size_t>(r)].size() <= idx) ready = false;
                }
            if (!ready) continue;
            std::vector<std::size_t> used(static_cast<std::size_t>(p), 0);
            for (const auto& op : ops) {
                if (op.kind == OpKind::send) continue;
                std::size_t idx = consumed[static_cast<std::size_t>(op.peer)][static_cast<std::size_t>(r)] +
                                  used[static_cast<std::size_t>(op.peer)]++;
                const auto& m = chan[static_cast<std::size_t>(op.peer)][static_cast<std::size_t>(r)][idx].data;
                if (m.size() != op.count) {
                    std::ostringstream s;
                    s << "rank " << r << " round " << k << ": message from " << op.peer << " has " << m.size()
                      << " elements, receive expects " << op.count;
                    return failed(s.str());
                }
                for (std::size_t i = 0; i < op.count; ++i) {
                    std::uint64_t& cur = st[op.offset + i];
                    if (op.kind == OpKind::recv_copy) {
                        cur = m[i];
                    } else {
                        if (cur & m[i]) {
                            std::ostringstream s;
                            s << "rank " << r << " round " << k << ": element " << op.offset + i
                              << " would count a contribution twice (from " << op.peer << ")";
                            return failed(s.str());
                        }
                        cur |= m[i];
                        if (cur == all) res.final_reducers[op.offset + i]++;
                    }
                }
            }
            for (int q = 0; q < p; ++q) consumed[static_cast<std::size_t>(q)][static_cast<std::size_t>(r)] += used[static_cast<std::size_t>(q)];
            next[static_cast<std::size_t>(r)]++;
            sent_this_round[static_cast<std::size_t>(r)] = false;
            progress = true;
        }
    }
    for (int r = 0; r < p; ++r) {
        if (next[static_cast<std::size_t>(r)] < plan.ranks[static_cast<std::size_t>(r)].rounds.size()) {
            std::ostringstream s;
            s << "deadlock: rank " << r << " stuck in round " << next[static_cast<std::size_t>(r)];
            return failed(s.str());
        }
        for (std::size_t i = 0; i < n; ++i)
            if (state[static_cast<std::size_t>(r)][i] != all) {
                std::ostringstream s;
                s << "rank " << r << " element " << i << " misses contributions";
                return failed(s.str());
            }
    }
    return res;
}

}  // namespace topoar_test
