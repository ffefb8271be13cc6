// infer_network (measured.hpp): from the pairwise probe matrix to host
// links, racks and rack uplinks.
#include "topology/measured.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "core/hash.hpp"
#include "core/max_min.hpp"
#include "core/units.hpp"

namespace topoar {

std::vector<std::vector<std::pair<int, int>>> probe_schedule(int hosts) {
    std::vector<std::vector<std::pair<int, int>>> rounds;
    if (hosts < 2) return rounds;
    // Circle method: with an even count n, host n-1 stays put and the others
    // rotate; with an odd count a phantom host makes it even and whoever
    // meets the phantom sits the round out.
    const int n = hosts % 2 ? hosts + 1 : hosts;
    for (int r = 0; r < n - 1; ++r) {
        std::vector<std::pair<int, int>> pairs;
        for (int k = 0; k < n / 2; ++k) {
            int a = k == 0 ? n - 1 : (r + k) % (n - 1);
            int b = (r + n - 1 - k) % (n - 1);
            if (a >= hosts || b >= hosts) continue;
            pairs.emplace_back(std::min(a, b), std::max(a, b));
        }
        std::sort(pairs.begin(), pairs.end());
        rounds.push_back(std::move(pairs));
    }
    return rounds;
}

ProbeMatrix::ProbeMatrix(int n)
    : hosts(n),
      bw(static_cast<std::size_t>(n * n), 0.0),
      lat(static_cast<std::size_t>(n * n), 0.0),
      local_bw(static_cast<std::size_t>(n), 0.0),
      local_lat(static_cast<std::size_t>(n), 0.0),
      fan_in(static_cast<std::size_t>(n), 0.0),
      fan_in_from(static_cast<std::size_t>(n), 0.0),
      fan_in_racks(static_cast<std::size_t>(n), 0.0),
      fan_in_across(static_cast<std::size_t>(n), 0.0) {}

double fan_in_tolerance(const ProbeMatrix& m, int host) {
    const std::size_t u = static_cast<std::size_t>(host);
    return u < m.fan_in_across.size() && m.fan_in_across[u] > 0 ? kSameLinkFactor : kPinMargin;
}

void ProbeMatrix::set(int i, int j, double bandwidth, double latency) {
    bw[static_cast<std::size_t>(i * hosts + j)] = bw[static_cast<std::size_t>(j * hosts + i)] = bandwidth;
    lat[static_cast<std::size_t>(i * hosts + j)] = lat[static_cast<std::size_t>(j * hosts + i)] = latency;
}

namespace {

// Per host: the best rate any of its pairs reached.
std::vector<double> best_pairs(const ProbeMatrix& m) {
    const int n = m.hosts;
    std::vector<double> up(static_cast<std::size_t>(n), 0.0);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            if (m.measured(i, j)) up[static_cast<std::size_t>(i)] = std::max(up[static_cast<std::size_t>(i)], m.bw_at(i, j));
    return up;
}

// Racks from the pairs alone, given each host's up-link `up`: per host its
// group (numbered in order of first member).
std::vector<int> pair_groups(const ProbeMatrix& m, const std::vector<double>& up, int* num_groups) {
    const int n = m.hosts;
    auto held_back = [&](int i, int j) {
        return m.bw_at(i, j) < kRackFactor * std::min(up[static_cast<std::size_t>(i)], up[static_cast<std::size_t>(j)]);
    };
    // Racks: a host joins the first group it reaches at host-link rate
    // from at least half of its measured members.  A shared uplink holds
    // back every pair that crosses it; one slow pair alone is a disturbed
    // measurement (interference only ever slows a stream down).
    std::vector<std::vector<int>> groups;
    auto reaches = [&](int i, const std::vector<int>& group) {
        int pairs = 0, held = 0;
        for (int k : group) {
            if (k == i || !m.measured(i, k)) continue;
            ++pairs;
            if (held_back(i, k)) ++held;
        }
        return pairs > 0 && 2 * held <= pairs;
    };
    for (int i = 0; i < n; ++i) {
        int joined = -1;
        for (std::size_t g = 0; g < groups.size() && joined < 0; ++g)
            if (reaches(i, groups[g])) joined = static_cast<int>(g);
        if (joined < 0) {
            joined = static_cast<int>(groups.size());
            groups.emplace_back();
        }
        groups[static_cast<std::size_t>(joined)].push_back(i);
    }
    // The first pass sees a group as it stands when the host comes, so a
    // host held back by the group's first member alone starts a group of
    // its own, even when it reaches the group's later members at host rate
    // (hosts 0, 1, 2 in one rack, the pair 0-1 disturbed: {0, 2} and {1}).
    // A host left alone joins the first group that, complete, passes the
    // same rule.  Groups only merge, so this ends.
    for (bool moved = true; moved;) {
        moved = false;
        for (std::size_t g = 0; g < groups.size() && !moved; ++g) {
            if (groups[g].size() != 1) continue;
            const int i = groups[g][0];
            for (std::size_t o = 0; o < groups.size() && !moved; ++o) {
                if (o == g || !reaches(i, groups[o])) continue;
                groups[o].push_back(i);
                std::sort(groups[o].begin(), groups[o].end());
                groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(g));
                moved = true;
            }
        }
    }
    std::vector<int> group_of(static_cast<std::size_t>(n), 0);
    for (std::size_t g = 0; g < groups.size(); ++g)
        for (int h : groups[g]) group_of[static_cast<std::size_t>(h)] = static_cast<int>(g);
    *num_groups = static_cast<int>(groups.size());
    return group_of;
}

// Groups numbered in order of their first member (every rank numbers a
// partition alike); returns how many.
int renumber(std::vector<int>* group) {
    std::map<int, int> index;
    for (int& g : *group) g = index.emplace(g, static_cast<int>(index.size())).first->second;
    return static_cast<int>(index.size());
}

}  // namespace

namespace {

using Rounds = std::vector<std::vector<std::pair<int, int>>>;

// What the measured streams of one pair round moved through each rack
// uplink in one direction at once: *out[g] the streams leaving rack g
// (pair (i, j): i streams into j), *in[g] those entering it.  `groups`
// racks numbered 0..groups-1 in `group`.
void uplink_sums(const ProbeMatrix& m, const std::vector<int>& group, int groups,
                 const std::vector<std::pair<int, int>>& round, std::vector<double>* out, std::vector<double>* in) {
    out->assign(static_cast<std::size_t>(groups), 0.0);
    in->assign(static_cast<std::size_t>(groups), 0.0);
    for (const auto& p : round) {
        const int a = group[static_cast<std::size_t>(p.first)], b = group[static_cast<std::size_t>(p.second)];
        if (a == b || !m.measured(p.first, p.second)) continue;
        (*out)[static_cast<std::size_t>(a)] += m.bw_at(p.first, p.second);
        (*in)[static_cast<std::size_t>(b)] += m.bw_at(p.first, p.second);
    }
}

int count_groups(const std::vector<int>& group) {
    int groups = 0;
    for (int g : group) groups = std::max(groups, g + 1);
    return groups;
}

}  // namespace

double crossing_rate(const ProbeMatrix& m, const std::vector<int>& group, int g, bool mean) {
    const int groups = count_groups(group);
    if (g < 0 || g >= groups) return 0;
    double total = 0, most = 0;
    int samples = 0;
    std::vector<double> out, in;
    for (const auto& round : probe_schedule(m.hosts)) {
        uplink_sums(m, group, groups, round, &out, &in);
        for (double sum : {out[static_cast<std::size_t>(g)], in[static_cast<std::size_t>(g)]})
            if (sum > 0) {
                total += sum;
                most = std::max(most, sum);
                ++samples;
            }
    }
    return mean ? (samples > 0 ? total / samples : 0) : most;
}

namespace {

// rack_fit_error over the rounds of probe_schedule(m.hosts), computed once
// by the caller (infer_racks scores every candidate partition).
double fit_error(const ProbeMatrix& m, const std::vector<double>& up, const std::vector<int>& group,
                 const Rounds& rounds) {
    const int n = m.hosts;
    const int groups = count_groups(group);
    // Links: host i's up-link is link i (in a pair round a host is in one
    // stream, so one link serves both directions); rack g's uplink is link
    // n + 2g leaving the rack and n + 2g + 1 entering it (streams run one
    // way: two share it only in the same direction).  Both directions are
    // taken as the most the streams crossing it in one direction moved
    // together in one round (they shared it, so it carried at least that:
    // crossing_rate's most, all racks in one pass).  Unknown: unlimited.
    const double unlimited = std::numeric_limits<double>::infinity();
    std::vector<double> capacity(static_cast<std::size_t>(n + (groups > 1 ? 2 * groups : 0)), unlimited);
    auto known = [&](double rate) { return rate > 0 ? rate : unlimited; };
    for (int i = 0; i < n; ++i) capacity[static_cast<std::size_t>(i)] = known(up[static_cast<std::size_t>(i)]);
    if (groups > 1) {
        std::vector<double> most(static_cast<std::size_t>(groups), 0.0), out, in;
        for (const auto& round : rounds) {
            uplink_sums(m, group, groups, round, &out, &in);
            for (std::size_t g = 0; g < most.size(); ++g) most[g] = std::max({most[g], out[g], in[g]});
        }
        for (int g = 0; g < groups; ++g) {
            capacity[static_cast<std::size_t>(n + 2 * g)] = known(most[static_cast<std::size_t>(g)]);
            capacity[static_cast<std::size_t>(n + 2 * g + 1)] = known(most[static_cast<std::size_t>(g)]);
        }
    }
    const double tolerance = std::log(kFitTolerance);
    double error = 0;
    for (const auto& round : rounds) {
        std::vector<std::vector<int>> links;
        std::vector<double> measured;
        for (const auto& p : round) {
            if (!m.measured(p.first, p.second)) continue;
            std::vector<int> path{p.first, p.second};
            const int a = group[static_cast<std::size_t>(p.first)], b = group[static_cast<std::size_t>(p.second)];
            if (groups > 1 && a != b) {
                path.push_back(n + 2 * a);      // leaves a
                path.push_back(n + 2 * b + 1);  // enters b
            }
            links.push_back(std::move(path));
            measured.push_back(m.bw_at(p.first, p.second));
        }
        const std::vector<double> predicted = max_min_rates(capacity, links);
        for (std::size_t f = 0; f < measured.size(); ++f) {
            if (!(predicted[f] > 0) || !std::isfinite(predicted[f])) continue;  // no prediction
            error += std::max(0.0, std::fabs(std::log(measured[f] / predicted[f])) - tolerance);
        }
    }
    return error;
}

}  // namespace

double rack_fit_error(const ProbeMatrix& m, const std::vector<double>& up, const std::vector<int>& group) {
    return fit_error(m, up, group, probe_schedule(m.hosts));
}

std::vector<int> infer_racks(const ProbeMatrix& m, const std::vector<double>& rates, int* num_groups) {
    const int n = m.hosts;
    std::vector<int> none(static_cast<std::size_t>(n), 0);
    *num_groups = n > 0 ? 1 : 0;
    if (n < 4 || static_cast<int>(rates.size()) != n) return none;
    // No pair is taken to reach more than the fastest pair did: a fan-in
    // can show a host's link faster than any single stream between two
    // hosts gets (a transport's per-stream limit, several streams' bursts),
    // and pairs held back by that are no rack.
    double fastest = 0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            if (m.measured(i, j)) fastest = std::max(fastest, m.bw_at(i, j));
    std::vector<double> up = rates;
    for (double& r : up) r = std::min(r, fastest);
    // Candidates: the pairs' racks (pair_groups), and with at most
    // kExhaustiveRackHosts hosts every partition into two or more racks of
    // at least two hosts (a rack of one host is the same network as a
    // slower host link: nothing tells them apart, and nothing runs
    // differently).  The best explains the rounds' rates with the least
    // error; ties go to the first found (the pairs' racks, then the
    // partitions in lexicographic order).
    std::vector<std::vector<int>> candidates;
    int heuristic_groups = 0;
    std::vector<int> heuristic = pair_groups(m, up, &heuristic_groups);
    if (heuristic_groups > 1) {
        // A host alone in its rack is behind its rack's uplink in every
        // transfer: a fan-in into it that reached clearly more than that
        // uplink carried refutes the rack (racks 1000/400 | 250/100, the
        // 250 Mbit/s host's pairs all at its 150 share, its fan-in 250).
        std::vector<int> size(static_cast<std::size_t>(heuristic_groups), 0);
        for (int g : heuristic) ++size[static_cast<std::size_t>(g)];
        bool refuted = false;
        for (int i = 0; i < n && !refuted; ++i) {
            const int g = heuristic[static_cast<std::size_t>(i)];
            const double f = static_cast<std::size_t>(i) < m.fan_in.size() ? m.fan_in[static_cast<std::size_t>(i)] : 0;
            refuted = size[static_cast<std::size_t>(g)] == 1 && f > kPinMargin * crossing_rate(m, heuristic, g, false);
        }
        if (!refuted) candidates.push_back(heuristic);
    }
    if (n <= kExhaustiveRackHosts) {
        // Restricted growth strings: a[0] = 0, a[i] <= 1 + max(a[0..i-1]).
        std::vector<int> a(static_cast<std::size_t>(n), 0);
        for (;;) {
            int blocks = 0;
            for (int g : a) blocks = std::max(blocks, g + 1);
            if (blocks > 1) {
                std::vector<int> size(static_cast<std::size_t>(blocks), 0);
                for (int g : a) ++size[static_cast<std::size_t>(g)];
                if (*std::min_element(size.begin(), size.end()) >= 2) candidates.push_back(a);
            }
            int i = n - 1;
            for (; i > 0; --i) {
                int top = 0;
                for (int k = 0; k < i; ++k) top = std::max(top, a[static_cast<std::size_t>(k)]);
                if (a[static_cast<std::size_t>(i)] <= top) {
                    ++a[static_cast<std::size_t>(i)];
                    std::fill(a.begin() + i + 1, a.end(), 0);
                    break;
                }
            }
            if (i == 0) break;
        }
    }
    const Rounds rounds = probe_schedule(n);
    const double flat = fit_error(m, up, none, rounds);
    double best_error = flat;
    const std::vector<int>* best = nullptr;
    for (const auto& c : candidates) {
        const double e = fit_error(m, up, c, rounds);
        if (e < best_error) {
            best_error = e;
            best = &c;
        }
    }
    // Racks only where they explain clearly more than none: kRackGain of
    // log error at least, and at most half of what is left with none (a
    // disturbed pair, or noise spread over many, is not a rack).
    if (!best) return none;
    std::vector<int> group = *best;
    const int racks = renumber(&group);
    if (flat - best_error < kRackGain * (racks - 1) || best_error > 0.5 * flat) return none;
    *num_groups = racks;
    return group;
}

namespace {

std::vector<FanIn> sort_by_receiver(std::vector<FanIn> out) {
    std::sort(out.begin(), out.end(), [](const FanIn& x, const FanIn& y) { return x.receiver < y.receiver; });
    return out;
}

// Per host: the best of its pairs and of a fan-in into it.
std::vector<double> pairs_and_fan_ins(const ProbeMatrix& m) {
    std::vector<double> up = best_pairs(m);
    for (std::size_t i = 0; i < up.size() && i < m.fan_in.size(); ++i) up[i] = std::max(up[i], m.fan_in[i]);
    return up;
}

}  // namespace

HostBounds host_bounds(const ProbeMatrix& m) {
    const int n = m.hosts;
    HostBounds b;
    b.rate = pairs_and_fan_ins(m);
    int num_groups = 0;
    b.group = infer_racks(m, b.rate, &num_groups);
    b.exact.assign(static_cast<std::size_t>(n), false);
    double slowest = 0;
    for (double r : b.rate)
        if (r > 0) slowest = slowest > 0 ? std::min(slowest, r) : r;
    for (int i = 0; i < n; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        const double f = u < m.fan_in.size() ? m.fan_in[u] : 0;
        // The fan-in reached the host's best (not a disturbed fan-in) and
        // stayed clearly below what its senders can send (by more than
        // fan_in_tolerance): the host's link held it back.
        // A fan-in that ran inside one rack while the pairs showed none
        // pins nothing once they do: its senders' bounds did not count
        // the rack uplink that some of them crossed.
        const bool stale = num_groups > 1 && !(u < m.fan_in_racks.size() && m.fan_in_racks[u] > 1);
        if (f > 0 && !stale && f * kPinMargin >= b.rate[u] && f * fan_in_tolerance(m, i) < m.fan_in_from[u])
            b.exact[u] = true;
    }
    // Pinned by pairs: at least two partners (of its rack) known faster
    // than i's best by more than kPinMargin, and every such pair reached
    // i's best (within kPinMargin): i's link held them back.  One such
    // pair alone is no proof: a pair between two fast hosts disturbed
    // (other processes on the cores) looks the same.  And only for the
    // slowest host (the least rate): pairs crossing a
    // rack uplink together with other pairs of their round share it, and
    // a host all of whose faster partners it met that way looks pinned at
    // its share (racks 1000/400 | 250/100 at 250 Mbit/s: the 250 Mbit/s
    // host reached 150 with both fast hosts), while the slowest host's
    // pairs are never held back below its own rate by that.
    std::vector<bool> pinned(static_cast<std::size_t>(n), false);
    for (int i = 0; i < n; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        int faster = 0;
        bool agree = true;
        for (int j = 0; j < n; ++j) {
            if (!m.measured(i, j) || b.group[static_cast<std::size_t>(j)] != b.group[u]) continue;
            if (!(b.rate[static_cast<std::size_t>(j)] > kPinMargin * b.rate[u])) continue;
            ++faster;
            if (!(m.bw_at(i, j) * kPinMargin >= b.rate[u])) agree = false;
        }
        pinned[u] = faster >= 2 && agree && b.rate[u] <= slowest;
    }
    for (int i = 0; i < n; ++i)
        if (pinned[static_cast<std::size_t>(i)]) b.exact[static_cast<std::size_t>(i)] = true;
    return b;
}

namespace {

// FanIn::shares: per sender, the max-min rate of its stream into the
// receiver over the senders' up-links (at their bounds) and, where it
// crosses racks (uplink non-empty), the uplink leaving its rack and the
// one entering the receiver's (at `uplink`, per rack); the receiver's
// link unlimited (it is what the fan-in measures).
std::vector<double> sender_shares(const std::vector<int>& senders, int receiver, const HostBounds& b,
                                  const std::vector<double>& uplink) {
    const double unlimited = std::numeric_limits<double>::infinity();
    const std::size_t k = senders.size(), groups = uplink.size();
    std::vector<double> capacity(k + 2 * groups, unlimited);
    std::vector<std::vector<int>> paths(k);
    const int into = b.group[static_cast<std::size_t>(receiver)];
    for (std::size_t p = 0; p < k; ++p) {
        const std::size_t s = static_cast<std::size_t>(senders[p]);
        capacity[p] = b.rate[s] > 0 ? b.rate[s] : unlimited;
        paths[p].push_back(static_cast<int>(p));
        const int from = b.group[s];
        if (groups > 0 && from != into) {
            paths[p].push_back(static_cast<int>(k + 2 * static_cast<std::size_t>(from)));      // leaves its rack
            paths[p].push_back(static_cast<int>(k + 2 * static_cast<std::size_t>(into) + 1));  // enters the receiver's
        }
    }
    for (std::size_t g = 0; g < groups; ++g)
        if (uplink[g] > 0) capacity[k + 2 * g] = capacity[k + 2 * g + 1] = uplink[g];
    std::vector<double> rates = max_min_rates(capacity, paths);
    for (double& r : rates)
        if (!std::isfinite(r)) r = 0;  // nothing known limits it: fan_in_fractions treats 0 as equal
    return rates;
}

}  // namespace

std::vector<double> fan_in_fractions(const FanIn& f) {
    std::vector<double> out(f.senders.size(), 1.0);
    if (f.shares.size() != f.senders.size()) return out;
    double top = 0;
    for (double s : f.shares) {
        if (!(s > 0) || !std::isfinite(s)) return out;
        top = std::max(top, s);
    }
    for (std::size_t p = 0; p < out.size(); ++p) out[p] = f.shares[p] / top;
    return out;
}

std::vector<FanIn> next_fan_ins(const ProbeMatrix& m) {
    const int n = m.hosts;
    const HostBounds b = host_bounds(m);
    std::vector<int> order(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    auto faster = [&](int x, int y) {
        const double rx = b.rate[static_cast<std::size_t>(x)], ry = b.rate[static_cast<std::size_t>(y)];
        return rx != ry ? rx > ry : x < y;
    };
    std::sort(order.begin(), order.end(), faster);
    std::vector<FanIn> out;
    std::vector<bool> group_done(static_cast<std::size_t>(n), false);
    for (int r : order) {
        const std::size_t u = static_cast<std::size_t>(r);
        const std::size_t g = static_cast<std::size_t>(b.group[u]);
        const bool tried = u < m.fan_in.size() && m.fan_in[u] > 0;
        if (group_done[g] || b.exact[u] || tried || !(b.rate[u] > 0)) continue;
        FanIn f;
        f.receiver = r;
        f.racks = count_groups(b.group);
        for (int s : order) {
            if (static_cast<int>(f.senders.size()) == kMaxFanInSenders) break;
            if (s == r || b.group[static_cast<std::size_t>(s)] != b.group[u] || !m.measured(r, s)) continue;
            f.senders.push_back(s);
            f.senders_rate += b.rate[static_cast<std::size_t>(s)];
        }
        if (!(f.senders_rate > kPinMargin * b.rate[u])) continue;
        std::sort(f.senders.begin(), f.senders.end());
        group_done[g] = true;
        out.push_back(std::move(f));
    }
    if (!out.empty()) return sort_by_receiver(std::move(out));
    // None inside a rack: one fan-in from across the racks, alone in its
    // round (it crosses rack uplinks, which other fan-ins could share).
    // Its senders: its rack mates first, then the other racks' hosts,
    // highest bounds first; what they can show is its rack mates' sum plus
    // what its rack's uplink carried in a pair round (the most), and that
    // must exceed its bound by kCrossFanInMargin (a rack of two 1 Gbit/s
    // hosts under a 200 Mbit/s uplink shows at most 1.2x its bound: no
    // fan-in, as before).
    const int groups = count_groups(b.group);
    if (groups < 2) return out;
    // What a rack's uplink surely carries: the least the streams crossing
    // it in one direction moved together in a pair round (the most can be
    // a round whose streams overlapped a token bucket's burst: s2's
    // 200 Mbit/s uplink once showed 217 and 430 in its two crossing
    // rounds).
    std::vector<double> uplink(static_cast<std::size_t>(groups), 0.0), leaving, entering;
    for (const auto& round : probe_schedule(n)) {
        uplink_sums(m, b.group, groups, round, &leaving, &entering);
        for (std::size_t g = 0; g < uplink.size(); ++g)
            for (double sum : {leaving[g], entering[g]})
                if (sum > 0) uplink[g] = uplink[g] > 0 ? std::min(uplink[g], sum) : sum;
    }
    for (int r : order) {
        const std::size_t u = static_cast<std::size_t>(r);
        // A host whose fan-in ran inside one rack, before the racks were
        // known, may get this one too (racks 1000/100 | 250/1000 under
        // 100 Mbit/s: the pairs alone rarely show the racks on the
        // cluster, the in-rack fan-ins then do).
        const bool tried = u < m.fan_in.size() && m.fan_in[u] > 0 && u < m.fan_in_racks.size() &&
                           m.fan_in_racks[u] > 1;
        if (b.exact[u] || tried || !(b.rate[u] > 0)) continue;
        FanIn f;
        f.receiver = r;
        f.across = true;
        f.racks = groups;
        // Per rack: what its senders can send (its uplink bounds the
        // others' racks' share, the receiver's rack's uplink all of it).
        std::vector<double> from(static_cast<std::size_t>(groups), 0.0);
        for (int pass = 0; pass < 2; ++pass)
            for (int s : order) {
                if (static_cast<int>(f.senders.size()) == kMaxFanInSenders) break;
                const bool mate = b.group[static_cast<std::size_t>(s)] == b.group[u];
                if (s == r || mate != (pass == 0) || !m.measured(r, s)) continue;
                f.senders.push_back(s);
                from[static_cast<std::size_t>(b.group[static_cast<std::size_t>(s)])] += b.rate[static_cast<std::size_t>(s)];
            }
        double outside = 0;
        for (int g = 0; g < groups; ++g)
            if (g != b.group[u]) outside += std::min(from[static_cast<std::size_t>(g)], uplink[static_cast<std::size_t>(g)]);
        // What the uplink can add must be a good part of the bound: a fast
        // host under a slow uplink (s2: 1 Gbit/s under 200 Mbit/s) gains
        // little, and a noisy bound below its mate's would cost s2 rounds.
        outside = std::min(outside, uplink[static_cast<std::size_t>(b.group[u])]);
        if (!(outside > 0) || outside < kCrossFanInShare * b.rate[u]) continue;
        f.senders_rate = from[static_cast<std::size_t>(b.group[u])] + outside;
        if (!(f.senders_rate > kCrossFanInMargin * b.rate[u])) continue;
        std::sort(f.senders.begin(), f.senders.end());
        f.shares = sender_shares(f.senders, r, b, uplink);
        out.push_back(std::move(f));
        break;
    }
    return out;
}

Status infer_network(const ProbeMatrix& m, const std::vector<std::string>& names, MeasuredNetwork* out,
                     const std::vector<double>& nic) {
    const int n = m.hosts;
    if (n < 1 || static_cast<int>(names.size()) != n || (!nic.empty() && static_cast<int>(nic.size()) != n))
        return Status::internal("infer_network: " + std::to_string(names.size()) + " names and " +
                                std::to_string(nic.size()) + " priors for " + std::to_string(n) + " hosts");
    MeasuredNetwork net;
    net.hosts = names;
    net.nic = nic.empty() ? std::vector<double>(static_cast<std::size_t>(n), 0.0) : nic;
    net.local_bw = m.local_bw;
    net.local_lat = m.local_lat.size() == static_cast<std::size_t>(n) ? m.local_lat
                                                                      : std::vector<double>(static_cast<std::size_t>(n), 0.0);
    net.host_up.assign(static_cast<std::size_t>(n), Link{});
    net.rack_of.assign(static_cast<std::size_t>(n), -1);

    // Host up-links: the best rate any of the host's pairs reached; what
    // the ports say bounds what a host's pairs seem to reach.
    std::vector<double> up = best_pairs(m);
    auto cap_to_ports = [&] {
        for (int i = 0; i < n; ++i) {
            const double port = net.nic[static_cast<std::size_t>(i)];
            if (port > 0 && up[static_cast<std::size_t>(i)] > port) up[static_cast<std::size_t>(i)] = port;
        }
    };
    // A fan-in that reached more than the pairs raises the host's up-link;
    // the racks are those that explain the pair rounds' rates best with
    // these links (infer_racks).
    for (int i = 0; i < n; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        const double f = u < m.fan_in.size() ? m.fan_in[u] : 0;
        if (f > up[u]) up[u] = f;
    }
    cap_to_ports();
    int num_groups = 0;
    const std::vector<int> group_of = infer_racks(m, up, &num_groups);
    // A fan-in shows no more than its senders' paths feed (fan_in_from).
    // One that reached that within fan_in_tolerance did not pin the host
    // (host_bounds): the senders held it back, and the host's link is at
    // least what they feed -- taken as that, the most this probe could
    // observe (after the racks, which compare pairs with the rates as
    // measured).  Racks 1000/100 | 250/1000 under 100 Mbit/s: the
    // 1000 Mbit/s host's fan-in, from its 100 Mbit/s mate and across the
    // uplink, could show 200 at most (the pairs read the uplink at
    // 110-125: a feed of 205-220), it reached 168-176, and at that rate the
    // model saw the relay's 2M on the host as slower than the uplink's M.
    for (int i = 0; i < n; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        const double f = u < m.fan_in.size() ? m.fan_in[u] : 0;
        const double feed = u < m.fan_in_from.size() ? m.fan_in_from[u] : 0;
        if (f > 0 && feed > up[u] && f * fan_in_tolerance(m, i) >= feed) up[u] = feed;
    }
    cap_to_ports();
    std::vector<std::vector<int>> groups(static_cast<std::size_t>(num_groups));
    for (int h = 0; h < n; ++h) groups[static_cast<std::size_t>(group_of[static_cast<std::size_t>(h)])].push_back(h);
    const bool racks = num_groups > 1;

    // Link classes (after the racks, which compare pairs with the rates as
    // measured, and after the fan-ins), from rates within the ports.
    snap_link_classes(&up);
    cap_to_ports();  // a host never gets more than its own port by its class

    // Latencies: a host's share is half its fastest pair inside its group.
    std::vector<double> lam(static_cast<std::size_t>(n), 0.0);
    for (int i = 0; i < n; ++i) {
        double best = 0, any = 0;
        for (int j = 0; j < n; ++j) {
            if (!m.measured(i, j)) continue;
            double l = m.lat_at(i, j);
            if (group_of[static_cast<std::size_t>(j)] == group_of[static_cast<std::size_t>(i)])
                best = best > 0 ? std::min(best, l) : l;
            any = any > 0 ? std::min(any, l) : l;
        }
        lam[static_cast<std::size_t>(i)] = (best > 0 ? best : any) / 2;
        net.host_up[static_cast<std::size_t>(i)] = Link{up[static_cast<std::size_t>(i)], lam[static_cast<std::size_t>(i)]};
        // Shared memory slower than the network port is a measurement
        // disturbed by other processes on the cores, not the machine: the
        // inside rate then stays unknown (the built-in default).
        if (net.local_bw[static_cast<std::size_t>(i)] < up[static_cast<std::size_t>(i)])
            net.local_bw[static_cast<std::size_t>(i)] = 0;
    }

    if (racks) {
        // A rack's uplink: what its leaving pairs moved together in a round
        // (the mean over the rounds where some left); its latency: half of what its fastest leaving pair took
        // beyond the two host links.
        net.rack_up.assign(groups.size(), Link{});
        for (std::size_t g = 0; g < groups.size(); ++g) {
            // The mean over the rounds: single measurements err both ways.
            const double rate = crossing_rate(m, group_of, static_cast<int>(g), /*mean=*/true);
            double residual = -1;
            for (int i : groups[g])
                for (int j = 0; j < n; ++j) {
                    if (group_of[static_cast<std::size_t>(j)] == static_cast<int>(g) || !m.measured(i, j)) continue;
                    double r = std::max(0.0, m.lat_at(i, j) - lam[static_cast<std::size_t>(i)] -
                                                 lam[static_cast<std::size_t>(j)]) / 2;
                    residual = residual < 0 ? r : std::min(residual, r);
                }
            // A rack that nothing left in any round keeps an unknown rate.
            net.rack_up[g] = Link{rate, std::max(0.0, residual)};
        }
        net.rack_of = group_of;
    }
    *out = std::move(net);
    return Status::ok();
}

void snap_link_classes(std::vector<double>* rates) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < rates->size(); ++i)
        if ((*rates)[i] > 0) order.push_back(i);
    // Fastest first; equal rates by index, so every rank orders alike.
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return (*rates)[a] > (*rates)[b]; });
    double top = 0;
    for (std::size_t i : order) {
        double& r = (*rates)[i];
        if (top > 0 && r * kSameLinkFactor >= top)
            r = top;
        else
            top = r;
    }
}

double MeasuredNetwork::message_cost() const {
    std::vector<double> inside;
    for (double l : local_lat)
        if (l > 0) inside.push_back(l);
    if (!inside.empty()) {
        std::sort(inside.begin(), inside.end());
        return inside[(inside.size() - 1) / 2];
    }
    double least = 0;
    for (const Link& l : host_up)
        if (l.latency > 0) least = least > 0 ? std::min(least, l.latency) : l.latency;
    return least;
}

Link model_link(const Link& measured, double overhead, double share, double floor) {
    Link l = measured;
    l.latency = std::max(floor, measured.latency - overhead * share);
    return l;
}

namespace {

std::uint64_t mix_link(std::uint64_t h, const Link& l) {
    h = fnv1a(&l.bandwidth, sizeof l.bandwidth, h);
    return fnv1a(&l.latency, sizeof l.latency, h);
}

}  // namespace

std::uint64_t MeasuredNetwork::digest() const {
    std::uint64_t h = kFnvOffset;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        h = fnv1a(hosts[i].data(), hosts[i].size() + 1, h);  // with the terminator: "ab","c" != "a","bc"
        h = mix_link(h, host_up[i]);
        h = fnv1a(&rack_of[i], sizeof rack_of[i], h);
        h = fnv1a(&local_bw[i], sizeof local_bw[i], h);
        h = fnv1a(&local_lat[i], sizeof local_lat[i], h);
        h = fnv1a(&nic[i], sizeof nic[i], h);
    }
    for (const Link& l : rack_up) h = mix_link(h, l);
    return h ? h : 1;
}

bool MeasuredNetwork::restrict_to(const std::vector<std::string>& names, MeasuredNetwork* out) const {
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < hosts.size(); ++i) index.emplace(hosts[i], i);
    MeasuredNetwork r;
    std::map<int, int> rack_index;  // old rack -> new, in order of first use
    for (const std::string& name : names) {
        auto it = index.find(name);
        if (it == index.end()) return false;
        std::size_t i = it->second;
        r.hosts.push_back(name);
        r.host_up.push_back(host_up[i]);
        r.local_bw.push_back(local_bw[i]);
        r.local_lat.push_back(local_lat[i]);
        r.nic.push_back(nic[i]);
        int rack = rack_of[i];
        if (rack >= 0) {
            auto ins = rack_index.emplace(rack, static_cast<int>(rack_index.size()));
            if (ins.second) r.rack_up.push_back(rack_up[static_cast<std::size_t>(rack)]);
            rack = ins.first->second;
        }
        r.rack_of.push_back(rack);
    }
    if (r.rack_up.size() < 2) {
        r.rack_up.clear();
        std::fill(r.rack_of.begin(), r.rack_of.end(), -1);
    }
    *out = std::move(r);
    return true;
}

namespace {

template <typename T>
void put(std::string* out, const T& v) {
    out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
bool get(const std::string& in, std::size_t* at, T* v) {
    if (in.size() - *at < sizeof(T) || *at > in.size()) return false;
    std::memcpy(v, in.data() + *at, sizeof(T));
    *at += sizeof(T);
    return true;
}

}  // namespace

std::string MeasuredNetwork::to_bytes() const {
    std::string out;
    put(&out, static_cast<std::uint32_t>(hosts.size()));
    put(&out, static_cast<std::uint32_t>(rack_up.size()));
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        put(&out, static_cast<std::uint32_t>(hosts[i].size()));
        out += hosts[i];
        put(&out, host_up[i].bandwidth);
        put(&out, host_up[i].latency);
        put(&out, static_cast<std::int32_t>(rack_of[i]));
        put(&out, local_bw[i]);
        put(&out, local_lat[i]);
        put(&out, nic[i]);
    }
    for (const Link& l : rack_up) {
        put(&out, l.bandwidth);
        put(&out, l.latency);
    }
    return out;
}

bool MeasuredNetwork::from_bytes(const std::string& in, MeasuredNetwork* out) {
    std::size_t at = 0;
    std::uint32_t n = 0, racks = 0;
    if (!get(in, &at, &n) || !get(in, &at, &racks) || n > in.size() || racks > n) return false;
    MeasuredNetwork net;
    for (std::uint32_t i = 0; i < n; ++i) {
        std::uint32_t len = 0;
        Link up;
        std::int32_t rack = 0;
        double local = 0, local_lat = 0, port = 0;
        if (!get(in, &at, &len) || len > in.size() - at) return false;
        net.hosts.push_back(in.substr(at, len));
        at += len;
        if (!get(in, &at, &up.bandwidth) || !get(in, &at, &up.latency) || !get(in, &at, &rack) ||
            !get(in, &at, &local) || !get(in, &at, &local_lat) || !get(in, &at, &port) || rack < -1 ||
            rack >= static_cast<std::int32_t>(racks))
            return false;
        net.host_up.push_back(up);
        net.rack_of.push_back(rack);
        net.local_bw.push_back(local);
        net.local_lat.push_back(local_lat);
        net.nic.push_back(port);
    }
    for (std::uint32_t g = 0; g < racks; ++g) {
        Link l;
        if (!get(in, &at, &l.bandwidth) || !get(in, &at, &l.latency)) return false;
        net.rack_up.push_back(l);
    }
    if (at != in.size()) return false;
    *out = std::move(net);
    return true;
}

std::string MeasuredNetwork::describe() const {
    std::ostringstream os;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        os << "  host " << excerpt(hosts[i]);
        if (rack_of[i] >= 0) os << " (rack m" << rack_of[i] << ")";
        os << ": up-link " << human_bandwidth(host_up[i].bandwidth, true) << ", one-way "
           << human_latency(host_up[i].latency);
        if (local_bw[i] > 0) os << "; inside the host " << human_bandwidth(local_bw[i], false);
        if (local_lat[i] > 0) os << (local_bw[i] > 0 ? ", one-way " : "; inside the host one-way ")
                                 << human_latency(local_lat[i]);
        if (nic[i] > 0) os << "; port " << human_bandwidth(nic[i], true) << " (sysfs)";
        os << "\n";
    }
    for (std::size_t g = 0; g < rack_up.size(); ++g)
        os << "  rack m" << g << ": uplink " << human_bandwidth(rack_up[g].bandwidth, true) << ", one-way "
           << human_latency(rack_up[g].latency) << "\n";
    return os.str();
}

}  // namespace topoar
