// topoar cost model, part 1 of 3: the event queue of the simulation.
//
// Events move the simulation: a flow has drained its bytes (network.hpp);
// (rounds replay) a rank's round is over; (dataflow replay) a message
// reaches its receiver, a reduction is done, a rendezvous handshake is done.
// Events are 16 bytes; ties pop in an order fixed by the push sequence, so a
// prediction is deterministic.  Internal to the cost model (cost_model.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace topoar {
namespace model {

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

// The kinds of event.  In the rounds replay a message's arrival needs no
// event of its own: the round end it may complete is computed from it and
// scheduled.
// kHandled (dataflow with a CPU share): the receiver's CPU has taken in a
// message that arrived (kArrive) before it.
enum EventType : std::uint32_t { kFlowEnd, kRoundEnd, kArrive, kApplied, kWireReady, kRecompute, kHandled };
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

}  // namespace model
}  // namespace topoar
