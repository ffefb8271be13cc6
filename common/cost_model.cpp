#include "cost_model.hpp"

#include "exec/schedule_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <cstring>
#include <functional>
#include <sstream>
#include <utility>

namespace topoar {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A FIFO of ints that reuses its storage once drained (most queues here hold
// a handful of entries and empty out every round).
class IntQueue {
public:
    bool empty() const { return head_ == v_.size(); }
    int front() const { return v_[head_]; }
    void push(int x) { v_.push_back(x); }
    void pop() {
        if (++head_ == v_.size()) {
            v_.clear();
            head_ = 0;
        }
    }

private:
    std::vector<int> v_;
    std::size_t head_ = 0;
};

// Events that move the simulation: a flow has drained its bytes; (rounds
// mode) a rank's round is over; (dataflow mode) a message reaches its
// receiver, a reduction is done, a rendezvous handshake is done.  In rounds
// mode a message's arrival needs no event of its own: the round end it may
// complete is computed from it and scheduled.  Events are 16 bytes; ties pop
// in an order fixed by the push sequence, so a prediction is deterministic.
enum EventType : std::uint32_t { kFlowEnd, kRoundEnd, kArrive, kApplied, kWireReady, kRecompute };
constexpr std::uint32_t kTypeBits = 3, kTypeMask = 7;
constexpr std::uint32_t kVersionMask = 0x1fffffffu;  // what is left of 32 bits

struct Event {
    double time;
    std::uint32_t id;
    std::uint32_t tag;  // type in the low kTypeBits bits, flow version above
};

// A monotone priority queue (radix heap): events are never scheduled before
// the last one taken out, so the queue keeps them in 65 buckets by the
// highest bit in which their time differs from that last time (non-negative
// doubles order like their bit patterns).  Cheaper than a binary heap at
// millions of events; equal times come out together, in an order fixed by
// the push sequence.
class EventQueue {
public:
    bool empty() const { return size_ == 0; }
    void push(Event e) {
        ++size_;
        std::uint64_t k = key(e.time);
        if (k < last_) {  // never scheduled in the past; rounding: treat as now
            k = last_;
            std::memcpy(&e.time, &k, sizeof k);
        }
        buckets_[bucket(k)].push_back(e);
    }
    // Time of the earliest event; the queue must not be empty.  Advances the
    // queue's clock: nothing earlier may be pushed afterwards.
    double min_time() {
        refill();
        return buckets_[0].back().time;
    }
    // Whether an event at the current clock (the last min_time()) is left.
    bool has_now() const { return !buckets_[0].empty(); }
    Event pop() {
        refill();
        Event e = buckets_[0].back();
        buckets_[0].pop_back();
        --size_;
        return e;
    }

private:
    static std::uint64_t key(double t) {
        std::uint64_t k;
        std::memcpy(&k, &t, sizeof k);
        return k;
    }
    int bucket(std::uint64_t k) const { return k == last_ ? 0 : 64 - __builtin_clzll(k ^ last_); }
    void refill() {
        if (!buckets_[0].empty()) return;
        int i = 1;
        while (buckets_[i].empty()) ++i;
        std::uint64_t lo = UINT64_MAX;
        for (const Event& e : buckets_[i]) lo = std::min(lo, key(e.time));
        last_ = lo;
        for (const Event& e : buckets_[i]) buckets_[bucket(key(e.time))].push_back(e);
        buckets_[i].clear();
    }

    std::vector<Event> buckets_[65];
    std::uint64_t last_ = 0;
    std::size_t size_ = 0;
};

// One message (one executor segment).
struct Msg {
    int box = -1;
    double bytes = 0;
    int slot = -1;          // index into the receiver's current round slots, once matched
    double delivered = -1;  // arrival time if it arrived before its receive was posted
    bool matched = false;
};

// A directed rank pair: its path through the tree and its message queues.
struct Box {
    int src = -1, dst = -1;
    std::vector<int> path;   // every link crossed (for the byte counts)
    std::vector<int> links;  // the ones with finite bandwidth (for sharing)
    double latency = 0;      // path latency + overhead
    IntQueue wire;           // messages sent and not yet drained, in order
    IntQueue unmatched_msgs;
    IntQueue unmatched_slots;
    bool flowing = false;
    bool armed = false;      // dataflow: a kWireReady event is pending
};

struct Flow {
    int msg = -1;
    int box = -1;
    double remaining = 0;  // bytes left at time `last`
    double rate = 0;       // bytes per second since `last`
    double last = 0;
    std::uint32_t version = 0;  // 29 bits used
    std::vector<int> links;  // the box's limited links, copied here for locality
    std::vector<int> pos;    // index in active[link] for each of links
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
    bool ending = false;        // its round end is scheduled
    bool done = false;
    double reduced = 0;
};

// Dataflow mode: what the network needs of one executor step of one rank
// (the scheduling state is SchedulePolicy's).  Steps of all ranks live in
// one array, numbered as the policy numbers them.
constexpr std::uint32_t kNone = UINT32_MAX;

struct DStep {
    std::uint32_t bytes = 0;
    std::int32_t box = -1;           // send: rank -> peer; receive: peer -> rank
    std::uint32_t partner = kNone;   // the matching step of the peer
    OpKind kind = OpKind::send;
    bool handshake = false;          // send: its rendezvous handshake is done (or under way)
    bool early = false;              // receive: the message came before the receive was posted
};

struct DRank {
    double cpu = 0;                // when its reductions so far are done
    double reduced = 0;
};

class Simulation final : public ScheduleDriver {
public:
    Simulation(const Topology& topo, const Plan& plan, std::size_t elem_size, const CostParams& params,
               std::vector<ScheduleEvent>* trace)
        : topo_(topo), plan_(plan), elem_size_(elem_size), params_(params), trace_(trace) {}

    Status run(Prediction* out);

private:
    Status run_rounds(Prediction* out);
    int box_of(int src, int dst);
    int new_msg();
    void push(double t, EventType type, std::uint32_t id, std::uint32_t version = 0) {
        heap_.push(Event{t, id, (version << kTypeBits) | type});
    }
    void start_round(int r, double t);
    void post_recv(int r, int box, int slot, double t);
    void post_send(int r, int box, double bytes, double t);
    int ready_front(int box, double t, double* bytes);
    void try_start_wire(int box, double t);
    void count_message(int box, double bytes);
    void start_flow(int msg, int box, double bytes, double t);
    void end_flow(int flow, double t);
    void deliver(int msg, double t);
    void set_rate(int flow, double rate, double t);
    void check_progress(int r);
    void mark_dirty(int link) {
        if (dirty_stamp_[static_cast<std::size_t>(link)] != dirty_epoch_) {
            dirty_stamp_[static_cast<std::size_t>(link)] = dirty_epoch_;
            dirty_.push_back(link);
        }
    }
    void recompute_rates(double t);
    double provisional_rate(int flow) const;

    // Dataflow mode: the network side of the SchedulePolicy.
    Status build_dataflow();
    Status run_dataflow(Prediction* out);
    int df_ready_front(int box, double t, double* bytes);
    int rank_of(const DStep& s) const {
        const Box& b = boxes_[static_cast<std::size_t>(s.box)];
        return s.kind == OpKind::send ? b.src : b.dst;
    }
    bool post_recv(std::uint32_t g) override;
    void post_send(std::uint32_t g) override;
    bool apply(std::uint32_t g) override;
    void rank_finished(int r) override { out_->rank_time[static_cast<std::size_t>(r)] = now_; }
    bool reverse_busy(const Box& b) const;

    const Topology& topo_;
    const Plan& plan_;
    std::size_t elem_size_;
    CostParams params_;
    std::size_t seg_elems_ = 0;

    std::vector<double> cap_;                  // per link (2 * vertex + down)
    std::vector<std::vector<int>> active_;     // flows on each link
    std::vector<double> link_bytes_;
    std::vector<std::uint32_t> link_stamp_, dirty_stamp_;
    std::vector<double> rem_;                  // progressive filling scratch
    std::vector<int> cnt_;
    std::vector<int> dirty_;
    std::uint32_t dirty_epoch_ = 1, bfs_epoch_ = 0;

    std::vector<Box> boxes_;
    std::vector<std::vector<std::pair<int, int>>> out_boxes_;  // per src: (dst, box), sorted
    std::vector<Msg> msgs_;
    std::vector<int> free_msgs_;
    std::vector<Flow> flows_;
    std::vector<int> free_flows_;
    std::vector<std::uint32_t> flow_stamp_;
    std::vector<double> new_rate_;
    std::vector<RankState> ranks_;

    EventQueue heap_;

    std::vector<int> comp_links_, comp_flows_, stack_;
    std::vector<std::pair<double, int>> link_heap_;
    // Rates of many flows: recomputed at most every quantum_ (see
    // recompute_rates); used_[l] = sum of the rates on link l.
    std::vector<double> used_;
    std::vector<int> unrated_;  // flows started since the last recomputation, no rate yet
    std::size_t active_flows_ = 0;
    double quantum_ = 0, next_recompute_ = 0;
    bool recompute_armed_ = false;
    std::size_t messages_ = 0, events_ = 0, rate_updates_ = 0;
    double bytes_sent_ = 0;

    // Dataflow mode: steps of all ranks, per step a time (send: posted,
    // then handshake done; receive: posted), per rank its CPU; the policy.
    std::vector<DStep> steps_;
    std::vector<double> time_;
    std::vector<DRank> dranks_;
    SchedulePolicy policy_;
    std::vector<ScheduleEvent>* trace_ = nullptr;
    double now_ = 0;  // the simulation clock, for the policy's calls
    Prediction* out_ = nullptr;
};

int Simulation::box_of(int src, int dst) {
    auto& list = out_boxes_[static_cast<std::size_t>(src)];
    auto it = std::lower_bound(list.begin(), list.end(), std::make_pair(dst, -1));
    if (it != list.end() && it->first == dst) return it->second;
    Box b;
    b.src = src;
    b.dst = dst;
    int a = topo_.leaf_of_rank(src), c = topo_.leaf_of_rank(dst);
    int top = topo_.lca(a, c);
    double lat = params_.overhead;
    for (int v = a; v != top; v = topo_.node(v).parent) {
        b.path.push_back(2 * v);
        lat += topo_.node(v).up.latency;
    }
    std::vector<int> down;
    for (int v = c; v != top; v = topo_.node(v).parent) {
        down.push_back(2 * v + 1);
        lat += topo_.node(v).up.latency;
    }
    b.path.insert(b.path.end(), down.rbegin(), down.rend());
    for (int l : b.path)
        if (std::isfinite(cap_[static_cast<std::size_t>(l)])) b.links.push_back(l);
    b.latency = lat;
    int id = static_cast<int>(boxes_.size());
    boxes_.push_back(std::move(b));
    list.insert(it, std::make_pair(dst, id));
    return id;
}

int Simulation::new_msg() {
    if (!free_msgs_.empty()) {
        int m = free_msgs_.back();
        free_msgs_.pop_back();
        msgs_[static_cast<std::size_t>(m)] = Msg{};
        return m;
    }
    msgs_.emplace_back();
    return static_cast<int>(msgs_.size()) - 1;
}

// Executor order: receives (in op order, segment by segment), then sends.
void Simulation::start_round(int r, double t) {
    RankState& s = ranks_[static_cast<std::size_t>(r)];
    const Round& round = plan_.ranks[static_cast<std::size_t>(r)].rounds[s.round];
    s.cpu = t;
    s.last_send_done = t;
    s.sends_left = 0;
    s.slots.clear();
    s.next_slot = 0;
    s.deferred_bytes = 0;
    s.ending = false;

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
        int box = box_of(op.peer, r);
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
        int box = box_of(r, op.peer);
        for (std::size_t done = 0; done < op.count; done += seg_elems_) {
            double bytes = static_cast<double>(std::min(seg_elems_, op.count - done) * elem_size_);
            ++s.sends_left;
            post_send(r, box, bytes, t);
        }
    }
    check_progress(r);
}

void Simulation::post_recv(int r, int box_id, int slot, double t) {
    Box& b = boxes_[static_cast<std::size_t>(box_id)];
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
    try_start_wire(box_id, t);  // a rendezvous message may go now
}

void Simulation::post_send(int r, int box_id, double bytes, double t) {
    (void)r;
    int m = new_msg();
    Msg& msg = msgs_[static_cast<std::size_t>(m)];
    msg.box = box_id;
    msg.bytes = bytes;
    Box& b = boxes_[static_cast<std::size_t>(box_id)];
    b.wire.push(m);
    if (!b.unmatched_slots.empty()) {
        msg.matched = true;
        msg.slot = b.unmatched_slots.front();
        b.unmatched_slots.pop();
    } else {
        b.unmatched_msgs.push(m);
    }
    try_start_wire(box_id, t);
}

// The pair's front message if it may go now: eager, or (rendezvous) its
// receive is posted (rounds mode) or its handshake is done (dataflow mode);
// -1 otherwise.
int Simulation::ready_front(int box_id, double t, double* bytes) {
    if (params_.mode == CostMode::dataflow) return df_ready_front(box_id, t, bytes);
    const Box& b = boxes_[static_cast<std::size_t>(box_id)];
    int m = b.wire.front();
    const Msg& msg = msgs_[static_cast<std::size_t>(m)];
    if (!msg.matched && msg.bytes > static_cast<double>(params_.eager_bytes)) return -1;
    *bytes = msg.bytes;
    return m;
}

void Simulation::try_start_wire(int box_id, double t) {
    Box& b = boxes_[static_cast<std::size_t>(box_id)];
    if (b.flowing || b.wire.empty()) return;
    double bytes = 0;
    int m = ready_front(box_id, t, &bytes);
    if (m < 0) return;
    b.flowing = true;
    start_flow(m, box_id, bytes, t);
}

void Simulation::count_message(int box, double bytes) {
    ++messages_;
    bytes_sent_ += bytes;
    for (int l : boxes_[static_cast<std::size_t>(box)].path) link_bytes_[static_cast<std::size_t>(l)] += bytes;
}

void Simulation::start_flow(int m, int box, double bytes, double t) {
    const Box& b = boxes_[static_cast<std::size_t>(box)];
    count_message(box, bytes);

    int f;
    if (!free_flows_.empty()) {
        f = free_flows_.back();
        free_flows_.pop_back();
    } else {
        f = static_cast<int>(flows_.size());
        flows_.emplace_back();
        flow_stamp_.push_back(0);
        new_rate_.push_back(0);
    }
    ++active_flows_;
    Flow& fl = flows_[static_cast<std::size_t>(f)];
    fl.msg = m;
    fl.box = box;
    fl.remaining = bytes;
    fl.rate = 0;
    fl.last = t;
    fl.version = (fl.version + 1) & kVersionMask;
    fl.links.assign(b.links.begin(), b.links.end());
    fl.pos.resize(b.links.size());
    // Alone on all its links (the common case: a ring's hops, a host's
    // single uplink flow): its rate is the bottleneck, no sharing to solve.
    bool alone = true;
    double bottleneck = kInf;
    for (std::size_t i = 0; i < b.links.size(); ++i) {
        auto& act = active_[static_cast<std::size_t>(b.links[i])];
        if (!act.empty()) alone = false;
        bottleneck = std::min(bottleneck, cap_[static_cast<std::size_t>(b.links[i])]);
        fl.pos[i] = static_cast<int>(act.size());
        act.push_back(f);
    }
    if (alone) {
        set_rate(f, bottleneck, t);  // infinite for a path without limits
        return;
    }
    for (int l : b.links) mark_dirty(l);
    unrated_.push_back(f);
}

void Simulation::set_rate(int f, double rate, double t) {
    Flow& fl = flows_[static_cast<std::size_t>(f)];
    if (std::isfinite(rate))
        for (int l : fl.links) used_[static_cast<std::size_t>(l)] += rate - fl.rate;
    if (fl.rate > 0 && t > fl.last) fl.remaining = std::max(0.0, fl.remaining - fl.rate * (t - fl.last));
    fl.last = t;
    fl.rate = rate;
    fl.version = (fl.version + 1) & kVersionMask;
    ++rate_updates_;
    double finish = rate > 0 ? t + fl.remaining / rate : kInf;
    push(finish, kFlowEnd, static_cast<std::uint32_t>(f), fl.version);
}

// Flow f has drained its message at t.  The sender's send is complete, the
// receiver gets the data one path latency later.  When the pair's next
// message may go at once, the flow carries it on: same path, so nobody's
// max-min share changes and no rates need recomputing (a stream of
// segments costs one event per segment, not a rate update of every flow
// in its component).
void Simulation::end_flow(int f, double t) {
    const int box_id = flows_[static_cast<std::size_t>(f)].box;
    const int m = flows_[static_cast<std::size_t>(f)].msg;
    boxes_[static_cast<std::size_t>(box_id)].wire.pop();
    if (params_.mode == CostMode::dataflow) {
        const std::uint32_t g = static_cast<std::uint32_t>(m);
        if (steps_[g].partner != kNone)
            push(t + boxes_[static_cast<std::size_t>(box_id)].latency, kArrive, steps_[g].partner);
        now_ = t;
        policy_.send_done(g);  // the box still counts as flowing: nothing else starts on it
    } else {
        const Box& bx = boxes_[static_cast<std::size_t>(box_id)];
        RankState& sender = ranks_[static_cast<std::size_t>(bx.src)];
        --sender.sends_left;
        sender.last_send_done = std::max(sender.last_send_done, t);
        deliver(m, t + bx.latency);
        check_progress(bx.src);
    }

    double bytes = 0;
    const int next = boxes_[static_cast<std::size_t>(box_id)].wire.empty() ? -1 : ready_front(box_id, t, &bytes);
    Flow& fl = flows_[static_cast<std::size_t>(f)];
    fl.version = (fl.version + 1) & kVersionMask;  // stale events of this flow are ignored
    if (next >= 0) {
        count_message(box_id, bytes);
        fl.msg = next;
        fl.remaining = bytes;
        fl.last = t;
        push(fl.rate > 0 ? t + bytes / fl.rate : kInf, kFlowEnd, static_cast<std::uint32_t>(f), fl.version);
        return;
    }
    --active_flows_;
    for (std::size_t i = 0; i < fl.links.size(); ++i) {
        int l = fl.links[i];
        used_[static_cast<std::size_t>(l)] -= fl.rate;
        auto& act = active_[static_cast<std::size_t>(l)];
        int idx = fl.pos[i];
        int moved = act.back();
        act[static_cast<std::size_t>(idx)] = moved;
        act.pop_back();
        if (moved != f) {
            Flow& mf = flows_[static_cast<std::size_t>(moved)];
            for (std::size_t j = 0; j < mf.links.size(); ++j)
                if (mf.links[j] == l) {
                    mf.pos[j] = idx;
                    break;
                }
        }
        if (!act.empty()) mark_dirty(l);  // the others may speed up
    }
    fl.msg = -1;
    fl.rate = 0;
    free_flows_.push_back(f);
    boxes_[static_cast<std::size_t>(box_id)].flowing = false;
}

// Message m arrives at time t (in the future of the simulation clock: only
// the receiver's round end depends on it, and that is scheduled).
void Simulation::deliver(int m, double t) {
    Msg& msg = msgs_[static_cast<std::size_t>(m)];
    if (!msg.matched) {
        msg.delivered = t;  // waits in the unexpected queue
        return;
    }
    int r = boxes_[static_cast<std::size_t>(msg.box)].dst;
    ranks_[static_cast<std::size_t>(r)].slots[static_cast<std::size_t>(msg.slot)].arrived = t;
    free_msgs_.push_back(m);
    check_progress(r);
}

// The executor waits for receives in posting order, reducing each as it
// comes; then for the sends; then runs the deferred reductions.
void Simulation::check_progress(int r) {
    RankState& s = ranks_[static_cast<std::size_t>(r)];
    if (s.ending || s.done) return;
    while (s.next_slot < s.slots.size() && s.slots[s.next_slot].arrived >= 0) {
        const Slot& sl = s.slots[s.next_slot++];
        s.cpu = std::max(s.cpu, sl.arrived) + (sl.reduce ? params_.gamma * sl.bytes : 0.0);
    }
    if (s.next_slot < s.slots.size() || s.sends_left > 0) return;
    double end = std::max(s.cpu, s.last_send_done) + params_.gamma * s.deferred_bytes;
    s.ending = true;
    push(end, kRoundEnd, static_cast<std::uint32_t>(r));
}

// Max-min fair shares for the flows connected (through shared links) to the
// links touched since the last call.  Flows elsewhere keep their rates: a
// max-min allocation decomposes over connected components.
//
// With more than CostParams::exact_flows flows in flight, a component can
// hold thousands of flows and recomputing it at every start or end would
// cost O(flows) per message.  Then rates are recomputed at most once per
// quantum_ (a segment's time on the fastest link) times flows in flight /
// exact_flows: a flow starting in between gets a provisional rate, the
// larger of the link's unused capacity and its equal share, and flows keep
// their rates when others end until the next recomputation.  On 256 ranks
// this moved predictions by at most 2.4 % and made them 10-35x faster
// (docs/cost-model.md, "Performance").
void Simulation::recompute_rates(double t) {
    if (dirty_.empty()) return;
    if (quantum_ > 0 && active_flows_ > params_.exact_flows && t < next_recompute_) {
        for (int f : unrated_)
            if (flows_[static_cast<std::size_t>(f)].msg >= 0 && flows_[static_cast<std::size_t>(f)].rate == 0)
                set_rate(f, provisional_rate(f), t);
        unrated_.clear();
        if (!recompute_armed_) {
            recompute_armed_ = true;
            push(next_recompute_, kRecompute, 0);
        }
        return;
    }
    unrated_.clear();
    next_recompute_ =
        t + quantum_ * std::max(1.0, static_cast<double>(active_flows_) / static_cast<double>(params_.exact_flows ? params_.exact_flows : 1));
    ++bfs_epoch_;
    comp_links_.clear();
    comp_flows_.clear();
    stack_.clear();
    for (int l : dirty_) {
        if (link_stamp_[static_cast<std::size_t>(l)] == bfs_epoch_) continue;
        link_stamp_[static_cast<std::size_t>(l)] = bfs_epoch_;
        stack_.push_back(l);
    }
    dirty_.clear();
    ++dirty_epoch_;
    while (!stack_.empty()) {
        int l = stack_.back();
        stack_.pop_back();
        comp_links_.push_back(l);
        for (int f : active_[static_cast<std::size_t>(l)]) {
            if (flow_stamp_[static_cast<std::size_t>(f)] == bfs_epoch_) continue;
            flow_stamp_[static_cast<std::size_t>(f)] = bfs_epoch_;
            comp_flows_.push_back(f);
            for (int m : flows_[static_cast<std::size_t>(f)].links)
                if (link_stamp_[static_cast<std::size_t>(m)] != bfs_epoch_) {
                    link_stamp_[static_cast<std::size_t>(m)] = bfs_epoch_;
                    stack_.push_back(m);
                }
        }
    }
    if (comp_flows_.empty()) return;

    // Progressive filling: raise all unfrozen rates together; the link whose
    // fair share runs out first freezes its flows at that share.  Links sit
    // in a min-heap by share (rem / cnt); a link's share only grows as flows
    // elsewhere freeze, so an entry whose key is no longer the link's share
    // is stale and skipped.  O((links + flows * path) log links).
    using Key = std::pair<double, int>;
    auto& heap = link_heap_;
    heap.clear();
    for (int l : comp_links_) {
        const std::size_t i = static_cast<std::size_t>(l);
        rem_[i] = cap_[i];
        cnt_[i] = static_cast<int>(active_[i].size());
        if (cnt_[i] > 0) heap.emplace_back(rem_[i] / cnt_[i], l);
    }
    std::make_heap(heap.begin(), heap.end(), std::greater<Key>());
    for (int f : comp_flows_) new_rate_[static_cast<std::size_t>(f)] = -1;
    std::size_t left = comp_flows_.size();
    double level = 0;  // shares within a relative 1e-12 of each other freeze alike
    while (left > 0 && !heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<Key>());
        const Key top = heap.back();
        heap.pop_back();
        const std::size_t li = static_cast<std::size_t>(top.second);
        if (cnt_[li] == 0 || rem_[li] / cnt_[li] != top.first) continue;
        double best = std::max(top.first, 0.0);
        if (best <= level * (1 + 1e-12))
            best = level;
        else
            level = best;
        for (int f : active_[li]) {
            if (new_rate_[static_cast<std::size_t>(f)] >= 0) continue;
            new_rate_[static_cast<std::size_t>(f)] = best;
            --left;
            for (int m : flows_[static_cast<std::size_t>(f)].links) {
                const std::size_t mi = static_cast<std::size_t>(m);
                rem_[mi] = std::max(0.0, rem_[mi] - best);
                if (--cnt_[mi] > 0 && mi != li) {
                    heap.emplace_back(rem_[mi] / cnt_[mi], m);
                    std::push_heap(heap.begin(), heap.end(), std::greater<Key>());
                }
            }
        }
    }
    for (int f : comp_flows_) {
        double nr = new_rate_[static_cast<std::size_t>(f)];
        if (nr < 0) nr = kInf;  // cannot happen: every flow here has a finite link
        if (nr != flows_[static_cast<std::size_t>(f)].rate) set_rate(f, nr, t);
    }
}

// ---------------------------------------------------------------- dataflow

// Every rank's schedule compiled by the executor's own compile_schedule and
// handed to the executor's SchedulePolicy, so the steps, their dependencies
// and the decisions are the ones that run; the ExecProgram of a rank is
// dropped once copied.  Messages are matched here once: the k-th send from
// a to b pairs with b's k-th receive from a (both sides post them in
// schedule order, and MPI does not overtake).
Status Simulation::build_dataflow() {
    const int p = plan_.nranks;
    const std::size_t seg_elems = segment_elems_of(params_.segment_bytes, elem_size_);  // as Engine::plan_for
    std::size_t total = count_steps(plan_, elem_size_, params_.segment_bytes);
    if (total >= static_cast<std::size_t>(INT32_MAX))
        return Status::invalid("cost model: " + std::to_string(total) + " executor steps are too many to simulate");
    steps_.reserve(total);
    dranks_.assign(static_cast<std::size_t>(p), DRank{});
    policy_.clear();
    policy_.set_trace(trace_);
    std::vector<std::vector<std::uint32_t>> box_sends, box_recvs;  // per box, in schedule order
    for (int r = 0; r < p; ++r) {
        ExecProgram prog = compile_schedule(plan_.ranks[static_cast<std::size_t>(r)], seg_elems, elem_size_);
        const std::uint32_t base = static_cast<std::uint32_t>(steps_.size());
        if (!policy_.add_rank(prog).is_ok()) return Status::invalid("cost model: too many step dependencies to simulate");
        for (std::size_t i = 0; i < prog.steps.size(); ++i) {
            const ExecProgram::Step& st = prog.steps[i];
            DStep d;
            d.bytes = static_cast<std::uint32_t>(st.count * elem_size_);
            d.kind = st.kind;
            const std::uint32_t g = base + static_cast<std::uint32_t>(i);
            if (st.kind == OpKind::send) {
                d.box = box_of(r, st.peer);
                if (box_sends.size() <= static_cast<std::size_t>(d.box)) box_sends.resize(boxes_.size());
                box_sends[static_cast<std::size_t>(d.box)].push_back(g);
            } else {
                d.box = box_of(st.peer, r);
                if (box_recvs.size() <= static_cast<std::size_t>(d.box)) box_recvs.resize(boxes_.size());
                box_recvs[static_cast<std::size_t>(d.box)].push_back(g);
            }
            steps_.push_back(d);
        }
    }
    box_sends.resize(boxes_.size());
    box_recvs.resize(boxes_.size());
    for (std::size_t b = 0; b < boxes_.size(); ++b) {
        const auto& sends = box_sends[b];
        const auto& recvs = box_recvs[b];
        for (std::size_t k = 0; k < sends.size() && k < recvs.size(); ++k) {
            steps_[sends[k]].partner = recvs[k];
            steps_[recvs[k]].partner = sends[k];
        }
    }
    time_.assign(steps_.size(), 0.0);
    return Status::ok();
}

// The policy posts send g: it joins its pair's wire.
void Simulation::post_send(std::uint32_t g) {
    DStep& s = steps_[g];
    time_[g] = now_;
    boxes_[static_cast<std::size_t>(s.box)].wire.push(static_cast<int>(g));
    try_start_wire(s.box, now_);
}

// The policy posts receive g: done at once when eager data waits in the
// unexpected queue; else a rendezvous send may have been waiting for it.
bool Simulation::post_recv(std::uint32_t g) {
    DStep& s = steps_[g];
    if (s.early) return true;
    time_[g] = now_;
    if (s.partner != kNone && policy_.state(s.partner) == SchedulePolicy::State::posted && !steps_[s.partner].handshake)
        try_start_wire(steps_[s.partner].box, now_);
    return false;
}

// The policy applies receive g: reductions queue on the rank's CPU, copies
// are free.
bool Simulation::apply(std::uint32_t g) {
    DStep& s = steps_[g];
    if (s.kind == OpKind::recv_reduce) {
        DRank& dr = dranks_[static_cast<std::size_t>(rank_of(s))];
        dr.reduced += s.bytes;
        const double cost = params_.gamma * s.bytes;
        if (cost > 0) {
            dr.cpu = std::max(dr.cpu, now_) + cost;
            push(dr.cpu, kApplied, g);
            return false;
        }
    }
    return true;
}

// Whether the direction opposite to b's path carries data now (a handshake
// answer would queue behind it).
bool Simulation::reverse_busy(const Box& b) const {
    for (int l : b.links)
        if (!active_[static_cast<std::size_t>(l ^ 1)].empty()) return true;
    return false;
}

// The pair's next message goes when the previous one has drained; an eager
// one at once, a rendezvous one after the handshake: the request reaches
// the receiver (one latency after the send was posted), the receiver
// answers once its receive is posted, the answer takes a latency back.
int Simulation::df_ready_front(int box_id, double t, double* bytes) {
    Box& b = boxes_[static_cast<std::size_t>(box_id)];
    const std::uint32_t m = static_cast<std::uint32_t>(b.wire.front());
    DStep& s = steps_[m];
    if (s.bytes > params_.eager_bytes) {
        if (!s.handshake) {
            if (s.partner == kNone || policy_.state(s.partner) == SchedulePolicy::State::waiting) return -1;  // no receive yet
            double answer = std::max(time_[s.partner], time_[m] + b.latency);
            time_[m] = answer + b.latency + (reverse_busy(b) ? params_.handshake_queue_delay : 0.0);
            s.handshake = true;
        }
        if (time_[m] > t) {
            if (!b.armed) {
                b.armed = true;
                push(time_[m], kWireReady, static_cast<std::uint32_t>(box_id));
            }
            return -1;
        }
    }
    *bytes = static_cast<double>(s.bytes);
    return static_cast<int>(m);
}

Status Simulation::run_dataflow(Prediction* out) {
    TOPOAR_TRY(build_dataflow());
    const int p = plan_.nranks;
    now_ = 0;
    policy_.start(this);
    double now = 0;
    recompute_rates(now);
    while (!heap_.empty()) {
        now = heap_.min_time();
        now_ = now;
        while (heap_.has_now()) {
            Event e = heap_.pop();
            switch (e.tag & kTypeMask) {
            case kFlowEnd:
                if (flows_[e.id].version != (e.tag >> kTypeBits)) continue;  // superseded by a rate change
                end_flow(static_cast<int>(e.id), now);
                break;
            case kArrive:
                if (policy_.state(e.id) == SchedulePolicy::State::waiting)  // before its receive is posted (eager)
                    steps_[e.id].early = true;
                else
                    policy_.arrived(e.id);
                break;
            case kApplied:
                policy_.applied(e.id);
                break;
            case kWireReady:
                boxes_[e.id].armed = false;
                try_start_wire(static_cast<int>(e.id), now);
                break;
            case kRecompute:  // recompute_rates below does the work
                recompute_armed_ = false;
                break;
            default:
                break;
            }
            ++events_;
        }
        recompute_rates(now);
    }
    out->steps = steps_.size();
    for (int r = 0; r < p; ++r) {
        const DRank& dr = dranks_[static_cast<std::size_t>(r)];
        if (!policy_.done(r)) {
            std::ostringstream m;
            m << "cost model: the plan cannot complete: rank " << r << " waits forever in its round "
              << policy_.current_round(r) << " (a receive without a matching send, or a send nobody receives)";
            return Status::internal(m.str());
        }
        out->max_bytes_reduced = std::max(out->max_bytes_reduced, dr.reduced);
    }
    return Status::ok();
}

Status Simulation::run(Prediction* out) {
    const int p = plan_.nranks;
    const std::size_t nv = static_cast<std::size_t>(topo_.num_nodes());
    seg_elems_ = step_elems(segment_elems_of(params_.segment_bytes, elem_size_), elem_size_);

    cap_.assign(2 * nv, kInf);
    for (std::size_t v = 0; v < nv; ++v) {
        const TopoNode& n = topo_.node(static_cast<int>(v));
        if (n.parent < 0) continue;
        double bw = n.up.bandwidth > 0 ? n.up.bandwidth : params_.unknown_bandwidth;
        if (bw > 0) cap_[2 * v] = cap_[2 * v + 1] = bw * params_.wire_efficiency;
    }
    active_.assign(2 * nv, {});
    link_bytes_.assign(2 * nv, 0);
    link_stamp_.assign(2 * nv, 0);
    dirty_stamp_.assign(2 * nv, 0);
    rem_.assign(2 * nv, 0);
    cnt_.assign(2 * nv, 0);
    out_boxes_.assign(static_cast<std::size_t>(p), {});
    used_.assign(2 * nv, 0.0);
    out_ = out;
    quantum_ = params_.rate_quantum;
    if (quantum_ == 0) {  // auto: a segment's time on the fastest link
        double fastest = 0;
        for (double c : cap_)
            if (std::isfinite(c)) fastest = std::max(fastest, c);
        const double seg = static_cast<double>(params_.segment_bytes ? params_.segment_bytes : std::size_t(1) << 20);
        quantum_ = fastest > 0 ? seg / fastest : 0;
    }
    if (params_.mode == CostMode::dataflow)
        TOPOAR_TRY(run_dataflow(out));
    else
        TOPOAR_TRY(run_rounds(out));
    for (double t : out->rank_time) out->time = std::max(out->time, t);
    out->messages = messages_;
    out->bytes_sent = bytes_sent_;
    out->events = events_;
    out->rate_updates = rate_updates_;
    double best_s = -1, best_b = -1;
    for (std::size_t v = 1; v < nv; ++v)
        for (int d = 0; d < 2; ++d) {
            double bytes = link_bytes_[2 * v + static_cast<std::size_t>(d)];
            double c = cap_[2 * v + static_cast<std::size_t>(d)];
            double secs = std::isfinite(c) ? bytes / c : 0;
            (d == 0 ? out->link_bytes_up : out->link_bytes_down)[v] = bytes;
            if (bytes > 0 && (secs > best_s || (secs == best_s && bytes > best_b))) {
                best_s = secs;
                best_b = bytes;
                out->busiest_vertex = static_cast<int>(v);
                out->busiest_up = d == 0;
                out->busiest_bytes = bytes;
                out->busiest_seconds = secs;
            }
        }
    return Status::ok();
}

Status Simulation::run_rounds(Prediction* out) {
    const int p = plan_.nranks;
    ranks_.assign(static_cast<std::size_t>(p), RankState{});
    for (int r = 0; r < p; ++r) {
        if (plan_.ranks[static_cast<std::size_t>(r)].rounds.empty())
            ranks_[static_cast<std::size_t>(r)].done = true;
        else
            start_round(r, 0.0);
    }
    double now = 0;
    recompute_rates(now);  // the flows of everybody's first round
    while (!heap_.empty()) {
        now = heap_.min_time();
        // Everything that happens at this instant, then one rate update.
        while (heap_.has_now()) {
            Event e = heap_.pop();
            const int id = static_cast<int>(e.id);
            if ((e.tag & kTypeMask) == kFlowEnd) {
                if (flows_[e.id].version != (e.tag >> kTypeBits)) continue;  // superseded by a rate change
                ++events_;
                end_flow(id, now);
            } else if ((e.tag & kTypeMask) == kRecompute) {
                recompute_armed_ = false;  // recompute_rates below does the work
            } else {
                ++events_;
                RankState& s = ranks_[e.id];
                out->rank_time[e.id] = now;
                if (++s.round < plan_.ranks[e.id].rounds.size())
                    start_round(id, now);
                else
                    s.done = true;
            }
        }
        recompute_rates(now);
    }

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

}  // namespace

Status predict(const Topology& topo, const Plan& plan, std::size_t elem_size, const CostParams& params,
               Prediction* out) {
    return predict(topo, plan, elem_size, params, out, nullptr);
}

Status predict(const Topology& topo, const Plan& plan, std::size_t elem_size, const CostParams& params,
               Prediction* out, std::vector<ScheduleEvent>* trace) {
    if (plan.only_rank >= 0) return Status::invalid("cost model: needs a full plan (only_rank == -1)");
    if (plan.nranks != topo.num_ranks())
        return Status::invalid("cost model: plan for " + std::to_string(plan.nranks) + " ranks, topology has " +
                               std::to_string(topo.num_ranks()));
    if (static_cast<int>(plan.ranks.size()) != plan.nranks)
        return Status::invalid("cost model: plan has " + std::to_string(plan.ranks.size()) + " schedules for " +
                               std::to_string(plan.nranks) + " ranks");
    if (elem_size == 0) return Status::invalid("cost model: element size 0");
    if (!(params.overhead >= 0) || !(params.gamma >= 0) || !(params.unknown_bandwidth >= 0))
        return Status::invalid("cost model: negative or NaN parameter");
    for (int r = 0; r < plan.nranks; ++r)
        for (const Round& round : plan.ranks[static_cast<std::size_t>(r)].rounds)
            for (const Op& op : round.ops)
                if (op.peer < 0 || op.peer >= plan.nranks || op.peer == r || op.count == 0)
                    return Status::invalid("cost model: rank " + std::to_string(r) + " has an operation with peer " +
                                           std::to_string(op.peer) + " and " + std::to_string(op.count) +
                                           " elements");
    *out = Prediction{};
    out->rank_time.assign(static_cast<std::size_t>(plan.nranks), 0.0);
    out->link_bytes_up.assign(static_cast<std::size_t>(topo.num_nodes()), 0.0);
    out->link_bytes_down.assign(static_cast<std::size_t>(topo.num_nodes()), 0.0);
    Simulation sim(topo, plan, elem_size, params, trace);
    return sim.run(out);
}

std::size_t count_steps(const Plan& plan, std::size_t elem_size, std::size_t segment_bytes) {
    // The executor's steps (schedule_policy.hpp); elem_size 0: no cap.
    const std::size_t seg =
        elem_size ? step_elems(segment_elems_of(segment_bytes, elem_size), elem_size) : SIZE_MAX;
    std::size_t n = 0;
    for (const RankSchedule& rs : plan.ranks)
        for (const Round& round : rs.rounds)
            for (const Op& op : round.ops) n += (op.count + seg - 1) / seg;
    return n;
}

std::string link_name(const Topology& topo, int vertex, bool up) {
    if (vertex < 0 || vertex >= topo.num_nodes()) return "none";
    const TopoNode& n = topo.node(vertex);
    return std::string(to_string(n.level)) + " " + n.name + (up ? " up" : " down");
}

double bus_bandwidth(int nranks, double bytes, double seconds) {
    if (nranks <= 1 || !(seconds > 0)) return 0;
    return 2.0 * (nranks - 1) / nranks * bytes / seconds;
}

double Simulation::provisional_rate(int f) const {
    double rate = kInf;
    for (int l : flows_[static_cast<std::size_t>(f)].links) {
        const std::size_t i = static_cast<std::size_t>(l);
        rate = std::min(rate, std::max(cap_[i] - used_[i], cap_[i] / static_cast<double>(active_[i].size())));
    }
    return rate;
}

std::vector<double> max_min_rates(const std::vector<double>& capacity,
                                  const std::vector<std::vector<int>>& flow_links) {
    const std::size_t nf = flow_links.size();
    std::vector<double> rate(nf, -1), rem(capacity);
    std::vector<int> cnt(capacity.size(), 0);
    std::size_t left = 0;
    for (std::size_t f = 0; f < nf; ++f) {
        bool limited = false;
        for (int l : flow_links[f])
            if (std::isfinite(capacity[static_cast<std::size_t>(l)])) {
                ++cnt[static_cast<std::size_t>(l)];
                limited = true;
            }
        if (limited)
            ++left;
        else
            rate[f] = kInf;
    }
    while (left > 0) {
        double best = kInf;
        for (std::size_t l = 0; l < capacity.size(); ++l)
            if (cnt[l] > 0) best = std::min(best, rem[l] / cnt[l]);
        best = std::max(best, 0.0);
        const double limit = best * (1 + 1e-12);
        std::vector<std::size_t> bottlenecks;
        for (std::size_t l = 0; l < capacity.size(); ++l)
            if (cnt[l] > 0 && rem[l] / cnt[l] <= limit) bottlenecks.push_back(l);
        for (std::size_t f = 0; f < nf; ++f) {
            if (rate[f] >= 0) continue;
            bool hit = false;
            for (int l : flow_links[f])
                if (std::find(bottlenecks.begin(), bottlenecks.end(), static_cast<std::size_t>(l)) !=
                    bottlenecks.end())
                    hit = true;
            if (!hit) continue;
            rate[f] = best;
            --left;
            for (int l : flow_links[f])
                if (std::isfinite(capacity[static_cast<std::size_t>(l)])) {
                    rem[static_cast<std::size_t>(l)] = std::max(0.0, rem[static_cast<std::size_t>(l)] - best);
                    --cnt[static_cast<std::size_t>(l)];
                }
        }
    }
    return rate;
}

}  // namespace topoar
