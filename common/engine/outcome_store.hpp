// topoar engine: the small-message contests' outcomes kept for the job
// (decide/trials.hpp), so that a dup, a split or a recurring group of the
// same shape starts decided instead of running the contest again.
//
// Keyed by what makes an outcome transferable (contest_key): the
// communicator's topology without host names (hosts, ranks per host in
// order, sockets, the links measured or assumed), the settings that change
// the cost-model table and so the contenders (table options, trial
// settings, the built-in choice's threshold); per key, one outcome per size
// class: the contenders and the winner.
//
// The crux is agreement: every rank of a communicator must take the same
// turn at the same call, but the ranks' stores differ (rank 1 was in a
// group that settled class 3, rank 2 was not).  So a communicator uses only
// what its ranks hold identically, exchanged at set-up (agree_outcomes:
// one allgather of the key and the codes, only when some rank holds any
// outcome, which every rank sees in RankInfo::contest_outcomes); every
// other class starts a contest as before.
//
// Thread-safe (communicators may be set up concurrently).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "config/engine_config.hpp"
#include "decide/trials.hpp"
#include "model/default_table.hpp"
#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

// One class's outcome as a number: 0 = none; else byte 0 the number of
// contenders (1-3), byte 1 the winner's index, bytes 2-4 the contenders
// (0xff the previous module, else the algorithm's number).
std::uint64_t encode_outcome(const std::vector<Contender>& who, int winner);
// False for 0 or a code that does not read back (then *who, *winner untouched).
bool decode_outcome(std::uint64_t code, std::vector<Contender>* who, int* winner);

// The store's key for a communicator with topology `topo`, settings cfg
// and auto's table built with `table` (Selection: table_options(cfg)).
std::uint64_t contest_key(const Topology& topo, const EngineConfig& cfg, const DefaultTableOptions& table);

// Across jobs (coll_topoar_contest_cache_dir): the file's key adds what
// ties an outcome to one cluster and build -- the host names, the links in
// quarter octaves of bandwidth and half octaves of latency (a measurement
// moves a little from job to job), this build's compile time -- to the
// settings of contest_key.  Another cluster, shape or build never finds it.
std::uint64_t contest_file_key(const Topology& topo, const EngineConfig& cfg, const DefaultTableOptions& table);
std::string contest_file_path(const std::string& dir, std::uint64_t file_key);

class OutcomeStore {
public:
    static constexpr std::size_t kMaxKeys = 64;  // bounded: the oldest key goes first
    using Codes = std::array<std::uint64_t, SizeTrials::kClasses>;

    // The process's store (what set-up advertises and uses).
    static OutcomeStore& process();

    void put(std::uint64_t key, int cls, std::uint64_t code);
    // Every class's code for key (0s when unknown).
    Codes get(std::uint64_t key) const;
    // How many outcomes it holds (RankInfo::contest_outcomes).
    int count() const;
    void clear();

private:
    mutable std::mutex mutex_;
    std::map<std::uint64_t, Codes> by_key_;
    std::vector<std::uint64_t> order_;  // keys, oldest first
    int count_ = 0;
};

// The cache file: "# topoar contest outcomes v1", "key HEX", then
// "class N HEX" lines.  A missing file: false, *problem empty; one that
// does not read back (another key, a bad line, a code that does not
// decode): false, *problem says where ("path:line: what").
bool read_contest_file(const std::string& path, std::uint64_t file_key, OutcomeStore::Codes* codes,
                       std::string* problem);
// Writes the non-zero codes atomically (a temporary file in the same
// directory, renamed over the old one).
Status write_contest_file(const std::string& path, std::uint64_t file_key, const OutcomeStore::Codes& codes);

}  // namespace topoar
