// topoar engine: the scheduling policy of a rank's schedule, in one place.
//
// Two programs decide when the steps of a schedule may go: the host
// executor (executor.hpp: wall clock, a real Transport) and the cost model's
// dataflow replay (cost_model.hpp: simulated time, a modelled network).
// Both compile the schedule here and ask the one SchedulePolicy below which
// step to post or apply next, so the model predicts what runs; a change to a
// rule changes both.  tests/unit/test_schedule_policy.cpp replays the model's
// completion order on the executor and checks that both take the same
// decisions.
//
// The rules (written for plan.hpp's round semantics, executed as a dataflow
// so ranks are not held in lock-step: measured, a round-synchronous executor
// loses a rendezvous delay per round boundary):
//
//   segments  an operation is cut into steps of at most segment_elems
//             elements, and no message is larger than kMaxMessageBytes;
//   window    the rounds [cur, cur + W) of a rank are open, cur being its
//             lowest unfinished round (W = kWindowRounds, fewer when a
//             flight bound is set: flight_window); a round's receives are all
//             posted when it enters the window (each into its own scratch
//             slot, or straight into the buffer when nothing can still read
//             or write that range);
//   sends     a send of an open round is posted once the receives of
//             earlier rounds into its range are applied (it carries final
//             data) and the earlier sends to the same peer are posted
//             (messages pair up exactly as the plan built them);
//   apply     an arrived receive is reduced or copied into the buffer once
//             earlier writes to its range are applied and the sends that
//             must read the old value are done (fixed operand order);
//   finish    a send is finished when the transport completed it, a receive
//             when it is applied; a round when all its steps are.
//
//   round:      r            r+1          r+2          r+3     | r+4
//              [recv recv | recv recv  | recv       | recv    ]  not posted
//               send ->dep  send ->dep   send          send      until r is
//              <------------- window of 4 rounds ----------->   finished
//
// The result is the same as running the rounds one after another, with the
// same operand order per element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "plan/plan.hpp"
#include "status.hpp"

namespace topoar {

// The PML takes an int count of bytes: every message stays well below 2 GiB.
constexpr std::size_t kMaxMessageBytes = std::size_t(1) << 30;
// Rounds open at once per rank (receives posted ahead, sends allowed).
constexpr int kWindowRounds = 4;

// Rounds a rank keeps open under a flight bound (coll_topoar_flight_size):
// as many as keep what it sends to one peer in its open rounds within
// `flight_bytes`, given the most it sends to one peer in one round
// (`round_peer_bytes`), at least 1 and at most kWindowRounds.  0 for either
// means no bound (kWindowRounds), and so does a round larger than the bound
// (a whole operation per round, not a pipelining unit: holding the next
// round back would only stop its segments flowing on).
//
// Why: every message up to the eager limit is pushed into the transport at
// once, so a rank with four rounds open keeps up to four rounds of data per
// peer queued in the network.  Once a link is full that adds no speed, only
// queue: on a shaped link with a shallow token bucket (64 KiB at 1 Gbit/s)
// the queued packets arrive reordered and TCP retransmits them, and a 64 MiB
// call on two hosts ran 1.7x slower (docs/large-messages.md, "Bytes in
// flight").  han's one 64 KiB segment per leader exchange never queues.
//
// A round of a few pipelining units to one peer (every message within the
// bound, `largest_message`, at most kPipelinedRound x the bound in all:
// several trees or parts, one segment of each per round) keeps two rounds
// open: four of them left 4 x 96 KiB per peer queued, which a shallow
// token bucket punished, and one alone waited a round trip per round on a
// deep one (docs/large-messages.md, "Two rounds open for rounds of a few
// segments").  largest_message 0: not known (such a round keeps
// kWindowRounds, as a whole operation does).
constexpr std::size_t kPipelinedRound = 4;
constexpr int kPipelinedWindow = 2;
int flight_window(std::size_t flight_bytes, std::size_t round_peer_bytes, std::size_t largest_message = 0);

// Send credit across hosts (ExecProgram::send_credit).  A send the
// transport has taken is not yet on the wire: TCP queues what a round posts
// in the socket, and each connection's window grows until the link's queue
// drops.  On a 1 Gbit/s link whose queue holds 1 ms of traffic
// (--queue-latency 1ms, 64 KiB bucket) a tree dropped thousands of packets
// and ran 2-3x slower than han at 2-8 MiB; a synchronous send completes
// once the receiver has matched it, so two such sends per peer keep what
// one rank has in flight to one peer within two steps (docs/large-messages.md,
// "Shallow queues").
// Only where the call sends a peer at least kCreditFlights x the bound: on
// 4 hosts in 2 racks (500 Mbit/s between them, a 2 ms queue) crediting
// every send made 64-128 KiB calls 1.4-1.7x slower (the answers queue
// behind the data coming the other way), where a few segments per peer
// had never filled a queue.
// Whether a run holds its synchronous sends to the credit is the
// executor's (ExecOperation::set_credit, coll_topoar_send_credit): where
// queues are deep the answers only cost, so auto credits once the host has
// retransmitted (exec/tcp_retransmissions.hpp); the model always does.
constexpr std::size_t kMinSendCredit = 2;
constexpr std::size_t kMaxSendCredit = 64;
constexpr std::size_t kCreditFlights = 4;

// Whether rounds of `round_peer_bytes` to one peer, whose messages are at
// most `largest_message`, are a few pipelining units under `flight_bytes`
// (more than the bound, each message within it, at most kPipelinedRound x
// it): the rounds flight_window keeps two of open, and the middle class of
// the decision table's flight_class (model/default_table.hpp).
bool few_units(std::size_t flight_bytes, std::size_t round_peer_bytes, std::size_t largest_message);

// The largest message `schedule` sends (one op), in bytes; with `counts`,
// to peers for which it returns true.
std::size_t max_message_bytes(const RankSchedule& schedule, std::size_t elem_size,
                              const std::function<bool(int peer)>& counts = {});

// The most `schedule` sends to one peer in one round, in bytes: what
// flight_window meters.  With `counts`, only peers for which it returns
// true (the decision table asks about peers on other hosts:
// keeps_flight_bound in model/default_table.hpp).
std::size_t max_round_peer_bytes(const RankSchedule& schedule, std::size_t elem_size,
                                 const std::function<bool(int peer)>& counts = {});

// The flight bound a plan on `hosts` hosts runs under: `flight_size` across
// hosts, none on one host (shared memory has no queue to fill).
inline std::size_t flight_bytes_for(std::size_t flight_size, int hosts) { return hosts > 1 ? flight_size : 0; }

// Large calls use larger units (segments and the planners' pipelining
// unit): `unit` grows to call_bytes / kUnitsPerCall, at most kMaxScaledUnit
// and chunk_bytes / kUnitsPerChunk, never below `unit` (0 stays 0).  Per
// message costs (matching, a rendezvous each) then stay a small share of
// the call while the pipeline still has many stages: measured on this
// machine (2 ranks, shared memory, 256 MiB, ring) 32 KiB units 0.50 s,
// 1 MiB units 0.17 s, tuned 0.33 s.  Below 8 MiB (32 KiB x 256) the
// defaults are unchanged, so the cost model's table (up to 2 MiB) is too.
constexpr std::size_t kUnitsPerCall = 256;
constexpr std::size_t kUnitsPerChunk = 64;
constexpr std::size_t kMaxScaledUnit = std::size_t(4) << 20;
std::size_t scaled_unit(std::size_t unit, std::size_t call_bytes, std::size_t chunk_bytes);

// Across hosts on fast links (coll_topoar_unit_time): what a link of
// `rate` bytes/s carries in `unit_time` seconds, as the nearest power of
// two, at most kMaxLinkUnit, where that is at least kMinLinkGrowth times
// `unit`; else `unit` (0 stays 0; rate or unit_time 0: `unit`).  With
// 32 KiB and 200 us: unchanged up to about 5 Gbit/s, 256 KiB at 10 Gbit/s,
// 1 MiB from about 40 Gbit/s.  Why not less growth: on unshaped links
// (five ranks on two cores) 128 KiB units gained half of what 256 KiB did,
// and a 4 Gbit/s link with a 64 KiB token bucket, which the probes read at
// 2 Gbit/s, ran 1.3-1.5x slower with 64 KiB units than with 32 KiB.
constexpr std::size_t kMaxLinkUnit = std::size_t(1) << 20;
constexpr std::size_t kMinLinkGrowth = 4;
std::size_t link_unit(std::size_t unit, double rate, double unit_time);

// Elements of one step: segment_elems (0: whole operations) capped so that
// no message exceeds kMaxMessageBytes.
std::size_t step_elems(std::size_t segment_elems, std::size_t elem_size);
// A segment size in bytes as elements: 0 stays 0 (whole operations), else at
// least one element.
std::size_t segment_elems_of(std::size_t segment_bytes, std::size_t elem_size);

// One rank's schedule compiled for execution: steps with their
// dependencies.  Built once per (plan, segment size) and reused per call.
struct ExecProgram {
    struct Step {
        OpKind kind;
        Operand order;
        int peer;
        int round;
        std::size_t offset, count;       // elements
        std::size_t slot = 0;            // scratch offset (elements), receives
        std::uint32_t chan = 0;          // (peer, send or receive): see channels
        bool sync = false;               // send: synchronous, under send_credit
        std::vector<std::uint32_t> deps; // steps that must be finished first
    };
    std::vector<Step> steps;             // schedule order
    std::vector<std::size_t> round_begin;// first step of each round (+ end)
    std::size_t scratch_elems = 0;
    // Rounds open at once (flight_window; kWindowRounds without a bound).
    int window = kWindowRounds;
    // Under a flight bound, sends to a peer on another host (`remote` of
    // compile_schedule) that receives at least kCreditFlights x the bound
    // in the call are synchronous (done once the receiver matched them, so
    // done means delivered) and at most send_credit of them are posted at
    // once: flight_bytes / the step size, at least kMinSendCredit, at most
    // kMaxSendCredit (0: no bound, every send standard).
    int send_credit = 0;
    // Receives that land straight in the buffer: copies with no dependency
    // (nothing earlier reads or writes their range).
    std::vector<char> direct;
    // Channels: one per (peer, direction), numbered 2 * (index of the peer
    // among the rank's distinct peers) + (1 for sends).  A channel's steps
    // are posted in schedule order (receives by round entry, sends by the
    // per-peer order rule), which the executor uses to poll only the oldest
    // request of each channel instead of every posted one.
    std::size_t num_chans = 0;
};

// flight_bytes: the flight bound (flight_bytes_for); 0 keeps kWindowRounds.
// remote[peer] != 0: the peer is on another host (nullptr: none is); with a
// flight bound, sends to it are synchronous and credited (send_credit).
ExecProgram compile_schedule(const RankSchedule& schedule, std::size_t segment_elems, std::size_t elem_size,
                             std::size_t flight_bytes = 0, const std::vector<char>* remote = nullptr);

// What the policy asks of whoever moves the data.  Steps are numbered by
// SchedulePolicy (first_step(rank) + index in the rank's ExecProgram).
class ScheduleDriver {
public:
    virtual ~ScheduleDriver() = default;
    // Post the receive of `step`.  Returns true when its message is complete
    // already (it had arrived before): the policy treats it as arrived now.
    virtual bool post_recv(std::uint32_t step) = 0;
    virtual void post_send(std::uint32_t step) = 0;
    // Reduce or copy the received `step` into the buffer.  Returns true when
    // done; false when the driver calls SchedulePolicy::applied(step) later.
    virtual bool apply(std::uint32_t step) = 0;
    // Every step of `rank` is finished.
    virtual void rank_finished(int /*rank*/) {}
};

// One decision or completion, as SchedulePolicy saw it (for tests: the
// executor and the model must produce the same sequence).
struct ScheduleEvent {
    enum Kind : std::uint8_t { post_recv, post_send, apply, arrived, send_done, applied };
    Kind kind;
    int rank;
    std::uint32_t step;  // the rank's own step index (ExecProgram order)
    bool operator==(const ScheduleEvent& o) const { return kind == o.kind && rank == o.rank && step == o.step; }
    bool operator!=(const ScheduleEvent& o) const { return !(*this == o); }
};
const char* to_string(ScheduleEvent::Kind k);

// The state of the steps of one or more ranks (the executor has one, the
// model all of a plan's), and the rules above.  Event-driven: the driver
// reports completions, the policy answers with post/apply calls at once.
// Steps of all ranks live in flat arrays (the model replays millions).
class SchedulePolicy {
public:
    enum class State : std::uint8_t { waiting, posted, arrived, applying, finished };

    // Forgets every rank (keeps the storage for the next call).
    void clear();
    // Appends one rank (rank number = ranks added before); its steps are
    // numbered from num_steps() on.  credit false: its synchronous sends
    // (ExecProgram::Step::sync) are not held to send_credit (the executor
    // then posts them as standard sends; coll_topoar_send_credit).
    Status add_rank(const ExecProgram& program, bool credit = true);
    // Opens every rank's first window, in rank order.
    void start(ScheduleDriver* driver);

    // Completions reported by the driver.
    void send_done(std::uint32_t step);  // the transport finished a send
    void arrived(std::uint32_t step);    // a posted receive's message is in
    void applied(std::uint32_t step);    // an apply() that returned false is done

    int num_ranks() const { return static_cast<int>(ranks_.size()); }
    std::uint32_t num_steps() const { return static_cast<std::uint32_t>(steps_.size()); }
    std::uint32_t first_step(int rank) const { return round_start_[ranks_[static_cast<std::size_t>(rank)].round_base]; }
    State state(std::uint32_t step) const { return steps_[step].state; }
    bool done(int rank) const { return ranks_[static_cast<std::size_t>(rank)].done; }
    int current_round(int rank) const { return ranks_[static_cast<std::size_t>(rank)].cur; }
    // The steps of the open rounds of `rank`: [window_begin, window_end).
    std::uint32_t window_begin(int rank) const;
    std::uint32_t window_end(int rank) const;

    // Records every decision and completion into *trace (nullptr: off).
    void set_trace(std::vector<ScheduleEvent>* trace) { trace_ = trace; }

private:
    struct Step {
        std::uint32_t next_send = 0;  // send: the rank's next send to the same peer (kNone)
        std::uint32_t deps_left = 0;  // dependencies not finished yet
        std::uint32_t chan = 0;       // send: its (rank, peer) in chan_out_
        std::int32_t round = 0;       // the rank's round index
        std::int32_t rank = 0;
        OpKind kind = OpKind::send;
        State state = State::waiting;
        bool in_order = false;        // send: the earlier sends to its peer are posted
    };
    struct Rank {
        std::uint32_t round_base = 0;  // its rounds' first steps in round_start_ (and the end)
        std::uint32_t left_base = 0;   // its rounds in round_left_
        int nrounds = 0;
        int window = kWindowRounds;    // rounds open at once (ExecProgram::window)
        int cur = 0;                   // lowest round not finished
        bool done = false;
    };

    bool sendable(std::uint32_t g) const {
        const Step& s = steps_[g];
        const Rank& rk = ranks_[static_cast<std::size_t>(s.rank)];
        return s.state == State::waiting && s.in_order && s.deps_left == 0 && s.round < rk.cur + rk.window &&
               (chan_credit_[s.chan] == 0 || chan_out_[s.chan] < chan_credit_[s.chan]);
    }
    void enter_round(int rank, int round);
    void post_send(std::uint32_t g);
    void post_recv(std::uint32_t g);
    void try_apply(std::uint32_t g);
    void drain();
    void note(ScheduleEvent::Kind k, std::uint32_t g) {
        if (trace_) {
            const int r = steps_[g].rank;
            trace_->push_back(ScheduleEvent{k, r, g - first_step(r)});
        }
    }

    std::vector<Step> steps_;
    std::vector<std::uint32_t> dep_off_{0}, dependents_;  // CSR: who waits for each step
    std::vector<std::uint32_t> round_start_, round_left_;
    std::vector<Rank> ranks_;
    std::vector<std::uint32_t> work_;  // steps finishing now
    // Per (rank, peer) of its sends: posted and not done; the most allowed
    // (ExecProgram::send_credit where the sends are synchronous, else 0: no bound).
    std::vector<std::uint32_t> chan_out_, chan_credit_;
    std::vector<std::uint32_t> last_send_, peer_chan_, cnt_;  // add_rank scratch
    ScheduleDriver* driver_ = nullptr;
    bool draining_ = false;
    std::vector<ScheduleEvent>* trace_ = nullptr;
};

}  // namespace topoar
