// topoar engine: the per-communicator object behind the C interface.
//
// Set-up (once, collective data already gathered by the glue) builds the
// topology; every call then looks its plan up in a small cache keyed by
// (algorithm, count) and runs it.  Plans are only rebuilt for a new count.
// A facade over its parts (engine/): network set-up's caches, selection
// (which algorithm; the contest), adaptation (when to measure the links
// again) and the plan cache; it keeps the topology and runs calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "config/engine_config.hpp"
#include "config/params.hpp"
#include "core/algorithm.hpp"
#include "decide/decision.hpp"
#include "decide/model_check.hpp"
#include "decide/route.hpp"
#include "decide/trials.hpp"
#include "engine/adaptation.hpp"
#include "engine/network_setup.hpp"
#include "engine/plan_cache.hpp"
#include "engine/selection.hpp"
#include "exec/device_executor.hpp"
#include "exec/executor.hpp"
#include "model/default_table.hpp"
#include "model/device_model.hpp"
#include "plan/plan.hpp"
#include "planners/planner_nccl_hier.hpp"
#include "planners/planners.hpp"
#include "status.hpp"
#include "topology/discovery.hpp"
#include "topology/topology.hpp"

namespace topoar {

class CallOperation;  // engine/call_operation.hpp
struct HostLayout;    // planners/planner_nccl_hier.hpp

// Origin, Decision: engine/selection.hpp.

// prepare()'s answer: the call's route (decide/route.hpp) and what it
// runs.  Its plans are handles (engine/plan_cache.hpp): they stay valid as
// long as the PreparedCall, whatever later prepare() calls drop from the
// cache.
struct PreparedCall {
    Route route = Route::none;
    // For verbose output (static text or the engine's; never needed to
    // run): why the call is handed down, or why nccl_hier does not run.
    const char* why = nullptr;
    Algorithm algorithm = Algorithm::automatic;
    // The algorithm of `plan`: `algorithm` itself, or for a device-only
    // algorithm (nccl) the built-in choice run when it cannot be used.
    Algorithm plan_algorithm = Algorithm::automatic;
    Origin origin = Origin::builtin;
    const char* rule = nullptr;         // Origin::rule: "file:line"
    bool fell_through = false;          // the rule's algorithm cannot plan
                                        // here: the built-in choice runs
    MemType mem = MemType::host;
    std::size_t count = 0, elem_size = 0;
    // Prepared for host memory on the host routes (staged device calls
    // included), for device memory on the device ones.
    PlanHandle plan;                    // empty: nothing to move (count 0, one rank)
    // Large calls (EngineConfig::chunk_size): `plan` is for chunk_count
    // elements and runs on [0, c), [c, 2c), ...; tail_plan (or nullptr)
    // covers the last count % chunk_count.  chunk_count == count: one run.
    std::size_t chunk_count = 0;
    PlanHandle tail_plan;
    // Route::nccl_hier: its plan for this rank (per chunk, and for the tail
    // as above).
    HierHandle hier;
    HierHandle hier_tail;
    // auto's small-message contest (decide/trials.hpp): this call's turn
    // (trial.cls < 0: none).  While the class is undecided (the contest
    // routes) the caller times the call, handed down or run, and reports
    // it with Engine::note_trial.
    SizeTrials::Turn trial;
    // auto's large-message check (decide/model_check.hpp): this call's turn
    // (check.cls < 0: none).  A timed turn is timed by run() and pooled
    // there (Engine::note_check; collective at that call).
    ModelCheck::Turn check;
    // One chunk of a small plan on a host route (host or contest_host) that
    // online adaptation does not time: plan->fast runs it
    // (exec/fast_executor.hpp), bit-identical to the host executor.
    bool fast = false;
    // The send credit (coll_topoar_send_credit): whether the plan's
    // synchronous sends are held to it, and whether run() reads the host's
    // TCP retransmissions around the call (auto until they were seen).
    bool credit = true;
    bool watch_retransmissions = false;
    std::size_t num_chunks() const {
        return chunk_count ? (count + chunk_count - 1) / chunk_count : 0;
    }
};

// plan_options, table_options: engine/selection.hpp.

// How a call of `count` elements is cut: chunks of chunk_count elements
// (EngineConfig::chunk_size; count itself when not cut), and the segment
// and pipelining units its plans use from segment_bytes, the setting before
// scaling (a rule's own segment size is used as written).  Large host calls
// scale the pipelining unit up (scaled_unit in exec/schedule_policy.hpp:
// fewer plan steps); they scale the segment, the size of one message, only
// on one host (hosts <= 1), where shared memory moves large messages
// faster.  Across hosts the segment stays as set: over TCP a segment above
// the eager limit waits for a rendezvous handshake queued behind the data
// in flight (2 hosts at 1 Gbit/s, tree, 16 MiB: 0.27 s with 64 KiB segments
// against 0.14 s with 32 KiB; docs/large-messages.md).  The engine and the
// simulator (topoar_sim) cut alike.
struct CallUnits {
    std::size_t chunk_count = 0, segment_bytes = 0, pipeline_bytes = 0;
};
CallUnits call_units(const EngineConfig& cfg, std::size_t count, std::size_t elem_size, MemType mem,
                     std::size_t segment_bytes, int hosts);

class Engine {
public:
    Engine(int rank, int size, EngineConfig cfg);
    ~Engine();

    // Collective when io is given and the links must be measured (every
    // rank calls it with the same gathered records).
    Status setup(const std::vector<RankInfo>& ranks, SetupIo* io = nullptr);
    bool ready() const { return ready_; }
    int rank() const { return rank_; }
    int size() const { return size_; }
    const Topology& topology() const { return topology_; }

    // The algorithm that runs for a message of `bytes` bytes (host memory).
    Algorithm choose(std::size_t bytes) const { return decide(bytes, MemType::host).algorithm; }
    // Selection::decide (engine/selection.hpp): forced, rule, cost model,
    // built-in default; a host call of auto on one host is handed down.
    Decision decide(std::size_t bytes, MemType mem) const { return selection_.decide(bytes, mem); }
    // Whether a host call of `bytes` bytes is handed down.
    bool hands_down(std::size_t bytes) const {
        return decide(bytes, MemType::host).origin == Origin::hand_down;
    }
    // hands_down() at every size: no rules file can claim a call.
    bool hands_down_all() const { return hands_down(0) && selection_.rules().empty(); }
    // What the glue can do with device buffers here (decide/route.hpp),
    // registered once it set them up; device calls' routes follow from it.
    void set_device_caps(const DeviceCaps& caps) { device_caps_ = caps; }
    const DeviceCaps& device_caps() const { return device_caps_; }
    const DecisionTable& rules() const { return selection_.rules(); }
    // The cost-model table and what its construction predicted (empty when
    // not built: forced algorithm, model_table off, one host, one rank,
    // or above the table's rank limit).
    const DecisionTable& model_table() const { return selection_.model_table(); }
    const DecisionTable& device_table() const { return selection_.device_table(); }
    const DefaultTableReport& model_report() const { return selection_.model_report(); }
    double model_setup_seconds() const { return selection_.model_setup_seconds(); }
    // Where the links between hosts came from; for measured ones the
    // network and how long the probes took (0 when cached).
    NetworkSource network_source() const { return network_source_; }
    const MeasuredNetwork& measured_network() const { return measured_; }
    double probe_seconds() const { return probe_seconds_; }
    // The cost model's software cost per message on this communicator:
    // coll_topoar_model_overhead where the user set it or nothing was
    // measured, else what the probes measured (MeasuredNetwork::
    // message_cost); the same on every rank.
    double model_overhead() const { return model_overhead_; }
    // One paragraph for verbose output: the source, and what was measured.
    std::string describe_network() const;
    // The table came from the process's cache (another communicator of the
    // same shape built it).
    bool model_table_cached() const { return selection_.model_table_cached(); }
    const CommShape& shape() const { return selection_.shape(); }
    // The engine's parts (engine/): what decides a call's algorithm, and
    // online adaptation.
    const Selection& selection() const { return selection_; }
    // Tests: the contests' outcomes go to and come from `store` instead of
    // the process's (simulated ranks in one process, each its own).
    void use_outcome_store(OutcomeStore* store) { selection_.use_outcome_store(store); }
    // MPI_Barrier's kind kept for communicators of this shape
    // (Selection::barrier_outcome, keep_barrier_outcome).
    int barrier_outcome() const { return selection_.barrier_outcome(); }
    void keep_barrier_outcome(int kind) { selection_.keep_barrier_outcome(kind); }
    const Adaptation& adaptation() const { return adaptation_; }
    // What decided a prepared call, for people: "forced", "cost model",
    // "default", a rule's "file:line", or "FILE:LINE (ALG unsupported
    // here) -> default" when a rule's algorithm could not plan on this
    // communicator and the built-in choice ran.
    static std::string describe_origin(const PreparedCall& call);

    // Asked once per call: decides the route, and plans on first use of a
    // size.  A hand-down is an answer (its route), not an error; an error
    // that is Code::unsupported was decided identically on every rank
    // before anything moved (the caller falls back).  pair: what reduces
    // the call's (op, type) on the device (device calls), and whether the
    // previous module's result could differ from topoar's (host calls:
    // PairCaps::previous_differs; every rank passes the same, the op and
    // the type being the call's).
    // kind: how a host call was made (decide/route.hpp, CallKind).
    Status prepare(std::size_t count, std::size_t elem_size, MemType mem, PreparedCall* call,
                   const PairCaps& pair = PairCaps{}, const CallKind& kind = CallKind{});
    // In-place all-reduce of buf with a prepared call of a host route
    // (host executor; runs_on_host(call.route)).
    // io: for online adaptation (the ranks' agreement and the probes);
    // nullptr: no adaptation on this call.
    Status run(const PreparedCall& call, void* buf, Transport& transport, Reducer& reducer, SetupIo* io = nullptr);
    // What online adaptation did since the last call of this (empty:
    // nothing), for verbose output; and how often it re-measured.
    std::string take_notice();
    int replans() const { return adaptation_.replans(); }
    // Online adaptation after a timed call of `seconds` (run() calls it;
    // public for tests).  Collective at window ends: every rank reaches it
    // at the same call (the calls are collective and the timing rule is
    // alike).
    Status note_call_time(const PreparedCall& call, double seconds, SetupIo& io);
    // A turn of the small-message contest took `seconds` on this rank
    // (call.trial set and undecided; handed down or run).  Collective at
    // the class's last turn, which every rank reaches at the same call:
    // one allgather of the means, then the winner runs the class.
    Status note_trial(const PreparedCall& call, double seconds, SetupIo& io);
    // A timed turn of the large-message check took `seconds` on this rank
    // (call.check timed; run() calls it; public for tests).  Collective at
    // a pool turn: one allgather of one number; where the choice ran more
    // than kOwn slower than predicted, the plans ranked next are predicted
    // for this call's size once per class, split over the ranks (one more
    // allgather; Selection::note_check, decide/model_check.hpp).
    Status note_check(const PreparedCall& call, double seconds, SetupIo& io);
    // A prepared call of a device route (runs_on_device(call.route)) on
    // device memory, through a stream-ordered device transport
    // (device_executor.hpp): `plan`, or for Route::nccl_hier its plans.
    Status run_device(const PreparedCall& call, void* buf, DeviceTransport& transport);
    // nccl_hier's view of this rank (set up): its host's index and its own
    // index there, or unsupported (no host level).
    Status host_position(int* host, int* local, int* hosts) const;
    // The hosts of the set-up topology (planners/planner_nccl_hier.hpp:
    // hosts in topology order, each host's ranks ascending), or
    // unsupported (no host level).  host_position reads the same layout.
    Status host_layout_of(HostLayout* out) const;
    // Whether online adaptation times a host call (run() then measures it).
    bool timed(const PreparedCall& call) const;
    // Whether the next prepare() of the same count, element size and kind
    // gives the same answer as long as generation() stays: a host route
    // outside the contest and the check (or a class the check decided and
    // no longer watches), not timed.  The C interface then hands back
    // the call it prepared last without asking again (topoar_engine_prepare).
    bool repeatable(const PreparedCall& call) const;
    // Changes whenever an answer of prepare() may change: set-up, links
    // measured again, a contest turn reported.
    std::uint64_t generation() const { return generation_; }
    // prepare() then run() (a hand-down route is Code::unsupported with
    // the reason); for tests and tools.
    Status allreduce(void* buf, std::size_t count, std::size_t elem_size, Transport& transport,
                     Reducer& reducer, Algorithm* used);

private:
    Status measure_network(const std::vector<RankInfo>& ranks, SetupIo& io, bool fresh = false);
    Status plan_for(Algorithm alg, std::size_t count, std::size_t elem_size, std::size_t segment_bytes,
                    std::size_t pipeline_bytes, MemType mem, PlanHandle* out);

    int rank_, size_;
    EngineConfig cfg_;
    // cfg_ with its units fit to the links (units_for_links, at set-up and
    // after links are measured again): segment, pipelining unit, flight
    // bound of every host plan, and the cost model's.
    EngineConfig units_;
    void fit_units();
    bool ready_ = false;
    Topology topology_;
    NetworkSource network_source_ = NetworkSource::single_host;
    MeasuredNetwork measured_;
    double probe_seconds_ = 0;
    double model_overhead_ = 0;  // model_overhead()
    std::string probe_problem_;  // why measured links were not used
    std::vector<RankInfo> ranks_;  // the set-up records (re-measuring needs them)
    Selection selection_;          // rules, tables, the contest (engine/selection.hpp)
    Adaptation adaptation_;        // online adaptation's windows (engine/adaptation.hpp)
    std::string notice_;           // take_notice(): the contest's and adaptation's news
    DeviceCaps device_caps_;
    PlanCache plans_;  // this communicator's plans (engine/plan_cache.hpp)
    // Engine::run's watch of the host's TCP retransmissions around a call
    // (PreparedCall::watch_retransmissions; watch_end's answer, -1: not
    // read): kCreditRetransmits or more turn the process's send credit on
    // (exec/tcp_retransmissions.hpp).
    void note_retransmissions(const PreparedCall& call, std::int64_t retransmitted);
    std::string hier_why_;  // why the last nccl_hier call could not plan (PreparedCall::why)
    Status hier_plan_for(std::size_t count, std::size_t elem_size, std::size_t pipeline_bytes, HierHandle* out);
    // The operation blocking calls run in, reused (its scratch and
    // vectors stay); nonblocking ones have their own (engine/call_operation.hpp).
    std::unique_ptr<CallOperation> blocking_;
    std::uint64_t generation_ = 0;  // generation()
};

}  // namespace topoar
