// The built-in decision table from the cost model (default_table.hpp).
#include "model/default_table.hpp"

#include <algorithm>
#include <cmath>

#include "exec/schedule_policy.hpp"
#include "planners/planners.hpp"

namespace topoar {

namespace {

// min, min*f, min*f^2, ... below max, then max itself.
std::vector<std::size_t> size_ladder(std::size_t lo, std::size_t hi, std::size_t f) {
    std::vector<std::size_t> out;
    for (std::size_t v = lo; v < hi; v *= f) {
        out.push_back(v);
        if (v > hi / f) break;
    }
    out.push_back(hi);
    return out;
}

// The geometric midpoint of two sizes of the ladder, where one winner's
// range ends and the next one's begins.
std::size_t midpoint(std::size_t a, std::size_t b) {
    std::size_t m = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(a) * static_cast<double>(b))));
    return std::min(std::max(m, a + 1), b);
}

// The winner at size s (index into rep.algorithms, -1: no prediction
// there).  The earliest candidate (the simplest: fewest messages)
// predicted within min_gain of the best wins; in the bandwidth regime (the
// best time is at least twice first_best, the best at the first size) a
// plan predicted within kTie of that winner whose busiest rank reduces
// less than 2/3 as much replaces it: the model knows CPUs least well
// (oversubscribed cores, progress), so of two equal predictions the one
// that concentrates less work on one rank (not a node leader reducing
// everything) is the safer bet.
// The best prediction at size s (-1: none).
double best_time(const DefaultTableReport& rep, std::size_t s) {
    double best = -1;
    for (const auto& row : rep.time)
        if (row[s] >= 0 && (best < 0 || row[s] < best)) best = row[s];
    return best;
}

int size_winner(const DefaultTableReport& rep, std::size_t s, double first_best, double min_gain,
                bool* bandwidth) {
    const std::size_t na = rep.algorithms.size();
    const double best = best_time(rep, s);
    if (best < 0) return -1;  // first_best is set: some size up to s had a prediction
    *bandwidth = best >= 2 * first_best;
    int win = -1;
    for (std::size_t a = 0; a < na && win < 0; ++a)
        if (rep.time[a][s] >= 0 && rep.time[a][s] <= best * (1 + min_gain)) win = static_cast<int>(a);
    // A plan that keeps within the flight bound beats one that does not
    // when it is predicted within min_gain of it (the fastest such plan):
    // rounds that put more than the bound on a host link at once are what
    // shallow-buffered links punish and the model does not see (1+3 ranks
    // at 1 Gbit/s with a 64 KiB bucket: the latency algorithm, predicted
    // 1-9 % ahead of tree at 256 KiB-4 MiB, ran 1.5-2x slower than it;
    // docs/large-messages.md, "Whole operations across hosts").
    // Where no plan keeps within the bound, a winner moving whole
    // operations gives way the same way to a plan whose rounds are a few
    // pipelining units (flight_class).
    for (FlightClass level : {kWithinFlight, kPipelined}) {
        if (rep.bounded[static_cast<std::size_t>(win)][s] >= level) break;
        const double limit = rep.time[static_cast<std::size_t>(win)][s] * (1 + min_gain);
        int kept = -1;
        for (std::size_t a = 0; a < na; ++a)
            if (rep.bounded[a][s] >= level && rep.time[a][s] >= 0 && rep.time[a][s] <= limit &&
                (kept < 0 || rep.time[a][s] < rep.time[static_cast<std::size_t>(kept)][s]))
                kept = static_cast<int>(a);
        if (kept >= 0) return kept;
    }
    if (*bandwidth) {
        const double t = rep.time[static_cast<std::size_t>(win)][s];
        const double hi = t * (1 + DefaultTableOptions::kTie), lo = t / (1 + DefaultTableOptions::kTie);
        for (std::size_t a = 0; a < na; ++a)
            if (rep.time[a][s] >= lo && rep.time[a][s] <= hi &&
                rep.reduced[a][s] < rep.reduced[static_cast<std::size_t>(win)][s] * (2.0 / 3) &&
                rep.bounded[a][s] >= rep.bounded[static_cast<std::size_t>(win)][s])
                win = static_cast<int>(a);
    }
    return win;
}

}  // namespace

bool keeps_flight_bound(const Topology& topo, const Plan& plan, std::size_t elem_size, std::size_t flight_bytes) {
    return flight_class(topo, plan, elem_size, flight_bytes) == kWithinFlight;
}

FlightClass flight_class(const Topology& topo, const Plan& plan, std::size_t elem_size, std::size_t flight_bytes) {
    if (flight_bytes == 0) return kWithinFlight;
    // One pass over the ranks: a rank within the bound is left alone; every
    // rank over it must be a few units (few_units).
    FlightClass worst = kWithinFlight;
    for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
        const int host = topo.node_of_rank(r);
        const auto other_host = [&](int peer) { return host < 0 || topo.node_of_rank(peer) != host; };
        const RankSchedule& mine = plan.ranks[static_cast<std::size_t>(r)];
        const std::size_t round = max_round_peer_bytes(mine, elem_size, other_host);
        if (round <= flight_bytes) continue;
        if (!few_units(flight_bytes, round, max_message_bytes(mine, elem_size, other_host))) return kWholeOps;
        worst = kPipelined;
    }
    return worst;
}

Status build_default_table(const Topology& topo, const DefaultTableOptions& opt, DecisionTable* out,
                           DefaultTableReport* report) {
    if (opt.elem_size == 0) return Status::invalid("default table: element size 0");
    if (opt.min_bytes == 0 || opt.min_bytes > opt.max_bytes)
        return Status::invalid("default table: need 0 < min_bytes <= max_bytes");
    if (opt.candidates.empty()) return Status::invalid("default table: no candidate algorithms");
    for (Algorithm a : opt.candidates)
        if (a == Algorithm::automatic) return Status::invalid("default table: 'auto' is not a candidate");
    if (opt.mem == MemType::any) return Status::invalid("default table: rules are for host or cuda memory, not any");

    DefaultTableReport rep;
    const int p = topo.num_ranks();
    std::size_t factor = std::max(2u, opt.size_factor);
    if (p > opt.coarse_ranks) factor *= factor;
    rep.sizes = size_ladder(opt.min_bytes, opt.max_bytes, factor);
    rep.algorithms = opt.candidates;
    const std::size_t na = rep.algorithms.size(), ns = rep.sizes.size();
    rep.time.assign(na, std::vector<double>(ns, -1.0));
    rep.reduced.assign(na, std::vector<double>(ns, -1.0));
    rep.bounded.assign(na, std::vector<char>(ns, kWithinFlight));
    // The flight bound the executor meters host links with (host data
    // across hosts only: schedule_policy.hpp, flight_bytes_for).
    const int hosts = static_cast<int>(topo.nodes_at(Level::node).size());
    const std::size_t flight = opt.mem == MemType::host ? flight_bytes_for(opt.model.flight_bytes, hosts) : 0;
    rep.winner.assign(ns, -1);
    *out = DecisionTable{};
    if (p <= 1 || p > opt.max_ranks) {
        if (p > 1)
            rep.notes.push_back("skipped: " + std::to_string(p) + " ranks > max_ranks " +
                                std::to_string(opt.max_ranks) + " (the engine's built-in choice applies)");
        if (report) *report = std::move(rep);
        return Status::ok();
    }

    // Each rank receives at least the elements it does not own in the end,
    // in segments: a lower bound on a plan's steps without planning it.
    const std::size_t seg = opt.model.segment_bytes ? std::max(opt.model.segment_bytes, opt.elem_size) : 0;
    std::vector<char> dropped(na, 0);
    double first_best = -1;  // the best prediction at the first size simulated
    for (std::size_t s = 0; s < ns; ++s) {
        const std::size_t bytes = rep.sizes[s];
        const std::size_t count = bytes / opt.elem_size;
        if (count == 0) continue;
        bool stopped = false;
        // Above full_max_bytes: the winner of the size below and the plans
        // predicted ahead of it there.
        int prev = -1;
        if (bytes > opt.full_max_bytes && s > 0) {
            bool bw = false;
            prev = size_winner(rep, s - 1, first_best, opt.min_gain, &bw);
        }
        for (std::size_t a = 0; a < na; ++a) {
            if (dropped[a]) continue;
            const char* name = algorithm_name(rep.algorithms[a]);
            if (prev >= 0 && static_cast<int>(a) != prev &&
                !(rep.time[a][s - 1] >= 0 &&
                  rep.time[a][s - 1] <=
                      rep.time[static_cast<std::size_t>(prev)][s - 1] * (1 + DefaultTableOptions::kTie))) {
                dropped[a] = 1;  // behind the incumbent where the ranking is settled: not simulated from here on
                rep.notes.push_back(std::string(name) + ": not simulated from " + format_size(bytes) + " (behind " +
                                    algorithm_name(rep.algorithms[static_cast<std::size_t>(prev)]) + " at " +
                                    format_size(rep.sizes[s - 1]) + ")");
                continue;
            }
            const std::size_t floor_steps = seg ? static_cast<std::size_t>(p) * (bytes / seg) : 0;
            std::size_t steps = floor_steps;
            Plan plan;
            if (floor_steps <= opt.max_steps) {
                Status st = make_plan(rep.algorithms[a], topo, count, -1, opt.plan, &plan);
                if (st.code() == Code::unsupported) {
                    dropped[a] = 1;
                    rep.notes.push_back(std::string(name) + ": " + st.message());
                    continue;
                }
                if (!st) {  // this size only (e.g. fewer elements than a planner needs)
                    rep.notes.push_back(std::string(name) + " at " + format_size(bytes) + ": " + st.message());
                    continue;
                }
                steps = count_steps(plan, opt.elem_size, opt.model.segment_bytes);
            }
            if (steps > opt.max_steps) {  // steps grow with the size: not simulated from here on
                dropped[a] = 1;
                rep.notes.push_back(std::string(name) + ": over max_steps (" + std::to_string(steps) + " > " +
                                    std::to_string(opt.max_steps) + ") from " + format_size(bytes) + " on");
                continue;
            }
            if (rep.steps + steps > opt.max_total_steps) {
                stopped = true;
                rep.notes.push_back("max_total_steps reached at " + format_size(bytes));
                break;
            }
            Prediction pr;
            Status st = predict(topo, plan, opt.elem_size, opt.model, &pr);
            if (!st) {
                rep.notes.push_back(std::string(name) + " at " + format_size(bytes) + ": " + st.message());
                continue;
            }
            rep.steps += steps;
            ++rep.predictions;
            rep.time[a][s] = pr.time;
            rep.reduced[a][s] = pr.max_bytes_reduced / static_cast<double>(bytes);
            rep.bounded[a][s] = flight_class(topo, plan, opt.elem_size, flight);
        }
        if (stopped) {  // a size only partly simulated would compare unfairly
            for (std::size_t a = 0; a < na; ++a) rep.time[a][s] = -1;
            break;
        }
        if (first_best < 0) first_best = best_time(rep, s);
    }

    // Winners (size_winner).  A size is decided only while the previous
    // size's winner has a prediction there too: a winner must beat the
    // incumbent, not just be the only one the budget reached.
    int incumbent = -1;
    bool last_bandwidth = false;  // the last decided size is bandwidth-bound
    for (std::size_t s = 0; s < ns; ++s) {
        if (incumbent >= 0 && rep.time[static_cast<std::size_t>(incumbent)][s] < 0) {
            rep.notes.push_back("decided up to " + format_size(rep.sizes[s - 1]) + ": the winner there (" +
                                algorithm_name(rep.algorithms[static_cast<std::size_t>(incumbent)]) +
                                ") has no prediction at " + format_size(rep.sizes[s]));
            break;
        }
        // Nor does the incumbent win a size where the budget left it alone
        // (the others over max_steps): it would keep every larger size by
        // default (on 256 ranks the latency algorithm, winner at 8-512 B,
        // took all sizes).  Above full_max_bytes the others are left out on
        // purpose, behind it.
        std::size_t predicted = 0;
        for (std::size_t a = 0; a < na; ++a) predicted += rep.time[a][s] >= 0 ? 1 : 0;
        if (incumbent >= 0 && na > 1 && predicted < 2 && rep.sizes[s] <= opt.full_max_bytes) {
            rep.notes.push_back("decided up to " + format_size(rep.sizes[s - 1]) + ": only the winner there (" +
                                algorithm_name(rep.algorithms[static_cast<std::size_t>(incumbent)]) +
                                ") has a prediction at " + format_size(rep.sizes[s]));
            break;
        }
        bool bandwidth = false;
        const int win = size_winner(rep, s, first_best, opt.min_gain, &bandwidth);
        if (win < 0) continue;
        last_bandwidth = bandwidth;
        rep.winner[s] = win;
        incumbent = win;
    }

    // Ranges: a winner's range runs from the midpoint below its first size
    // to the midpoint above its last one; sizes without a winner in between
    // belong to the range before them.  Past the last size with a winner
    // (the budget ran out), that winner keeps the open range if it won in
    // the bandwidth regime: pipelined plans scale alike from there, so the
    // ranking holds (a linear extrapolation of each was tried: from
    // 128K-512K on 64 ranks it overestimated 64 MiB by 60-90 % and swapped
    // tree and flexreduce).  Otherwise no rule applies there: the engine's
    // built-in choice does.
    std::vector<int> nodes_per;
    for (int n : topo.nodes_at(Level::node)) nodes_per.push_back(topo.num_ranks_under(n));
    const CommShape shape = make_comm_shape(p, nodes_per, static_cast<int>(topo.nodes_at(Level::rack).size()));
    std::size_t s = 0;
    while (s < ns && rep.winner[s] < 0) ++s;
    std::size_t lo = 0;
    while (s < ns) {
        std::size_t e = s;  // last size of this winner's run
        std::size_t next = s + 1;
        while (next < ns && (rep.winner[next] < 0 || rep.winner[next] == rep.winner[s])) {
            if (rep.winner[next] >= 0) e = next;
            ++next;
        }
        Rule rule;
        rule.size.lo = lo;
        // The latency algorithm funnels the whole vector through one rank
        // per host: it does not scale like the pipelined plans, so it never
        // keeps the open range (on 64 ranks at 5 us it won to 32 KiB, and the
        // budget ended there).
        const bool scales = rep.algorithms[static_cast<std::size_t>(rep.winner[s])] != Algorithm::leader;
        if (next < ns)
            rule.size.hi = midpoint(rep.sizes[e], rep.sizes[next]);
        else if (e + 1 < ns && !(last_bandwidth && scales))
            rule.size.hi = midpoint(rep.sizes[e], rep.sizes[e + 1]);
        else
            rule.size.hi = SizeRange::kUnbounded;
        rule.ranks = CountRange{p, p};
        rule.nodes = CountRange{shape.nodes, shape.nodes};
        rule.mem = opt.mem;
        rule.algorithm = rep.algorithms[static_cast<std::size_t>(rep.winner[s])];
        rule.origin = "cost model";
        TOPOAR_TRY(out->add(rule));
        lo = rule.size.hi;
        s = next;
        if (next == ns && e + 1 < ns)
            rep.notes.push_back(rule.size.hi == SizeRange::kUnbounded
                                    ? std::string("larger sizes keep ") + algorithm_name(rule.algorithm) +
                                          " (it won bandwidth-bound)"
                                    : "from " + format_size(rule.size.hi) + " on no rule (" +
                                          (scales ? "latency-bound at the last size decided"
                                                  : "the latency algorithm does not scale") +
                                          "): built-in choice");
    }
    if (report) *report = std::move(rep);
    return Status::ok();
}

}  // namespace topoar
