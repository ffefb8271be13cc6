// The device-data variant of a topology (device_topology.hpp).
#include "topology/device_topology.hpp"

#include <algorithm>
#include <cmath>

#include "core/units.hpp"

namespace topoar {

Link nvlink_class() { return Link{450e9, 1e-6}; }
Link pcie_class() { return Link{50e9, 2e-6}; }

Status parse_link_spec(const std::string& text, Link* link) {
    const std::size_t comma = text.find(',');
    Link l = *link;
    TOPOAR_TRY(parse_bandwidth(text.substr(0, comma), &l.bandwidth));
    if (comma != std::string::npos) TOPOAR_TRY(parse_latency(text.substr(comma + 1), &l.latency));
    *link = l;
    return Status::ok();
}

Status parse_gpu_link_class(const std::string& text, Link* link) {
    if (text == "nvlink") *link = nvlink_class();
    else if (text == "pcie") *link = pcie_class();
    else if (Status s = parse_link_spec(text, link); !s)
        return Status::invalid(s.message() + "; or a GPU link class: nvlink, pcie");
    return Status::ok();
}

namespace {

bool usable(const Link& l) { return l.bandwidth > 0 && std::isfinite(l.bandwidth) && l.latency >= 0; }

// Copies the subtree of `host` at vertex `v` under builder vertex `parent`,
// with the device links.
void copy(const Topology& host, int v, TopologyBuilder* b, int parent, const Link& gpu, const Link& nic, int nics) {
    const TopoNode& n = host.node(v);
    int here = parent;
    switch (n.level) {
    case Level::rank:
        b->add_rank(parent, n.rank, gpu);
        return;
    case Level::root:
        break;  // the builder's own root
    case Level::socket:
        break;  // its ranks hang off the node
    case Level::node:
        here = b->add(parent, Level::node, n.name,
                      Link{nic.bandwidth * (nics > 0 ? std::min(nics, host.num_ranks_under(v)) : host.num_ranks_under(v)),
                           nic.latency});
        break;
    case Level::rack:
    case Level::spine:
        here = b->add(parent, n.level, n.name, n.up);
        break;
    }
    for (int c : n.children) copy(host, c, b, here, gpu, nic, nics);
}

}  // namespace

Status device_topology(const Topology& host, const Link& gpu, const Link& nic_per_gpu, Topology* out) {
    return device_topology(host, gpu, nic_per_gpu, 0, out);
}

Status device_topology(const Topology& host, const Link& gpu, const Link& nic_per_gpu, int nics, Topology* out) {
    if (nics < 0) return Status::invalid("device topology: NICs per node must be 0 (one per GPU) or more");
    if (host.empty()) return Status::invalid("device topology: empty host topology");
    if (!usable(gpu)) return Status::invalid("device topology: the GPU link needs a positive bandwidth");
    if (!usable(nic_per_gpu)) return Status::invalid("device topology: the NIC link needs a positive bandwidth");
    TopologyBuilder b;
    copy(host, host.root(), &b, b.root(), gpu, nic_per_gpu, nics);
    return b.build(out);
}

}  // namespace topoar
