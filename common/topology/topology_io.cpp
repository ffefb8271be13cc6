// The topology text format (docs/topology-format.md): Topology::from_text,
// from_file and to_text.  Its line reader and parser are shared with
// discovery (discovery.cpp) through topology_io.hpp.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/units.hpp"
#include "topology/topology.hpp"
#include "topology/topology_io.hpp"

namespace topoar {

namespace {

// Ranks in one file.  Big enough for any simulated machine we plan for,
// small enough that a typo like count=10000000000 is an error instead of an
// out-of-memory.  Fuzz builds (tests/fuzz/) take less: a file at the real
// limit is valid but takes seconds and gigabytes under AddressSanitizer,
// which the fuzzer would report as a hang.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr long kMaxRanks = 1L << 12;
#else
constexpr long kMaxRanks = 1L << 22;
#endif

bool parse_int(const std::string& s, long* out) {
    if (s.empty() || s.size() > 9) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    *out = std::strtol(s.c_str(), nullptr, 10);
    return true;
}

}  // namespace

namespace topology_text {

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

Status parse_attrs(const std::vector<std::string>& words, std::size_t first, const std::set<std::string>& allowed,
                   const std::string& where, Attrs* a) {
    for (std::size_t i = first; i < words.size(); ++i) {
        const std::string& w = words[i];
        std::size_t eq = w.find('=');
        if (eq == std::string::npos) return Status::invalid(where + "unexpected word '" + excerpt(w) + "'");
        std::string key = w.substr(0, eq), value = w.substr(eq + 1);
        if (!allowed.count(key)) {
            std::string list;
            for (const auto& k : allowed) list += (list.empty() ? "" : ", ") + k + "=";
            return Status::invalid(where + "unknown attribute '" + excerpt(key) + "=' (allowed here: " + list + ")");
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
            // Digits only, like rank numbers: strtol would also take "+5",
            // and "5" followed by a NUL byte and anything.
            if (!parse_int(value, &a->count) || a->count < 1 || a->count > kMaxRanks)
                return Status::invalid(where + "bad count '" + excerpt(value) + "' (a number of ranks, 1.." +
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

// ------------------------------------------------------------ topology file

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
    long listed = 0;  // ranks on `ranks` lines so far: kMaxRanks is for the file

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
                    return Status::invalid(where + "bad rank '" + excerpt(w) + "' (a rank number or a range like 4-7)");
                if (listed + (hi - lo + 1) > kMaxRanks)
                    return Status::invalid(where + "too many ranks (limit " + std::to_string(kMaxRanks) + ")");
                listed += hi - lo + 1;
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
            return Status::invalid(where + "unknown keyword '" + excerpt(kw) +
                                   "' (expected defaults, spine, rack, node, socket or ranks)");
        if (l.words.size() < 2 || l.words[1].find('=') != std::string::npos)
            return Status::invalid(where + "'" + kw + "' needs a name");
        const std::string& name = l.words[1];
        if (!level_may_contain(parent_level, lv))
            return Status::invalid(where + kw + " " + excerpt(name) + " cannot be inside " + to_string(parent_level) +
                                   " " + excerpt(parent_name) + " (line " + std::to_string(parent_line) + ")");
        Attrs a;
        if (lv == Level::node || lv == Level::socket)
            TOPOAR_TRY(parse_attrs(l.words, 2, {"bw", "lat", "count"}, where, &a));
        else
            TOPOAR_TRY(parse_attrs(l.words, 2, {"bw", "lat"}, where, &a));
        if (lv != Level::socket) {
            auto ins = names.emplace(std::make_pair(static_cast<int>(lv), name), l.number);
            if (!ins.second)
                return Status::invalid(where + "duplicate " + kw + " name '" + excerpt(name) + "' (first at line " +
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
            return Status::invalid(at(origin, pf->v[i].line) + to_string(pf->v[i].level) + " " +
                                   excerpt(pf->v[i].name) + " has no ranks");
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

}  // namespace topology_text

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
    for_each_child_group(
        t, id, [&](const TopoNode& c) { write_vertex(t, c.id, indent, true, out); },
        [&](const std::vector<int>& run, const Link& up) {
            *out += std::string(static_cast<std::size_t>(indent) * 2, ' ') + "ranks " + format_rank_list(run) +
                    link_attrs(up, Level::rank) + "\n";
        });
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
    using namespace topology_text;
    ParsedFile pf;
    TOPOAR_TRY(parse_topology(text, origin, defaults, &pf));
    TOPOAR_TRY(assign_ranks(origin, &pf));
    return build_parsed(pf, origin, out);
}

Status Topology::from_file(const std::string& path, Topology* out) { return from_file(path, LinkDefaults{}, out); }

Status Topology::from_file(const std::string& path, const LinkDefaults& defaults, Topology* out) {
    std::string text;
    TOPOAR_TRY(topology_text::read_file(path, &text));
    return from_text(text, path, defaults, out);
}

}  // namespace topoar
