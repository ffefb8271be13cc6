#include "engine.hpp"

#include <algorithm>
#include <chrono>
#include <new>
#include <map>
#include <sstream>
#include <mutex>
#include <stdexcept>

#include "core/units.hpp"
#include "engine/call_operation.hpp"
#include "exec/tcp_retransmissions.hpp"
#include "planners/planners.hpp"

namespace topoar {

Engine::Engine(int rank, int size, EngineConfig cfg)
    : rank_(rank), size_(size), cfg_(std::move(cfg)), units_(cfg_), selection_(cfg_), adaptation_(cfg_, rank, size) {}

// Links measured or described: units that fit them; assumed (or one
// host): the units as set.
void Engine::fit_units() {
    const bool known = network_source_ == NetworkSource::measured || network_source_ == NetworkSource::cached ||
                       network_source_ == NetworkSource::described;
    units_ = known ? units_for_links(cfg_, topology_) : cfg_;
    selection_.use_units(units_);
}

Engine::~Engine() = default;

static const char* const kTrialTurn = "small-message trial: the previous module's turn";
static const char* const kTrialWon = "small-message trial: the previous module was measured fastest for this size";
static const char* const kCheckTurn = "model check: the previous module's turn";
static const char* const kCheckWon =
    "model check: every plan ran far slower than predicted and the previous module faster for this size";
static const char* const kNoHostComms = "its per-host NCCL communicator could not be made";

// The probes (topology/probe.hpp) and what they show (topology/measured.hpp).
// Every rank takes part in the same collective steps whatever happens, so
// a failure on one rank leaves no other waiting: its row says it failed
// and all ranks then keep the assumed links alike.
Status Engine::measure_network(const std::vector<RankInfo>& ranks, SetupIo& io, bool fresh) {
    // Hosts in order of their lowest rank, as discovery groups them.
    std::vector<HostRanks> groups;
    TOPOAR_TRY(group_hosts(ranks, &groups));
    std::vector<std::string> names;
    std::vector<double> nic;  // per host: the fastest port any of its ranks saw
    for (const HostRanks& g : groups) {
        double port = 0;
        for (int r : g.ranks) port = std::max(port, ranks[static_cast<std::size_t>(r)].nic_bandwidth);
        nic.push_back(port);
        names.push_back(g.name);
    }
    const int hosts = static_cast<int>(names.size());
    // Every rank advertises the same measured network, so every rank finds
    // it and restricts it alike.
    const std::uint64_t d = ranks[0].probe_digest;
    bool same = d != 0 && !fresh;
    for (const RankInfo& r : ranks) same = same && r.probe_digest == d;
    MeasuredNetwork net;
    bool found = same && find_network(d, names, &net), shared = false;
    if (!found && !fresh) {
        TOPOAR_TRY(share_network(names, rank_, size_, io, &net, &shared));
        if (shared) remember_network(net);
    }
    if (found || shared) {
        network_source_ = NetworkSource::cached;
    } else {
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<double> row;
        Status probed = run_probe(*io.transport, rank_, groups, cfg_.probe_options, io.allgather, &row);
        const std::size_t len = probe_row_size(hosts);
        std::vector<double> rows(len * static_cast<std::size_t>(size_), 0.0);
        TOPOAR_TRY(io.allgather(row.data(), len * sizeof(double), rows.data()));
        probe_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ProbeMatrix m;
        if (!combine_probe_rows(rows, size_, hosts, &m)) {
            probe_problem_ = probed ? "the probes failed on another rank" : "the probes failed: " + probed.message();
            return Status::ok();  // links stay assumed, on every rank alike
        }
        TOPOAR_TRY(infer_network(m, names, &net, nic));
        remember_network(net, fresh);
        network_source_ = NetworkSource::measured;
    }
    // The software cost per message as measured, unless the user set one.
    const double cost = net.message_cost();
    model_overhead_ = cfg_.model_overhead_given || !(cost > 0) ? cfg_.model_overhead : cost;
    Topology measured;
    TOPOAR_TRY(discover_measured(ranks, net, cfg_.discovery, model_overhead_, &measured));
    topology_ = std::move(measured);
    measured_ = std::move(net);
    return Status::ok();
}

std::string Engine::describe_network() const {
    std::ostringstream os;
    os << "links between hosts: " << to_string(network_source_);
    if (network_source_ == NetworkSource::measured) os << " (probes took " << probe_seconds_ * 1e3 << " ms)";
    if (!probe_problem_.empty()) os << "; not measured: " << probe_problem_;
    os << "\n";
    if (network_source_ == NetworkSource::measured || network_source_ == NetworkSource::cached) {
        os << measured_.describe();
        const double cost = measured_.message_cost();
        os << "  per-message software cost: ";
        if (cost > 0) os << human_latency(cost) << " measured";
        else os << "not measured";
        if (model_overhead_ != cost)
            os << "; the model uses " << human_latency(model_overhead_)
               << (cfg_.model_overhead_given ? " (coll_topoar_model_overhead)" : " (the assumed default)");
        os << "\n";
    }
    if (units_.segment_size != cfg_.segment_size || units_.pipeline_size != cfg_.pipeline_size ||
        units_.flight_size != cfg_.flight_size)
        os << "  units for these links (coll_topoar_unit_time): segment " << format_size(units_.segment_size)
           << ", pipeline " << format_size(units_.pipeline_size) << ", flight "
           << (units_.flight_size ? format_size(units_.flight_size) : std::string("none")) << "\n";
    return os.str();
}

Status Engine::setup(const std::vector<RankInfo>& ranks, SetupIo* io) {
    if (static_cast<int>(ranks.size()) != size_)
        return Status::internal("setup: got " + std::to_string(ranks.size()) + " rank records for " +
                                std::to_string(size_) + " ranks");
    // Again after a set-up without I/O (a nonblocking call's): from scratch,
    // the plans of the first one dropped (calls running keep theirs).
    ready_ = false;
    ++generation_;
    plans_.clear();
    network_source_ = NetworkSource::single_host;
    probe_problem_.clear();
    probe_seconds_ = 0;
    model_overhead_ = cfg_.model_overhead;
    TOPOAR_TRY(discover_topology(ranks, cfg_.discovery, &topology_));
    if (topology_.nodes_at(Level::node).size() <= 1) {
        // Within one host every message goes through shared memory: TCP's
        // assumed cost would make the model count messages only (a star of
        // p ranks looked cheaper than recursive doubling).
        if (!cfg_.model_overhead_given) model_overhead_ = assumed_host_overhead();
    } else {
        network_source_ = NetworkSource::assumed;
        if (network_described(ranks, cfg_.discovery)) {
            network_source_ = NetworkSource::described;
        } else if (!cfg_.probe) {
            probe_problem_ = "coll_topoar_probe is 0";
        } else if (cfg_.node_link_given) {
            probe_problem_ = "coll_topoar_node_link sets them";
        } else if (!io || !io->transport || !io->allgather) {
            probe_problem_ = "nothing to probe with";
        } else {
            TOPOAR_TRY(measure_network(ranks, *io));
        }
    }
    std::vector<int> per_node;
    for (int n : topology_.nodes_at(Level::node)) per_node.push_back(topology_.num_ranks_under(n));
    const CommShape shape =
        make_comm_shape(size_, per_node, static_cast<int>(topology_.nodes_at(Level::rack).size()));
    fit_units();
    TOPOAR_TRY(selection_.setup(topology_, size_, shape, io && io->allgather, model_overhead_, rank_));
    if (io && io->allgather) {
        // Outcomes of earlier communicators of this shape, where every rank
        // holds the same (engine/outcome_store.hpp).
        std::vector<int> held;
        for (const RankInfo& r : ranks) held.push_back(r.contest_outcomes);
        TOPOAR_TRY(selection_.agree_outcomes(held, *io));
    }
    if (network_source_ == NetworkSource::measured || network_source_ == NetworkSource::cached) ranks_ = ranks;
    ready_ = true;
    return Status::ok();
}

std::string Engine::take_notice() {
    std::string n;
    n.swap(notice_);
    return n;
}

Status Engine::note_call_time(const PreparedCall& call, double seconds, SetupIo& io) {
    if (!cfg_.adapt || ranks_.empty() || !runs_on_host(call.route) || call.plan == nullptr) return Status::ok();
    const double predicted =
        predicted_seconds(topology_, selection_.table_options().model, call.plan, call.tail_plan, call.num_chunks(),
                          call.elem_size);
    bool remeasure = false;
    TOPOAR_TRY(adaptation_.note(seconds, predicted, call.count * call.elem_size, io, &remeasure));
    if (!remeasure) return Status::ok();
    const auto t0 = std::chrono::steady_clock::now();
    TOPOAR_TRY(measure_network(ranks_, io, /*fresh=*/true));
    const std::string before = selection_.model_table().to_text("cost model");
    fit_units();
    TOPOAR_TRY(selection_.rebuild(topology_, model_overhead_));
    ++generation_;
    plans_.clear();  // calls holding plans keep them
    const double ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
    notice_ += "online adaptation: " + adaptation_.replanned(ms, describe_network(), before,
                                    selection_.model_table().empty() ? std::string()
                                                                     : selection_.model_table().to_text("cost model"));
    return Status::ok();
}

Status Engine::note_trial(const PreparedCall& call, double seconds, SetupIo& io) {
    ++generation_;  // the class may be decided now
    return selection_.note_trial(call.trial, seconds, io, &notice_);
}

Status Engine::note_check(const PreparedCall& call, double seconds, SetupIo& io) {
    ++generation_;  // the class may be decided now, or another plan's turn
    const CallUnits u =
        call_units(units_, call.count, call.elem_size, MemType::host, units_.segment_size, selection_.shape().nodes);
    const std::size_t chunk = u.chunk_count, tail = call.count % chunk;
    // A plan's prediction for this call, built as its turn would build it
    // (so a turn finds it in the plan cache); 0 where it cannot plan here.
    auto predict = [&](Algorithm a) -> double {
        PlanHandle p, t;
        if (!plan_for(a, chunk, call.elem_size, u.segment_bytes, u.pipeline_bytes, MemType::host, &p)) return 0;
        if (tail && !plan_for(a, tail, call.elem_size, u.segment_bytes, u.pipeline_bytes, MemType::host, &t))
            return 0;
        return predicted_seconds(topology_, selection_.table_options().model, p, t, call.num_chunks(),
                                 call.elem_size);
    };
    return selection_.note_check(call.check, seconds, call.count * call.elem_size, io, predict, &notice_);
}

bool Engine::timed(const PreparedCall& call) const {
    return cfg_.adapt && !ranks_.empty() && call.count * call.elem_size >= cfg_.adapt_min_bytes &&
           call.mem == MemType::host;
}

bool Engine::repeatable(const PreparedCall& call) const {
    return call.route == Route::host && call.mem == MemType::host && call.trial.cls < 0 &&
           (call.check.cls < 0 || (call.check.decided && !call.check.watched)) && !timed(call) &&
           !call.watch_retransmissions;  // prepared again: the credit may be on by now
}

std::string Engine::describe_origin(const PreparedCall& call) {
    std::string o = call.origin == Origin::rule && call.rule ? call.rule : origin_name(call.origin);
    if (!call.fell_through) return o;
    return o + " (" + algorithm_name(call.algorithm) + " unsupported here) -> default";
}

CallUnits call_units(const EngineConfig& cfg, std::size_t count, std::size_t elem_size, MemType mem,
                     std::size_t segment_bytes, int hosts) {
    CallUnits u;
    // A large call runs in chunks of at most chunk_size bytes, each a whole
    // all-reduce of its part: one plan (and one for the remainder) serves
    // every chunk, so plans, scratch and messages in flight are bounded by
    // the chunk (an all-reduce is element-wise: the parts are independent).
    u.chunk_count = count;
    if (cfg.chunk_size && elem_size && count > cfg.chunk_size / elem_size)
        u.chunk_count = std::max<std::size_t>(1, cfg.chunk_size / elem_size);
    // Host calls of many MiB pipeline in larger units (scaled_unit), and on
    // one host use larger messages too; across hosts a message stays at the
    // segment size of `cfg` (the engine passes its units fit to the links,
    // units_for_links).  Device plans have their own pipelining unit.
    const std::size_t bytes = count * elem_size, chunk_bytes = u.chunk_count * elem_size;
    if (mem == MemType::cuda) {
        u.segment_bytes = segment_bytes;
        u.pipeline_bytes = cfg.gpu_model.pipeline_bytes;
    } else if (hosts > 1) {
        // Across hosts the unit is also held to half the flight bound, so
        // at least two rounds stay open under it (flight_window).
        u.segment_bytes = segment_bytes;
        u.pipeline_bytes = scaled_unit(cfg.pipeline_size, bytes, chunk_bytes);
        if (cfg.flight_size && u.pipeline_bytes)
            u.pipeline_bytes = std::min(u.pipeline_bytes, std::max(cfg.pipeline_size, cfg.flight_size / 2));
    } else {
        u.segment_bytes = scaled_unit(segment_bytes, bytes, chunk_bytes);
        u.pipeline_bytes = scaled_unit(cfg.pipeline_size, bytes, chunk_bytes);
    }
    return u;
}

Status Engine::plan_for(Algorithm alg, std::size_t count, std::size_t elem_size, std::size_t segment_bytes,
                        std::size_t pipeline_bytes, MemType mem, PlanHandle* out) {
    const PlanCache::Key key(static_cast<int>(alg), count, elem_size, segment_bytes, pipeline_bytes,
                             static_cast<int>(mem));
    return plans_.get(key, [&](CompiledPlan* prepared) {
        PlanOptions opts = plan_options(units_, elem_size, mem);
        opts.pipeline_elems = pipeline_bytes ? std::max<std::size_t>(1, pipeline_bytes / elem_size) : 0;
        TOPOAR_TRY(make_plan(alg, topology_, count, rank_, opts, &prepared->plan));
        prepared->algorithm = alg;
        prepared->count = count;
        prepared->options = opts;
        std::size_t seg_elems = segment_bytes / elem_size;
        if (segment_bytes && seg_elems == 0) seg_elems = 1;
        const std::size_t flight = mem == MemType::host ? flight_bytes_for(units_.flight_size, selection_.shape().nodes) : 0;
        // Peers on other hosts: under the flight bound their sends are credited.
        std::vector<char> remote;
        if (flight) {
            remote.assign(static_cast<std::size_t>(topology_.num_ranks()), 0);
            const int home = topology_.node_of_rank(rank_);
            for (int r = 0; r < topology_.num_ranks(); ++r)
                remote[static_cast<std::size_t>(r)] = topology_.node_of_rank(r) != home;
        }
        prepared->program = compile_schedule(prepared->plan.of(rank_), seg_elems, elem_size, flight, &remote);
        prepared->credited = std::any_of(prepared->program.steps.begin(), prepared->program.steps.end(),
                                         [](const ExecProgram::Step& st) { return st.sync; });
        if (mem == MemType::host && fast_eligible(prepared->program, count * elem_size))
            prepared->fast = compile_fast(prepared->program, elem_size);
        return Status::ok();
    }, out);
}

Status Engine::prepare(std::size_t count, std::size_t elem_size, MemType mem, PreparedCall* call,
                       const PairCaps& pair, const CallKind& kind) {
    *call = PreparedCall{};
    if (!ready_) return Status::internal("allreduce before setup");
    if (elem_size == 0) return Status::invalid("element size 0");
    call->mem = mem;
    call->count = count;
    call->elem_size = elem_size;
    // Room for this call's plans (up to 4); calls prepared earlier keep
    // theirs through their handles.
    plans_.make_room(4);
    if (mem == MemType::cuda) selection_.prepare_device(topology_);
    Decision d = decide(count * elem_size, mem);
    call->origin = d.origin;
    call->rule = d.rule;
    if (d.origin == Origin::hand_down && kind.no_hand_down) {
        d.algorithm = selection_.builtin_choice(count * elem_size);
        d.origin = Origin::builtin;
        call->origin = d.origin;
    }
    if (d.origin == Origin::hand_down) {
        call->route = Route::hand_down;
        call->why = kOneHostHandDownReason;
        return Status::ok();
    }
    // auto's own choice for a small host call across hosts: its size
    // class's contest decides (Selection::contest_turn); a nonblocking
    // call takes no turn (Selection::untimed_choice).
    // Its own choice for a large one on measured links: its size class's
    // check decides (Selection::check_turn); a nonblocking call takes the
    // checked plan once there is one.
    const bool measured_links = !ranks_.empty();
    if (kind.nonblocking) {
        bool measured = false;
        d.algorithm = selection_.untimed_choice(count * elem_size, mem, d, &measured);
        if (!measured) d.algorithm = selection_.checked_choice(count * elem_size, mem, d, measured_links, &measured);
        if (measured) call->origin = Origin::measured;
    } else {
        call->trial = selection_.contest_turn(count * elem_size, mem, d, pair);
        if (call->trial.cls < 0) {
            call->check = selection_.check_turn(count * elem_size, mem, d, measured_links, pair);
            if (call->check.previous) {
                call->origin = Origin::measured;
                call->route = call->check.decided ? Route::hand_down : Route::check_down;
                call->why = call->check.decided ? kCheckWon : kCheckTurn;
                return Status::ok();
            }
            if (call->check.cls >= 0 && call->check.algorithm != d.algorithm) {
                call->origin = Origin::measured;
                d.algorithm = call->check.algorithm;
            }
        }
    }
    if (call->trial.cls >= 0) {
        if (call->trial.decided && call->trial.index != 0) call->origin = Origin::measured;
        // The contest's turns, and a decided class's watched calls, are
        // timed by the glue (topoar_engine_trial_done).
        const bool turn = !call->trial.decided || call->trial.watched;
        if (call->trial.who.hand_down) {
            call->route = turn ? Route::contest_down : Route::hand_down;
            call->why = call->trial.decided ? kTrialWon : kTrialTurn;
            return Status::ok();
        }
        if (turn) call->route = Route::contest_host;
        d.algorithm = call->trial.who.algorithm;
    }
    Algorithm alg = d.algorithm;
    std::size_t segment = d.has_segment ? d.segment_bytes : units_.segment_size;
    call->algorithm = alg;
    if (algorithm_info(alg).device_only) {
        // The GPU path runs it itself; the built-in choice's plan comes
        // along for what it cannot do (pairs NCCL does not reduce, NCCL off).
        if (mem != MemType::cuda && d.origin == Origin::forced)
            return Status::unsupported(std::string(algorithm_name(alg)) + " runs on device buffers only");
        if (mem != MemType::cuda) {
            // A rule naming it for host calls falls through, like any rule
            // whose algorithm cannot run here.
            call->algorithm = selection_.builtin_choice(count * elem_size);
            call->fell_through = true;
        }
        alg = selection_.builtin_choice(count * elem_size);
    }
    call->plan_algorithm = alg;
    // The route: host calls run here or were handed down above; device
    // calls by what the glue can do with them (decide/route.hpp).  A staged
    // device call runs on the host: it plans for host memory.
    if (mem == MemType::host) {
        if (call->route == Route::none) call->route = Route::host;
    } else {
        call->route = device_route(call->algorithm, true, device_caps_, pair);
        if (call->algorithm == Algorithm::nccl_hier && call->route != Route::nccl_hier && !device_caps_.host_comms &&
            device_route(call->algorithm, true, DeviceCaps{device_caps_.nccl, true}, pair) == Route::nccl_hier)
            call->why = kNoHostComms;
    }
    const MemType plan_mem = call->route == Route::staged ? MemType::host : mem;
    if (count == 0 || size_ == 1) return Status::ok();
    const CallUnits u = call_units(units_, count, elem_size, plan_mem, units_.segment_size, selection_.shape().nodes);
    const std::size_t chunk = u.chunk_count, tail = count % chunk, pipeline = u.pipeline_bytes;
    if (!d.has_segment) segment = u.segment_bytes;  // a rule's segment size is kept as written
    auto plans = [&](Algorithm a, std::size_t seg) {
        call->plan.reset();
        call->tail_plan.reset();
        TOPOAR_TRY(plan_for(a, chunk, elem_size, seg, pipeline, plan_mem, &call->plan));
        if (tail) TOPOAR_TRY(plan_for(a, tail, elem_size, seg, pipeline, plan_mem, &call->tail_plan));
        return Status::ok();
    };
    Status s = plans(alg, segment);
    // A rule (or table entry) naming an algorithm this communicator cannot
    // run falls through to the built-in choice.  Plans are pure functions
    // of data all ranks share, so every rank takes the same way.
    if (s.code() == Code::unsupported && (d.origin == Origin::rule || d.origin == Origin::model)) {
        alg = selection_.builtin_choice(count * elem_size);
        segment = u.segment_bytes;  // the setting's, not the rule's
        call->algorithm = alg;
        call->plan_algorithm = alg;
        call->fell_through = true;
        s = plans(alg, segment);
    }
    TOPOAR_TRY(s);
    call->chunk_count = chunk;
    // One chunk of a small plan on a host route: the fast path can run it
    // (exec/fast_executor.hpp), unless online adaptation times it.
    call->fast = plan_mem == MemType::host && (call->route == Route::host || call->route == Route::contest_host) &&
                 chunk == count && call->plan && call->plan->fast.usable() && !timed(*call);
    // The send credit (coll_topoar_send_credit): auto holds a plan's
    // synchronous sends to it once this process has seen its host
    // retransmit during a call, and until then watches the calls it would
    // hold (Engine::run).
    const bool credited = (call->plan && call->plan->credited) || (call->tail_plan && call->tail_plan->credited);
    switch (units_.send_credit) {
    case SendCredit::never: call->credit = false; break;
    case SendCredit::always: call->credit = true; break;
    case SendCredit::automatic: call->credit = credit_retransmitted(); break;
    }
    call->watch_retransmissions = credited && !call->credit && units_.send_credit == SendCredit::automatic;
    if (call->route == Route::nccl_hier) {
        // Its own plan besides the built-in one.  Unsupported (no host
        // level) is an answer, alike on every rank: the built-in plan runs
        // over NCCL.
        Status h = hier_plan_for(chunk, elem_size, pipeline, &call->hier);
        if (h && tail) h = hier_plan_for(tail, elem_size, pipeline, &call->hier_tail);
        if (!h) {
            if (h.code() != Code::unsupported) return h;
            call->hier.reset();
            call->hier_tail.reset();
            hier_why_ = h.message();
            call->why = hier_why_.c_str();
            call->route = device_route(call->algorithm, false, device_caps_, pair);
        }
    }
    return Status::ok();
}

Status Engine::hier_plan_for(std::size_t count, std::size_t elem_size, std::size_t pipeline_bytes,
                             HierHandle* out) {
    return plans_.get_hier(PlanCache::HierKey(count, elem_size, pipeline_bytes), [&](HierPlan* h) {
        PlanOptions opts = plan_options(cfg_, elem_size, MemType::cuda);
        opts.pipeline_elems = pipeline_bytes ? std::max<std::size_t>(1, pipeline_bytes / elem_size) : 0;
        return plan_nccl_hier_rank(topology_, count, rank_, opts, h);
    }, out);
}

Status Engine::host_position(int* host, int* local, int* hosts) const {
    HostLayout l;
    TOPOAR_TRY(host_layout_of(&l));
    *host = l.host_of[static_cast<std::size_t>(rank_)];
    *local = l.local_of[static_cast<std::size_t>(rank_)];
    *hosts = static_cast<int>(l.members.size());
    return Status::ok();
}

Status Engine::host_layout_of(HostLayout* out) const {
    if (!ready_) return Status::internal("host layout before setup");
    return host_layout(topology_, out);
}

// Runs prepared call's plan on every chunk of buf, one after the other.
template <typename RunOne>
static Status run_chunks(const PreparedCall& call, void* buf, RunOne run_one) {
    const std::size_t n = call.num_chunks();
    for (std::size_t k = 0; k < n; ++k) {
        const bool last_partial = k + 1 == n && call.tail_plan != nullptr;
        const CompiledPlan& p = last_partial ? *call.tail_plan : *call.plan;
        char* part = static_cast<char*>(buf) + k * call.chunk_count * call.elem_size;
        Status s = run_one(p, part);
        if (!s) {
            if (n == 1) return s;
            return Status(s.code(), "chunk " + std::to_string(k + 1) + " of " + std::to_string(n) + ": " +
                                        s.message());
        }
    }
    return Status::ok();
}

Status Engine::run(const PreparedCall& call, void* buf, Transport& transport, Reducer& reducer, SetupIo* io) {
    if (!runs_on_host(call.route))
        return Status::internal(std::string("run() of a call whose route is ") + route_name(call.route));
    if (call.plan == nullptr) return Status::ok();  // nothing to move
    // Only on measured links (ranks_ kept): what a file describes stays.
    // The check's timed turns too (every rank times the same calls); a
    // plan's first call is no baseline for online adaptation.
    const bool first_run = !call.plan->ran;
    call.plan->ran = true;
    const bool adapting = io && io->allgather && this->timed(call) && !first_run;
    const bool checking = io && io->allgather && call.check.timed;  // timed: undecided
    const bool timed = adapting || checking;
    if (call.watch_retransmissions) watch_start();
    const auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (!blocking_) blocking_.reset(new CallOperation);
    TOPOAR_TRY(blocking_->start(call, buf, transport, reducer));
    TOPOAR_TRY(run_to_end(*blocking_, transport));
    // Timed before the watch reads the counter again.
    const double seconds =
        timed ? std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() : 0.0;
    if (call.watch_retransmissions) note_retransmissions(call, watch_end());
    if (!timed) return Status::ok();
    if (checking) TOPOAR_TRY(note_check(call, seconds, *io));
    if (!adapting) return Status::ok();
    return note_call_time(call, seconds, *io);
}

void Engine::note_retransmissions(const PreparedCall& call, std::int64_t retransmitted) {
    if (retransmitted < kCreditRetransmits || credit_retransmitted()) return;
    note_credit_retransmitted();
    std::ostringstream os;
    os << "this host's TCP retransmitted " << retransmitted << " segments up to an allreduce of "
       << format_size(call.count * call.elem_size)
       << ": sends to ranks on other hosts are credited from now on (coll_topoar_send_credit auto)\n";
    notice_ += os.str();
}

Status Engine::run_device(const PreparedCall& call, void* buf, DeviceTransport& transport) {
    if (!runs_on_device(call.route))
        return Status::internal(std::string("run_device() of a call whose route is ") + route_name(call.route));
    if (call.plan == nullptr) return Status::ok();
    if (call.route == Route::nccl_hier) {
        if (call.hier == nullptr) return Status::internal("run_device(): the call has no nccl_hier plan");
        return run_chunks(call, buf, [&](const CompiledPlan& p, char* part) {
            const HierPlan& h = &p == call.tail_plan.get() ? *call.hier_tail : *call.hier;
            return run_device_hier(h, part, call.elem_size, transport);
        });
    }
    return run_chunks(call, buf, [&](const CompiledPlan& p, char* part) {
        return run_device_schedule(p.plan.of(rank_), part, call.elem_size, transport);
    });
}

Status Engine::allreduce(void* buf, std::size_t count, std::size_t elem_size, Transport& transport,
                         Reducer& reducer, Algorithm* used) {
    PreparedCall call;
    TOPOAR_TRY(prepare(count, elem_size, MemType::host, &call));
    if (is_hand_down(call.route)) return Status::unsupported(call.why);
    *used = call.algorithm;
    return run(call, buf, transport, reducer);
}

}  // namespace topoar
