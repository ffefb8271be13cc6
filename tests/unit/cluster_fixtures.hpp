// Topologies of the emulated clusters (tests/cluster) for the model tests.
// Include after <cmocka.h>: failures end the test through fail_msg.
#pragma once

#include <vector>

#include <string>

#include "topology/discovery.hpp"
#include "topology/topology.hpp"

namespace topoar_test {

const topoar::Link kShm{2e9, 1e-6};  // ranks of one host
const double k200Mbit = 25e6;        // bytes/s
const double k1Gbit = 125e6;

inline topoar::Topology hosts(const std::vector<int>& sizes, topoar::Link node, topoar::Link rank) {
    topoar::Topology t;
    topoar::Status s = topoar::Topology::from_node_sizes(sizes, node, rank, &t);
    if (!s) fail_msg("%s", s.message().c_str());
    return t;
}

// tests/cluster spec "a": hosts of 2 and 3 ranks, 200 Mbit/s host links.
inline topoar::Topology cluster_2_3() { return hosts({2, 3}, {k200Mbit, 20e-6}, kShm); }

// Spec "c": racks 1+2 | 2+3 ranks, 1 Gbit/s host links, 200 Mbit/s rack
// uplinks, ranks placed round-robin over the hosts (--map-by node).
inline topoar::Topology cluster_two_racks() {
    using topoar::Level;
    topoar::TopologyBuilder b;
    int r0 = b.add(b.root(), Level::rack, "rack0", {k200Mbit, 20e-6});
    int r1 = b.add(b.root(), Level::rack, "rack1", {k200Mbit, 20e-6});
    int n[4] = {b.add(r0, Level::node, "n0", {k1Gbit, 20e-6}), b.add(r0, Level::node, "n1", {k1Gbit, 20e-6}),
                b.add(r1, Level::node, "n2", {k1Gbit, 20e-6}), b.add(r1, Level::node, "n3", {k1Gbit, 20e-6})};
    const int host_of[8] = {0, 1, 2, 3, 1, 2, 3, 3};  // slots 1, 2, 2, 3 filled round-robin
    for (int r = 0; r < 8; ++r) b.add_rank(n[host_of[r]], r, kShm);
    topoar::Topology t;
    topoar::Status s = b.build(&t);
    if (!s) fail_msg("%s", s.message().c_str());
    return t;
}

// The topology discovery builds for hosts "h0", "h1", ... holding
// per_host[i] ranks each (default links).
inline topoar::Topology hosts_topology(const std::vector<int>& per_host, const std::string& prefix = "h") {
    std::vector<topoar::RankInfo> ranks;
    for (std::size_t h = 0; h < per_host.size(); ++h)
        for (int i = 0; i < per_host[h]; ++i) {
            topoar::RankInfo r;
            r.host = prefix + std::to_string(h);
            ranks.push_back(r);
        }
    topoar::Topology t;
    topoar::Status s = topoar::discover_topology(ranks, topoar::DiscoveryOptions{}, &t);
    if (!s) fail_msg("%s", s.message().c_str());
    return t;
}

}  // namespace topoar_test
