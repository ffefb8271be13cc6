#include "topology/topology.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <ostream>

#include "core/units.hpp"

namespace topoar {

Link series(const Link& a, const Link& b) {
    Link r;
    // 0 is "unknown": it must not hide a known bottleneck.
    if (a.bandwidth <= 0)
        r.bandwidth = b.bandwidth;
    else if (b.bandwidth <= 0)
        r.bandwidth = a.bandwidth;
    else
        r.bandwidth = std::min(a.bandwidth, b.bandwidth);
    r.latency = a.latency + b.latency;
    return r;
}

const char* to_string(Level level) {
    switch (level) {
        case Level::root: return "root";
        case Level::spine: return "spine";
        case Level::rack: return "rack";
        case Level::node: return "node";
        case Level::socket: return "socket";
        case Level::rank: return "rank";
    }
    return "?";
}

bool level_from_string(const std::string& s, Level* out) {
    static const Level all[] = {Level::root, Level::spine, Level::rack, Level::node, Level::socket, Level::rank};
    for (Level l : all) {
        if (s == to_string(l)) {
            *out = l;
            return true;
        }
    }
    return false;
}

Link LinkDefaults::for_level(Level level) const {
    switch (level) {
        case Level::rank: return rank;
        case Level::socket: return socket;
        case Level::node: return node;
        case Level::rack: return rack;
        case Level::spine: return spine;
        case Level::root: break;
    }
    return Link{};
}

void for_each_child_group(const Topology& t, int id, const std::function<void(const TopoNode&)>& vertex,
                          const std::function<void(const std::vector<int>&, const Link&)>& leaves) {
    const auto& ch = t.node(id).children;
    for (std::size_t i = 0; i < ch.size();) {
        const TopoNode& c = t.node(ch[i]);
        if (!c.is_leaf()) {
            vertex(c);
            ++i;
            continue;
        }
        std::vector<int> run;
        std::size_t j = i;
        while (j < ch.size() && t.node(ch[j]).is_leaf() && t.node(ch[j]).up == c.up)
            run.push_back(t.node(ch[j++]).rank);
        leaves(run, c.up);
        i = j;
    }
}

std::string format_rank_list(const std::vector<int>& ranks) {
    std::string s;
    for (std::size_t i = 0; i < ranks.size();) {
        std::size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        if (!s.empty()) s += ' ';
        // Runs of three or more as a range; "0 1" reads better than "0-1".
        if (j - i >= 2) {
            s += std::to_string(ranks[i]) + "-" + std::to_string(ranks[j]);
        } else {
            for (std::size_t k = i; k <= j; ++k) s += (k > i ? " " : "") + std::to_string(ranks[k]);
        }
        i = j + 1;
    }
    return s;
}

// ------------------------------------------------------------------ queries

std::vector<int> Topology::ranks_under(int node) const {
    std::vector<int> r = ranks_in_tree_order(node);
    std::sort(r.begin(), r.end());
    return r;
}

std::vector<int> Topology::ranks_in_tree_order(int node) const {
    const auto& rg = range_[static_cast<std::size_t>(node)];
    return std::vector<int>(preorder_ranks_.begin() + rg.first, preorder_ranks_.begin() + rg.first + rg.second);
}

int Topology::depth_of(int node) const {
    int d = 0;
    for (int v = node; nodes_[static_cast<std::size_t>(v)].parent >= 0; v = nodes_[static_cast<std::size_t>(v)].parent)
        ++d;
    return d;
}

std::vector<int> Topology::path_to_root(int rank) const {
    std::vector<int> path;
    for (int v = leaf_of_rank(rank); v >= 0; v = node(v).parent) path.push_back(v);
    return path;
}

int Topology::ancestor_at(int node_id, Level level) const {
    for (int v = node_id; v >= 0; v = node(v).parent)
        if (node(v).level == level) return v;
    return -1;
}

std::vector<int> Topology::nodes_at(Level level) const {
    std::vector<int> r;
    for (const TopoNode& n : nodes_)
        if (n.level == level) r.push_back(n.id);
    return r;
}

std::vector<int> Topology::siblings(int node_id) const {
    std::vector<int> r;
    int p = node(node_id).parent;
    if (p < 0) return r;
    for (int c : node(p).children)
        if (c != node_id) r.push_back(c);
    return r;
}

int Topology::lca(int a, int b) const {
    int da = depth_of(a), db = depth_of(b);
    while (da > db) a = node(a).parent, --da;
    while (db > da) b = node(b).parent, --db;
    while (a != b) a = node(a).parent, b = node(b).parent;
    return a;
}

Link Topology::path_link(int rank_a, int rank_b) const {
    if (rank_a == rank_b) return Link{std::numeric_limits<double>::infinity(), 0};
    int a = leaf_of_rank(rank_a), b = leaf_of_rank(rank_b);
    int top = lca(a, b);
    Link l;
    for (int v = a; v != top; v = node(v).parent) l = series(l, node(v).up);
    for (int v = b; v != top; v = node(v).parent) l = series(l, node(v).up);
    return l;
}

int Topology::find(Level level, const std::string& name) const {
    for (const TopoNode& n : nodes_)
        if (n.level == level && n.name == name) return n.id;
    return -1;
}

Status Topology::from_node_sizes(const std::vector<int>& ranks_per_node, const Link& node_up, const Link& rank_up,
                                 Topology* out) {
    TopologyBuilder b;
    int next = 0;
    for (std::size_t i = 0; i < ranks_per_node.size(); ++i) {
        int host = b.add(b.root(), Level::node, "n" + std::to_string(i), node_up);
        for (int k = 0; k < ranks_per_node[i]; ++k) b.add_rank(host, next++, rank_up);
    }
    return b.build(out);
}

// ------------------------------------------------------------------ builder

// Switches may nest (multi-tier networks); hosts, sockets and ranks may not.
bool level_may_contain(Level parent, Level child) {
    if (parent == Level::rank || child == Level::root) return false;
    if (parent == child) return child == Level::spine || child == Level::rack;
    return static_cast<int>(child) > static_cast<int>(parent);
}

namespace {

// Names are written unquoted in the text format, which splits words at
// whatever isspace() says (\v and \f too: a Slurm switch "s\v0" would be
// written as two words).
bool is_word(const std::string& s) {
    if (s.empty()) return false;
    for (char c : s)
        if (std::isspace(static_cast<unsigned char>(c)) || c == '#' || c == '=') return false;
    return true;
}

// "node a", for error messages (the name as excerpt() quotes input).
std::string describe_vertex(Level level, const std::string& name) {
    return std::string(to_string(level)) + " " + excerpt(name);
}

}  // namespace

TopologyBuilder::TopologyBuilder() { v_.push_back(Vertex{-1, Level::root, "world", Link{}, -1, {}}); }

int TopologyBuilder::add(int parent, Level level, const std::string& name, const Link& up) {
    if (parent < 0 || parent >= static_cast<int>(v_.size())) {
        if (error_.empty()) error_ = "add " + describe_vertex(level, name) + ": no such parent";
        return -1;
    }
    if (level == Level::rank) {
        if (error_.empty()) error_ = "add " + describe_vertex(level, name) + ": use add_rank for ranks";
        return -1;
    }
    const Vertex& p = v_[static_cast<std::size_t>(parent)];
    if (!level_may_contain(p.level, level)) {
        if (error_.empty())
            error_ = describe_vertex(level, name) + " cannot be inside " + describe_vertex(p.level, p.name);
        return -1;
    }
    int id = static_cast<int>(v_.size());
    v_.push_back(Vertex{parent, level, name, up, -1, {}});
    v_[static_cast<std::size_t>(parent)].children.push_back(id);
    return id;
}

int TopologyBuilder::add_rank(int parent, int rank, const Link& up) {
    if (parent < 0 || parent >= static_cast<int>(v_.size()) ||
        v_[static_cast<std::size_t>(parent)].level == Level::rank) {
        if (error_.empty()) error_ = "add rank " + std::to_string(rank) + ": bad parent";
        return -1;
    }
    int id = static_cast<int>(v_.size());
    v_.push_back(Vertex{parent, Level::rank, std::to_string(rank), up, rank, {}});
    v_[static_cast<std::size_t>(parent)].children.push_back(id);
    return id;
}

namespace {

// The normalised tree before ids are assigned.
struct Norm {
    Level level;
    std::string name;
    Link up;
    int rank;
    int lowest;
    std::vector<int> children;  // indices into the Norm vector
};

}  // namespace

Status TopologyBuilder::build(Topology* out) const {
    if (!error_.empty()) return Status::invalid(error_);
    const std::size_t n = v_.size();
    auto at = [this](int i) -> const Vertex& { return v_[static_cast<std::size_t>(i)]; };

    // Ranks: exactly 0..P-1, each once.
    int p = 0;
    for (const Vertex& v : v_)
        if (v.level == Level::rank) ++p;
    if (p == 0) return Status::invalid("the topology has no ranks");
    std::vector<char> seen(static_cast<std::size_t>(p), 0);
    for (const Vertex& v : v_) {
        if (v.level != Level::rank) continue;
        if (v.rank < 0 || v.rank >= p)
            return Status::invalid("rank " + std::to_string(v.rank) + " out of range: " + std::to_string(p) +
                                   " ranks must be numbered 0.." + std::to_string(p - 1));
        if (seen[static_cast<std::size_t>(v.rank)]++)
            return Status::invalid("rank " + std::to_string(v.rank) + " appears twice");
    }

    // Names and uniqueness of hosts, racks and spines.
    std::map<std::pair<int, std::string>, int> names;
    for (std::size_t i = 1; i < n; ++i) {
        const Vertex& v = v_[i];
        if (v.level == Level::rank) continue;
        if (!is_word(v.name))
            return Status::invalid(std::string(to_string(v.level)) + " name '" + excerpt(v.name) +
                                   "' must be one word without '#' or '='");
        if (v.level == Level::socket) continue;  // socket "0" repeats across hosts
        if (!names.emplace(std::make_pair(static_cast<int>(v.level), v.name), 1).second)
            return Status::invalid("duplicate " + describe_vertex(v.level, v.name));
    }

    // Lowest rank per vertex; children were added after their parent, so a
    // reverse sweep sees every child before its parent.
    std::vector<int> lowest(n, std::numeric_limits<int>::max());
    for (std::size_t i = n; i-- > 0;) {
        if (v_[i].level == Level::rank) lowest[i] = v_[i].rank;
        if (v_[i].parent >= 0)
            lowest[static_cast<std::size_t>(v_[i].parent)] =
                std::min(lowest[static_cast<std::size_t>(v_[i].parent)], lowest[i]);
    }
    for (std::size_t i = 0; i < n; ++i)
        if (lowest[i] == std::numeric_limits<int>::max())
            return Status::invalid(describe_vertex(v_[i].level, v_[i].name) + " has no ranks");

    // Collapse single-child levels (see the header) while copying.
    std::vector<Norm> norm;
    auto make = [&](auto&& self, int v, Link up) -> int {
        auto internal = [&](int x) { return at(x).level != Level::rank; };
        // A non-host with one child gives its place to that child.
        while (internal(v) && at(v).level != Level::node && at(v).children.size() == 1) {
            int c = at(v).children[0];
            up = series(up, at(c).up);
            v = c;
        }
        const Vertex& src = at(v);
        // A host absorbs its only internal child instead (hosts are kept).
        std::vector<std::pair<int, Link>> kids;
        for (int c : src.children) kids.emplace_back(c, at(c).up);
        if (src.level == Level::node) {
            while (kids.size() == 1 && internal(kids[0].first)) {
                auto only = kids[0];
                kids.clear();
                for (int g : at(only.first).children) kids.emplace_back(g, series(only.second, at(g).up));
            }
        }
        std::vector<int> children;
        for (const auto& k : kids) children.push_back(self(self, k.first, k.second));
        std::sort(children.begin(), children.end(), [&](int a, int b) {
            return norm[static_cast<std::size_t>(a)].lowest < norm[static_cast<std::size_t>(b)].lowest;
        });
        norm.push_back(Norm{src.level, src.name, up, src.rank, lowest[static_cast<std::size_t>(v)], children});
        return static_cast<int>(norm.size()) - 1;
    };
    int top = make(make, 0, Link{});
    norm[static_cast<std::size_t>(top)].up = Link{};  // the root has no parent link

    // Preorder ids.  `latency` sums the up-links from the root down to x: a
    // path between two ranks is at most two such sums, so twice each must be
    // finite (collapsed levels add latencies, and "lat=1e308s" is a number).
    Topology t;
    t.leaf_of_rank_.assign(static_cast<std::size_t>(p), -1);
    t.range_.reserve(norm.size());
    int overflow_rank = -1;
    auto number = [&](auto&& self, int x, int parent, int depth, double latency) -> int {
        const Norm& s = norm[static_cast<std::size_t>(x)];
        int id = static_cast<int>(t.nodes_.size());
        TopoNode tn;
        tn.id = id;
        tn.parent = parent;
        tn.level = s.level;
        tn.name = s.name;
        tn.up = s.up;
        tn.rank = s.rank;
        t.nodes_.push_back(tn);
        t.range_.emplace_back(static_cast<int>(t.preorder_ranks_.size()), 0);
        t.lowest_.push_back(s.lowest);
        t.depth_ = std::max(t.depth_, depth);
        latency += s.up.latency;
        if (s.level == Level::rank) {
            t.leaf_of_rank_[static_cast<std::size_t>(s.rank)] = id;
            t.preorder_ranks_.push_back(s.rank);
            if (!std::isfinite(2 * latency) && overflow_rank < 0) overflow_rank = s.rank;
        }
        for (int c : s.children) {
            int cid = self(self, c, id, depth + 1, latency);
            t.nodes_[static_cast<std::size_t>(id)].children.push_back(cid);
        }
        t.range_[static_cast<std::size_t>(id)].second =
            static_cast<int>(t.preorder_ranks_.size()) - t.range_[static_cast<std::size_t>(id)].first;
        return id;
    };
    number(number, top, -1, 0, 0.0);
    if (overflow_rank >= 0)
        return Status::invalid("the latencies between rank " + std::to_string(overflow_rank) +
                               " and the top of the tree add up to more than " +
                               human_latency(std::numeric_limits<double>::max() / 2));
    *out = std::move(t);
    return Status::ok();
}

// ----------------------------------------------------------------- describe

namespace {

// Vertices strictly below `id`, per level.
void count_levels(const Topology& t, int id, std::vector<int>* below) {
    for (int c : t.node(id).children) {
        ++(*below)[static_cast<std::size_t>(t.node(c).level)];
        count_levels(t, c, below);
    }
}

void describe_rec(const Topology& t, int id, int indent, std::ostream& os) {
    const TopoNode& n = t.node(id);
    std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
    os << pad << (n.level == Level::root ? std::string("world") : std::string(to_string(n.level)) + " " + n.name);

    // "(2 racks, 5 nodes, 12 ranks)": what lies below, per level.
    static const struct {
        Level level;
        const char* one;
        const char* many;
    } kinds[] = {{Level::spine, "spine", "spines"},
                 {Level::rack, "rack", "racks"},
                 {Level::node, "node", "nodes"},
                 {Level::socket, "socket", "sockets"},
                 {Level::rank, "rank", "ranks"}};
    std::vector<int> below(6, 0);
    count_levels(t, id, &below);
    std::string counts;
    for (const auto& k : kinds) {
        int c = below[static_cast<std::size_t>(k.level)];
        if (c == 0) continue;
        counts += (counts.empty() ? "" : ", ") + std::to_string(c) + " " + (c == 1 ? k.one : k.many);
    }
    if (!counts.empty()) os << " (" << counts << ")";
    if (n.parent >= 0)
        os << " up " << human_bandwidth(n.up.bandwidth, is_network_level(n.level)) << " "
           << human_latency(n.up.latency);
    os << '\n';

    // Leaves with the same link are listed together, as in the file format.
    for_each_child_group(
        t, id, [&](const TopoNode& c) { describe_rec(t, c.id, indent + 1, os); },
        [&](const std::vector<int>& run, const Link& up) {
            os << pad << "  " << (run.size() == 1 ? "rank " : "ranks ") << format_rank_list(run) << " up "
               << human_bandwidth(up.bandwidth, false) << " " << human_latency(up.latency) << '\n';
        });
}

}  // namespace

void describe(const Topology& topo, std::ostream& os) {
    if (topo.empty()) {
        os << "(empty topology)\n";
        return;
    }
    describe_rec(topo, topo.root(), 0, os);
}

}  // namespace topoar
