#include "engine/selection.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <vector>

#include "exec/schedule_policy.hpp"
#include "model/device_model.hpp"

namespace topoar {

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
    o.model.flight_bytes = cfg.flight_size;
    o.model.overhead = cfg.model_overhead;
    o.model.message_cpu_share = cfg.model_cpu_share;
    o.min_gain = cfg.model_margin;
    // Sizes 8 B, 32 B, ... 2 MiB with every candidate, then 8 MiB with the
    // 2 MiB winner and the plans predicted ahead of it there.  By 2 MiB
    // every plan is deep in the bandwidth regime, but a plan whose pipeline
    // takes longer to fill still gains on the others up to about 8 MiB (a
    // measured shape of the uneven family: flexrelay 8 % ahead of tree at
    // 2 MiB, inside the margin, 18 % at 8 MiB; docs/cost-model.md, "Default
    // table").  Above 8 MiB plans pipeline by call bytes / 256, as at
    // 8 MiB, so its winner keeps the larger sizes; simulating them would
    // cost most of the set-up time.
    o.full_max_bytes = std::size_t(2) << 20;
    o.max_bytes = std::size_t(8) << 20;
    return o;
}

EngineConfig units_for_links(const EngineConfig& cfg, const Topology& topo) {
    if (!(cfg.unit_time > 0) || topo.nodes_at(Level::node).size() < 2) return cfg;
    double rate = 0;
    for (Level level : {Level::node, Level::rack, Level::spine})
        for (int v : topo.nodes_at(level)) {
            const double bw = topo.node(v).up.bandwidth;
            if (!(bw > 0)) return cfg;  // a rate not known: the units as set
            rate = rate > 0 ? std::min(rate, bw) : bw;
        }
    EngineConfig out = cfg;
    out.segment_size = link_unit(cfg.segment_size, rate, cfg.unit_time);
    out.pipeline_size = link_unit(cfg.pipeline_size, rate, cfg.unit_time);
    if (cfg.flight_size) out.flight_size = std::max(cfg.flight_size, 2 * out.segment_size);
    return out;
}

void Selection::use_units(const EngineConfig& units) {
    cfg_.segment_size = units.segment_size;
    cfg_.pipeline_size = units.pipeline_size;
    cfg_.flight_size = units.flight_size;
    const double overhead = options_.model.overhead;
    options_ = topoar::table_options(cfg_);
    options_.model.overhead = overhead;
}

Status Selection::setup(const Topology& topo, int size, const CommShape& shape, bool contest_io,
                        double model_overhead, int rank) {
    size_ = size;
    rank_ = rank;
    options_.model.overhead = model_overhead;
    shape_ = shape;
    // Every rank reads the same file; a bad one fails set-up ("file:line: ...").
    if (!cfg_.rules_file.empty()) TOPOAR_TRY(DecisionTable::from_file(cfg_.rules_file, &rules_));
    TOPOAR_TRY(build_model_table(topo));
    contest_io_ = contest_io;
    trials_.configure(cfg_.trial_calls, cfg_.trial_max_size, cfg_.trial_watch);
    check_.configure(cfg_.model_check, cfg_.adapt_min_bytes);
    agreed_.clear();
    barrier_ = 0;
    key_ = outcomes_kept() ? contest_key(topo, cfg_, topoar::table_options(cfg_)) : 0;
    cache_path_.clear();
    if (contests_possible() && !cfg_.contest_cache_dir.empty()) {
        file_key_ = contest_file_key(topo, cfg_, topoar::table_options(cfg_));
        cache_path_ = contest_file_path(cfg_.contest_cache_dir, file_key_);
    }
    ready_ = true;
    return Status::ok();
}

bool Selection::outcomes_kept() const { return contest_io_ && shape_.nodes > 1 && size_ > 1; }

bool Selection::contests_possible() const {
    return cfg_.algorithm == Algorithm::automatic && cfg_.trial_calls > 0 && outcomes_kept();
}

Status Selection::agree_outcomes(const std::vector<int>& held, SetupIo& io) {
    if (!outcomes_kept() || !io.allgather) return Status::ok();
    const bool contests = contests_possible();
    const bool cache = contests && !cfg_.contest_cache_dir.empty();
    if (!cache && std::all_of(held.begin(), held.end(), [](int n) { return n <= 0; })) return Status::ok();
    // The classes a contest can cover: 0 .. the class of trial_max_size
    // (never the barrier's slot; none where no contest runs); then the
    // barrier's kind.
    const int classes = contests ? std::min(kBarrierSlot, SizeTrials::size_class(cfg_.trial_max_size) + 1) : 0;
    const std::size_t per = static_cast<std::size_t>(classes);
    const std::size_t n = 1 + per * (cache ? 2 : 1) + 1;
    const OutcomeStore::Codes codes = store_->get(key_);
    OutcomeStore::Codes from_file{};
    std::string problem;
    if (cache && rank_ == 0 && !read_contest_file(cache_path_, file_key_, &from_file, &problem)) {
        from_file = OutcomeStore::Codes{};
        if (!problem.empty())
            agreed_ += "small-message contest: cache file ignored (coll_topoar_contest_cache_dir): " + problem + "\n";
    }
    std::vector<std::uint64_t> mine(n, 0);
    mine[0] = key_;
    for (std::size_t c = 0; c < per; ++c) {
        mine[1 + c] = codes[c];
        if (cache) mine[1 + per + c] = from_file[c];
    }
    mine[n - 1] = codes[static_cast<std::size_t>(kBarrierSlot)];
    std::vector<std::uint64_t> all(n * static_cast<std::size_t>(size_), 0);
    TOPOAR_TRY(io.allgather(mine.data(), n * sizeof(std::uint64_t), all.data()));
    for (int r = 0; r < size_; ++r)
        if (all[static_cast<std::size_t>(r) * n] != key_) return Status::ok();  // not the same shape everywhere
    // Column `at` of the rows when every rank holds the same value there, else 0.
    auto held_alike = [&](std::size_t at) {
        std::uint64_t v = all[at];
        for (int r = 1; r < size_ && v != 0; ++r)
            if (all[static_cast<std::size_t>(r) * n + at] != v) v = 0;
        return v;
    };
    const std::uint64_t kind = held_alike(n - 1);
    if (kind == kBarrierPrevious || kind == kBarrierTopoar) barrier_ = static_cast<int>(kind);
    std::ostringstream os;
    int adopted = 0, filed = 0;
    for (std::size_t c = 0; c < per; ++c) {
        // Held alike by every rank, else rank 0's file (every rank has its row).
        std::uint64_t code = held_alike(1 + c);
        bool file = false;
        if (code == 0 && cache && all[1 + per + c] != 0) {
            code = all[1 + per + c];
            file = true;
        }
        std::vector<Contender> who;
        int w = -1;
        if (code == 0 || !decode_outcome(code, &who, &w)) continue;
        trials_.decide_class(static_cast<int>(c), who, w);
        if (file) {
            ++filed;
            store_->put(key_, static_cast<int>(c), code);  // every rank alike: from rank 0's row
        }
        os << (adopted++ ? ", " : "") << format_size(std::size_t(1) << c) << "-"
           << format_size(std::size_t(2) << c) << " " << contender_name(who[static_cast<std::size_t>(w)])
           << (file ? " (cache file)" : "");
    }
    if (adopted > 0)
        agreed_ += "small-message contest: " + std::to_string(adopted) + " size class" + (adopted == 1 ? "" : "es") +
                   " start decided (outcomes of earlier communicators of this shape held alike by every rank" +
                   (filed ? ", " + std::to_string(filed) + " from rank 0's cache file" : std::string()) +
                   "): " + os.str() + "\n";
    return Status::ok();
}

void Selection::keep_barrier_outcome(int kind) {
    if (key_ == 0 || (kind != kBarrierPrevious && kind != kBarrierTopoar)) return;
    store_->put(key_, kBarrierSlot, static_cast<std::uint64_t>(kind));
    barrier_ = kind;
}

void Selection::write_cache(std::string* notice) {
    if (rank_ != 0 || cache_path_.empty()) return;
    OutcomeStore::Codes codes{};
    for (int c = 0; c < SizeTrials::kClasses; ++c) {
        const int w = trials_.winner(c);
        if (w >= 0) codes[static_cast<std::size_t>(c)] = encode_outcome(trials_.contenders(c), w);
    }
    const Status s = write_contest_file(cache_path_, file_key_, codes);
    if (!s) *notice += "small-message contest: cache file not written: " + s.message() + "\n";
}

Status Selection::rebuild(const Topology& topo, double model_overhead) {
    options_.model.overhead = model_overhead;
    TOPOAR_TRY(build_model_table(topo));
    device_table_ = DecisionTable();
    device_table_tried_ = false;
    trials_.reset();  // the table may rank small messages differently now
    check_.reset();   // and large ones
    for (auto& e : check_exact_) e.clear();
    agreed_.clear();
    barrier_ = 0;
    key_ = outcomes_kept() ? contest_key(topo, cfg_, topoar::table_options(cfg_)) : 0;
    if (!cache_path_.empty()) {
        file_key_ = contest_file_key(topo, cfg_, topoar::table_options(cfg_));
        cache_path_ = contest_file_path(cfg_.contest_cache_dir, file_key_);
    }
    return Status::ok();
}

// auto's default table.  A pure function of the topology and the
// configuration, which every rank has alike: no communication needed.
// Not for one host when auto hands those down anyway.
Status Selection::build_model_table(const Topology& topo) {
    if (cfg_.algorithm == Algorithm::automatic && cfg_.model_table && size_ > 1 &&
        !(cfg_.single_node_fallback && shape_.nodes <= 1)) {
        auto t0 = std::chrono::steady_clock::now();
        TOPOAR_TRY(build_default_table_cached(topo, table_options(), &model_table_, &model_report_,
                                              &model_table_cached_));
        model_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    return Status::ok();
}

void Selection::build_device_table(const Topology& topo) {
    device_table_tried_ = true;
    if (cfg_.algorithm != Algorithm::automatic || !cfg_.model_table || size_ < 2 || shape_.nodes <= 1) return;
    // A failure leaves the table empty: the built-in choice then decides,
    // identically on every rank (the inputs are the same everywhere).
    if (!build_device_default_table(topo, table_options(), cfg_.gpu_model, &device_table_))
        device_table_ = DecisionTable{};
}

// Built-in default across hosts: the latency algorithm (node leaders) for
// small messages, aggregation trees above; both measured best on the
// emulated clusters of docs/performance.md.
Algorithm Selection::builtin_choice(std::size_t bytes) const {
    return bytes <= cfg_.small_msg_size ? Algorithm::leader : Algorithm::tree;
}

Decision Selection::decide(std::size_t bytes, MemType mem) const {
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

bool Selection::contested(std::size_t bytes, MemType mem, const Decision& d) const {
    return (d.origin == Origin::model || d.origin == Origin::builtin) && mem == MemType::host && contest_io_ &&
           shape_.nodes > 1 && size_ > 1 && trials_.covers(bytes) && !algorithm_info(d.algorithm).device_only;
}

Algorithm Selection::untimed_choice(std::size_t bytes, MemType mem, const Decision& d, bool* measured) const {
    *measured = false;
    if (!contested(bytes, mem, d)) return d.algorithm;
    const int cls = SizeTrials::size_class(bytes);
    const int w = trials_.winner(cls);
    if (w <= 0 || trials_.contenders(cls)[static_cast<std::size_t>(w)].hand_down) return d.algorithm;
    *measured = true;
    return trials_.contenders(cls)[static_cast<std::size_t>(w)].algorithm;
}

SizeTrials::Turn Selection::contest_turn(std::size_t bytes, MemType mem, const Decision& d, const PairCaps& pair) {
    // auto's own choice for a small host call across hosts (not a rule's,
    // not a forced one): a contest of its size class decides
    // (decide/trials.hpp).  Every rank takes the same turn.
    if (!contested(bytes, mem, d)) return SizeTrials::Turn{};
    // Read only when the class is new (no allocation per call).
    const Contender who[3] = {{false, d.algorithm}, {true, Algorithm::automatic}, {false, Algorithm::leader}};
    SizeTrials::Turn t = trials_.next(bytes, who, d.algorithm == Algorithm::leader ? 2 : 3);
    if (t.who.hand_down && pair.previous_differs) {
        // Correctness before speed: the class's first contender (the
        // table's choice) runs it, and a timed turn counts as its own.
        t.index = 0;
        t.who = trials_.contenders(t.cls)[0];
    }
    return t;
}

bool Selection::checked(std::size_t bytes, MemType mem, const Decision& d, bool measured) const {
    return measured && d.origin == Origin::model && mem == MemType::host && contest_io_ && shape_.nodes > 1 &&
           size_ > 1 && check_.covers(bytes) && !algorithm_info(d.algorithm).device_only;
}

ModelCheck::Turn Selection::check_turn(std::size_t bytes, MemType mem, const Decision& d, bool measured,
                                        const PairCaps& pair) {
    if (!checked(bytes, mem, d, measured)) return ModelCheck::Turn{};
    return check_.next(bytes, d.algorithm, !pair.previous_differs);
}

Algorithm Selection::checked_choice(std::size_t bytes, MemType mem, const Decision& d, bool measured,
                                    bool* measured_choice) const {
    *measured_choice = false;
    if (!checked(bytes, mem, d, measured)) return d.algorithm;
    const Algorithm w = check_.winner(ModelCheck::size_class(bytes));
    if (w == Algorithm::automatic) return d.algorithm;
    *measured_choice = w != d.algorithm;
    return w;
}

Status Selection::note_check(const ModelCheck::Turn& t, double seconds, std::size_t bytes, SetupIo& io,
                             const std::function<double(Algorithm)>& predict, std::string* notice) {
    if (t.cls < 0 || !t.timed || bytes == 0) return Status::ok();
    const double mine = check_.sample(t, seconds / static_cast<double>(bytes));
    if (!t.pool) return Status::ok();  // the plan's window goes on: nothing collective
    // The ranks' mean of their windows' means, per byte: the same number on
    // every rank.
    double pooled = 0;
    TOPOAR_TRY(mean_over_ranks(io, size_, mine, &pooled));
    std::string line;
    if (t.previous) {
        // The previous module's window (ModelCheck::kLost): decides the class.
        (void)check_.note(t, pooled, -1, {}, {}, &line);
        *notice += line;
        return Status::ok();
    }
    if (t.decided) {
        // A window of the decided plan: the next one starts unless this
        // one fell behind too (then the class is checked again below).
        if (!check_.falls_behind(t, pooled)) {
            (void)check_.note(t, pooled, -1, {}, {}, &line);
            return Status::ok();
        }
        pooled = check_.reopen(t, pooled, &line);  // the mean of the windows behind
        *notice += line;
    }
    // The other plans with what the table predicted for them, per byte, at
    // the largest size of its ladder not above `bytes` where each has a
    // prediction (above full_max_bytes the table simulates only the
    // leaders; a smaller size's per-byte time includes more of the
    // pipeline's fill, so it errs on the slow side).
    const DefaultTableReport& r = model_report_;
    std::vector<Algorithm> candidates;
    std::vector<double> predicted;
    double own = -1;
    for (std::size_t a = 0; a < r.algorithms.size() && a < r.time.size(); ++a) {
        double per = -1;
        for (std::size_t i = 0; i < r.sizes.size() && i < r.time[a].size(); ++i)
            if (r.sizes[i] <= bytes && r.time[a][i] > 0) per = r.time[a][i] / static_cast<double>(r.sizes[i]);
        if (r.algorithms[a] == t.algorithm) {
            own = per;
        } else if (per > 0) {
            candidates.push_back(r.algorithms[a]);
            predicted.push_back(per);
        }
    }
    // The model was wrong about the choice (it ran more than kOwn slower
    // than predicted): then the ladder's per-byte times of the others,
    // taken at a smaller size, may hide the plan that wins at this one
    // (seed 23's shapes 1 and 4: leader decided at 2 MiB, flexrelay faster
    // from 8 MiB on).  The kPredict plans the table ranks next are
    // predicted for this call's size, once per class and only here, at the
    // choice's pool turn: a simulation per plan on every rank costs a
    // short job more than the check saves it where the model was right.
    auto& exact = check_exact_[static_cast<std::size_t>(t.cls)];
    // (A class opened again has run its decided plan alone, like a choice.)
    if (check_.tried(t.cls) == 1 && own > 0 && pooled > (1 + ModelCheck::kOwn) * own && exact.empty()) {
        // Not at once: the choice runs one more timed call first, and the
        // plans are predicted at its end.  A job that makes only three
        // calls of the class never pays for the simulations (in 3-call OSU
        // jobs they made the third call 0.05-0.15 s slower), and the choice
        // is judged by the mean of three calls.  (A decided plan that fell
        // behind was judged by two windows of kWatch: extend() declines.)
        if (check_.extend(t)) return Status::ok();
        std::vector<std::size_t> order(candidates.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t x, std::size_t y) { return predicted[x] < predicted[y]; });
        // Split over the ranks (rank r predicts plans r, r + size, ...) and
        // shared by one allgather: the same numbers on every rank, and 2-3
        // simulations' time instead of kPredict on every rank (7 ranks on
        // 2 cores: 62-121 ms at 8 MiB when each rank ran all three).
        const auto t0 = std::chrono::steady_clock::now();
        const std::size_t n = std::min(order.size(), kPredict);
        std::vector<double> mine(kPredict, 0.0), all(kPredict * static_cast<std::size_t>(size_), 0.0);
        for (std::size_t k = static_cast<std::size_t>(rank_); k < n; k += static_cast<std::size_t>(size_))
            mine[k] = std::max(0.0, predict(candidates[order[k]]));
        TOPOAR_TRY(io.allgather(mine.data(), kPredict * sizeof(double), all.data()));
        std::ostringstream os;
        for (std::size_t k = 0; k < n; ++k) {
            double p = 0;
            for (int r = 0; r < size_; ++r) p += all[static_cast<std::size_t>(r) * kPredict + k];
            exact.emplace_back(candidates[order[k]], p > 0 ? p / static_cast<double>(bytes) : -1);
            os << (k ? ", " : "") << algorithm_name(candidates[order[k]]) << " "
               << (p > 0 ? std::round(static_cast<double>(bytes) / p / 1e5) / 10 : 0.0);
        }
        *notice += "model check, allreduce of " + format_size(bytes) + ": " + algorithm_name(t.algorithm) +
                   " ran more than " + std::to_string(static_cast<int>(ModelCheck::kOwn * 100 + 0.5)) +
                   " % slower than predicted; predicted for this size (MB/s): " + os.str() + " (" +
                   std::to_string(static_cast<int>(
                       1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() + 0.5)) +
                   " ms)\n";
    }
    // What was predicted for this size replaces the ladder's numbers.
    for (const auto& e : exact) {
        for (std::size_t i = 0; i < candidates.size(); ++i)
            if (candidates[i] == e.first && e.second > 0) predicted[i] = e.second;
        if (e.first == t.algorithm && e.second > 0) own = e.second;  // an alternative's own
    }
    (void)check_.note(t, pooled, own, candidates, predicted, &line, true);
    *notice += line;
    return Status::ok();
}

Status Selection::note_watch(const SizeTrials::Turn& t, double seconds, SetupIo& io, std::string* notice) {
    trials_.record(t, seconds);
    if (!t.agree) return Status::ok();
    // The window's mean over the ranks (one allgather of one number).
    double pooled = 0;
    TOPOAR_TRY(mean_over_ranks(io, size_, trials_.window_mean(t.cls), &pooled));
    const int before = trials_.winner(t.cls);
    const int w = trials_.end_window(t.cls, pooled);
    const std::vector<Contender>& who = trials_.contenders(t.cls);
    auto us = [&](double v) {
        std::ostringstream o;
        if (std::isfinite(v))
            o << std::round(v * 1e7) / 10 << " us";
        else
            o << "no time";
        return o.str();
    };
    std::ostringstream os;
    os << "allreduce of " << format_size(std::size_t(1) << t.cls) << "-" << format_size(std::size_t(2) << t.cls)
       << ": " << contender_name(who[static_cast<std::size_t>(before)]) << " watched after the contest, "
       << us(pooled) << " per call (" << us(trials_.contest_mean(t.cls, before)) << " in the contest; mean of "
       << SizeTrials::kWatch << " calls and of the ranks)";
    if (trials_.watching(t.cls)) {
        os << ": " << contender_name(who[static_cast<std::size_t>(w)]) << " runs the next "
           << SizeTrials::kWatchSkip + SizeTrials::kWatch << " calls (" << us(trials_.contest_mean(t.cls, w))
           << " in the contest)\n";
        *notice += os.str();
        return Status::ok();
    }
    os << ": " << contender_name(who[static_cast<std::size_t>(w)]) << " from now on";
    if (w != before || before != trials_.contest_winner(t.cls)) {
        os << " (watched:";
        for (std::size_t i = 0; i < who.size(); ++i)
            if (std::isfinite(trials_.watched_mean(t.cls, static_cast<int>(i))))
                os << " " << contender_name(who[i]) << " " << us(trials_.watched_mean(t.cls, static_cast<int>(i)));
        os << ")";
    }
    os << "\n";
    *notice += os.str();
    if (w != trials_.contest_winner(t.cls)) {
        // Kept for later communicators of this shape (and the cache file).
        store_->put(key_, t.cls, encode_outcome(who, w));
        write_cache(notice);
    }
    return Status::ok();
}

Status Selection::note_trial(const SizeTrials::Turn& t, double seconds, SetupIo& io, std::string* notice) {
    if (t.cls < 0) return Status::ok();
    if (t.decided) return t.watched ? note_watch(t, seconds, io, notice) : Status::ok();
    trials_.record(t, seconds);
    if (!t.agree) return Status::ok();
    // Every rank's numbers, gathered and summed: the same on every rank,
    // so the same contenders dropped and the same winner.  Medians to drop
    // the losers and to see a close field, means to settle.
    const std::vector<double> med = trials_.medians(t.cls), mean = trials_.means(t.cls);
    const std::size_t n = med.size();
    std::vector<double> mine(med);
    mine.insert(mine.end(), mean.begin(), mean.end());
    std::vector<double> all(2 * n * static_cast<std::size_t>(size_), 0.0);
    TOPOAR_TRY(io.allgather(mine.data(), 2 * n * sizeof(double), all.data()));
    std::vector<double> pooled_med(n, 0.0), pooled(n, 0.0);
    for (int r = 0; r < size_; ++r)
        for (std::size_t i = 0; i < n; ++i) {
            pooled_med[i] += all[static_cast<std::size_t>(r) * 2 * n + i];
            pooled[i] += all[static_cast<std::size_t>(r) * 2 * n + n + i];
        }
    const std::vector<Contender> who = trials_.contenders(t.cls);
    std::vector<bool> was_in(n);
    for (std::size_t i = 0; i < n; ++i) was_in[i] = trials_.active(t.cls, static_cast<int>(i));
    const int rounds = trials_.rounds(t.cls);
    int w = -1;
    const char* why = "";
    if (t.last) {
        w = trials_.settle(t.cls, pooled);
    } else {
        w = trials_.prune(t.cls, pooled_med);
        if (w >= 0) {
            why = " (the others slower by more than the round's margin)";
        } else if (trials_.close_enough(t.cls, pooled_med)) {
            w = trials_.settle(t.cls, pooled);
            why = " (settled after the third round: every one left within 10 % by medians)";
        }
    }
    if (w < 0) return Status::ok();  // several still in: the contest goes on
    {
        // The watch's windows pool as the mean of the ranks: the same units.
        std::vector<double> per_rank(pooled);
        for (double& v : per_rank) v /= size_;
        trials_.begin_watch(t.cls, per_rank);
    }
    store_->put(key_, t.cls, encode_outcome(who, w));
    write_cache(notice);
    std::ostringstream os;
    os << "allreduce of " << format_size(std::size_t(1) << t.cls) << "-" << format_size(std::size_t(2) << t.cls)
       << ": measured per call (mean of each one's timed calls, " << trials_.samples() << " at most, after "
       << rounds << (rounds == 1 ? " round" : " rounds") << ", and of the ranks)";
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
       << (w == 0 ? " (auto's table's choice)" : "") << why << "\n";
    *notice += os.str();
    return Status::ok();
}

}  // namespace topoar
