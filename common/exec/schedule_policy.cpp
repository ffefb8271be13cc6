// The scheduling policy shared by the executor and the cost model
// (schedule_policy.hpp): compile_schedule states the dependencies, the
// SchedulePolicy applies the window, per-peer order and apply rules.
#include "exec/schedule_policy.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

namespace topoar {

namespace {

bool is_recv(OpKind k) { return k != OpKind::send; }

constexpr std::uint32_t kNone = UINT32_MAX;

}  // namespace

std::size_t step_elems(std::size_t segment_elems, std::size_t elem_size) {
    const std::size_t seg = segment_elems ? segment_elems : SIZE_MAX;
    return std::min(seg, std::max<std::size_t>(1, kMaxMessageBytes / std::max<std::size_t>(1, elem_size)));
}

std::size_t scaled_unit(std::size_t unit, std::size_t call_bytes, std::size_t chunk_bytes) {
    if (unit == 0) return 0;
    const std::size_t cap = std::min(kMaxScaledUnit, chunk_bytes / kUnitsPerChunk);
    return std::max(unit, std::min(call_bytes / kUnitsPerCall, cap));
}

std::size_t link_unit(std::size_t unit, double rate, double unit_time) {
    if (unit == 0 || !(rate > 0) || !(unit_time > 0)) return unit;
    const double bytes = rate * unit_time;
    if (bytes < 1.5) return unit;
    const long e = std::lround(std::log2(std::min(bytes, 2.0 * static_cast<double>(kMaxLinkUnit))));
    const std::size_t grown = std::min(std::size_t(1) << e, kMaxLinkUnit);
    return grown >= kMinLinkGrowth * unit ? grown : unit;
}

bool few_units(std::size_t flight_bytes, std::size_t round_peer_bytes, std::size_t largest_message) {
    return flight_bytes > 0 && round_peer_bytes > flight_bytes && largest_message > 0 &&
           largest_message <= flight_bytes && round_peer_bytes <= kPipelinedRound * flight_bytes;
}

int flight_window(std::size_t flight_bytes, std::size_t round_peer_bytes, std::size_t largest_message) {
    if (flight_bytes == 0 || round_peer_bytes == 0) return kWindowRounds;
    if (round_peer_bytes > flight_bytes) {
        // A few units side by side: two rounds open.
        if (few_units(flight_bytes, round_peer_bytes, largest_message)) return kPipelinedWindow;
        // A whole operation per round (the latency algorithm at large
        // sizes) is not a pipelining unit; fewer rounds open would only
        // stop its segments flowing on into the next round, so the window
        // stays.
        return kWindowRounds;
    }
    const std::size_t w = flight_bytes / round_peer_bytes;
    return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(w, kWindowRounds)));
}

std::size_t max_round_peer_bytes(const RankSchedule& schedule, std::size_t elem_size,
                                 const std::function<bool(int peer)>& counts) {
    std::size_t most = 0;
    std::vector<std::pair<int, std::size_t>> per_peer;
    for (const Round& round : schedule.rounds) {
        per_peer.clear();
        for (const Op& op : round.ops) {
            if (is_recv(op.kind) || (counts && !counts(op.peer))) continue;
            auto it = std::find_if(per_peer.begin(), per_peer.end(),
                                   [&](const std::pair<int, std::size_t>& e) { return e.first == op.peer; });
            if (it == per_peer.end()) per_peer.emplace_back(op.peer, op.count * elem_size);
            else it->second += op.count * elem_size;
        }
        for (const auto& e : per_peer) most = std::max(most, e.second);
    }
    return most;
}

std::size_t max_message_bytes(const RankSchedule& schedule, std::size_t elem_size,
                              const std::function<bool(int peer)>& counts) {
    std::size_t most = 0;
    for (const Round& round : schedule.rounds)
        for (const Op& op : round.ops)
            if (!is_recv(op.kind) && (!counts || counts(op.peer))) most = std::max(most, op.count * elem_size);
    return most;
}

std::size_t segment_elems_of(std::size_t segment_bytes, std::size_t elem_size) {
    std::size_t seg = elem_size ? segment_bytes / elem_size : 0;
    if (segment_bytes && seg == 0) seg = 1;
    return seg;
}

const char* to_string(ScheduleEvent::Kind k) {
    switch (k) {
    case ScheduleEvent::post_recv: return "post_recv";
    case ScheduleEvent::post_send: return "post_send";
    case ScheduleEvent::apply: return "apply";
    case ScheduleEvent::arrived: return "arrived";
    case ScheduleEvent::send_done: return "send_done";
    case ScheduleEvent::applied: return "applied";
    }
    return "?";
}

ExecProgram compile_schedule(const RankSchedule& schedule, std::size_t segment_elems, std::size_t elem_size,
                             std::size_t flight_bytes, const std::vector<char>* remote) {
    ExecProgram prog;
    const std::size_t seg = step_elems(segment_elems, elem_size);

    // The window: the most this rank sends to one peer in one round.
    prog.window = flight_window(flight_bytes, flight_bytes ? max_round_peer_bytes(schedule, elem_size) : 0,
                                flight_bytes ? max_message_bytes(schedule, elem_size) : 0);
    // Across hosts under a flight bound, sends to a peer on another host are
    // synchronous and at most send_credit of them are posted at once.
    // Only a peer this rank sends at least kCreditFlights x the bound in the
    // call (`credited`): a few segments cannot fill a queue, and under a
    // credit each waits for the answers of the ones before it.
    std::vector<char> credited;
    if (flight_bytes && remote) {
        const std::size_t step_bytes = seg * elem_size;
        prog.send_credit = static_cast<int>(std::max<std::size_t>(
            kMinSendCredit, step_bytes ? std::min<std::size_t>(flight_bytes / step_bytes, kMaxSendCredit) : kMinSendCredit));
        std::vector<std::size_t> to_peer(remote->size(), 0);
        for (const Round& round : schedule.rounds)
            for (const Op& op : round.ops)
                if (op.kind == OpKind::send && op.peer >= 0 && static_cast<std::size_t>(op.peer) < to_peer.size())
                    to_peer[static_cast<std::size_t>(op.peer)] += op.count * elem_size;
        credited.assign(remote->size(), 0);
        for (std::size_t q = 0; q < to_peer.size(); ++q)
            credited[q] = (*remote)[q] && to_peer[q] >= kCreditFlights * flight_bytes;
    }

    // Steps, and the largest amount any one round receives.
    std::size_t max_round_recv = 0;
    const int nrounds = static_cast<int>(schedule.rounds.size());
    std::vector<std::size_t> round_recv(static_cast<std::size_t>(nrounds), 0);
    for (int r = 0; r < nrounds; ++r) {
        prog.round_begin.push_back(prog.steps.size());
        for (const Op& op : schedule.rounds[static_cast<std::size_t>(r)].ops)
            for (std::size_t done = 0; done < op.count; done += seg) {
                ExecProgram::Step s;
                s.kind = op.kind;
                s.order = op.order;
                s.peer = op.peer;
                s.round = r;
                s.offset = op.offset + done;
                s.count = std::min(seg, op.count - done);
                s.sync = op.kind == OpKind::send && op.peer >= 0 && static_cast<std::size_t>(op.peer) < credited.size() &&
                         credited[static_cast<std::size_t>(op.peer)];
                if (is_recv(s.kind)) {
                    s.slot = round_recv[static_cast<std::size_t>(r)];
                    round_recv[static_cast<std::size_t>(r)] += s.count;
                }
                prog.steps.push_back(std::move(s));
            }
        max_round_recv = std::max(max_round_recv, round_recv[static_cast<std::size_t>(r)]);
    }
    prog.round_begin.push_back(prog.steps.size());

    // Channels: the distinct peers, in ascending order.
    std::vector<int> peers;
    for (const auto& s : prog.steps) peers.push_back(s.peer);
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    prog.num_chans = 2 * peers.size();
    for (auto& s : prog.steps)
        s.chan = 2 * static_cast<std::uint32_t>(std::lower_bound(peers.begin(), peers.end(), s.peer) - peers.begin()) +
                 (is_recv(s.kind) ? 0 : 1);

    // Scratch: one band per round of the window; round r uses band r % W.
    const std::size_t bands = static_cast<std::size_t>(std::min(nrounds, prog.window));
    prog.scratch_elems = bands * max_round_recv;
    for (auto& s : prog.steps)
        if (is_recv(s.kind)) s.slot += static_cast<std::size_t>(s.round % prog.window) * max_round_recv;

    // Dependencies (step indices, ascending).
    //   send in round r: every receive of an earlier round into its range
    //     must be applied (it carries final data of that round);
    //   receive applied in round r: earlier writes to its range applied
    //     first (fixed operand order), and sends of rounds <= r reading the
    //     range completed (they carry the value from before).
    // The element range is cut into atoms at every step boundary; each atom
    // lists the receives and the sends that touch it, newest first, so a step
    // finds the earlier steps overlapping it by walking its atoms instead of
    // every earlier step (compiling a 2,048-rank plan for the cost model
    // went from minutes to seconds; the result is the same).
    const std::size_t n = prog.steps.size();
    prog.direct.assign(n, 0);
    std::vector<std::size_t> cuts;
    cuts.reserve(2 * n);
    for (const auto& s : prog.steps) {
        cuts.push_back(s.offset);
        cuts.push_back(s.offset + s.count);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    auto atom = [&cuts](std::size_t x) {
        return static_cast<std::size_t>(std::lower_bound(cuts.begin(), cuts.end(), x) - cuts.begin());
    };
    constexpr std::uint32_t kEnd = UINT32_MAX;
    struct Link {
        std::uint32_t step, next;
    };
    std::vector<Link> pool;
    std::vector<std::uint32_t> recvs(cuts.size(), kEnd), sends(cuts.size(), kEnd);  // list heads per atom
    std::vector<std::uint32_t> seen(n, kEnd);
    auto add = [&pool](std::vector<std::uint32_t>& head, std::size_t a, std::size_t i) {
        pool.push_back(Link{static_cast<std::uint32_t>(i), head[a]});
        head[a] = static_cast<std::uint32_t>(pool.size() - 1);
    };
    for (std::size_t r = 0; r + 1 < prog.round_begin.size(); ++r) {
        const std::size_t lo = prog.round_begin[r], hi = prog.round_begin[r + 1];
        // The round's sends first: its receives wait for those listed after them too.
        for (std::size_t i = lo; i < hi; ++i) {
            const auto& s = prog.steps[i];
            if (is_recv(s.kind)) continue;
            for (std::size_t a = atom(s.offset), e = atom(s.offset + s.count); a < e; ++a) add(sends, a, i);
        }
        for (std::size_t i = lo; i < hi; ++i) {
            auto& s = prog.steps[i];
            auto take = [&](std::uint32_t j) {
                if (seen[j] == i) return;
                seen[j] = static_cast<std::uint32_t>(i);
                s.deps.push_back(j);
            };
            const std::size_t a0 = atom(s.offset), a1 = atom(s.offset + s.count);
            for (std::size_t a = a0; a < a1; ++a) {
                std::uint32_t k = recvs[a];
                if (!is_recv(s.kind))  // receives of this round are newer than lo: skipped
                    while (k != kEnd && pool[k].step >= lo) k = pool[k].next;
                for (; k != kEnd; k = pool[k].next) take(pool[k].step);
                if (is_recv(s.kind))
                    for (k = sends[a]; k != kEnd; k = pool[k].next) take(pool[k].step);
            }
            std::sort(s.deps.begin(), s.deps.end());
            if (is_recv(s.kind))
                for (std::size_t a = a0; a < a1; ++a) add(recvs, a, i);
            // A copy nothing else touches first may land in place.
            prog.direct[i] = s.kind == OpKind::recv_copy && s.deps.empty();
        }
    }
    return prog;
}

// ------------------------------------------------------------------ policy

void SchedulePolicy::clear() {
    steps_.clear();
    dep_off_.assign(1, 0);
    dependents_.clear();
    round_start_.clear();
    round_left_.clear();
    chan_out_.clear();
    chan_credit_.clear();
    ranks_.clear();
    work_.clear();
    driver_ = nullptr;
    draining_ = false;
}

// The rank's steps, its round bounds, and for every step who waits for it
// (the reverse of ExecProgram::Step::deps, as CSR after the earlier ranks')
// and the next send to the same peer (sends to a peer go in schedule order).
Status SchedulePolicy::add_rank(const ExecProgram& prog, bool credit) {
    const std::size_t n = prog.steps.size();
    if (steps_.size() + n >= static_cast<std::size_t>(INT32_MAX))
        return Status::invalid("schedule: " + std::to_string(steps_.size() + n) + " steps are too many");
    const std::uint32_t base = static_cast<std::uint32_t>(steps_.size());
    const int r = static_cast<int>(ranks_.size());
    Rank rk;
    rk.round_base = static_cast<std::uint32_t>(round_start_.size());
    rk.left_base = static_cast<std::uint32_t>(round_left_.size());
    rk.nrounds = static_cast<int>(prog.round_begin.size()) - 1;
    rk.window = prog.window;
    for (int k = 0; k <= rk.nrounds; ++k) {
        round_start_.push_back(base + static_cast<std::uint32_t>(prog.round_begin[static_cast<std::size_t>(k)]));
        if (k < rk.nrounds)
            round_left_.push_back(static_cast<std::uint32_t>(prog.round_begin[static_cast<std::size_t>(k) + 1] -
                                                             prog.round_begin[static_cast<std::size_t>(k)]));
    }
    ranks_.push_back(rk);

    int max_peer = -1;
    for (const auto& st : prog.steps) max_peer = std::max(max_peer, st.peer);
    last_send_.assign(static_cast<std::size_t>(max_peer + 1), kNone);
    peer_chan_.assign(static_cast<std::size_t>(max_peer + 1), kNone);
    cnt_.assign(n + 1, 0);
    std::uint64_t all = dep_off_.back();
    for (std::size_t i = 0; i < n; ++i) {
        const ExecProgram::Step& st = prog.steps[i];
        Step d;
        d.next_send = kNone;
        d.round = st.round;
        d.rank = r;
        d.kind = st.kind;
        d.deps_left = static_cast<std::uint32_t>(st.deps.size());
        const std::uint32_t g = base + static_cast<std::uint32_t>(i);
        if (st.kind == OpKind::send) {
            std::uint32_t& chan = peer_chan_[static_cast<std::size_t>(st.peer)];
            if (chan == kNone) {
                chan = static_cast<std::uint32_t>(chan_out_.size());
                chan_out_.push_back(0);
                chan_credit_.push_back(credit && st.sync ? static_cast<std::uint32_t>(prog.send_credit) : 0);
            }
            d.chan = chan;
            std::uint32_t& last = last_send_[static_cast<std::size_t>(st.peer)];
            if (last == kNone)
                d.in_order = true;
            else
                steps_[last].next_send = g;
            last = g;
        }
        for (std::uint32_t j : st.deps) ++cnt_[j];
        all += st.deps.size();
        steps_.push_back(d);
    }
    if (all >= UINT32_MAX) return Status::invalid("schedule: too many step dependencies");
    std::uint32_t run = dep_off_.back();
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t c = cnt_[i];
        cnt_[i] = run;
        run += c;
        dep_off_.push_back(run);
    }
    dependents_.resize(run);
    for (std::size_t i = 0; i < n; ++i)
        for (std::uint32_t j : prog.steps[i].deps) dependents_[cnt_[j]++] = base + static_cast<std::uint32_t>(i);
    return Status::ok();
}

std::uint32_t SchedulePolicy::window_begin(int rank) const {
    const Rank& rk = ranks_[static_cast<std::size_t>(rank)];
    return round_start_[rk.round_base + static_cast<std::uint32_t>(rk.cur)];
}

std::uint32_t SchedulePolicy::window_end(int rank) const {
    const Rank& rk = ranks_[static_cast<std::size_t>(rank)];
    return round_start_[rk.round_base + static_cast<std::uint32_t>(std::min(rk.nrounds, rk.cur + rk.window))];
}

void SchedulePolicy::start(ScheduleDriver* driver) {
    driver_ = driver;
    for (int r = 0; r < num_ranks(); ++r) {
        Rank& rk = ranks_[static_cast<std::size_t>(r)];
        if (rk.nrounds == 0) {
            rk.done = true;
            driver_->rank_finished(r);
            continue;
        }
        for (int k = 0; k < std::min(rk.nrounds, rk.window); ++k) enter_round(r, k);
    }
    drain();
}

// Round k of rank r enters the window: its receives are posted, its ready
// sends too.
void SchedulePolicy::enter_round(int r, int k) {
    const Rank& rk = ranks_[static_cast<std::size_t>(r)];
    const std::uint32_t lo = round_start_[rk.round_base + static_cast<std::uint32_t>(k)];
    const std::uint32_t hi = round_start_[rk.round_base + static_cast<std::uint32_t>(k) + 1];
    for (std::uint32_t g = lo; g < hi; ++g) {
        if (steps_[g].kind != OpKind::send)
            post_recv(g);
        else if (sendable(g))
            post_send(g);
    }
}

// Posts send g and, behind it, the sends to the same peer it held back.
void SchedulePolicy::post_send(std::uint32_t g) {
    while (true) {
        Step& s = steps_[g];
        s.state = State::posted;
        ++chan_out_[s.chan];
        note(ScheduleEvent::post_send, g);
        driver_->post_send(g);
        const std::uint32_t next = steps_[g].next_send;
        if (next == kNone) return;
        steps_[next].in_order = true;
        if (!sendable(next)) return;
        g = next;
    }
}

void SchedulePolicy::post_recv(std::uint32_t g) {
    steps_[g].state = State::posted;
    note(ScheduleEvent::post_recv, g);
    if (!driver_->post_recv(g)) return;
    steps_[g].state = State::arrived;  // its message was there already
    note(ScheduleEvent::arrived, g);
    try_apply(g);
}

// A received step is applied once its dependencies are finished.
void SchedulePolicy::try_apply(std::uint32_t g) {
    Step& s = steps_[g];
    if (s.state != State::arrived || s.deps_left != 0) return;
    s.state = State::applying;
    note(ScheduleEvent::apply, g);
    if (driver_->apply(g)) work_.push_back(g);
}

void SchedulePolicy::send_done(std::uint32_t g) {
    note(ScheduleEvent::send_done, g);
    --chan_out_[steps_[g].chan];
    // A credit freed: the first send to the same peer not posted yet may go
    // (the ones between are posted: sends to a peer go in order).
    if (chan_credit_[steps_[g].chan]) {
        std::uint32_t h = steps_[g].next_send;
        while (h != kNone && steps_[h].state != State::waiting) h = steps_[h].next_send;
        if (h != kNone && sendable(h)) post_send(h);
    }
    work_.push_back(g);
    if (!draining_) drain();
}

void SchedulePolicy::arrived(std::uint32_t g) {
    steps_[g].state = State::arrived;
    note(ScheduleEvent::arrived, g);
    try_apply(g);
    if (!draining_) drain();
}

void SchedulePolicy::applied(std::uint32_t g) {
    note(ScheduleEvent::applied, g);
    work_.push_back(g);
    if (!draining_) drain();
}

// Finishes the steps in work_, and whatever that makes ready.
void SchedulePolicy::drain() {
    draining_ = true;
    while (!work_.empty()) {
        const std::uint32_t g = work_.back();
        work_.pop_back();
        Step& s = steps_[g];
        s.state = State::finished;
        for (std::uint32_t k = dep_off_[g]; k < dep_off_[g + 1]; ++k) {
            const std::uint32_t d = dependents_[k];
            if (--steps_[d].deps_left != 0) continue;
            if (steps_[d].kind == OpKind::send) {
                if (sendable(d)) post_send(d);
            } else {
                try_apply(d);
            }
        }
        const int r = steps_[g].rank;
        Rank& rk = ranks_[static_cast<std::size_t>(r)];
        const int round = steps_[g].round;
        if (--round_left_[rk.left_base + static_cast<std::uint32_t>(round)] != 0 || round != rk.cur) continue;
        // The lowest round is done: the window slides (maybe several rounds,
        // later ones may have finished first).
        while (rk.cur < rk.nrounds && round_left_[rk.left_base + static_cast<std::uint32_t>(rk.cur)] == 0) {
            ++rk.cur;
            const int k = rk.cur + rk.window - 1;
            if (k < rk.nrounds) enter_round(r, k);
        }
        if (rk.cur == rk.nrounds && !rk.done) {
            rk.done = true;
            driver_->rank_finished(r);
        }
    }
    draining_ = false;
}

}  // namespace topoar
