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

namespace topoar_test {

// The same semantic check for plans of any count (2^32 elements and more):
// a rank's buffer is a piecewise-constant map from element ranges to the
// set of contributions they hold, cut only where operations start or end,
// so the cost follows the number of operations, not of elements.  It
// checks what check_plan_semantics checks except final_reducers.
class RangeState {
public:
    explicit RangeState(std::size_t n, std::uint64_t mask) : n_(n) { pieces_.push_back({0, mask}); }
    struct Piece {
        std::size_t start;  // relative to the extracted range in messages
        std::uint64_t mask;
    };
    // The pieces covering [off, off + count), relative to off.
    std::vector<Piece> get(std::size_t off, std::size_t count) const {
        std::vector<Piece> out;
        std::size_t i = find(off);
        for (; i < pieces_.size() && pieces_[i].start < off + count; ++i)
            out.push_back({pieces_[i].start > off ? pieces_[i].start - off : 0, pieces_[i].mask});
        return out;
    }
    // Writes message pieces m (relative to off) over [off, off + count):
    // copy, or or-in with a check that no contribution is there already.
    // Returns the first element that would count one twice, or SIZE_MAX.
    std::size_t put(std::size_t off, std::size_t count, const std::vector<Piece>& m, bool copy) {
        split(off);
        split(off + count);
        for (std::size_t j = 0; j < m.size(); ++j) {
            split(off + m[j].start);
        }
        std::size_t i = find(off), j = 0;
        for (; i < pieces_.size() && pieces_[i].start < off + count; ++i) {
            const std::size_t rel = pieces_[i].start - off;
            while (j + 1 < m.size() && m[j + 1].start <= rel) ++j;
            if (copy) {
                pieces_[i].mask = m[j].mask;
            } else {
                if (pieces_[i].mask & m[j].mask) return pieces_[i].start;
                pieces_[i].mask |= m[j].mask;
            }
        }
        return SIZE_MAX;
    }
    // The first element whose set is not `all`, or SIZE_MAX.
    std::size_t first_not(std::uint64_t all) const {
        for (const Piece& p : pieces_)
            if (p.mask != all && p.start < n_) return p.start;
        return SIZE_MAX;
    }
    std::size_t pieces() const { return pieces_.size(); }

private:
    std::size_t find(std::size_t x) const {  // the piece containing x
        std::size_t lo = 0, hi = pieces_.size();
        while (hi - lo > 1) {
            const std::size_t mid = (lo + hi) / 2;
            if (pieces_[mid].start <= x) lo = mid; else hi = mid;
        }
        return lo;
    }
    void split(std::size_t x) {
        if (x >= n_) return;
        const std::size_t i = find(x);
        if (pieces_[i].start == x) return;
        pieces_.insert(pieces_.begin() + static_cast<long>(i) + 1, Piece{x, pieces_[i].mask});
    }
    std::size_t n_;
    std::vector<Piece> pieces_;  // absolute starts, ascending, first at 0
};

inline PlanCheck check_plan_ranges(const topoar::Plan& plan) {
    using topoar::OpKind;
    PlanCheck res;
    const int p = plan.nranks;
    auto failed = [&](const std::string& m) {
        res.ok = false;
        res.error = m;
        return res;
    };
    if (p > 64) return failed("range check supports at most 64 ranks");
    const std::uint64_t all = p == 64 ? ~0ull : ((1ull << p) - 1);
    std::vector<RangeState> state;
    for (int r = 0; r < p; ++r) state.emplace_back(plan.count, 1ull << r);
    struct Msg {
        std::size_t count;
        std::vector<RangeState::Piece> pieces;
    };
    auto U = [](int x) { return static_cast<std::size_t>(x); };
    std::vector<std::vector<std::vector<Msg>>> chan(U(p), std::vector<std::vector<Msg>>(U(p)));
    std::vector<std::vector<std::size_t>> consumed(U(p), std::vector<std::size_t>(U(p), 0));
    std::vector<std::size_t> next(U(p), 0);
    std::vector<bool> sent(U(p), false);
    for (bool progress = true; progress;) {
        progress = false;
        for (int r = 0; r < p; ++r) {
            const auto& sched = plan.ranks[U(r)];
            const std::size_t k = next[U(r)];
            if (k >= sched.rounds.size()) continue;
            const auto& ops = sched.rounds[k].ops;
            if (!sent[U(r)]) {
                for (const auto& op : ops)
                    if (op.kind == OpKind::send)
                        chan[U(r)][U(op.peer)].push_back(Msg{op.count, state[U(r)].get(op.offset, op.count)});
                sent[U(r)] = true;
                progress = true;
            }
            std::vector<std::size_t> need(U(p), 0);
            bool ready = true;
            for (const auto& op : ops)
                if (op.kind != OpKind::send &&
                    chan[U(op.peer)][U(r)].size() <= consumed[U(op.peer)][U(r)] + need[U(op.peer)]++)
                    ready = false;
            if (!ready) continue;
            std::vector<std::size_t> used(U(p), 0);
            for (const auto& op : ops) {
                if (op.kind == OpKind::send) continue;
                const Msg& m = chan[U(op.peer)][U(r)][consumed[U(op.peer)][U(r)] + used[U(op.peer)]++];
                std::ostringstream s;
                s << "rank " << r << " round " << k << ": ";
                if (m.count != op.count)
                    return failed(s.str() + "message from " + std::to_string(op.peer) + " has " +
                                  std::to_string(m.count) + " elements, receive expects " + std::to_string(op.count));
                const std::size_t twice = state[U(r)].put(op.offset, op.count, m.pieces, op.kind == OpKind::recv_copy);
                if (twice != SIZE_MAX)
                    return failed(s.str() + "element " + std::to_string(twice) + " would count a contribution twice");
            }
            for (int q = 0; q < p; ++q) consumed[U(q)][U(r)] += used[U(q)];
            ++next[U(r)];
            sent[U(r)] = false;
            progress = true;
        }
    }
    for (int r = 0; r < p; ++r) {
        if (next[U(r)] < plan.ranks[U(r)].rounds.size())
            return failed("deadlock: rank " + std::to_string(r) + " stuck in round " + std::to_string(next[U(r)]));
        const std::size_t miss = state[U(r)].first_not(all);
        if (miss != SIZE_MAX)
            return failed("rank " + std::to_string(r) + " element " + std::to_string(miss) + " misses contributions");
    }
    return res;
}

}  // namespace topoar_test
