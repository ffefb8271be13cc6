// topoar engine: the machine topology as a tree of levels.
//
//                 root / spine                 Level::root: the implicit top
//                /            \                vertex ("world") when nothing
//           rack r0          rack r1           physical is common to all ranks
//           /     \             |
//      node a    node b      node c            one per host
//       /  \     / | \       /    \        (uneven fan-outs are fine)
//      0    1   2  3  4   socket0 socket1      only when ranks are bound to
//                          /  \      |         more than one socket
//                         5    6     7         leaves: one per comm rank
//
// Every vertex carries `up`, the link to its parent (the root's is unused).
// A message between two ranks crosses the edges from one leaf up to their
// lowest common ancestor and down to the other: its latency is the sum of the
// edges' latencies, its bandwidth the minimum (Topology::path_link).  `up` of
// a rack is its switch's uplink shared by everything in the rack; the cost
// model does the sharing, the topology only states capacities.
//
// Fan-outs may be uneven (2+3 ranks, racks of 1 and 3 nodes): the planners
// (FlexReduce, hierarchical ring, aggregation trees) are written for that.
//
// Normal form, established by TopologyBuilder::build and so true of every
// Topology:
//   - leaves are exactly the Level::rank vertices, one per comm rank 0..P-1;
//   - every other vertex has at least one rank under it;
//   - children are ordered by the lowest rank under them, and vertex ids are
//     a preorder walk (root = 0; a subtree's ids are contiguous);
//   - single-child levels are collapsed: an internal vertex with exactly one
//     child is contracted with it.  Normally the child takes the parent's
//     place ("rack with one node" -> the node hangs off the rack's parent;
//     "one node in the job" -> the node is the root).  The exception is a
//     host: a Level::node vertex is never removed, so node_of_rank() always
//     finds the host (a one-rank host keeps its node vertex with one leaf);
//     instead a node's only internal child is absorbed (a node with one
//     socket loses the socket vertex, the ranks hang off the node).
//     The merged edge is the series of the two: latencies add, bandwidth is
//     the smaller one (a bandwidth of 0 means unknown and loses to any value).
//
// A Topology is a value: copyable, comparable, and serialisable to the text
// format of docs/topology-format.md (to_text / from_text round-trip exactly).
#pragma once

#include <iosfwd>
#include <functional>
#include <string>
#include <vector>

#include "status.hpp"

namespace topoar {

struct Link {
    double bandwidth = 0;  // bytes per second; 0 = unknown
    double latency = 0;    // seconds

    bool operator==(const Link& o) const { return bandwidth == o.bandwidth && latency == o.latency; }
    bool operator!=(const Link& o) const { return !(*this == o); }
};

// Two edges one after the other: latencies add, the slower bandwidth wins.
Link series(const Link& a, const Link& b);

// Ordered from the top: a child's level is deeper than its parent's, except
// that switches may nest (spine under spine, rack under rack) for multi-tier
// networks such as a Slurm "switch.switch.switch.node" address.
enum class Level { root, spine, rack, node, socket, rank };

const char* to_string(Level level);  // "root", "spine", ...
// Whether a vertex of level `child` may hang under one of level `parent`.
bool level_may_contain(Level parent, Level child);
// Up-links of hosts and switches are network links (written in bits), those
// of sockets and ranks memory links (written in bytes).
inline bool is_network_level(Level l) { return l == Level::node || l == Level::rack || l == Level::spine; }
bool level_from_string(const std::string& s, Level* out);  // false if unknown

struct TopoNode {
    int id = -1;
    int parent = -1;            // -1 for the root
    std::vector<int> children;  // ordered by lowest rank underneath
    Level level = Level::rank;
    std::string name;  // host name, rack name, socket number; rank number for leaves
    Link up;           // link to the parent
    int rank = -1;     // comm rank, for leaves only

    bool is_leaf() const { return level == Level::rank; }
    bool operator==(const TopoNode& o) const {
        return id == o.id && parent == o.parent && children == o.children && level == o.level && name == o.name &&
               up == o.up && rank == o.rank;
    }
};

// Built-in link defaults per level: the `up` link of a vertex of that level
// when nothing better is known.  They are order-of-magnitude guesses for a
// current InfiniBand/Ethernet cluster; the glue exposes MCA parameters and
// topology files may set `defaults` lines, both of which override them.
//   rank    10 GB/s, 0.3 us   process <-> its socket/host: one core copying
//                             through shared memory (two of them per
//                             intra-host message, so ~0.6 us end to end)
//   socket  20 GB/s, 0.5 us   socket <-> host: the inter-socket link (UPI,
//                             Infinity Fabric), crossed twice between sockets
//   node    100 Gbit/s, 1 us  host NIC <-> rack switch (EDR InfiniBand class)
//   rack    400 Gbit/s, 1 us  rack switch uplink, shared by the whole rack
//                             (about 2:1 oversubscribed for 8 hosts)
//   spine   800 Gbit/s, 1 us  higher switch tiers
struct LinkDefaults {
    Link rank{10e9, 0.3e-6};
    Link socket{20e9, 0.5e-6};
    Link node{12.5e9, 1e-6};
    Link rack{50e9, 1e-6};
    Link spine{100e9, 1e-6};

    // The default up-link of `level` (Level::root: an empty Link).
    Link for_level(Level level) const;
};

class Topology {
public:
    // An empty topology (no vertices); every useful one comes from
    // TopologyBuilder::build, from_text, from_file or discover_topology.
    Topology() = default;

    int root() const { return nodes_.empty() ? -1 : 0; }
    const TopoNode& node(int id) const { return nodes_[static_cast<std::size_t>(id)]; }
    const std::vector<TopoNode>& nodes() const { return nodes_; }
    int num_nodes() const { return static_cast<int>(nodes_.size()); }
    int num_ranks() const { return static_cast<int>(leaf_of_rank_.size()); }
    bool empty() const { return nodes_.empty(); }

    int leaf_of_rank(int rank) const { return leaf_of_rank_[static_cast<std::size_t>(rank)]; }
    // Comm ranks of the leaves under `node` (itself if a leaf), ascending.
    std::vector<int> ranks_under(int node) const;
    int num_ranks_under(int node) const { return range_[static_cast<std::size_t>(node)].second; }
    int lowest_rank_under(int node) const { return lowest_[static_cast<std::size_t>(node)]; }
    // Comm ranks under `node` in tree (preorder) order: ranks of one host,
    // then of one rack, are contiguous.  A good ring order.
    std::vector<int> ranks_in_tree_order(int node) const;

    // Number of edges from the root to the deepest leaf (0 for one rank).
    int depth() const { return depth_; }
    // Number of edges from the root to `node`.
    int depth_of(int node) const;
    // Vertex ids from the rank's leaf up to and including the root.
    std::vector<int> path_to_root(int rank) const;

    // The nearest vertex of `level` on the way from `node` (inclusive) to
    // the root, or -1 if there is none.
    int ancestor_at(int node, Level level) const;
    // The host (Level::node vertex) of `rank`; -1 if the topology has no
    // hosts (a flat synthetic topology).
    int node_of_rank(int rank) const { return ancestor_at(leaf_of_rank(rank), Level::node); }
    // All vertices of `level`, in preorder (hosts of one rack together).
    std::vector<int> nodes_at(Level level) const;
    // The other children of `node`'s parent, in order (empty for the root).
    std::vector<int> siblings(int node) const;
    // Lowest common ancestor of two vertices.
    int lca(int a, int b) const;
    // The path between two ranks as one link: summed latency, bottleneck
    // bandwidth.  For a == b: infinite bandwidth, zero latency.
    Link path_link(int rank_a, int rank_b) const;
    // Vertex with this level and name, or -1 (names of hosts, racks and
    // spines are unique within their level).
    int find(Level level, const std::string& name) const;

    bool operator==(const Topology& o) const { return nodes_ == o.nodes_; }
    bool operator!=(const Topology& o) const { return !(*this == o); }

    // The text format of docs/topology-format.md, with every link and every
    // rank explicit; from_text(to_text()) gives back an equal Topology.
    std::string to_text() const;

    // Parses the text format.  `origin` names the source in error messages
    // ("origin:line: problem").  Links not given in the text come from the
    // file's `defaults` lines, then from `defaults`.
    static Status from_text(const std::string& text, const std::string& origin, Topology* out);
    static Status from_text(const std::string& text, const std::string& origin, const LinkDefaults& defaults,
                            Topology* out);
    static Status from_file(const std::string& path, Topology* out);
    static Status from_file(const std::string& path, const LinkDefaults& defaults, Topology* out);

    // Convenience for tests and simulations: hosts "n0", "n1", ... under one
    // root with ranks_per_node[i] consecutive ranks each.
    static Status from_node_sizes(const std::vector<int>& ranks_per_node, const Link& node_up, const Link& rank_up,
                                  Topology* out);

private:
    friend class TopologyBuilder;

    std::vector<TopoNode> nodes_;
    std::vector<int> leaf_of_rank_;
    std::vector<int> preorder_ranks_;         // ranks of the leaves in id order
    std::vector<std::pair<int, int>> range_;  // per vertex: (first index, count) into preorder_ranks_
    std::vector<int> lowest_;                 // per vertex: lowest rank underneath
    int depth_ = 0;
};

// Builds a Topology from vertices added in any order, then validates and
// normalises it (see the normal form above).  Example, the 2+3 job:
//
//   TopologyBuilder b;
//   int a = b.add(b.root(), Level::node, "a", {25e6, 50e-6});
//   b.add_rank(a, 0, {10e9, 3e-7});
//   ...
//   Status s = b.build(&topo);
class TopologyBuilder {
public:
    TopologyBuilder();  // creates the implicit root: Level::root "world"

    int root() const { return 0; }
    // Adds a vertex under `parent` and returns its handle (a builder handle,
    // not the id it will have in the Topology).  Problems (bad parent, bad
    // nesting) are reported by build().
    int add(int parent, Level level, const std::string& name, const Link& up);
    int add_rank(int parent, int rank, const Link& up);

    // Checks: every rank 0..P-1 exactly once, nesting of levels, no vertex
    // without ranks, names are single words, host/rack/spine names unique.
    Status build(Topology* out) const;

private:
    struct Vertex {
        int parent;
        Level level;
        std::string name;
        Link up;
        int rank;
        std::vector<int> children;
    };
    std::vector<Vertex> v_;
    std::string error_;  // the first problem found while adding
};

// "0-3 5 6": ascending ranks, runs of three or more as ranges (the syntax
// of `ranks` lines).
std::string format_rank_list(const std::vector<int>& ranks);

// The children of vertex `id` in order, as the file format and describe()
// list them: each inner vertex goes to `vertex`, each run of consecutive
// leaves with the same up-link to `leaves` (their ranks and that link).
void for_each_child_group(const Topology& t, int id, const std::function<void(const TopoNode&)>& vertex,
                          const std::function<void(const std::vector<int>&, const Link&)>& leaves);

// A readable tree for verbose output and topoar_info, e.g.
//   rack r0 (2 nodes, 5 ranks) up 200 Mbit/s 100 us
//     node host-a (2 ranks) up 1 Gbit/s 50 us
//       ranks 0 1 up 80 Gbit/s 300 ns
void describe(const Topology& topo, std::ostream& os);

}  // namespace topoar
