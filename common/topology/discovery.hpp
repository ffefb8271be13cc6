// topoar engine: discovery, the topology of a communicator from what its
// ranks report (host names, bindings, Slurm addresses) and the configured
// files (a topology file, a rack file).  The text format itself is
// Topology::from_text/to_text (topology_io.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "status.hpp"
#include "topology/measured.hpp"
#include "topology/topology.hpp"

namespace topoar {

// What one rank knows about itself; the glue gathers one per rank.
struct RankInfo {
    std::string host;           // host name; ranks with equal names share a node
    int socket = -1;            // package of its hwloc binding; -1 unknown/unbound
    std::string slurm_addr;     // $SLURM_TOPOLOGY_ADDR, e.g. "s0.s1.node12"
    std::string slurm_pattern;  // $SLURM_TOPOLOGY_ADDR_PATTERN, e.g. "switch.switch.node"
    // The digest of the widest network this process measured (0: none);
    // equal on every rank means set-up may reuse it without probing.
    std::uint64_t probe_digest = 0;
    // Its fastest network port that is up, bytes/s (nic_probe.hpp; 0:
    // unknown): a prior the measured host link cannot exceed.
    double nic_bandwidth = 0;
    // How many small-message contest outcomes its process keeps
    // (engine/outcome_store.hpp; 0: none): when every rank has none, set-up
    // skips agreeing on them.
    int contest_outcomes = 0;
};

// One host of a communicator: its name and its ranks, ascending.
struct HostRanks {
    std::string name;
    std::vector<int> ranks;
};

// What every source starts from: the ranks grouped into hosts by
// RankInfo::host, hosts in order of their lowest rank (the order of a
// discovered tree's hosts and of the link probes).  Fails on no ranks or a
// rank without a host name.
Status group_hosts(const std::vector<RankInfo>& ranks, std::vector<HostRanks>* hosts);

struct DiscoveryOptions {
    std::string topology_file;  // topology file (docs/topology-format.md); "" = none
    std::string rack_file;      // "host rack" lines; "" = none
    bool use_slurm = true;      // use the ranks' Slurm addresses when all have one
    // Up-links of discovered vertices and of file vertices without bw=/lat=;
    // a bandwidth <= 0 means "the built-in default" (see LinkDefaults).
    Link default_rank = LinkDefaults{}.rank;
    Link default_socket = LinkDefaults{}.socket;
    Link default_node = LinkDefaults{}.node;
    Link default_rack = LinkDefaults{}.rack;
    Link default_spine = LinkDefaults{}.spine;

    // The defaults above, with unset (bandwidth <= 0) entries built-in.
    LinkDefaults link_defaults() const;
};

// Builds the topology of a communicator from every rank's RankInfo (indexed
// by comm rank).  Hosts come from RankInfo::host; inside a host, a socket
// level only when all its ranks are bound and to more than one socket.  What
// lies above the hosts comes from the first source that is configured:
//   1. opt.topology_file: racks/spines and links; node names are host names.
//      If it lists ranks they must put every rank on its own host (the file is
//      then used as is); if not, it is a structure and the discovered hosts
//      are grafted into it.  A host missing from the file is an error.
//   2. opt.rack_file: "host rack [bw=] [lat=]" and "rack NAME [bw=] [lat=]".
//   3. Slurm addresses, when every rank has one (last switch = rack, switches
//      above it = spines).
//   4. nothing: hosts directly under the root.
// Host names match exactly, or else by their short form (up to the first '.')
// when that is unambiguous.  An unreadable or malformed file is an error,
// never silently skipped.
Status discover_topology(const std::vector<RankInfo>& ranks, const DiscoveryOptions& opt, Topology* out);

// discover_topology with a topology file's or rack file's text instead of
// opt.topology_file / opt.rack_file (both ignored); `origin` names the text
// in errors as the path would.  discover_topology reads the file and does
// the same; these let tests and the fuzzers (tests/fuzz/) skip the file.
Status discover_from_topology_text(const std::vector<RankInfo>& ranks, const std::string& text,
                                  const std::string& origin, const DiscoveryOptions& opt, Topology* out);
Status discover_from_rack_text(const std::vector<RankInfo>& ranks, const std::string& text, const std::string& origin,
                               const DiscoveryOptions& opt, Topology* out);

// Whether a file (opt) or the ranks' Slurm addresses describe what lies
// above the hosts; when not, discover_topology puts hosts straight under
// the root with default links, and set-up may measure them instead.
bool network_described(const std::vector<RankInfo>& ranks, const DiscoveryOptions& opt);

// The hosts of `ranks` under measured links (topology/measured.hpp), as
// set-up builds them when no file or Slurm address describes the network:
// racks when net has two or more, each host's up-link, and its ranks'
// links at the rate measured inside it.  Links the probes could not
// measure keep opt's defaults.  net.hosts must be the hosts in order of
// their lowest rank.  `overhead` is the cost model's software cost per
// message, which the measured latencies include (model_link()).
Status discover_measured(const std::vector<RankInfo>& ranks, const MeasuredNetwork& net, const DiscoveryOptions& opt,
                         double overhead, Topology* out);

}  // namespace topoar
