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

}  // namespace topoar
