#include "engine.hpp"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <new>
#include <map>
#include <sstream>
#include <mutex>
#include <stdexcept>

#include "engine/call_operation.hpp"
#include "model/cost_model.hpp"
#include "planners/planners.hpp"

namespace topoar {

Engine::Engine(int rank, int size, EngineConfig cfg) : rank_(rank), size_(size), cfg_(std::move(cfg)) {}
Engine::~Engine() = default;

static const char* const kTrialTurn = "small-message trial: the previous module's turn";
static const char* const kTrialWon = "small-message trial: the previous module was measured fastest for this size";
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
        std::vector<char> tokens(static_cast<std::size_t>(size_));
        auto barrier = [&]() {
            const char token = 0;
            return io.allgather(&token, 1, tokens.data());
        };
        Status probed = run_probe(*io.transport, rank_, groups, cfg_.probe_options, barrier, &row);
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
    Topology measured;
    TOPOAR_TRY(discover_measured(ranks, net, cfg_.discovery, cfg_.model_overhead, &measured));
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
    if (network_source_ == NetworkSource::measured || network_source_ == NetworkSource::cached)
        os << measured_.describe();
    return os.str();
}

Status Engine::setup(const std::vector<RankInfo>& ranks, SetupIo* io) {
    if (static_cast<int>(ranks.size()) != size_)
        return Status::internal("setup: got " + std::to_string(ranks.size()) + " rank records for " +
                                std::to_string(size_) + " ranks");
    TOPOAR_TRY(discover_topology(ranks, cfg_.discovery, &topology_));
    if (topology_.nodes_at(Level::node).size() > 1) {
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
    // Every rank reads the same file; a bad one fails set-up ("file:line: ...").
    if (!cfg_.rules_file.empty()) TOPOAR_TRY(DecisionTable::from_file(cfg_.rules_file, &rules_));
    std::vector<int> per_node;
    for (int n : topology_.nodes_at(Level::node)) per_node.push_back(topology_.num_ranks_under(n));
    shape_ = make_comm_shape(size_, per_node, static_cast<int>(topology_.nodes_at(Level::rack).size()));
    TOPOAR_TRY(build_model_table());
    if (network_source_ == NetworkSource::measured || network_source_ == NetworkSource::cached) ranks_ = ranks;
    trial_io_ = io && io->allgather;
    trials_.configure(cfg_.trial_calls, cfg_.trial_max_size);
    ready_ = true;
    return Status::ok();
}

// auto's default table.  A pure function of the topology and the
// configuration, which every rank has alike: no communication needed.
// Not for one host when auto hands those down anyway.
Status Engine::build_model_table() {
    if (cfg_.algorithm == Algorithm::automatic && cfg_.model_table && size_ > 1 &&
        !(cfg_.single_node_fallback && shape_.nodes <= 1)) {
        auto t0 = std::chrono::steady_clock::now();
        TOPOAR_TRY(build_default_table_cached(topology_, table_options(cfg_), &model_table_, &model_report_,
                                              &model_table_cached_));
        model_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    return Status::ok();
}

// The cost model's time of a prepared host call: its chunks' plans, each
// predicted once.  0 when a plan is too large to simulate quickly.
double Engine::predicted_seconds(const PreparedCall& call) {
    constexpr std::size_t kMaxSteps = 200000;
    auto of = [&](const PlanHandle& p) -> double {
        if (p->predicted < 0) {
            const DefaultTableOptions o = table_options(cfg_);
            Plan full;
            Prediction pr;
            p->predicted = 0;
            if (make_plan(p->algorithm, topology_, p->count, -1, p->options, &full) &&
                count_steps(full, call.elem_size, o.model.segment_bytes) <= kMaxSteps &&
                predict(topology_, full, call.elem_size, o.model, &pr))
                p->predicted = pr.time;
        }
        return p->predicted;
    };
    const double chunk = of(call.plan), tail = call.tail_plan ? of(call.tail_plan) : 0;
    if (chunk <= 0 || (call.tail_plan && tail <= 0)) return 0;
    const std::size_t full = call.num_chunks() - (call.tail_plan ? 1 : 0);
    return static_cast<double>(full) * chunk + tail;
}

std::string Engine::take_notice() {
    std::string n;
    n.swap(notice_);
    return n;
}

Status Engine::note_call_time(const PreparedCall& call, double seconds, SetupIo& io) {
    if (!cfg_.adapt || ranks_.empty() || !runs_on_host(call.route) || call.plan == nullptr) return Status::ok();
    const double predicted = predicted_seconds(call);
    if (probe_debug() && rank_ == 0 && predicted <= 0)
        std::fprintf(stderr, "adapt: no prediction for %zu bytes\n", call.count * call.elem_size);
    if (predicted <= 0) return Status::ok();
    window_.push_back(seconds / predicted);
    if (static_cast<int>(window_.size()) < cfg_.adapt_interval) return Status::ok();
    // Every rank's mean ratio of the window, gathered: the same numbers
    // everywhere, so the same decision.
    double mine = 0;
    for (double r : window_) mine += r;
    mine /= static_cast<double>(window_.size());
    window_.clear();
    std::vector<double> all(static_cast<std::size_t>(size_), 0.0);
    TOPOAR_TRY(io.allgather(&mine, sizeof mine, all.data()));
    double mean = 0;
    for (double r : all) mean += r;
    mean /= static_cast<double>(size_);
    if (probe_debug() && rank_ == 0)
        std::fprintf(stderr, "adapt: window mean measured/predicted %.3f (baseline %.3f, predicted %.4f s)\n", mean,
                     baseline_, predicted);
    if (baseline_ <= 0) {
        // The model's own error on this machine: what later windows are
        // compared with.
        baseline_ = mean;
        return Status::ok();
    }
    if (mean <= (1 + cfg_.adapt_threshold) * baseline_ || replans_ >= cfg_.adapt_max) return Status::ok();
    std::ostringstream os;
    os << "calls ran " << mean / baseline_ << "x slower than after set-up (measured/predicted " << mean
       << " vs " << baseline_ << "): links measured again";
    const auto t0 = std::chrono::steady_clock::now();
    TOPOAR_TRY(measure_network(ranks_, io, /*fresh=*/true));
    const DecisionTable before = model_table_;
    TOPOAR_TRY(build_model_table());
    plans_.clear();  // calls holding plans keep them
    device_table_ = DecisionTable();
    device_table_tried_ = false;
    baseline_ = 0;
    trials_.reset();  // the table may rank small messages differently now
    ++replans_;
    os << " in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3
       << " ms (re-plan " << replans_ << " of at most " << cfg_.adapt_max << ")\n"
       << describe_network();
    if (!model_table_.empty())
        os << (model_table_.to_text("cost model") == before.to_text("cost model") ? "auto's table is unchanged:\n"
                                                                                   : "auto's table now:\n")
           << model_table_.to_text("cost model");
    notice_ = os.str();
    return Status::ok();
}

Status Engine::note_trial(const PreparedCall& call, double seconds, SetupIo& io) {
    const SizeTrials::Turn& t = call.trial;
    if (t.cls < 0 || t.decided) return Status::ok();
    trials_.record(t, seconds);
    if (!t.agree) return Status::ok();
    // Every rank's numbers, gathered and summed: the same on every rank,
    // so the same contenders dropped and the same winner.  Medians after
    // an earlier round (to drop clear losers), means after the last.
    const std::vector<double> mine = t.last ? trials_.means(t.cls) : trials_.medians(t.cls);
    const std::size_t n = mine.size();
    std::vector<double> all(n * static_cast<std::size_t>(size_), 0.0);
    TOPOAR_TRY(io.allgather(mine.data(), n * sizeof(double), all.data()));
    std::vector<double> pooled(n, 0.0);
    for (int r = 0; r < size_; ++r)
        for (std::size_t i = 0; i < n; ++i) pooled[i] += all[static_cast<std::size_t>(r) * n + i];
    const std::vector<Contender> who = trials_.contenders(t.cls);
    std::vector<bool> was_in(n);
    for (std::size_t i = 0; i < n; ++i) was_in[i] = trials_.active(t.cls, static_cast<int>(i));
    const int w = t.last ? trials_.settle(t.cls, pooled) : trials_.prune(t.cls, pooled);
    if (w < 0) return Status::ok();  // several still in: the contest goes on
    std::ostringstream os;
    os << "allreduce of " << format_size(std::size_t(1) << t.cls) << "-" << format_size(std::size_t(2) << t.cls)
       << ": measured per call (" << (t.last ? "mean of " + std::to_string(trials_.samples()) + " calls"
                                             : std::string("median of the calls so far"))
       << " and of the ranks)";
    bool first = true;
    for (std::size_t i = 0; i < n && i < who.size(); ++i) {
        if (!was_in[i]) continue;  // dropped in an earlier round
        os << (first ? " " : ", ") << contender_name(who[i]);
        first = false;
        if (std::isfinite(pooled[i]))
            os << " " << pooled[i] / size_ * 1e6 << " us";
        else
            os << " not run (its result could differ for every call of this size)";
    }
    os << ": " << contender_name(who[static_cast<std::size_t>(w)]) << " from now on"
       << (w == 0 ? " (auto's table's choice)" : "") << (t.last ? "" : " (the others more than 50 % slower)")
       << "\n";
    notice_ += os.str();
    return Status::ok();
}

// Built-in default across hosts: the latency algorithm (node leaders) for
// small messages, aggregation trees above; both measured best on the
// emulated clusters of docs/performance.md.
Algorithm Engine::builtin_choice(std::size_t bytes) const {
    return bytes <= cfg_.small_msg_size ? Algorithm::leader : Algorithm::tree;
}

const char* origin_name(Origin o) {
    switch (o) {
    case Origin::forced: return "forced";
    case Origin::rule: return "rule";
    case Origin::model: return "cost model";
    case Origin::builtin: return "default";
    case Origin::hand_down: return "hand down";
    case Origin::measured: return "measured";
    }
    return "?";
}

Decision Engine::decide(std::size_t bytes, MemType mem) const {
    Decision d;
    if (cfg_.algorithm != Algorithm::automatic) {
        d.algorithm = cfg_.algorithm;
        d.origin = Origin::forced;
        return d;
    }
    Choice c = rules_.lookup(bytes, shape_, mem);
    if (c.matched()) {
        d.origin = Origin::rule;
        d.rule = c.origin;
    } else {
        c = model_table_.lookup(bytes, shape_, mem);
        d.origin = Origin::model;
    }
    if (c.matched()) {
        d.algorithm = c.algorithm;
        d.has_segment = c.has_segment;
        d.segment_bytes = c.segment_bytes;
        return d;
    }
    // Host buffers on one host go to the previous module (tuned's
    // shared-memory algorithms); device buffers cannot go there unstaged:
    // within one host they get NCCL's own allreduce (its NVLink/PCIe rings
    // and trees are what a topology plan would build there).
    if (ready_ && shape_.nodes <= 1 && mem == MemType::host &&
        one_host_hands_down(cfg_.algorithm, cfg_.single_node_fallback)) {
        d.origin = Origin::hand_down;
        return d;
    }
    if (ready_ && shape_.nodes <= 1 && mem == MemType::cuda) {
        d.algorithm = Algorithm::nccl;
        d.origin = Origin::builtin;
        return d;
    }
    if (mem == MemType::cuda) {
        c = device_table_.lookup(bytes, shape_, mem);
        if (c.matched()) {
            d.algorithm = c.algorithm;
            d.origin = Origin::model;
            d.has_segment = c.has_segment;
            d.segment_bytes = c.segment_bytes;
            return d;
        }
    }
    d.algorithm = builtin_choice(bytes);
    d.origin = Origin::builtin;
    return d;
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
    // segment size as set (engine.hpp).  Device plans have their own
    // pipelining unit.
    const std::size_t bytes = count * elem_size, chunk_bytes = u.chunk_count * elem_size;
    if (mem == MemType::cuda) {
        u.segment_bytes = segment_bytes;
        u.pipeline_bytes = cfg.gpu_model.pipeline_bytes;
    } else if (hosts > 1) {
        u.segment_bytes = segment_bytes;
        u.pipeline_bytes = scaled_unit(cfg.pipeline_size, bytes, chunk_bytes);
    } else {
        u.segment_bytes = scaled_unit(segment_bytes, bytes, chunk_bytes);
        u.pipeline_bytes = scaled_unit(cfg.pipeline_size, bytes, chunk_bytes);
    }
    return u;
}

PlanOptions plan_options(const EngineConfig& cfg, std::size_t elem_size, MemType mem) {
    PlanOptions o;
    const std::size_t unit = mem == MemType::cuda ? cfg.gpu_model.pipeline_bytes : cfg.pipeline_size;
    o.pipeline_elems = unit ? std::max<std::size_t>(1, unit / elem_size) : 0;
    o.num_trees = cfg.num_trees;
    o.factors = cfg.hring_factors;
    // nccl_hier's shards across hosts: the built-in choice's threshold.
    o.hier_small_elems = cfg.small_msg_size / elem_size;
    return o;
}

DefaultTableOptions table_options(const EngineConfig& cfg) {
    DefaultTableOptions o;
    o.elem_size = 4;  // float, the common case; plans differ by rounding only
    o.plan = plan_options(cfg, o.elem_size);
    o.model.segment_bytes = cfg.segment_size;
    o.model.overhead = cfg.model_overhead;
    o.min_gain = cfg.model_margin;
    // Sizes 8 B, 32 B, ... 2 MiB: by 2 MiB every plan is deep in the
    // bandwidth regime (the ranking holds above, default_table.hpp), and
    // the larger sizes would cost most of the set-up time.
    o.max_bytes = std::size_t(2) << 20;
    return o;
}

Status Engine::plan_for(Algorithm alg, std::size_t count, std::size_t elem_size, std::size_t segment_bytes,
                        std::size_t pipeline_bytes, MemType mem, PlanHandle* out) {
    const PlanCache::Key key(static_cast<int>(alg), count, elem_size, segment_bytes, pipeline_bytes,
                             static_cast<int>(mem));
    return plans_.get(key, [&](CompiledPlan* prepared) {
        PlanOptions opts = plan_options(cfg_, elem_size, mem);
        opts.pipeline_elems = pipeline_bytes ? std::max<std::size_t>(1, pipeline_bytes / elem_size) : 0;
        TOPOAR_TRY(make_plan(alg, topology_, count, rank_, opts, &prepared->plan));
        prepared->algorithm = alg;
        prepared->count = count;
        prepared->options = opts;
        std::size_t seg_elems = segment_bytes / elem_size;
        if (segment_bytes && seg_elems == 0) seg_elems = 1;
        prepared->program = compile_schedule(prepared->plan.of(rank_), seg_elems, elem_size);
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
    if (mem == MemType::cuda && !device_table_tried_) build_device_table();
    Decision d = decide(count * elem_size, mem);
    call->origin = d.origin;
    call->rule = d.rule;
    if (d.origin == Origin::hand_down && kind.no_hand_down) {
        d.algorithm = builtin_choice(count * elem_size);
        d.origin = Origin::builtin;
        call->origin = d.origin;
    }
    if (d.origin == Origin::hand_down) {
        call->route = Route::hand_down;
        call->why = kOneHostHandDownReason;
        return Status::ok();
    }
    // auto's own choice for a small host call across hosts (not a rule's,
    // not a forced one): a contest of its size class decides
    // (decide/trials.hpp).  Every rank takes the same turn.
    const bool contested = (d.origin == Origin::model || d.origin == Origin::builtin) && mem == MemType::host &&
                           trial_io_ && shape_.nodes > 1 && size_ > 1 && trials_.covers(count * elem_size) &&
                           !algorithm_info(d.algorithm).device_only;
    if (contested && kind.nonblocking) {
        // Never timed: the class's winner if it is one of topoar's plans,
        // else the table's choice; the contest's turns are not touched.
        const int cls = SizeTrials::size_class(count * elem_size);
        const int w = trials_.winner(cls);
        if (w > 0 && !trials_.contenders(cls)[static_cast<std::size_t>(w)].hand_down) {
            d.algorithm = trials_.contenders(cls)[static_cast<std::size_t>(w)].algorithm;
            call->origin = Origin::measured;
        }
    } else if (contested) {
        // Read only when the class is new (no allocation per call).
        const Contender who[3] = {{false, d.algorithm}, {true, Algorithm::automatic}, {false, Algorithm::leader}};
        call->trial = trials_.next(count * elem_size, who, d.algorithm == Algorithm::leader ? 2 : 3);
        if (call->trial.who.hand_down && pair.previous_differs) {
            // Correctness before speed: the class's first contender (the
            // table's choice) runs it, and a timed turn counts as its own.
            call->trial.index = 0;
            call->trial.who = trials_.contenders(call->trial.cls)[0];
        }
        if (call->trial.decided && call->trial.index != 0) call->origin = Origin::measured;
        if (call->trial.who.hand_down) {
            call->route = call->trial.decided ? Route::hand_down : Route::contest_down;
            call->why = call->trial.decided ? kTrialWon : kTrialTurn;
            return Status::ok();
        }
        if (!call->trial.decided) call->route = Route::contest_host;
        d.algorithm = call->trial.who.algorithm;
    }
    Algorithm alg = d.algorithm;
    std::size_t segment = d.has_segment ? d.segment_bytes : cfg_.segment_size;
    call->algorithm = alg;
    if (algorithm_info(alg).device_only) {
        // The GPU path runs it itself; the built-in choice's plan comes
        // along for what it cannot do (pairs NCCL does not reduce, NCCL off).
        if (mem != MemType::cuda && d.origin == Origin::forced)
            return Status::unsupported(std::string(algorithm_name(alg)) + " runs on device buffers only");
        if (mem != MemType::cuda) {
            // A rule naming it for host calls falls through, like any rule
            // whose algorithm cannot run here.
            call->algorithm = builtin_choice(count * elem_size);
            call->fell_through = true;
        }
        alg = builtin_choice(count * elem_size);
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
    const CallUnits u = call_units(cfg_, count, elem_size, plan_mem, cfg_.segment_size, shape_.nodes);
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
        alg = builtin_choice(count * elem_size);
        segment = u.segment_bytes;  // the setting's, not the rule's
        call->algorithm = alg;
        call->plan_algorithm = alg;
        call->fell_through = true;
        s = plans(alg, segment);
    }
    TOPOAR_TRY(s);
    call->chunk_count = chunk;
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
    if (!ready_) return Status::internal("host_position before setup");
    HostLayout l;
    TOPOAR_TRY(host_layout(topology_, &l));
    *host = l.host_of[static_cast<std::size_t>(rank_)];
    *local = l.local_of[static_cast<std::size_t>(rank_)];
    *hosts = static_cast<int>(l.members.size());
    return Status::ok();
}

void Engine::build_device_table() {
    device_table_tried_ = true;
    if (cfg_.algorithm != Algorithm::automatic || !cfg_.model_table || size_ < 2 || shape_.nodes <= 1) return;
    // A failure leaves the table empty: the built-in choice then decides,
    // identically on every rank (the inputs are the same everywhere).
    if (!build_device_default_table(topology_, table_options(cfg_), cfg_.gpu_model, &device_table_))
        device_table_ = DecisionTable{};
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
    const bool timed = io && io->allgather && cfg_.adapt && !ranks_.empty() &&
                       call.count * call.elem_size >= cfg_.adapt_min_bytes && call.mem == MemType::host;
    const auto t0 = std::chrono::steady_clock::now();
    if (!blocking_) blocking_.reset(new CallOperation);
    TOPOAR_TRY(blocking_->start(call, buf, transport, reducer));
    TOPOAR_TRY(run_to_end(*blocking_, transport));
    if (!timed) return Status::ok();
    return note_call_time(call, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), *io);
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
