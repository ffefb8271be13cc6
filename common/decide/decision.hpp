// topoar engine: the decision table, (message size, communicator shape,
// memory type) -> algorithm [+ segment size].
//
// A table is an ordered list of rules read from a rules file
// (docs/rules-format.md, MCA parameter coll_topoar_rules_file) or written by
// the tuner (tools/topoar_tune).  For a call, the first rule whose conditions
// all hold decides; if none does, the engine's built-in default applies.
//
//   # topoar rules v1
//   allreduce  size=0-4K    nodes=2-  mem=host  alg=recursive_doubling
//   allreduce  size=4K-1M   alg=flexreduce  segment=256K
//   allreduce  size=1M-     alg=hring
//
//   lookup(  100 bytes, 2 nodes, host) -> recursive_doubling   (t.rules:2)
//   lookup(  100 bytes, 1 node,  host) -> no rule: default
//   lookup(64 KiB,      any,     cuda) -> flexreduce, 256 KiB  (t.rules:3)
//
// Sizes are half-open byte ranges [lo, hi) so that consecutive ranges meet
// without a gap ("0-4K" then "4K-1M"); counts (ranks, nodes, ...) are
// inclusive ("nodes=2-4" is 2, 3 or 4 nodes).
//
// A DecisionTable is a value: copyable, comparable (the rules, not where
// they came from), and to_text / from_text round-trip.  No I/O except
// from_file, no MPI.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/algorithm.hpp"
#include "status.hpp"

namespace topoar {

// Where the buffer of a call lives.  Rules say host, cuda or any; a call is
// always host or cuda.
enum class MemType { any = 0, host = 1, cuda = 2 };

const char* memtype_name(MemType m);  // "any", "host", "cuda"
bool memtype_from_name(const std::string& name, MemType* out);

// Byte sizes [lo, hi); hi == kUnbounded means no upper end ("1M-").
struct SizeRange {
    static constexpr std::size_t kUnbounded = SIZE_MAX;
    std::size_t lo = 0;
    std::size_t hi = kUnbounded;

    bool contains(std::size_t bytes) const { return bytes >= lo && (hi == kUnbounded || bytes < hi); }
    bool covers(const SizeRange& o) const { return lo <= o.lo && (hi == kUnbounded || (o.hi != kUnbounded && o.hi <= hi)); }
    bool is_any() const { return lo == 0 && hi == kUnbounded; }
    bool operator==(const SizeRange& o) const { return lo == o.lo && hi == o.hi; }
};

// Counts [lo, hi], inclusive; hi == kUnbounded means no upper end ("2-").
struct CountRange {
    static constexpr int kUnbounded = INT_MAX;
    int lo = 0;
    int hi = kUnbounded;

    bool contains(int v) const { return v >= lo && v <= hi; }
    bool covers(const CountRange& o) const { return lo <= o.lo && o.hi <= hi; }
    bool is_any() const { return lo == 0 && hi == kUnbounded; }
    bool operator==(const CountRange& o) const { return lo == o.lo && hi == o.hi; }
};

enum class Uniform { any = 0, yes = 1, no = 2 };

// What rules may ask about a communicator.  `nodes` counts hosts, `ppn` is
// the largest number of ranks on one host, `racks` the number of rack
// switches in the topology (0: none known), `uniform` whether every host has
// the same number of ranks.
struct CommShape {
    int ranks = 1;
    int nodes = 1;
    int ppn = 1;
    int racks = 0;
    bool uniform = true;
};

// The shape of a communicator whose hosts hold ranks_per_node[i] ranks
// each (empty: a flat topology without hosts, reported as 0 nodes, ppn 0).
CommShape make_comm_shape(int ranks, const std::vector<int>& ranks_per_node, int racks);

struct Rule {
    SizeRange size;
    CountRange ranks, nodes, ppn, racks;
    Uniform uniform = Uniform::any;
    MemType mem = MemType::any;
    Algorithm algorithm = Algorithm::ring;  // never automatic
    bool has_segment = false;               // segment= given
    std::size_t segment_bytes = 0;          // 0: no segmentation
    std::string origin;                     // "file:line"; not part of ==

    bool matches(std::size_t bytes, const CommShape& shape, MemType mem) const;
    // Every call that `o` matches, this rule matches too.
    bool covers(const Rule& o) const;
    bool operator==(const Rule& o) const;
    bool operator!=(const Rule& o) const { return !(*this == o); }
};

// The outcome of a lookup.  `origin` is the deciding rule's "file:line" or
// "default" when no rule matched (then algorithm is Algorithm::automatic:
// the caller applies its built-in default).  It points into the table and
// stays valid while the table is alive and unchanged.
struct Choice {
    Algorithm algorithm = Algorithm::automatic;
    bool has_segment = false;
    std::size_t segment_bytes = 0;
    const char* origin = "default";

    bool matched() const { return algorithm != Algorithm::automatic; }
};

class DecisionTable {
public:
    DecisionTable() = default;

    const std::vector<Rule>& rules() const { return rules_; }
    bool empty() const { return rules_.empty(); }
    std::size_t size() const { return rules_.size(); }

    // Appends a rule after checking it: a non-empty size range, lo <= hi for
    // counts, a concrete algorithm, and that no earlier rule covers it
    // completely (it could never match).  Errors start with "ORIGIN: " when
    // the rule has an origin.
    Status add(Rule rule);

    // First matching rule wins; deterministic, no allocation.
    Choice lookup(std::size_t bytes, const CommShape& shape, MemType mem) const;

    // The rules file text: a "# topoar rules v1" header, `comment` (each
    // line prefixed with "# "; may be empty), then one line per rule with
    // conditions that are "any" left out, aligned in columns.
    std::string to_text(const std::string& comment = "") const;

    // Parses a rules file; `origin` names it in errors ("origin:line: ...").
    // Every problem is an error: nothing is skipped silently.
    static Status from_text(const std::string& text, const std::string& origin, DecisionTable* out);
    // Reads `path`; an unreadable file is Code::io_error.
    static Status from_file(const std::string& path, DecisionTable* out);

    bool operator==(const DecisionTable& o) const { return rules_ == o.rules_; }
    bool operator!=(const DecisionTable& o) const { return !(*this == o); }

private:
    std::vector<Rule> rules_;
};

// One rule in the file syntax, without alignment:
// "allreduce size=4K-1M nodes=2- alg=flexreduce segment=256K".
std::string format_rule(const Rule& rule);

// Byte sizes as written in rules files: a whole number with an optional
// binary unit: B, K/k/KiB (1024), M/MiB, G/GiB, T/TiB.  "KB" and friends are
// refused as ambiguous (decimal or binary?).
Status parse_size(const std::string& text, std::size_t* bytes);
// The shortest exact spelling: 4096 -> "4K", 1536 -> "1536", 0 -> "0".
std::string format_size(std::size_t bytes);

}  // namespace topoar
