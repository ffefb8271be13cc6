// discover_topology (discovery.hpp): hosts from the ranks' reports, and
// above them a topology file, a rack file or Slurm addresses.  Files are
// read with the topology text format's line reader and parser
// (topology_io.hpp).
#include <map>
#include <set>
#include <sstream>

#include "core/units.hpp"
#include "topology/discovery.hpp"
#include "topology/topology_io.hpp"

namespace topoar {

namespace {

using namespace topology_text;

std::string short_name(const std::string& host) { return host.substr(0, host.find('.')); }

// Names from a file, looked up by a host's name: exactly, or else by short
// name ("node1" vs "node1.cluster") when exactly one file entry has it.
class NameIndex {
public:
    void add(const std::string& name, int value) {
        exact_.emplace(name, value);
        auto ins = short_.emplace(short_name(name), value);
        if (!ins.second && ins.first->second != value) ins.first->second = -1;  // ambiguous
    }
    int find(const std::string& name) const {
        auto e = exact_.find(name);
        if (e != exact_.end()) return e->second;
        auto s = short_.find(short_name(name));
        return s == short_.end() ? -1 : s->second;
    }

private:
    std::map<std::string, int> exact_, short_;
};

using Host = HostRanks;

std::string host_label(const Host& h) {
    return "host " + excerpt(h.name) + " (ranks " + format_rank_list(h.ranks) + ")";
}

// The host's node vertex, with a socket level only when every rank on it is
// bound and they use more than one socket (one socket adds nothing, and a
// partly unknown binding would put ranks on the wrong side).
void add_host(TopologyBuilder* b, int parent, const Host& h, const Link& node_up, const std::vector<RankInfo>& ranks,
              const LinkDefaults& d) {
    int nv = b->add(parent, Level::node, h.name, node_up);
    std::set<int> sockets;
    bool all_bound = true;
    for (int r : h.ranks) {
        int s = ranks[static_cast<std::size_t>(r)].socket;
        if (s < 0)
            all_bound = false;
        else
            sockets.insert(s);
    }
    if (!all_bound || sockets.size() < 2) {
        for (int r : h.ranks) b->add_rank(nv, r, d.rank);
        return;
    }
    std::map<int, int> sv;
    for (int s : sockets) sv[s] = b->add(nv, Level::socket, std::to_string(s), d.socket);
    for (int r : h.ranks) b->add_rank(sv[ranks[static_cast<std::size_t>(r)].socket], r, d.rank);
}

// Maps each host to a file entry; two hosts on one entry is an error too.
Status match_hosts(const std::vector<Host>& hosts, const NameIndex& index, const std::string& origin,
                   const std::string& what, std::vector<int>* entry_of_host) {
    std::map<int, std::size_t> taken;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        int e = index.find(hosts[i].name);
        if (e < 0) return Status::invalid(origin + ": " + host_label(hosts[i]) + " is not in the " + what);
        auto ins = taken.emplace(e, i);
        if (!ins.second)
            return Status::invalid(origin + ": hosts " + excerpt(hosts[ins.first->second].name) + " and " +
                                   excerpt(hosts[i].name) + " both match the same entry of the " + what);
        entry_of_host->push_back(e);
    }
    return Status::ok();
}

// 1. Topology file (`path` names it in errors).
Status from_topology_text(const std::vector<RankInfo>& ranks, const std::vector<Host>& hosts, const std::string& text,
                          const std::string& path, const LinkDefaults& d, Topology* out) {
    ParsedFile pf;
    TOPOAR_TRY(parse_topology(text, path, d, &pf));

    if (pf.has_ranks()) {
        // A complete description of this job (e.g. a dump of an earlier run):
        // used as is once every rank is confirmed on its own host.
        Topology t;
        TOPOAR_TRY(assign_ranks(path, &pf));
        TOPOAR_TRY(build_parsed(pf, path, &t));
        if (t.num_ranks() != static_cast<int>(ranks.size()))
            return Status::invalid(path + ": the file lists " + std::to_string(t.num_ranks()) +
                                   " ranks, the communicator has " + std::to_string(ranks.size()));
        for (int r = 0; r < t.num_ranks(); ++r) {
            int n = t.node_of_rank(r);
            const std::string& host = ranks[static_cast<std::size_t>(r)].host;
            if (n < 0) return Status::invalid(path + ": rank " + std::to_string(r) + " is not inside a node");
            NameIndex one;
            one.add(t.node(n).name, 0);
            if (one.find(host) != 0)
                return Status::invalid(path + ": rank " + std::to_string(r) + " runs on host " + excerpt(host) +
                                       " but the file puts it on node " + excerpt(t.node(n).name));
        }
        *out = std::move(t);
        return Status::ok();
    }

    // A structure without ranks: hosts are grafted into its nodes.
    NameIndex index;
    for (std::size_t i = 1; i < pf.v.size(); ++i) {
        const PVertex& x = pf.v[i];
        if (x.level == Level::node) index.add(x.name, static_cast<int>(i));
        if (x.parent > 0 && pf.v[static_cast<std::size_t>(x.parent)].level == Level::node)
            return Status::invalid(at(path, x.line) +
                                   "a file without ranks describes hosts and switches only; "
                                   "sockets are discovered from the binding");
    }
    std::vector<int> node_of_host;
    TOPOAR_TRY(match_hosts(hosts, index, path, "topology file", &node_of_host));
    std::vector<int> host_at(pf.v.size(), -1);
    std::vector<char> needed(pf.v.size(), 0);
    for (std::size_t h = 0; h < hosts.size(); ++h) {
        host_at[static_cast<std::size_t>(node_of_host[h])] = static_cast<int>(h);
        for (int x = node_of_host[h]; x >= 0 && !needed[static_cast<std::size_t>(x)];
             x = pf.v[static_cast<std::size_t>(x)].parent)
            needed[static_cast<std::size_t>(x)] = 1;
    }
    TopologyBuilder b;
    // Switches with no host of this job are left out.
    auto copy = [&](auto&& self, int pv, int parent) -> void {
        for (int c : pf.v[static_cast<std::size_t>(pv)].children) {
            const PVertex& x = pf.v[static_cast<std::size_t>(c)];
            if (!needed[static_cast<std::size_t>(c)]) continue;
            if (x.level == Level::node) {
                add_host(&b, parent, hosts[static_cast<std::size_t>(host_at[static_cast<std::size_t>(c)])], x.up, ranks,
                         d);
            } else {
                self(self, c, b.add(parent, x.level, x.name, x.up));
            }
        }
    };
    copy(copy, 0, b.root());
    Status s = b.build(out);
    return s ? s : Status::invalid(path + ": " + s.message());
}

// 2. Rack file: "host rack [bw=] [lat=]" and "rack NAME [bw=] [lat=]".
Status from_rack_text(const std::vector<RankInfo>& ranks, const std::vector<Host>& hosts, const std::string& text,
                      const std::string& path, const LinkDefaults& d, Topology* out) {
    std::vector<Line> lines;
    TOPOAR_TRY(split_lines(text, path, &lines));
    struct Entry {
        std::string rack;
        Link up;
    };
    std::vector<Entry> entries;
    std::map<std::string, int> host_line;
    std::map<std::string, std::pair<Link, int>> racks;  // uplinks, with their line
    NameIndex index;
    for (const Line& l : lines) {
        const std::string where = at(path, l.number);
        if (l.words.size() < 2 || l.words[1].find('=') != std::string::npos)
            return Status::invalid(where + "expected 'HOST RACK [bw=...] [lat=...]' or 'rack NAME [bw=...] [lat=...]'");
        Attrs a;
        TOPOAR_TRY(parse_attrs(l.words, 2, {"bw", "lat"}, where, &a));
        if (l.words[0] == "rack") {
            auto ins = racks.emplace(l.words[1], std::make_pair(apply(d.rack, a), l.number));
            if (!ins.second)
                return Status::invalid(where + "rack " + excerpt(l.words[1]) + " described twice (first at line " +
                                       std::to_string(ins.first->second.second) + ")");
            continue;
        }
        auto ins = host_line.emplace(l.words[0], l.number);
        if (!ins.second)
            return Status::invalid(where + "host " + excerpt(l.words[0]) + " listed twice (first at line " +
                                   std::to_string(ins.first->second) + ")");
        index.add(l.words[0], static_cast<int>(entries.size()));
        entries.push_back(Entry{l.words[1], apply(d.node, a)});
    }
    std::vector<int> entry_of_host;
    TOPOAR_TRY(match_hosts(hosts, index, path, "rack file", &entry_of_host));
    TopologyBuilder b;
    std::map<std::string, int> rack_vertex;
    for (std::size_t h = 0; h < hosts.size(); ++h) {
        const Entry& e = entries[static_cast<std::size_t>(entry_of_host[h])];
        auto it = rack_vertex.find(e.rack);
        if (it == rack_vertex.end()) {
            auto r = racks.find(e.rack);
            it = rack_vertex
                     .emplace(e.rack, b.add(b.root(), Level::rack, e.rack, r == racks.end() ? d.rack : r->second.first))
                     .first;
        }
        add_host(&b, it->second, hosts[h], e.up, ranks, d);
    }
    Status s = b.build(out);
    return s ? s : Status::invalid(path + ": " + s.message());
}

// 3. Slurm.  SLURM_TOPOLOGY_ADDR_PATTERN names the parts of
// SLURM_TOPOLOGY_ADDR from the top switch down to the node, e.g.
// "switch.switch.node" / "s0.s3.tux12".  The lowest switch is the rack, the
// ones above it spines.  Node names may contain dots, so the address is
// split into (switches) + (the rest).
Status switch_path(const RankInfo& info, int rank, std::vector<std::string>* path) {
    std::vector<std::string> pattern;
    std::istringstream ps(info.slurm_pattern);
    for (std::string part; std::getline(ps, part, '.');) pattern.push_back(part);
    const std::string who =
        "rank " + std::to_string(rank) + ": SLURM_TOPOLOGY_ADDR_PATTERN '" + excerpt(info.slurm_pattern) + "'";
    if (pattern.empty() || pattern.back() != "node") return Status::invalid(who + " does not end with 'node'");
    for (std::size_t i = 0; i + 1 < pattern.size(); ++i)
        if (pattern[i] != "switch") return Status::invalid(who + " has an unknown part '" + excerpt(pattern[i]) + "'");
    std::string rest = info.slurm_addr;
    for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
        std::size_t dot = rest.find('.');
        if (dot == std::string::npos || dot == 0)
            return Status::invalid("rank " + std::to_string(rank) + ": SLURM_TOPOLOGY_ADDR '" +
                                   excerpt(info.slurm_addr) + "' does not match pattern '" +
                                   excerpt(info.slurm_pattern) + "'");
        path->push_back(rest.substr(0, dot));
        rest = rest.substr(dot + 1);
    }
    if (rest.empty())
        return Status::invalid("rank " + std::to_string(rank) + ": SLURM_TOPOLOGY_ADDR '" + excerpt(info.slurm_addr) +
                               "' has no node part");
    return Status::ok();
}

Status from_slurm(const std::vector<RankInfo>& ranks, const std::vector<Host>& hosts, const LinkDefaults& d,
                  Topology* out) {
    TopologyBuilder b;
    // switch name -> (builder vertex, parent switch name, level)
    struct Switch {
        int vertex;
        std::string parent;
        Level level;
    };
    std::map<std::string, Switch> switches;
    for (const Host& h : hosts) {
        std::vector<std::string> path;
        TOPOAR_TRY(switch_path(ranks[static_cast<std::size_t>(h.ranks[0])], h.ranks[0], &path));
        for (int r : h.ranks) {
            std::vector<std::string> other;
            TOPOAR_TRY(switch_path(ranks[static_cast<std::size_t>(r)], r, &other));
            if (other != path)
                return Status::invalid("Slurm: ranks " + std::to_string(h.ranks[0]) + " and " + std::to_string(r) +
                                       " on host " + excerpt(h.name) + " report different switches");
        }
        int parent = b.root();
        std::string parent_name;
        for (std::size_t i = 0; i < path.size(); ++i) {
            Level lv = i + 1 == path.size() ? Level::rack : Level::spine;
            auto it = switches.find(path[i]);
            if (it == switches.end()) {
                int v = b.add(parent, lv, path[i], lv == Level::rack ? d.rack : d.spine);
                it = switches.emplace(path[i], Switch{v, parent_name, lv}).first;
            } else if (it->second.parent != parent_name || it->second.level != lv) {
                return Status::invalid("Slurm: switch " + excerpt(path[i]) +
                                       " appears at two places in the switch tree (" + host_label(h) + ")");
            }
            parent = it->second.vertex;
            parent_name = path[i];
        }
        add_host(&b, parent, h, d.node, ranks, d);
    }
    Status s = b.build(out);
    return s ? s : Status::invalid("Slurm topology: " + s.message());
}

Link or_builtin(const Link& l, const Link& builtin) { return l.bandwidth > 0 ? l : builtin; }

}  // namespace

Status group_hosts(const std::vector<RankInfo>& ranks, std::vector<HostRanks>* hosts) {
    if (ranks.empty()) return Status::invalid("discover_topology: no ranks");
    std::map<std::string, std::size_t> index;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        const std::string& h = ranks[r].host;
        if (h.empty()) return Status::invalid("rank " + std::to_string(r) + " reported no host name");
        auto ins = index.emplace(h, hosts->size());
        if (ins.second) hosts->push_back(HostRanks{h, {}});
        (*hosts)[ins.first->second].ranks.push_back(static_cast<int>(r));
    }
    return Status::ok();
}

LinkDefaults DiscoveryOptions::link_defaults() const {
    LinkDefaults builtin, d;
    d.rank = or_builtin(default_rank, builtin.rank);
    d.socket = or_builtin(default_socket, builtin.socket);
    d.node = or_builtin(default_node, builtin.node);
    d.rack = or_builtin(default_rack, builtin.rack);
    d.spine = or_builtin(default_spine, builtin.spine);
    return d;
}

Status discover_from_topology_text(const std::vector<RankInfo>& ranks, const std::string& text,
                                  const std::string& origin, const DiscoveryOptions& opt, Topology* out) {
    std::vector<Host> hosts;
    TOPOAR_TRY(group_hosts(ranks, &hosts));
    return from_topology_text(ranks, hosts, text, origin, opt.link_defaults(), out);
}

Status discover_from_rack_text(const std::vector<RankInfo>& ranks, const std::string& text, const std::string& origin,
                               const DiscoveryOptions& opt, Topology* out) {
    std::vector<Host> hosts;
    TOPOAR_TRY(group_hosts(ranks, &hosts));
    return from_rack_text(ranks, hosts, text, origin, opt.link_defaults(), out);
}

bool network_described(const std::vector<RankInfo>& ranks, const DiscoveryOptions& opt) {
    if (!opt.topology_file.empty() || !opt.rack_file.empty()) return true;
    bool slurm = opt.use_slurm && !ranks.empty();
    for (const RankInfo& r : ranks)
        if (r.slurm_addr.empty() || r.slurm_pattern.empty()) slurm = false;
    return slurm;
}

Status discover_topology(const std::vector<RankInfo>& ranks, const DiscoveryOptions& opt, Topology* out) {
    if (!opt.topology_file.empty() || !opt.rack_file.empty()) {
        const bool topology = !opt.topology_file.empty();
        const std::string& path = topology ? opt.topology_file : opt.rack_file;
        std::string text;
        TOPOAR_TRY(read_file(path, &text));
        return topology ? discover_from_topology_text(ranks, text, path, opt, out)
                        : discover_from_rack_text(ranks, text, path, opt, out);
    }
    std::vector<Host> hosts;
    TOPOAR_TRY(group_hosts(ranks, &hosts));
    const LinkDefaults d = opt.link_defaults();
    if (network_described(ranks, opt)) return from_slurm(ranks, hosts, d, out);
    TopologyBuilder b;
    for (const Host& h : hosts) add_host(&b, b.root(), h, d.node, ranks, d);
    return b.build(out);
}

Status discover_measured(const std::vector<RankInfo>& ranks, const MeasuredNetwork& net, const DiscoveryOptions& opt,
                         double overhead, Topology* out) {
    std::vector<Host> hosts;
    TOPOAR_TRY(group_hosts(ranks, &hosts));
    if (net.hosts.size() != hosts.size())
        return Status::internal("measured network of " + std::to_string(net.hosts.size()) + " hosts for " +
                                std::to_string(hosts.size()));
    const LinkDefaults d = opt.link_defaults();
    auto known = [](const Link& l, const Link& fallback) { return l.bandwidth > 0 ? l : fallback; };
    TopologyBuilder b;
    std::vector<int> rack_vertex;
    if (net.num_racks() >= 2)
        for (int g = 0; g < net.num_racks(); ++g)
            rack_vertex.push_back(b.add(b.root(), Level::rack, "m" + std::to_string(g),
                                        known(model_link(net.rack_up[static_cast<std::size_t>(g)], overhead, 0.0), d.rack)));
    for (std::size_t h = 0; h < hosts.size(); ++h) {
        if (net.hosts[h] != hosts[h].name)
            return Status::internal("measured network: host " + std::to_string(h) + " is " + excerpt(net.hosts[h]) +
                                    ", not " + excerpt(hosts[h].name));
        LinkDefaults inside = d;
        if (net.local_bw[h] > 0) inside.rank.bandwidth = net.local_bw[h];
        const int rack = net.rack_of[h];
        const int parent = rack >= 0 && !rack_vertex.empty() ? rack_vertex[static_cast<std::size_t>(rack)] : b.root();
        add_host(&b, parent, hosts[h], known(model_link(net.host_up[h], overhead, 0.5), d.node), ranks, inside);
    }
    Status s = b.build(out);
    return s ? s : Status::invalid("measured network: " + s.message());
}

}  // namespace topoar
