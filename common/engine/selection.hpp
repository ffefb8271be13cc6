// topoar engine: selection -- which algorithm a call of a size runs.
//
// Built at set-up from the topology, the configuration and the
// communicator's shape: the rules file, auto's cost-model table (and, at
// the first device call, its device table), the built-in choice, and
// auto's small-message contest (decide/trials.hpp).  It answers decide()
// for a (size, memory type) and a call's turn of the contest, and pools
// the ranks' contest times when a round ends.  Knows nothing of plans or
// of running a call; testable alone (tests/unit/test_selection.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "config/engine_config.hpp"
#include "core/algorithm.hpp"
#include "decide/decision.hpp"
#include "decide/model_check.hpp"
#include "decide/route.hpp"
#include "decide/trials.hpp"
#include "engine/network_setup.hpp"
#include "engine/outcome_store.hpp"
#include "model/default_table.hpp"
#include "planners/planners.hpp"
#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

// Where the algorithm of a call came from (first that applies).
enum class Origin : int {
    forced = 0,     // coll_topoar_allreduce_algorithm names one
    rule = 1,       // a rule of the rules file matched
    model = 2,      // the cost-model table built at set-up
    builtin = 3,    // nothing else decided: the fixed built-in choice
    hand_down = 4,  // auto hands the call to the previous module
    measured = 5,   // small messages: the contender the ranks measured
                    // fastest (decide/trials.hpp) instead of the table's
};
const char* origin_name(Origin o);  // "forced", "rule", "cost model", "default", "hand down", "measured"

// decide()'s answer for one (size, memory type).
struct Decision {
    Algorithm algorithm = Algorithm::automatic;
    Origin origin = Origin::builtin;
    bool has_segment = false;        // the rule set a segment size
    std::size_t segment_bytes = 0;
    const char* rule = nullptr;      // Origin::rule: the rule's "file:line"
};

// The options an engine with `cfg` plans with for elements of elem_size
// bytes (plans themselves: make_plan, planners/planners.hpp).  Tools and
// tests plan exactly what runs with these.
// mem: the pipelining unit of host buffers (pipeline_size) or of device
// buffers (gpu_pipeline_size).
PlanOptions plan_options(const EngineConfig& cfg, std::size_t elem_size, MemType mem = MemType::host);
// The options set-up builds the cost-model table with (tools print the same
// one), with coll_topoar_model_overhead as the software cost per message
// (set-up measures it where it measures the links: Selection::table_options).
DefaultTableOptions table_options(const EngineConfig& cfg);

// The configuration whose units fit the links of `topo`
// (coll_topoar_unit_time): on more than one host whose network links
// (hosts' and racks' up-links) all have a known rate, segment_size and
// pipeline_size grow to link_unit (exec/schedule_policy.hpp) of the
// slowest of them and flight_size (when set) to at least twice the
// segment; otherwise cfg as it is.  What the engine plans and runs with,
// and what the cost model predicts with (Selection::use_units).
EngineConfig units_for_links(const EngineConfig& cfg, const Topology& topo);

class Selection {
public:
    explicit Selection(EngineConfig cfg) : cfg_(std::move(cfg)), options_(topoar::table_options(cfg_)) {}
    // Reads the rules file (every rank reads the same one; a bad one fails:
    // "file:line: ...") and builds auto's cost-model table for `topo`, a
    // communicator of `size` ranks and `shape`.  contest_io: the ranks can
    // pool contest times (set-up had an allgather); without it no contest
    // runs.  Before it (or after it failed) decide() still answers, from
    // the configuration alone.
    // model_overhead: the cost model's software cost per message here
    // (Engine::model_overhead: measured or coll_topoar_model_overhead);
    // rank: this rank's (rank 0 reads and writes coll_topoar_contest_cache_dir's file).
    Status setup(const Topology& topo, int size, const CommShape& shape, bool contest_io, double model_overhead,
                 int rank = 0);
    // Before setup() or rebuild(): the tables are built with these units
    // (units_for_links of the configuration this was made with).
    void use_units(const EngineConfig& units);
    // The links were measured again (online adaptation): the cost-model
    // table is built again for `topo`, the device table on its next use,
    // and the contests start over (the table may rank small messages
    // differently now).  The rules and the shape stay.
    Status rebuild(const Topology& topo, double model_overhead);
    // Before a device call: builds the device table once (host-only
    // programs never pay for it; every rank builds the same one from the
    // same data, no communication).
    void prepare_device(const Topology& topo) {
        if (!device_table_tried_) build_device_table(topo);
    }

    // Selection order: the forced algorithm (Origin::forced), else the
    // first matching rule of the rules file (Origin::rule, maybe with a
    // segment size), else the cost-model table built at set-up
    // (Origin::model), else the built-in default (Origin::builtin).  Host
    // calls of auto on a one-host communicator that nothing but the
    // built-in default claims are handed down (Origin::hand_down).
    Decision decide(std::size_t bytes, MemType mem) const;
    // Built-in default across hosts: the latency algorithm (node leaders)
    // for small messages, aggregation trees above.
    Algorithm builtin_choice(std::size_t bytes) const;

    // auto's own choice `d` for a call of `bytes` on `mem` (not a rule's,
    // not a forced one) for a small host call across hosts: this call's
    // turn of its size class's contest (cls < 0: no contest).  Every rank
    // takes the same turn.  pair.previous_differs: the previous module's
    // result could differ from topoar's, so it takes no turn (the table's
    // choice runs it, and a timed turn counts as its own).
    SizeTrials::Turn contest_turn(std::size_t bytes, MemType mem, const Decision& d, const PairCaps& pair);
    // A nonblocking call (never timed, CallKind::nonblocking): the class's
    // winner if it is one of topoar's plans (*measured set), else d's
    // algorithm; the contest's turns are not touched.
    Algorithm untimed_choice(std::size_t bytes, MemType mem, const Decision& d, bool* measured) const;
    // The contests' outcomes kept for the job (engine/outcome_store.hpp):
    // after setup(), collective over io when any rank holds one (held:
    // every rank's RankInfo::contest_outcomes, the same vector on every
    // rank) or coll_topoar_contest_cache_dir is set: one allgather of this
    // communicator's key, the codes of the contested size classes, and
    // with the cache directory rank 0's codes from its file; a class every
    // rank holds identically starts decided, else one rank 0's file has;
    // every other one starts a contest.  Where no contest can run
    // (outcomes_kept() but not contests_possible()) only the barrier's kind
    // is agreed.  Nothing to do (no communication) on one host or without
    // I/O, or when no rank holds any outcome and no cache directory is set.
    Status agree_outcomes(const std::vector<int>& held, SetupIo& io);
    // The MPI_Barrier kind (the glue's coll_topoar_barrier auto) chosen on
    // earlier communicators of this shape, kept in the same store (slot
    // kBarrierSlot of the key's codes, never a size class's) and agreed by
    // the same allgather: 0 none held alike by every rank, else
    // kBarrierPrevious or kBarrierTopoar.  keep_barrier_outcome() stores
    // this communicator's (every rank alike: the glue times the two with
    // one agreed result).  Also where no contest runs (trial_calls 0, an
    // algorithm forced): then only the barrier's slot is agreed.
    static constexpr int kBarrierSlot = SizeTrials::kClasses - 1;
    static constexpr int kBarrierPrevious = 1, kBarrierTopoar = 2;
    int barrier_outcome() const { return barrier_; }
    void keep_barrier_outcome(int kind);
    // The size classes agree_outcomes() decided and a cache file it
    // ignored, a line each (empty: none).
    const std::string& agreed_outcomes() const { return agreed_; }
    // Tests: another store than the process's (simulated ranks in one process).
    void use_outcome_store(OutcomeStore* store) { store_ = store; }

    // A turn of the contest took `seconds` on this rank (t from
    // contest_turn, undecided; handed down or run).  Collective at the
    // class's rounds' last turns, which every rank reaches at the same
    // call: one allgather over io of the medians and means, summed, so
    // every rank drops the same contenders and settles on the same winner
    // (SizeTrials::prune, close_enough, settle).  A decided class appends a
    // line to *notice and is kept in the outcome store under this
    // communicator's key.
    Status note_trial(const SizeTrials::Turn& t, double seconds, SetupIo& io, std::string* notice);
    // The same for a watched turn of a decided class (SizeTrials::begin_watch;
    // note_trial calls it): collective at a window's last call, one
    // allgather of one number; the notice says what each window ran and
    // which contender runs the class; a change of winner is kept in the
    // outcome store.
    Status note_watch(const SizeTrials::Turn& t, double seconds, SetupIo& io, std::string* notice);

    // auto's large host calls across hosts that the cost-model table
    // decides (d.origin model), on measured links (`measured`: the engine
    // keeps them): this call's turn of its size class's check
    // (decide/model_check.hpp; cls < 0: none).  Every rank takes the same
    // turn.  A turn or a class of the previous module (Turn::previous)
    // only where pair lets it run the call (!previous_differs).
    ModelCheck::Turn check_turn(std::size_t bytes, MemType mem, const Decision& d, bool measured,
                                const PairCaps& pair = PairCaps{});
    // A nonblocking call (never timed): the class's checked plan once
    // decided (*measured set), else d's algorithm.
    Algorithm checked_choice(std::size_t bytes, MemType mem, const Decision& d, bool measured,
                             bool* measured_choice) const;
    // A timed turn of the check took `seconds` on this rank for a call of
    // `bytes`.  At a pool turn collective (every rank reaches it at the
    // same call): one allgather of one number; the other plans are judged
    // by what the cost-model table predicted for them (model_report), and
    // where the choice ran more than kOwn slower than its prediction the
    // kPredict plans the table ranks next by `predict` (seconds for this
    // call; <= 0: none), once per class.  A decided class's watched
    // window (ModelCheck::kWatch) pools the same way, and where its plan
    // fell behind, the class is checked again (those predictions made if
    // not yet).  A decided class, or a plan to try, appends a line to
    // *notice.
    Status note_check(const ModelCheck::Turn& t, double seconds, std::size_t bytes, SetupIo& io,
                      const std::function<double(Algorithm)>& predict, std::string* notice);
    static constexpr std::size_t kPredict = 3;

    const DecisionTable& rules() const { return rules_; }
    // The cost-model table and what its construction predicted (empty when
    // not built: forced algorithm, model_table off, one host, one rank,
    // or above the table's rank limit).
    const DecisionTable& model_table() const { return model_table_; }
    const DecisionTable& device_table() const { return device_table_; }
    const DefaultTableReport& model_report() const { return model_report_; }
    double model_setup_seconds() const { return model_seconds_; }
    bool model_table_cached() const { return model_table_cached_; }
    const CommShape& shape() const { return shape_; }
    const SizeTrials& trials() const { return trials_; }
    // The options the tables are built with (and online adaptation
    // predicts with): table_options(cfg) with the set-up's software cost
    // per message.
    const DefaultTableOptions& table_options() const { return options_; }

private:
    // A host call of auto's own choice across hosts within the contests' sizes.
    bool contested(std::size_t bytes, MemType mem, const Decision& d) const;
    Status build_model_table(const Topology& topo);
    void build_device_table(const Topology& topo);

    EngineConfig cfg_;
    DefaultTableOptions options_;  // table_options()
    int size_ = 0;
    bool ready_ = false;  // set up: decide() may hand down / use NCCL on one host
    CommShape shape_;
    DecisionTable rules_;
    DecisionTable model_table_;
    DefaultTableReport model_report_;
    double model_seconds_ = 0;
    bool model_table_cached_ = false;
    // auto's table for device buffers across hosts (model/device_model.hpp).
    DecisionTable device_table_;
    bool device_table_tried_ = false;
    SizeTrials trials_;            // auto's small-message contests
    ModelCheck check_;             // auto's large-message choice checked
    // Per size class: plans predicted for the class's calls (note_check).
    std::array<std::vector<std::pair<Algorithm, double>>, ModelCheck::kClasses> check_exact_{};
    // A host call of auto's table's choice across hosts within the check's sizes.
    bool checked(std::size_t bytes, MemType mem, const Decision& d, bool measured) const;
    bool contest_io_ = false;      // set up with I/O: contests can agree
    // Contests can run here: auto, trials on, and outcomes_kept().
    bool contests_possible() const;
    // Outcomes are kept and agreed here (a key): I/O and several hosts.  The
    // barrier's kind is kept wherever this holds, contests or not.
    bool outcomes_kept() const;
    OutcomeStore* store_ = &OutcomeStore::process();
    std::uint64_t key_ = 0;        // contest_key of this communicator
    std::string agreed_;           // agree_outcomes()'s classes
    int barrier_ = 0;              // agree_outcomes()'s barrier kind (0: none)
    int rank_ = 0;
    std::string cache_path_;       // rank 0, contest_cache_dir set: its file
    std::uint64_t file_key_ = 0;   // contest_file_key
    // Rank 0 with a cache file: writes every decided class (after a settle).
    void write_cache(std::string* notice);
};

}  // namespace topoar
