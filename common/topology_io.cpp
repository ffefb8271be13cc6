// Everything that reads or writes a topology description: the topology text
// format (docs/topology-format.md), rack files, Slurm addresses, and
// discover_topology, which combines them with what the ranks report.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "topology.hpp"
#include "units.hpp"

namespace topoar {

namespace {

// Big enough for any simulated machine we plan for, small enough that a typo
// like count=10000000000 is an error instead of an out-of-memory.
constexpr long kMaxRanks = 1L << 22;

std::string at(const std::string& origin, int line) { return origin + ":" + std::to_string(line) + ": "; }

Status read_file(const std::string& path, std::string* text) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::io(path + ": cannot open");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return Status::io(path + ": read error");
    *text = ss.str();
    return Status::ok();
}

// One non-blank line with its comment removed.
struct Line {
    int number;
    int indent;
    std::vector<std::string> words;
};

// Splits text into lines, drops comments and blank lines, measures the
// indentation.  Tabs in indentation are refused: their width is a matter of
// editor settings, and a wrong guess would silently change the tree.
Status split_lines(const std::string& text, const std::string& origin, std::vector<Line>* out) {
    std::istringstream in(text);
    std::string raw;
    int number = 0;
    while (std::getline(in, raw)) {
        ++number;
        std::string s = raw.substr(0, raw.find('#'));
        std::size_t indent = 0;
        while (indent < s.size() && (s[indent] == ' ' || s[indent] == '\t')) {
            if (s[indent] == '\t') return Status::invalid(at(origin, number) + "tab in indentation (use spaces)");
            ++indent;
        }
        std::istringstream ws(s);
        Line l{number, static_cast<int>(indent), {}};
        for (std::string w; ws >> w;) l.words.push_back(w);
        if (!l.words.empty()) out->push_back(std::move(l));
    }
    return Status::ok();
}

// key=value attributes after the positional words of a line.
struct Attrs {
    bool has_bw = false, has_lat = false, has_count = false;
    double bw = 0, lat = 0;
    long count = 0;
};

Status parse_attrs(const std::vector<std::string>& words, std::size_t first, const std::set<std::string>& allowed,
                   const std::string& where, Attrs* a) {
    for (std::size_t i = first; i < words.size(); ++i) {
        const std::string& w = words[i];
        std::size_t eq = w.find('=');
        if (eq == std::string::npos) return Status::invalid(where + "unexpected word '" + w + "'");
        std::string key = w.substr(0, eq), value = w.substr(eq + 1);
        if (!allowed.count(key)) {
            std::string list;
            for (const auto& k : allowed) list += (list.empty() ? "" : ", ") + k + "=";
            return Status::invalid(where + "unknown attribute '" + key + "=' (allowed here: " + list + ")");
        }
        bool* seen = key == "bw" ? &a->has_bw : key == "lat" ? &a->has_lat : &a->has_count;
        if (*seen) return Status::invalid(where + "attribute '" + key + "=' given twice");
        *seen = true;
        if (key == "bw") {
            Status s = parse_bandwidth(value, &a->bw);
            if (!s) return Status::invalid(where + s.message());
        } else if (key == "lat") {
            Status s = parse_latency(value, &a->lat);
            if (!s) return Status::invalid(where + s.message());
        } else {
            char* end = nullptr;
            a->count = std::strtol(value.c_str(), &end, 10);
            if (value.empty() || *end != '\0' || a->count < 1 || a->count > kMaxRanks)
                return Status::invalid(where + "bad count '" + value + "' (a number of ranks, 1.." +
                                       std::to_string(kMaxRanks) + ")");
        }
    }
    return Status::ok();
}

Link apply(Link base, const Attrs& a) {
    if (a.has_bw) base.bandwidth = a.bw;
    if (a.has_lat) base.latency = a.lat;
    return base;
}

bool parse_int(const std::string& s, long* out) {
    if (s.empty() || s.size() > 9) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    *out = std::strtol(s.c_str(), nullptr, 10);
    return true;
}

// ------------------------------------------------------------ topology file

// The file as written, before ranks are numbered and levels collapsed.
struct PVertex {
    Level level;
    std::string name;
    Link up;
    int line;
    int parent;  // -1 for the implicit root (index 0)
    std::vector<int> children;
    int rank = -1;   // leaves
    long count = 0;  // node/socket with count=
};

struct ParsedFile {
    std::vector<PVertex> v;    // [0] is the implicit root
    int first_list_line = 0;   // first explicit `ranks` line
    int first_count_line = 0;  // first count=
    LinkDefaults defaults;     // with the file's `defaults` lines applied
    bool has_ranks() const { return first_list_line || first_count_line; }
};

Status parse_topology(const std::string& text, const std::string& origin, LinkDefaults defaults, ParsedFile* pf) {
    std::vector<Line> lines;
    TOPOAR_TRY(split_lines(text, origin, &lines));
    pf->v.assign(1, PVertex{Level::root, "world", Link{}, 0, -1, {}});
    pf->defaults = defaults;

    // Open lines by indentation; entry -1 is a `ranks` or `defaults` line,
    // which cannot have children.
    struct Open {
        int indent;
        int vertex;
        int line;
    };
    std::vector<Open> stack{{-1, 0, 0}};
    std::map<std::pair<int, std::string>, int> names;  // (level, name) -> line
    bool seen_vertex = false;

    for (const Line& l : lines) {
        const std::string where = at(origin, l.number);
        if (l.indent > stack.back().indent) {
            if (stack.back().vertex < 0)
                return Status::invalid(where + "unexpected indentation: line " + std::to_string(stack.back().line) +
                                       " cannot have nested lines");
        } else {
            while (stack.back().indent > l.indent) stack.pop_back();
            if (stack.back().indent != l.indent)
                return Status::invalid(where + "indentation does not match any enclosing line");
            stack.pop_back();
        }
        const int parent = stack.back().vertex;
        const std::string& kw = l.words[0];

        if (kw == "defaults") {
            if (l.indent != 0 || seen_vertex)
                return Status::invalid(where + "'defaults' lines must come first, unindented");
            Level lv;
            if (l.words.size() < 2 || !level_from_string(l.words[1], &lv) || lv == Level::root)
                return Status::invalid(where +
                                       "expected 'defaults LEVEL [bw=...] [lat=...]' with LEVEL one of "
                                       "spine, rack, node, socket, rank");
            Attrs a;
            TOPOAR_TRY(parse_attrs(l.words, 2, {"bw", "lat"}, where, &a));
            if (!a.has_bw && !a.has_lat) return Status::invalid(where + "'defaults' line sets neither bw= nor lat=");
            Link* d = lv == Level::spine    ? &defaults.spine
                      : lv == Level::rack   ? &defaults.rack
                      : lv == Level::node   ? &defaults.node
                      : lv == Level::socket ? &defaults.socket
                                            : &defaults.rank;
            *d = apply(*d, a);
            pf->defaults = defaults;
            stack.push_back({l.indent, -1, l.number});
            continue;
        }
        seen_vertex = true;
        // Copies: pf->v grows below.
        const Level parent_level = pf->v[static_cast<std::size_t>(parent)].level;
        const std::string parent_name = pf->v[static_cast<std::size_t>(parent)].name;
        const int parent_line = pf->v[static_cast<std::size_t>(parent)].line;
        if (pf->v[static_cast<std::size_t>(parent)].count > 0)
            return Status::invalid(where + "nothing may be nested under a line with count= (line " +
                                   std::to_string(parent_line) + ")");

        if (kw == "ranks") {
            std::size_t i = 1;
            std::vector<int> ranks;
            for (; i < l.words.size() && l.words[i].find('=') == std::string::npos; ++i) {
                const std::string& w = l.words[i];
                std::size_t dash = w.find('-');
                long lo = 0, hi = 0;
                bool ok = dash == std::string::npos
                              ? parse_int(w, &lo) && parse_int(w, &hi)
                              : parse_int(w.substr(0, dash), &lo) && parse_int(w.substr(dash + 1), &hi) && lo <= hi;
                if (!ok || hi >= kMaxRanks)
                    return Status::invalid(where + "bad rank '" + w + "' (a rank number or a range like 4-7)");
                if (ranks.size() + static_cast<std::size_t>(hi - lo) >= static_cast<std::size_t>(kMaxRanks))
                    return Status::invalid(where + "too many ranks");
                for (long r = lo; r <= hi; ++r) ranks.push_back(static_cast<int>(r));
            }
            if (ranks.empty()) return Status::invalid(where + "'ranks' needs a list of comm ranks, e.g. 'ranks 0 1'");
            Attrs a;
            TOPOAR_TRY(parse_attrs(l.words, i, {"bw", "lat"}, where, &a));
            Link up = apply(defaults.rank, a);
            for (int r : ranks) {
                int id = static_cast<int>(pf->v.size());
                pf->v.push_back(PVertex{Level::rank, std::to_string(r), up, l.number, parent, {}});
                pf->v.back().rank = r;
                pf->v[static_cast<std::size_t>(parent)].children.push_back(id);
            }
            if (!pf->first_list_line) pf->first_list_line = l.number;
            stack.push_back({l.indent, -1, l.number});
            continue;
        }

        Level lv;
        if (!level_from_string(kw, &lv) || lv == Level::root || lv == Level::rank)
            return Status::invalid(where + "unknown keyword '" + kw +
                                   "' (expected defaults, spine, rack, node, socket or ranks)");
        if (l.words.size() < 2 || l.words[1].find('=') != std::string::npos)
            return Status::invalid(where + "'" + kw + "' needs a name");
        const std::string& name = l.words[1];
        if (!level_may_contain(parent_level, lv))
            return Status::invalid(where + kw + " " + name + " cannot be inside " + to_string(parent_level) + " " +
                                   parent_name + " (line " + std::to_string(parent_line) + ")");
        Attrs a;
        if (lv == Level::node || lv == Level::socket)
            TOPOAR_TRY(parse_attrs(l.words, 2, {"bw", "lat", "count"}, where, &a));
        else
            TOPOAR_TRY(parse_attrs(l.words, 2, {"bw", "lat"}, where, &a));
        if (lv != Level::socket) {
            auto ins = names.emplace(std::make_pair(static_cast<int>(lv), name), l.number);
            if (!ins.second)
                return Status::invalid(where + "duplicate " + kw + " name '" + name + "' (first at line " +
                                       std::to_string(ins.first->second) + ")");
        }
        int id = static_cast<int>(pf->v.size());
        pf->v.push_back(PVertex{lv, name, apply(defaults.for_level(lv), a), l.number, parent, {}});
        pf->v.back().count = a.has_count ? a.count : 0;
        pf->v[static_cast<std::size_t>(parent)].children.push_back(id);
        if (a.has_count && !pf->first_count_line) pf->first_count_line = l.number;
        stack.push_back({l.indent, id, l.number});
    }
    return Status::ok();
}

// Numbers counted ranks, checks that ranks are exactly 0..P-1 and that every
// vertex has ranks, with the line of each problem.
Status assign_ranks(const std::string& origin, ParsedFile* pf) {
    if (pf->first_list_line && pf->first_count_line) {
        int later = std::max(pf->first_list_line, pf->first_count_line);
        int earlier = std::min(pf->first_list_line, pf->first_count_line);
        return Status::invalid(at(origin, later) + "count= and explicit 'ranks' lists cannot be mixed (the other " +
                               "kind is at line " + std::to_string(earlier) + ")");
    }
    if (pf->first_count_line) {
        // Ranks in file order: the order lines were read, which is the order
        // of the vertices.
        long next = 0;
        const std::size_t n = pf->v.size();
        for (std::size_t i = 0; i < n; ++i) {
            if (pf->v[i].count == 0) continue;
            if (next + pf->v[i].count > kMaxRanks)
                return Status::invalid(at(origin, pf->v[i].line) + "too many ranks (limit " +
                                       std::to_string(kMaxRanks) + ")");
            for (long k = 0; k < pf->v[i].count; ++k) {
                int id = static_cast<int>(pf->v.size());
                PVertex leaf{Level::rank,   std::to_string(next), pf->defaults.rank,
                             pf->v[i].line, static_cast<int>(i),  {}};
                leaf.rank = static_cast<int>(next++);
                pf->v.push_back(leaf);
                pf->v[i].children.push_back(id);
            }
        }
    }

    std::vector<int> leaves;
    for (std::size_t i = 0; i < pf->v.size(); ++i)
        if (pf->v[i].level == Level::rank) leaves.push_back(static_cast<int>(i));
    if (leaves.empty()) {
        int line = pf->v.size() > 1 ? pf->v[1].line : 1;
        return Status::invalid(at(origin, line) + "no ranks: list them ('ranks 0 1') or count them (count=N)");
    }
    const int p = static_cast<int>(leaves.size());
    std::vector<int> first_line(static_cast<std::size_t>(p), 0);
    for (int id : leaves) {
        const PVertex& lf = pf->v[static_cast<std::size_t>(id)];
        if (lf.rank >= p) continue;
        if (first_line[static_cast<std::size_t>(lf.rank)])
            return Status::invalid(at(origin, lf.line) + "duplicate rank " + std::to_string(lf.rank) +
                                   " (first at line " + std::to_string(first_line[static_cast<std::size_t>(lf.rank)]) +
                                   ")");
        first_line[static_cast<std::size_t>(lf.rank)] = lf.line;
    }
    for (int id : leaves) {
        const PVertex& lf = pf->v[static_cast<std::size_t>(id)];
        if (lf.rank < p) continue;
        // With P distinct ranks listed, a missing rank shows up as one that is
        // too big: name both.
        std::vector<int> missing;
        for (int r = 0; r < p; ++r)
            if (!first_line[static_cast<std::size_t>(r)]) missing.push_back(r);
        return Status::invalid(at(origin, lf.line) + "rank " + std::to_string(lf.rank) + " out of range: " +
                               std::to_string(p) + " ranks are listed, so they must be 0.." + std::to_string(p - 1) +
                               (missing.empty() ? "" : " (missing: " + format_rank_list(missing) + ")"));
    }

    // Every vertex needs ranks; mark from the leaves up.
    std::vector<char> has(pf->v.size(), 0);
    for (int id : leaves)
        for (int x = id; x >= 0 && !has[static_cast<std::size_t>(x)]; x = pf->v[static_cast<std::size_t>(x)].parent)
            has[static_cast<std::size_t>(x)] = 1;
    for (std::size_t i = 1; i < pf->v.size(); ++i)
        if (!has[i])
            return Status::invalid(at(origin, pf->v[i].line) + to_string(pf->v[i].level) + " " + pf->v[i].name +
                                   " has no ranks");
    return Status::ok();
}

Status build_parsed(const ParsedFile& pf, const std::string& origin, Topology* out) {
    TopologyBuilder b;
    std::vector<int> handle(pf.v.size(), -1);
    handle[0] = b.root();
    for (std::size_t i = 1; i < pf.v.size(); ++i) {
        const PVertex& x = pf.v[i];
        int parent = handle[static_cast<std::size_t>(x.parent)];
        handle[i] = x.level == Level::rank ? b.add_rank(parent, x.rank, x.up) : b.add(parent, x.level, x.name, x.up);
    }
    Status s = b.build(out);
    // parse_topology and assign_ranks check everything with line numbers;
    // this is a last line of defence.
    if (!s) return Status::invalid(origin + ": " + s.message());
    return Status::ok();
}

}  // namespace

// ------------------------------------------------------------------ to_text

namespace {

std::string link_attrs(const Link& l, Level level) {
    std::string s;
    // A bandwidth of 0 (unknown) is left out; reading it back gives the default.
    if (l.bandwidth > 0) s += " bw=" + format_bandwidth(l.bandwidth, is_network_level(level));
    s += " lat=" + format_latency(l.latency);
    return s;
}

void write_children(const Topology& t, int id, int indent, std::string* out);

void write_vertex(const Topology& t, int id, int indent, bool with_link, std::string* out) {
    const TopoNode& n = t.node(id);
    *out += std::string(static_cast<std::size_t>(indent) * 2, ' ') + to_string(n.level) + " " + n.name +
            (with_link ? link_attrs(n.up, n.level) : "") + "\n";
    write_children(t, id, indent + 1, out);
}

// Consecutive leaves with the same link share one `ranks` line.
void write_children(const Topology& t, int id, int indent, std::string* out) {
    const auto& ch = t.node(id).children;
    for (std::size_t i = 0; i < ch.size();) {
        const TopoNode& c = t.node(ch[i]);
        if (!c.is_leaf()) {
            write_vertex(t, c.id, indent, true, out);
            ++i;
            continue;
        }
        std::vector<int> run;
        std::size_t j = i;
        while (j < ch.size() && t.node(ch[j]).is_leaf() && t.node(ch[j]).up == c.up)
            run.push_back(t.node(ch[j++]).rank);
        *out += std::string(static_cast<std::size_t>(indent) * 2, ' ') + "ranks " + format_rank_list(run) +
                link_attrs(c.up, Level::rank) + "\n";
        i = j;
    }
}

}  // namespace

std::string Topology::to_text() const {
    std::string s = "# topoar topology v1\n";
    if (empty()) return s;
    s += "# " + std::to_string(num_ranks()) + " ranks, " + std::to_string(nodes_at(Level::node).size()) + " nodes\n";
    const TopoNode& r = node(root());
    if (r.level == Level::root) {
        // The implicit root is not written: its children are the top lines.
        write_children(*this, root(), 0, &s);
    } else if (r.is_leaf()) {
        s += "ranks " + std::to_string(r.rank) + "\n";
    } else {
        write_vertex(*this, root(), 0, false, &s);
    }
    return s;
}

Status Topology::from_text(const std::string& text, const std::string& origin, Topology* out) {
    return from_text(text, origin, LinkDefaults{}, out);
}

Status Topology::from_text(const std::string& text, const std::string& origin, const LinkDefaults& defaults,
                           Topology* out) {
    ParsedFile pf;
    TOPOAR_TRY(parse_topology(text, origin, defaults, &pf));
    TOPOAR_TRY(assign_ranks(origin, &pf));
    return build_parsed(pf, origin, out);
}

Status Topology::from_file(const std::string& path, Topology* out) { return from_file(path, LinkDefaults{}, out); }

Status Topology::from_file(const std::string& path, const LinkDefaults& defaults, Topology* out) {
    std::string text;
    TOPOAR_TRY(read_file(path, &text));
    return from_text(text, path, defaults, out);
}

// ---------------------------------------------------------------- discovery

namespace {

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

struct Host {
    std::string name;
    std::vector<int> ranks;  // ascending
};

// Hosts in order of their lowest rank.
Status group_hosts(const std::vector<RankInfo>& ranks, std::vector<Host>* hosts) {
    std::map<std::string, std::size_t> index;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        const std::string& h = ranks[r].host;
        if (h.empty()) return Status::invalid("rank " + std::to_string(r) + " reported no host name");
        auto ins = index.emplace(h, hosts->size());
        if (ins.second) hosts->push_back(Host{h, {}});
        (*hosts)[ins.first->second].ranks.push_back(static_cast<int>(r));
    }
    return Status::ok();
}

std::string host_label(const Host& h) { return "host " + h.name + " (ranks " + format_rank_list(h.ranks) + ")"; }

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
            return Status::invalid(origin + ": hosts " + hosts[ins.first->second].name + " and " + hosts[i].name +
                                   " both match the same entry of the " + what);
        entry_of_host->push_back(e);
    }
    return Status::ok();
}

// 1. Topology file.
Status from_topology_file(const std::vector<RankInfo>& ranks, const std::vector<Host>& hosts, const std::string& path,
                          const LinkDefaults& d, Topology* out) {
    std::string text;
    TOPOAR_TRY(read_file(path, &text));
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
                return Status::invalid(path + ": rank " + std::to_string(r) + " runs on host " + host +
                                       " but the file puts it on node " + t.node(n).name);
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
Status from_rack_file(const std::vector<RankInfo>& ranks, const std::vector<Host>& hosts, const std::string& path,
                      const LinkDefaults& d, Topology* out) {
    std::string text;
    TOPOAR_TRY(read_file(path, &text));
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
                return Status::invalid(where + "rack " + l.words[1] + " described twice (first at line " +
                                       std::to_string(ins.first->second.second) + ")");
            continue;
        }
        auto ins = host_line.emplace(l.words[0], l.number);
        if (!ins.second)
            return Status::invalid(where + "host " + l.words[0] + " listed twice (first at line " +
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
        "rank " + std::to_string(rank) + ": SLURM_TOPOLOGY_ADDR_PATTERN '" + info.slurm_pattern + "'";
    if (pattern.empty() || pattern.back() != "node") return Status::invalid(who + " does not end with 'node'");
    for (std::size_t i = 0; i + 1 < pattern.size(); ++i)
        if (pattern[i] != "switch") return Status::invalid(who + " has an unknown part '" + pattern[i] + "'");
    std::string rest = info.slurm_addr;
    for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
        std::size_t dot = rest.find('.');
        if (dot == std::string::npos || dot == 0)
            return Status::invalid("rank " + std::to_string(rank) + ": SLURM_TOPOLOGY_ADDR '" + info.slurm_addr +
                                   "' does not match pattern '" + info.slurm_pattern + "'");
        path->push_back(rest.substr(0, dot));
        rest = rest.substr(dot + 1);
    }
    if (rest.empty())
        return Status::invalid("rank " + std::to_string(rank) + ": SLURM_TOPOLOGY_ADDR '" + info.slurm_addr +
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
                                       " on host " + h.name + " report different switches");
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
                return Status::invalid("Slurm: switch " + path[i] + " appears at two places in the switch tree (" +
                                       host_label(h) + ")");
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

LinkDefaults DiscoveryOptions::link_defaults() const {
    LinkDefaults builtin, d;
    d.rank = or_builtin(default_rank, builtin.rank);
    d.socket = or_builtin(default_socket, builtin.socket);
    d.node = or_builtin(default_node, builtin.node);
    d.rack = or_builtin(default_rack, builtin.rack);
    d.spine = or_builtin(default_spine, builtin.spine);
    return d;
}

Status discover_topology(const std::vector<RankInfo>& ranks, const DiscoveryOptions& opt, Topology* out) {
    if (ranks.empty()) return Status::invalid("discover_topology: no ranks");
    const LinkDefaults d = opt.link_defaults();
    std::vector<Host> hosts;
    TOPOAR_TRY(group_hosts(ranks, &hosts));
    if (!opt.topology_file.empty()) return from_topology_file(ranks, hosts, opt.topology_file, d, out);
    if (!opt.rack_file.empty()) return from_rack_file(ranks, hosts, opt.rack_file, d, out);
    bool slurm = opt.use_slurm;
    for (const RankInfo& r : ranks)
        if (r.slurm_addr.empty() || r.slurm_pattern.empty()) slurm = false;
    if (slurm) return from_slurm(ranks, hosts, d, out);
    TopologyBuilder b;
    for (const Host& h : hosts) add_host(&b, b.root(), h, d.node, ranks, d);
    return b.build(out);
}

}  // namespace topoar
