// libFuzzer harness: discovery's inputs (common/topology/discovery.cpp):
// rack files, topology files grafted onto the job's hosts, and Slurm
// topology addresses.  Every input is tried all three ways:
//   rack file      the text, with hosts named like the first word of its
//                  lines (so that matching succeeds and the tree gets built)
//   topology file  the text, with hosts named like its `node` lines; if the
//                  text is a complete topology (ranks listed, each on a
//                  node), with exactly its hosts, and then discovery must
//                  give what Topology::from_text gives
//   Slurm          line 1 is SLURM_TOPOLOGY_ADDR_PATTERN, the next lines
//                  are the ranks' SLURM_TOPOLOGY_ADDR
// How many ranks each host has, whether they are bound to two sockets, in
// which order ranks are numbered and whether host names carry a domain the
// file leaves out come from a hash of the input.
// Checks: a refused input gets a printable one-line message; an accepted one
// has every rank on its own host and its to_text() reads back equal.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "topology/discovery.hpp"

using namespace topoar;
using topoar_fuzz::require;

namespace {

constexpr std::size_t kMaxHosts = 24;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

std::vector<std::string> words_of(const std::string& line) {
    std::istringstream in(line.substr(0, line.find('#')));
    std::vector<std::string> w;
    for (std::string x; in >> x;) w.push_back(x);
    return w;
}

struct Layout {
    std::uint64_t bits;
    bool bit(int i) const { return (bits >> i) & 1; }
    int ranks_on(std::size_t host) const { return 1 + static_cast<int>((bits >> (8 + 2 * (host % 16))) % 3); }
};

// Ranks on `hosts` as the layout says.
std::vector<RankInfo> make_ranks(const std::vector<std::string>& hosts, const Layout& lay) {
    std::vector<std::vector<RankInfo>> per_host;
    for (std::size_t h = 0; h < hosts.size(); ++h) {
        std::vector<RankInfo> rs;
        for (int k = 0; k < lay.ranks_on(h); ++k) {
            RankInfo ri;
            ri.host = hosts[h] + (lay.bit(0) ? ".example.org" : "");
            ri.socket = lay.bit(1) ? k % 2 : lay.bit(2) && k == 0 ? 0 : -1;
            rs.push_back(ri);
        }
        per_host.push_back(rs);
    }
    // Hosts' ranks consecutive, or dealt round-robin.
    std::vector<RankInfo> ranks;
    if (lay.bit(3)) {
        for (std::size_t round = 0; round < 3; ++round)
            for (auto& rs : per_host)
                if (round < rs.size()) ranks.push_back(rs[round]);
    } else {
        for (auto& rs : per_host) ranks.insert(ranks.end(), rs.begin(), rs.end());
    }
    return ranks;
}

std::string short_name(const std::string& h) { return h.substr(0, h.find('.')); }

// What every accepted result must satisfy.
void check_result(const Status& s, const Topology& t, const std::vector<RankInfo>& ranks, const char* how) {
    if (!s) {
        topoar_fuzz::check_message(s);
        return;
    }
    require(t.num_ranks() == static_cast<int>(ranks.size()), std::string(how) + ": wrong number of ranks");
    for (int r = 0; r < t.num_ranks(); ++r) {
        int n = t.node_of_rank(r);
        require(n >= 0, std::string(how) + ": a rank without a host");
        const std::string& name = t.node(n).name;
        const std::string& host = ranks[static_cast<std::size_t>(r)].host;
        require(name == host || short_name(name) == short_name(host),
                std::string(how) + ": rank " + std::to_string(r) + " on the wrong host", name + " vs " + host);
    }
    const std::string written = t.to_text();
    Topology back;
    Status b = Topology::from_text(written, "written", &back);
    require(b.is_ok(), std::string(how) + ": to_text() does not read back: " + b.message(), written);
    require(back == t, std::string(how) + ": to_text() reads back to a different topology", written);
}

void rack_file(const std::string& text, const Layout& lay) {
    std::vector<std::string> hosts;
    for (const std::string& l : lines_of(text)) {
        std::vector<std::string> w = words_of(l);
        if (w.size() >= 2 && w[0] != "rack" && hosts.size() < kMaxHosts) hosts.push_back(w[0]);
    }
    if (hosts.empty()) hosts.push_back("h0");
    std::vector<RankInfo> ranks = make_ranks(hosts, lay);
    Topology t;
    check_result(discover_from_rack_text(ranks, text, "fuzz.racks", DiscoveryOptions{}, &t), t, ranks, "rack file");
}

void topology_file(const std::string& text, const Layout& lay) {
    // A complete topology: its own hosts must give it back unchanged.
    Topology whole;
    if (Topology::from_text(text, "fuzz.topo", &whole).is_ok()) {
        std::vector<RankInfo> ranks(static_cast<std::size_t>(whole.num_ranks()));
        bool hosted = true;
        for (int r = 0; r < whole.num_ranks(); ++r) {
            int n = whole.node_of_rank(r);
            if (n < 0) hosted = false;
            else ranks[static_cast<std::size_t>(r)].host = whole.node(n).name;
        }
        if (hosted) {
            Topology t;
            Status s = discover_from_topology_text(ranks, text, "fuzz.topo", DiscoveryOptions{}, &t);
            require(s.is_ok(), "a complete topology file refused by discovery: " + s.message(), text);
            require(t == whole, "discovery and Topology::from_text disagree on a complete file", text);
        }
    }
    std::vector<std::string> hosts;
    for (const std::string& l : lines_of(text)) {
        std::vector<std::string> w = words_of(l);
        if (w.size() >= 2 && w[0] == "node" && hosts.size() < kMaxHosts) hosts.push_back(w[1]);
    }
    if (hosts.empty()) hosts.push_back("h0");
    std::vector<RankInfo> ranks = make_ranks(hosts, lay);
    Topology t;
    check_result(discover_from_topology_text(ranks, text, "fuzz.topo", DiscoveryOptions{}, &t), t, ranks,
                 "topology file");
}

void slurm(const std::string& text, const Layout& lay) {
    std::vector<std::string> lines = lines_of(text);
    if (lines.size() < 2) return;
    const int per_host = lay.bit(4) ? 2 : 1;
    std::vector<RankInfo> ranks;
    for (std::size_t i = 1; i < lines.size() && ranks.size() < kMaxHosts; ++i) {
        RankInfo ri;
        ri.host = "h" + std::to_string((i - 1) / static_cast<std::size_t>(per_host));
        ri.slurm_pattern = lines[0];
        ri.slurm_addr = lines[i];
        ri.socket = lay.bit(1) ? static_cast<int>(i % 2) : -1;
        ranks.push_back(ri);
    }
    Topology t;
    check_result(discover_topology(ranks, DiscoveryOptions{}, &t), t, ranks, "Slurm");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::uint64_t h = 14695981039346656037ull;
    for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
    const Layout lay{h};
    rack_file(text, lay);
    topology_file(text, lay);
    slurm(text, lay);
    return 0;
}
