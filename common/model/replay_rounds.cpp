// The round-by-round replay of the cost model (replay.hpp): the papers'
// lock-step rounds, for their closed forms and topoar_sim --mode rounds.
#include "model/replay.hpp"

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>

namespace topoar {
namespace model {

namespace {

// One message (one executor segment).
struct Msg {
    int box = -1;
    double bytes = 0;
    int slot = -1;          // index into the receiver's current round slots, once matched
    double delivered = -1;  // arrival time if it arrived before its receive was posted
    bool matched = false;
};

// A posted receive of the current round.
struct Slot {
    double bytes;
    double arrived;  // < 0 until the message is there
    bool reduce;     // reduced while waiting (not deferred)
};

struct RankState {
    std::size_t round = 0;
    double cpu = 0;             // when its reductions so far are done
    double last_send_done = 0;  // latest send completion of the round
    int sends_left = 0;
    std::vector<Slot> slots;
    std::size_t next_slot = 0;
    double deferred_bytes = 0;  // reductions that wait for the round's sends
    double latency = 0;         // the round's round_latency x its steps
    bool ending = false;        // its round end is scheduled
    bool done = false;
    double reduced = 0;
};

// The round-synchronous executor over the network (the top of replay.hpp).
class RoundsReplay final : public NetworkClient {
public:
    RoundsReplay(Network& net, const Plan& plan, std::size_t elem_size, const CostParams& params)
        : net_(net), plan_(plan), elem_size_(elem_size), params_(params),
          seg_elems_(step_elems(segment_elems_of(params.segment_bytes, elem_size), elem_size)) {
        net_.set_client(this);
    }
    Status run(Prediction* out);

    // NetworkClient
    int ready_front(int box, double t, double* bytes) override;
    void drained(int box, int msg, double t) override;

private:
    int new_msg();
    void start_round(int r, double t);
    void post_recv(int r, int box, int slot, double t);
    void post_send(int r, int box, double bytes, double t);
    void deliver(int msg, double t);
    void check_progress(int r);
    double round_latency_of(int r, const Round& round) const;

    Network& net_;
    const Plan& plan_;
    std::size_t elem_size_;
    CostParams params_;
    std::size_t seg_elems_;  // the executor's steps (schedule_policy.hpp)
    std::vector<Msg> msgs_;
    std::vector<int> free_msgs_;
    std::vector<RankState> ranks_;
    std::vector<int> host_;  // per rank: its node's vertex (with round_step_bytes)
    std::size_t events_ = 0;
};

}  // namespace

int RoundsReplay::new_msg() {
    if (!free_msgs_.empty()) {
        int m = free_msgs_.back();
        free_msgs_.pop_back();
        msgs_[static_cast<std::size_t>(m)] = Msg{};
        return m;
    }
    msgs_.emplace_back();
    return static_cast<int>(msgs_.size()) - 1;
}

// CostParams::round_step_bytes: the round's operations as ring steps of at
// most that many bytes (round_step_bytes_node when every peer of the round
// shares the rank's node), round_latency each.
double RoundsReplay::round_latency_of(int r, const Round& round) const {
    if (params_.round_step_bytes == 0 && params_.round_step_bytes_node == 0) return params_.round_latency;
    std::size_t largest = 0;
    const int host = host_[static_cast<std::size_t>(r)];
    bool local = host >= 0;  // a topology without hosts has no node rounds
    for (const Op& op : round.ops) {
        largest = std::max(largest, op.count * elem_size_);
        local = local && host_[static_cast<std::size_t>(op.peer)] == host;
    }
    const std::size_t step =
        local && params_.round_step_bytes_node > 0 ? params_.round_step_bytes_node : params_.round_step_bytes;
    const std::size_t steps = step == 0 || largest == 0 ? 1 : (largest + step - 1) / step;
    return params_.round_latency * static_cast<double>(steps);
}

// Executor order: receives (in op order, segment by segment), then sends.
void RoundsReplay::start_round(int r, double t) {
    RankState& s = ranks_[static_cast<std::size_t>(r)];
    const Round& round = plan_.ranks[static_cast<std::size_t>(r)].rounds[s.round];
    s.cpu = t;
    s.last_send_done = t;
    s.sends_left = 0;
    s.slots.clear();
    s.next_slot = 0;
    s.deferred_bytes = 0;
    s.ending = false;
    s.latency = round_latency_of(r, round);

    // A reduction into a range this round also sends waits for the sends
    // (they read the buffer as it was at the round's start).
    auto overlaps_a_send = [&round](const Op& op) {
        for (const Op& o : round.ops)
            if (o.kind == OpKind::send && o.offset < op.offset + op.count && op.offset < o.offset + o.count)
                return true;
        return false;
    };
    const bool many = round.ops.size() > 16;
    std::vector<std::pair<std::size_t, std::size_t>> sends;  // (offset, prefix max of ends)
    if (many) {
        for (const Op& o : round.ops)
            if (o.kind == OpKind::send) sends.emplace_back(o.offset, o.offset + o.count);
        std::sort(sends.begin(), sends.end());
        for (std::size_t i = 1; i < sends.size(); ++i)
            sends[i].second = std::max(sends[i].second, sends[i - 1].second);
    }
    auto deferred_op = [&](const Op& op) {
        if (op.kind != OpKind::recv_reduce) return false;
        if (!many) return overlaps_a_send(op);
        // Sends starting before op's end: does any of them reach past its start?
        auto it = std::lower_bound(sends.begin(), sends.end(), std::make_pair(op.offset + op.count, std::size_t(0)));
        if (it == sends.begin()) return false;
        return std::prev(it)->second > op.offset;
    };

    for (const Op& op : round.ops) {
        if (op.kind == OpKind::send) continue;
        bool reduce = op.kind == OpKind::recv_reduce;
        bool defer = deferred_op(op);
        int box = net_.box_of(op.peer, r);
        for (std::size_t done = 0; done < op.count; done += seg_elems_) {
            double bytes = static_cast<double>(std::min(seg_elems_, op.count - done) * elem_size_);
            if (reduce) {
                s.reduced += bytes;
                if (defer) s.deferred_bytes += bytes;
            }
            int slot = static_cast<int>(s.slots.size());
            s.slots.push_back(Slot{bytes, -1.0, reduce && !defer});
            post_recv(r, box, slot, t);
        }
    }
    for (const Op& op : round.ops) {
        if (op.kind != OpKind::send) continue;
        int box = net_.box_of(r, op.peer);
        for (std::size_t done = 0; done < op.count; done += seg_elems_) {
            double bytes = static_cast<double>(std::min(seg_elems_, op.count - done) * elem_size_);
            ++s.sends_left;
            post_send(r, box, bytes, t);
        }
    }
    check_progress(r);
}

void RoundsReplay::post_recv(int r, int box_id, int slot, double t) {
    Box& b = net_.box(box_id);
    if (b.unmatched_msgs.empty()) {
        b.unmatched_slots.push(slot);
        return;
    }
    int m = b.unmatched_msgs.front();
    b.unmatched_msgs.pop();
    Msg& msg = msgs_[static_cast<std::size_t>(m)];
    msg.matched = true;
    msg.slot = slot;
    if (msg.delivered >= 0) {  // sent eagerly before the receive was posted
        ranks_[static_cast<std::size_t>(r)].slots[static_cast<std::size_t>(slot)].arrived = std::max(t, msg.delivered);
        free_msgs_.push_back(m);
        return;
    }
    net_.try_start_wire(box_id, t);  // a rendezvous message may go now
}

void RoundsReplay::post_send(int r, int box_id, double bytes, double t) {
    (void)r;
    int m = new_msg();
    Msg& msg = msgs_[static_cast<std::size_t>(m)];
    msg.box = box_id;
    msg.bytes = bytes;
    Box& b = net_.box(box_id);
    b.wire.push(m);
    if (!b.unmatched_slots.empty()) {
        msg.matched = true;
        msg.slot = b.unmatched_slots.front();
        b.unmatched_slots.pop();
    } else {
        b.unmatched_msgs.push(m);
    }
    net_.try_start_wire(box_id, t);
}

// The pair's front message if it may go now: eager, or (rendezvous) its
// receive is posted; -1 otherwise.
int RoundsReplay::ready_front(int box_id, double /*t*/, double* bytes) {
    const Box& b = net_.box(box_id);
    int m = b.wire.front();
    const Msg& msg = msgs_[static_cast<std::size_t>(m)];
    if (!msg.matched && msg.bytes > static_cast<double>(params_.eager_bytes)) return -1;
    *bytes = msg.bytes;
    return m;
}

// A send has drained: the sender's round may end, the receiver gets the
// data one path latency later.
void RoundsReplay::drained(int box_id, int m, double t) {
    const Box& bx = net_.box(box_id);
    RankState& sender = ranks_[static_cast<std::size_t>(bx.src)];
    --sender.sends_left;
    sender.last_send_done = std::max(sender.last_send_done, t);
    deliver(m, t + bx.latency);
    check_progress(bx.src);
}

// Message m arrives at time t (in the future of the simulation clock: only
// the receiver's round end depends on it, and that is scheduled).
void RoundsReplay::deliver(int m, double t) {
    Msg& msg = msgs_[static_cast<std::size_t>(m)];
    if (!msg.matched) {
        msg.delivered = t;  // waits in the unexpected queue
        return;
    }
    int r = net_.box(msg.box).dst;
    ranks_[static_cast<std::size_t>(r)].slots[static_cast<std::size_t>(msg.slot)].arrived = t;
    free_msgs_.push_back(m);
    check_progress(r);
}

// The executor waits for receives in posting order, reducing each as it
// comes; then for the sends; then runs the deferred reductions.
void RoundsReplay::check_progress(int r) {
    RankState& s = ranks_[static_cast<std::size_t>(r)];
    if (s.ending || s.done) return;
    while (s.next_slot < s.slots.size() && s.slots[s.next_slot].arrived >= 0) {
        const Slot& sl = s.slots[s.next_slot++];
        s.cpu = std::max(s.cpu, sl.arrived) + (sl.reduce ? params_.gamma * sl.bytes : 0.0);
    }
    if (s.next_slot < s.slots.size() || s.sends_left > 0) return;
    double end = std::max(s.cpu, s.last_send_done) + params_.gamma * s.deferred_bytes + s.latency;
    s.ending = true;
    net_.push(end, kRoundEnd, static_cast<std::uint32_t>(r));
}

Status RoundsReplay::run(Prediction* out) {
    const int p = plan_.nranks;
    ranks_.assign(static_cast<std::size_t>(p), RankState{});
    if (params_.round_step_bytes > 0 || params_.round_step_bytes_node > 0) {
        host_.resize(static_cast<std::size_t>(p));
        for (int r = 0; r < p; ++r) host_[static_cast<std::size_t>(r)] = net_.topology().node_of_rank(r);
    }
    for (int r = 0; r < p; ++r) {
        if (plan_.ranks[static_cast<std::size_t>(r)].rounds.empty())
            ranks_[static_cast<std::size_t>(r)].done = true;
        else
            start_round(r, 0.0);
    }
    double now = 0;
    net_.recompute_rates(now);  // the flows of everybody's first round
    while (!net_.queue().empty()) {
        now = net_.queue().min_time();
        // Everything that happens at this instant, then one rate update.
        while (net_.queue().has_now()) {
            Event e = net_.queue().pop();
            const int id = static_cast<int>(e.id);
            if ((e.tag & kTypeMask) == kFlowEnd) {
                if (!net_.flow_end(e, now)) continue;  // superseded by a rate change
                ++events_;
            } else if ((e.tag & kTypeMask) == kRecompute) {
                net_.recompute_due();  // recompute_rates below does the work
            } else {
                ++events_;
                RankState& s = ranks_[e.id];
                out->rank_time[e.id] = now;
                if (out->round_end.size() <= s.round) out->round_end.resize(s.round + 1, 0.0);
                out->round_end[s.round] = std::max(out->round_end[s.round], now);
                if (params_.record_round_ends) {
                    if (out->rank_round_end.size() < ranks_.size()) out->rank_round_end.resize(ranks_.size());
                    out->rank_round_end[e.id].push_back(now);
                }
                if (++s.round < plan_.ranks[e.id].rounds.size())
                    start_round(id, now);
                else
                    s.done = true;
            }
        }
        net_.recompute_rates(now);
    }

    out->events = events_;
    for (int r = 0; r < p; ++r) {
        const RankState& s = ranks_[static_cast<std::size_t>(r)];
        if (!s.done) {
            std::ostringstream m;
            m << "cost model: the plan cannot complete: rank " << r << " waits forever in its round " << s.round
              << " (a receive without a matching send, or a cycle of rendezvous waits)";
            return Status::internal(m.str());
        }
        out->max_bytes_reduced = std::max(out->max_bytes_reduced, s.reduced);
    }
    return Status::ok();
}

Status replay_rounds(Network& net, const Plan& plan, std::size_t elem_size, const CostParams& params,
                     Prediction* out) {
    RoundsReplay replay(net, plan, elem_size, params);
    return replay.run(out);
}

}  // namespace model
}  // namespace topoar
