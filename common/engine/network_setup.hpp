// topoar engine: network set-up's process-wide part -- what every
// communicator of a job shares instead of computing or measuring again:
// auto's default tables by (topology, options), and the networks measured
// by the link probes (topology/probe.hpp), which later communicators over
// the same hosts reuse or receive from a rank that has one.  Thread-safe
// (communicators may be set up concurrently under MPI_THREAD_MULTIPLE).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/transport.hpp"
#include "decide/decision.hpp"
#include "model/default_table.hpp"
#include "status.hpp"
#include "topology/measured.hpp"
#include "topology/topology.hpp"

namespace topoar {

// Every option of o as text: what, with the topology, keys a cached table
// (and the contests' outcomes, engine/outcome_store.hpp).
std::string table_options_key(const DefaultTableOptions& o);

// build_default_table (model/default_table.hpp) through a process-wide
// cache keyed by the topology and the options (*hit: it was there).
Status build_default_table_cached(const Topology& topo, const DefaultTableOptions& opts, DecisionTable* table,
                                  DefaultTableReport* report, bool* hit = nullptr);

// What set-up may use to talk to the other ranks (the glue's point-to-point
// and allgather).  Without it set-up measures nothing and assumes links.
struct SetupIo {
    Transport* transport = nullptr;
    // Every rank gives `bytes` at mine; all receives size x bytes, by rank.
    std::function<Status(const void* mine, std::size_t bytes, void* all)> allgather;
};

// Collective over io: the mean of every rank's `mine` (size ranks), the same
// number on every rank (one allgather of one double).
Status mean_over_ranks(SetupIo& io, int size, double mine, double* mean);

// Where the links between hosts came from.
enum class NetworkSource { single_host, described, assumed, measured, cached };
const char* to_string(NetworkSource s);

// The digest (MeasuredNetwork::digest) of this process's widest measured
// network, 0 if none: what a rank advertises in RankInfo::probe_digest.
std::uint64_t probe_cache_digest();
// Forgets every measured network of this process (tests).
void clear_probe_cache();

// Remembers a network this process measured (widest first, bounded);
// replace: the network changed (online adaptation): every earlier
// measurement sharing a host with it is forgotten.
void remember_network(const MeasuredNetwork& net, bool replace = false);
// The measured network with this digest, restricted to `hosts`.
bool find_network(std::uint64_t digest, const std::vector<std::string>& hosts, MeasuredNetwork* out);
// The lowest rank with a network holding every host of the communicator
// sends it to the others (collective over io): ranks that measured in
// different earlier communicators agree on one measurement instead of
// probing again.  *shared false: nobody had one.
Status share_network(const std::vector<std::string>& names, int rank, int size, SetupIo& io, MeasuredNetwork* net,
                     bool* shared);

}  // namespace topoar
