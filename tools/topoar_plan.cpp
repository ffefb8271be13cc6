// topoar_plan: show (and check) the plan an algorithm builds for a topology,
// without MPI.
//
//   topoar_plan [options] TOPOLOGY_FILE
//
//   --algorithm NAME   one of the algorithm table's (algorithm.hpp; default
//                      flexreduce)
//   --list-algorithms  print their names, one a line, and exit
//   --count N          elements (default 1024)
//   --elem-size B      bytes per element (default 8)
//   --segment BYTES    pipelining segment, as coll_topoar_segment_size:
//                      512K, 1M, 4096, 0 = none (default 512K)
//   --trees K          aggregation trees (tree; 0 = planner's choice)
//   --factors AxBx..   hierarchical ring factors (hring; default: topology)
//   --rank R           print only rank R's rounds
//   --quiet            no per-rank rounds (topology, layout, traffic only)
//   --check            validate the plan and execute it symbolically; exit
//                      1 unless every rank ends with the full reduction and
//                      every element was completed by exactly one reduction
//
// The topology file has the format of docs/topology-format.md (the one
// coll_topoar_topology_file reads); it must list every rank.  The plan is
// built by make_plan with the options the engine itself would use
// (plan_options), so what is printed is what runs.  Exit status: 0 fine,
// 1 planning or check failed, 2 bad usage or unreadable/malformed topology
// file.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/units.hpp"
#include "engine.hpp"
#include "planners/planner_flex.hpp"
#include "topology/topology.hpp"

using namespace topoar;

namespace {

std::string usage() {
    return "usage: topoar_plan [--algorithm NAME] [--count N] [--elem-size B] [--segment BYTES]\n"
           "                   [--trees K] [--factors AxBx..] [--rank R] [--quiet] [--check] TOPOLOGY_FILE\n"
           "       topoar_plan --list-algorithms\n"
           "  NAME: " + algorithm_names(host_algorithms()) + " (default flexreduce)\n"
           "  BYTES: a number with optional K, M or G (binary) suffix; 0 = no pipelining\n";
}

int usage_error(const std::string& msg) {
    std::cerr << "topoar_plan: " << msg << "\n" << usage();
    return 2;
}

// "512K" -> 524288; plain decimal with an optional binary suffix.
bool parse_plain_size(const std::string& s, std::size_t* out) {
    if (s.empty() || s[0] < '0' || s[0] > '9') return false;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (errno) return false;
    std::string suffix(end);
    unsigned long long mult = 1;
    if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1ull << 10;
    else if (suffix == "M" || suffix == "MiB") mult = 1ull << 20;
    else if (suffix == "G" || suffix == "GiB") mult = 1ull << 30;
    else if (!suffix.empty()) return false;
    if (v > SIZE_MAX / mult) return false;
    *out = static_cast<std::size_t>(v * mult);
    return true;
}

bool parse_int(const std::string& s, int lo, int hi, int* out) {
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || errno || v < lo || v > hi) return false;
    *out = static_cast<int>(v);
    return true;
}

// Executes a full plan on 64-bit words with a wrapping sum of random inputs
// (the executor's semantics: sends read the buffer as it was when the round
// began).  Checks every rank ends with the total and counts, per element,
// the reductions that completed it.  Scales to thousands of ranks, unlike a
// symbolic set-of-contributors check; a coincidental match of a partial sum
// with the total has probability ~2^-64.
Status simulate(const Plan& plan, std::size_t* completions_min, std::size_t* completions_max) {
    const int p = plan.nranks;
    const std::size_t n = plan.count;
    std::mt19937_64 rng(12345);
    std::vector<std::vector<std::uint64_t>> buf(static_cast<std::size_t>(p), std::vector<std::uint64_t>(n));
    std::vector<std::uint64_t> total(n, 0);
    for (auto& b : buf)
        for (std::size_t i = 0; i < n; ++i) {
            b[i] = rng();
            total[i] += b[i];
        }
    std::vector<std::size_t> completed(n, 0);
    std::unordered_map<long long, std::vector<std::vector<std::uint64_t>>> chan;  // src*p+dst -> messages
    std::unordered_map<long long, std::size_t> consumed;
    auto key = [p](int s, int d) { return static_cast<long long>(s) * p + d; };
    std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
    std::vector<bool> posted(static_cast<std::size_t>(p), false);
    for (bool progress = true; progress;) {
        progress = false;
        for (int r = 0; r < p; ++r) {
            const auto& rounds = plan.of(r).rounds;
            std::size_t k = next[static_cast<std::size_t>(r)];
            if (k >= rounds.size()) continue;
            const auto& ops = rounds[k].ops;
            auto& b = buf[static_cast<std::size_t>(r)];
            if (!posted[static_cast<std::size_t>(r)]) {
                for (const Op& op : ops)
                    if (op.kind == OpKind::send)
                        chan[key(r, op.peer)].emplace_back(b.begin() + static_cast<long>(op.offset),
                                                          b.begin() + static_cast<long>(op.offset + op.count));
                posted[static_cast<std::size_t>(r)] = true;
                progress = true;
            }
            std::map<int, std::size_t> need;
            bool ready = true;
            for (const Op& op : ops)
                if (op.kind != OpKind::send) {
                    std::size_t idx = consumed[key(op.peer, r)] + need[op.peer]++;
                    if (chan[key(op.peer, r)].size() <= idx) ready = false;
                }
            if (!ready) continue;
            std::map<int, std::size_t> used;
            for (const Op& op : ops) {
                if (op.kind == OpKind::send) continue;
                const auto& m = chan[key(op.peer, r)][consumed[key(op.peer, r)] + used[op.peer]++];
                if (m.size() != op.count)
                    return Status::internal("rank " + std::to_string(r) + " round " + std::to_string(k) +
                                            ": message size mismatch with rank " + std::to_string(op.peer));
                for (std::size_t i = 0; i < op.count; ++i) {
                    std::uint64_t& x = b[op.offset + i];
                    if (op.kind == OpKind::recv_copy) {
                        x = m[i];
                    } else {
                        x += m[i];
                        if (x == total[op.offset + i]) completed[op.offset + i]++;
                    }
                }
            }
            for (auto& u : used) consumed[key(u.first, r)] += u.second;
            next[static_cast<std::size_t>(r)]++;
            posted[static_cast<std::size_t>(r)] = false;
            progress = true;
        }
    }
    for (int r = 0; r < p; ++r) {
        if (next[static_cast<std::size_t>(r)] < plan.of(r).rounds.size())
            return Status::internal("deadlock: rank " + std::to_string(r) + " stuck in round " +
                                    std::to_string(next[static_cast<std::size_t>(r)]));
        for (std::size_t i = 0; i < n; ++i)
            if (buf[static_cast<std::size_t>(r)][i] != total[i])
                return Status::internal("rank " + std::to_string(r) + " element " + std::to_string(i) +
                                        " does not hold the full reduction");
    }
    *completions_min = n ? SIZE_MAX : 0;
    *completions_max = 0;
    for (std::size_t c : completed) {
        *completions_min = std::min(*completions_min, c);
        *completions_max = std::max(*completions_max, c);
    }
    return Status::ok();
}

// Bytes each vertex's up-link carries up and down (send ops of all ranks).
void print_traffic(const Topology& t, const Plan& plan, std::size_t elem_size, std::ostream& os) {
    std::map<int, std::pair<std::size_t, std::size_t>> load;  // vertex -> (up, down) elements
    for (int r = 0; r < plan.nranks; ++r)
        for (const Round& round : plan.of(r).rounds)
            for (const Op& op : round.ops) {
                if (op.kind != OpKind::send) continue;
                int top = t.lca(t.leaf_of_rank(r), t.leaf_of_rank(op.peer));
                for (int v = t.leaf_of_rank(r); v != top; v = t.node(v).parent) load[v].first += op.count;
                for (int v = t.leaf_of_rank(op.peer); v != top; v = t.node(v).parent) load[v].second += op.count;
            }
    os << "traffic per up-link, bytes up / down:\n";
    bool any = false;
    for (const TopoNode& n : t.nodes()) {
        if (n.is_leaf() || n.parent < 0) continue;
        auto it = load.find(n.id);
        std::size_t up = it == load.end() ? 0 : it->second.first, down = it == load.end() ? 0 : it->second.second;
        os << "  " << to_string(n.level) << " " << n.name << ": " << up * elem_size << " / " << down * elem_size << "\n";
        any = true;
    }
    if (!any) os << "  (no links above the ranks)\n";
}

}  // namespace

int main(int argc, char** argv) {
    std::string file, alg_name = "flexreduce";
    std::size_t count = 1024, elem_size = 8, segment = 512 * 1024;
    int only = -1, trees = 0;
    bool check = false, quiet = false;
    std::vector<int> factors;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](std::string* v) {
            if (i + 1 >= argc) return false;
            *v = argv[++i];
            return true;
        };
        std::string v;
        if (a == "-h" || a == "--help") {
            std::cout << usage();
            return 0;
        } else if (a == "--list-algorithms") {
            for (Algorithm x : host_algorithms()) std::cout << algorithm_name(x) << "\n";
            return 0;
        } else if (a == "--check") {
            check = true;
        } else if (a == "--quiet") {
            quiet = true;
        } else if (a == "--algorithm") {
            if (!value(&alg_name)) return usage_error("--algorithm needs a name");
        } else if (a == "--count") {
            if (!value(&v) || !parse_plain_size(v, &count)) return usage_error("--count needs a number of elements");
        } else if (a == "--elem-size") {
            if (!value(&v) || !parse_plain_size(v, &elem_size) || elem_size == 0)
                return usage_error("--elem-size needs a positive number of bytes");
        } else if (a == "--segment") {
            if (!value(&v) || !parse_plain_size(v, &segment)) return usage_error("--segment needs a size in bytes (512K, 0, ...)");
        } else if (a == "--trees") {
            if (!value(&v) || !parse_int(v, 0, 1 << 20, &trees)) return usage_error("--trees needs a number >= 0");
        } else if (a == "--factors") {
            if (!value(&v)) return usage_error("--factors needs AxBx...");
            std::stringstream ss(v);
            for (std::string f; std::getline(ss, f, 'x');) {
                int x = 0;
                if (!parse_int(f, 1, 1 << 22, &x)) return usage_error("bad --factors '" + v + "' (example: 2x3)");
                factors.push_back(x);
            }
        } else if (a == "--rank") {
            if (!value(&v) || !parse_int(v, 0, 1 << 22, &only)) return usage_error("--rank needs a rank number");
        } else if (!a.empty() && a[0] == '-') {
            return usage_error("unknown option '" + a + "'");
        } else if (file.empty()) {
            file = a;
        } else {
            return usage_error("more than one topology file ('" + file + "', '" + a + "')");
        }
    }
    if (file.empty()) return usage_error("no topology file given");
    Algorithm alg;
    if (!algorithm_from_name(alg_name, &alg) || alg == Algorithm::automatic)
        return usage_error("unknown algorithm '" + alg_name + "' (" + algorithm_names(host_algorithms()) + ")");

    Topology topo;
    Status s = Topology::from_file(file, &topo);
    if (!s) {
        std::cerr << "topoar_plan: " << s.message() << "\n";
        return 2;
    }
    if (only >= topo.num_ranks())
        return usage_error("--rank " + std::to_string(only) + ": the topology has " + std::to_string(topo.num_ranks()) +
                           " ranks");

    // The options the engine would plan with.
    EngineConfig cfg;
    cfg.segment_size = segment;
    cfg.num_trees = trees;
    cfg.hring_factors = factors;
    const PlanOptions opts = plan_options(cfg, elem_size);

    std::cout << "topology " << file << " (" << topo.num_ranks() << " ranks, depth " << topo.depth() << "):\n";
    describe(topo, std::cout);
    std::cout << "\nalgorithm " << algorithm_name(alg) << ": " << count << " elements of " << elem_size
              << " bytes, segment " << segment << " bytes";
    if (opts.pipeline_elems) std::cout << " (" << opts.pipeline_elems << " elements)";
    std::cout << "\n\n";

    if (alg == Algorithm::flexreduce) {
        FlexLayout layout;
        s = flex_layout(topo, count, &layout);
        if (!s) {
            std::cerr << "topoar_plan: flexreduce layout: " << s.message() << "\n";
            return 1;
        }
        std::cout << describe_flex_layout(topo, layout) << "\n";
    }

    Plan plan;
    s = make_plan(alg, topo, count, -1, opts, &plan);
    if (!s) {
        std::cerr << "topoar_plan: " << algorithm_name(alg) << ": " << s.message() << "\n";
        return 1;
    }
    std::size_t most_rounds = 0, messages = 0;
    for (int r = 0; r < plan.nranks; ++r) {
        most_rounds = std::max(most_rounds, plan.num_rounds(r));
        for (const Round& round : plan.of(r).rounds)
            for (const Op& op : round.ops) messages += op.kind == OpKind::send;
    }
    if (!quiet) {
        std::cout << "schedule:\n";
        for (int r = 0; r < plan.nranks; ++r)
            if (only < 0 || r == only) std::cout << describe_schedule(plan, r);
        std::cout << "\n";
    }
    std::cout << "rounds: at most " << most_rounds << " per rank; " << messages << " messages in all\n";
    print_traffic(topo, plan, elem_size, std::cout);

    if (check) {
        s = validate_plan(plan);
        if (!s) {
            std::cout << "check: FAILED: validate_plan: " << s.message() << "\n";
            return 1;
        }
        std::size_t lo = 0, hi = 0;
        s = simulate(plan, &lo, &hi);
        if (!s) {
            std::cout << "check: FAILED: " << s.message() << "\n";
            return 1;
        }
        // The latency algorithm's recursive doubling completes every
        // element on every rank (one expression tree, evaluated P times);
        // all others reduce once.
        bool once = alg != Algorithm::leader;
        if (plan.nranks > 1 && plan.count > 0 && once && (lo != 1 || hi != 1)) {
            std::cout << "check: FAILED: elements are completed by " << lo << " to " << hi
                      << " reductions (expected exactly one owner each)\n";
            return 1;
        }
        std::cout << "check: ok (valid plan; simulated " << plan.nranks << " ranks: all hold the full reduction";
        if (once) std::cout << ", each element reduced to completion once";
        std::cout << ")\n";
    }
    return 0;
}
