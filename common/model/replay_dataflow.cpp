// The dataflow replay of the cost model (replay.hpp): the executor's
// SchedulePolicy over the modelled network.
#include "model/replay.hpp"

#include <algorithm>
#include <climits>
#include <sstream>
#include <string>

namespace topoar {
namespace model {

namespace {

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

// The executor's steps over the network (the top of replay.hpp).
class DataflowReplay final : public NetworkClient, public ScheduleDriver {
public:
    DataflowReplay(Network& net, const Plan& plan, std::size_t elem_size, const CostParams& params,
                   Prediction* out, std::vector<ScheduleEvent>* trace)
        : net_(net), plan_(plan), elem_size_(elem_size), params_(params), out_(out), trace_(trace),
          msg_cpu_(params.overhead * applied_cpu_share(params)) {
        net_.set_client(this);
    }
    Status run(Prediction* out);

    // NetworkClient
    int ready_front(int box, double t, double* bytes) override;
    void drained(int box, int msg, double t) override;
    // ScheduleDriver
    bool post_recv(std::uint32_t g) override;
    void post_send(std::uint32_t g) override;
    bool apply(std::uint32_t g) override;
    void rank_finished(int r) override { out_->rank_time[static_cast<std::size_t>(r)] = now_; }

private:
    Status build_dataflow();
    int rank_of(const DStep& s) {
        const Box& b = net_.box(s.box);
        return s.kind == OpKind::send ? b.src : b.dst;
    }

    Network& net_;
    const Plan& plan_;
    std::size_t elem_size_;
    CostParams params_;
    Prediction* out_;
    std::vector<ScheduleEvent>* trace_;
    double msg_cpu_;  // a rank's CPU per message sent or received (CostParams::message_cpu_share)
    // Steps of all ranks, per step a time (send: posted, then handshake
    // done; receive: posted), per rank its CPU; the policy.
    std::vector<DStep> steps_;
    std::vector<double> time_;
    std::vector<DRank> dranks_;
    SchedulePolicy policy_;
    double now_ = 0;  // the simulation clock, for the policy's calls
    std::size_t events_ = 0;
};

}  // namespace

// Every rank's schedule compiled by the executor's own compile_schedule and
// handed to the executor's SchedulePolicy, so the steps, their dependencies
// and the decisions are the ones that run; the ExecProgram of a rank is
// dropped once copied.  Messages are matched here once: the k-th send from
// a to b pairs with b's k-th receive from a (both sides post them in
// schedule order, and MPI does not overtake).
Status DataflowReplay::build_dataflow() {
    const int p = plan_.nranks;
    const std::size_t seg_elems = segment_elems_of(params_.segment_bytes, elem_size_);  // as Engine::plan_for
    const std::size_t flight = flight_bytes_for(
        params_.flight_bytes, static_cast<int>(net_.topology().nodes_at(Level::node).size()));
    std::size_t total = count_steps(plan_, elem_size_, params_.segment_bytes);
    if (total >= static_cast<std::size_t>(INT32_MAX))
        return Status::invalid("cost model: " + std::to_string(total) + " executor steps are too many to simulate");
    steps_.reserve(total);
    dranks_.assign(static_cast<std::size_t>(p), DRank{});
    policy_.clear();
    policy_.set_trace(trace_);
    std::vector<std::vector<std::uint32_t>> box_sends, box_recvs;  // per box, in schedule order
    // As Engine::plan_for: under a flight bound, each rank's peers on other
    // hosts (every rank's host looked up once, not once per pair).
    std::vector<int> host;
    std::vector<char> remote;
    if (flight) {
        host.resize(static_cast<std::size_t>(p));
        for (int q = 0; q < p; ++q) host[static_cast<std::size_t>(q)] = net_.topology().node_of_rank(q);
    }
    for (int r = 0; r < p; ++r) {
        if (flight) {
            remote.assign(static_cast<std::size_t>(p), 0);
            for (int q = 0; q < p; ++q)
                remote[static_cast<std::size_t>(q)] = host[static_cast<std::size_t>(q)] != host[static_cast<std::size_t>(r)];
        }
        ExecProgram prog = compile_schedule(plan_.ranks[static_cast<std::size_t>(r)], seg_elems, elem_size_, flight, &remote);
        const std::uint32_t base = static_cast<std::uint32_t>(steps_.size());
        if (!policy_.add_rank(prog).is_ok()) return Status::invalid("cost model: too many step dependencies to simulate");
        for (std::size_t i = 0; i < prog.steps.size(); ++i) {
            const ExecProgram::Step& st = prog.steps[i];
            DStep d;
            d.bytes = static_cast<std::uint32_t>(st.count * elem_size_);
            d.kind = st.kind;
            const std::uint32_t g = base + static_cast<std::uint32_t>(i);
            if (st.kind == OpKind::send) {
                d.box = net_.box_of(r, st.peer);
                if (box_sends.size() <= static_cast<std::size_t>(d.box)) box_sends.resize(net_.num_boxes());
                box_sends[static_cast<std::size_t>(d.box)].push_back(g);
            } else {
                d.box = net_.box_of(st.peer, r);
                if (box_recvs.size() <= static_cast<std::size_t>(d.box)) box_recvs.resize(net_.num_boxes());
                box_recvs[static_cast<std::size_t>(d.box)].push_back(g);
            }
            steps_.push_back(d);
        }
    }
    box_sends.resize(net_.num_boxes());
    box_recvs.resize(net_.num_boxes());
    for (std::size_t b = 0; b < net_.num_boxes(); ++b) {
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
void DataflowReplay::post_send(std::uint32_t g) {
    DStep& s = steps_[g];
    // The sender's CPU posts it (its share of the overhead) after what it
    // has queued; the message leaves then (ready_front waits for it).
    // Without a share the send goes at once, as before.
    time_[g] = now_;
    if (msg_cpu_ > 0) {
        DRank& dr = dranks_[static_cast<std::size_t>(rank_of(s))];
        dr.cpu = std::max(dr.cpu, now_) + msg_cpu_;
        time_[g] = dr.cpu;
    }
    net_.box(s.box).wire.push(static_cast<int>(g));
    net_.try_start_wire(s.box, now_);
}

// The policy posts receive g: done at once when eager data waits in the
// unexpected queue; else a rendezvous send may have been waiting for it.
bool DataflowReplay::post_recv(std::uint32_t g) {
    DStep& s = steps_[g];
    if (s.early) return true;
    time_[g] = now_;
    if (s.partner != kNone && policy_.state(s.partner) == SchedulePolicy::State::posted && !steps_[s.partner].handshake)
        net_.try_start_wire(steps_[s.partner].box, now_);
    return false;
}

// The policy applies receive g: reductions queue on the rank's CPU, copies
// are free.
bool DataflowReplay::apply(std::uint32_t g) {
    DStep& s = steps_[g];
    if (s.kind == OpKind::recv_reduce) {
        DRank& dr = dranks_[static_cast<std::size_t>(rank_of(s))];
        dr.reduced += s.bytes;
        const double cost = params_.gamma * s.bytes;
        if (cost > 0) {
            dr.cpu = std::max(dr.cpu, now_) + cost;
            net_.push(dr.cpu, kApplied, g);
            return false;
        }
    }
    return true;
}

// The pair's next message goes when the previous one has drained; an eager
// one at once, a rendezvous one after the handshake: the request reaches
// the receiver (one latency after the send was posted), the receiver
// answers once its receive is posted, the answer takes a latency back.
int DataflowReplay::ready_front(int box_id, double t, double* bytes) {
    Box& b = net_.box(box_id);
    const std::uint32_t m = static_cast<std::uint32_t>(b.wire.front());
    DStep& s = steps_[m];
    if (s.bytes > params_.eager_bytes && !s.handshake) {
        if (s.partner == kNone || policy_.state(s.partner) == SchedulePolicy::State::waiting) return -1;  // no receive yet
        // Each leg is a message of its own: the path and both ends' CPU.
        const double leg = b.latency + 2 * msg_cpu_;
        double answer = std::max(time_[s.partner], time_[m] + leg);
        time_[m] = answer + leg + (net_.reverse_busy(b) ? params_.handshake_queue_delay : 0.0);
        s.handshake = true;
    }
    if (time_[m] > t) {  // posted later by the sender's CPU, or the handshake not done
        if (!b.armed) {
            b.armed = true;
            net_.push(time_[m], kWireReady, static_cast<std::uint32_t>(box_id));
        }
        return -1;
    }
    *bytes = static_cast<double>(s.bytes);
    return static_cast<int>(m);
}

// A send has drained: its message reaches the receiver one path latency
// later; the send is done.
void DataflowReplay::drained(int box_id, int m, double t) {
    const std::uint32_t g = static_cast<std::uint32_t>(m);
    if (steps_[g].partner != kNone)
        net_.push(t + net_.box(box_id).latency, kArrive, steps_[g].partner);
    now_ = t;
    // A synchronous send (ExecProgram::Step::sync) is done here too: the
    // receiver's match answer, a path latency there and one back, is not
    // modelled (it moved auto's tables where links are slow to small
    // segments; the pair's wire sends one message after the other anyway).
    policy_.send_done(g);
}

Status DataflowReplay::run(Prediction* out) {
    TOPOAR_TRY(build_dataflow());
    const int p = plan_.nranks;
    now_ = 0;
    policy_.start(this);
    double now = 0;
    net_.recompute_rates(now);
    while (!net_.queue().empty()) {
        now = net_.queue().min_time();
        now_ = now;
        while (net_.queue().has_now()) {
            Event e = net_.queue().pop();
            switch (e.tag & kTypeMask) {
            case kFlowEnd:
                if (!net_.flow_end(e, now)) continue;  // superseded by a rate change
                break;
            case kArrive:
                if (msg_cpu_ > 0) {  // the receiver's CPU takes it in after what it has queued
                    DRank& dr = dranks_[static_cast<std::size_t>(rank_of(steps_[e.id]))];
                    dr.cpu = std::max(dr.cpu, now) + msg_cpu_;
                    net_.push(dr.cpu, kHandled, e.id);
                    break;
                }
                [[fallthrough]];
            case kHandled:
                if (policy_.state(e.id) == SchedulePolicy::State::waiting)  // before its receive is posted (eager)
                    steps_[e.id].early = true;
                else
                    policy_.arrived(e.id);
                break;
            case kApplied:
                policy_.applied(e.id);
                break;
            case kWireReady:
                net_.box(static_cast<int>(e.id)).armed = false;
                net_.try_start_wire(static_cast<int>(e.id), now);
                break;
            case kRecompute:  // recompute_rates below does the work
                net_.recompute_due();
                break;
            default:
                break;
            }
            ++events_;
        }
        net_.recompute_rates(now);
    }
    out->steps = steps_.size();
    out->events = events_;
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

Status replay_dataflow(Network& net, const Plan& plan, std::size_t elem_size, const CostParams& params,
                       Prediction* out, std::vector<ScheduleEvent>* trace) {
    DataflowReplay replay(net, plan, elem_size, params, out, trace);
    return replay.run(out);
}

}  // namespace model
}  // namespace topoar
