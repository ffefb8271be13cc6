// topoar engine: the network as measured between hosts, and what the
// measurements say about it (issue: zero-configuration discovery).
//
// With no topology file, rack file or Slurm address, topoar measures the
// links of a communicator's hosts at set-up (topology/probe.hpp runs the
// probes).  One leader per host streams messages to another host's leader,
// one way (the lower host into the higher), all pairs of a round at once,
// hosts paired round-robin:
//
//   round 0:  each leader <-> a second rank of its own host (inside a host)
//   round 1:  h0-h3  h1-h2          (circle method: H-1 rounds for even H,
//   round 2:  h0-h2  h3-h1           H rounds with one host idle for odd H,
//   round 3:  h0-h1  h2-h3           every pair exactly once)
//
// What a pair measures is the slowest link on its path, shared with the
// other pairs of its round that cross it in the same direction: through
// one switch, pair (i, j)
// reaches min(b_i, b_j), so the pairs alone show every host's rate except
// the fastest one's, which they only bound from below (by the second
// fastest).  Fan-in rounds follow (probe.hpp) for the hosts whose rate the
// pairs leave open, one host per rack and round (host_bounds,
// next_fan_ins):
//
//   fan-in into R:  S1 ==>  R  <== S3     several hosts of R's rack stream
//                           ^^            into R at once:
//                           S2            aggregate = min(b_R, sum of b_S)
//
// infer_network() turns the matrix into a tree:
//   - a host's up-link is the best rate any of its pairs reached, or what
//     a fan-in into it reached if that is more (a slow host is slow with
//     every partner);
//   - racks are the shared bottlenecks that explain the pair rounds best
//     (infer_racks): pairs of one round that cross one rack uplink share
//     it, pairs inside a rack never slow each other down, so each
//     candidate partition predicts every pair's rate in its round (max-min
//     sharing of the host links and of each uplink direction), and the
//     one with the least error wins if it explains clearly more than no
//     racks.  The rack's uplink is what the streams crossing it in one
//     direction moved at once in a round, averaged over the rounds and
//     directions where some crossed.  Streams run from the lower host to
//     the higher, so with racks contiguous in host order every crossing
//     stream of a round leaves the lower rack and they all share; with
//     racks interleaved some cross the other way and share nothing, and
//     those rounds show only what the uplink holds back alone;
//   - link classes: host up-links within kSameLinkFactor of a faster
//     host's are taken as that host's rate (the fastest of the class):
//     probes on busy cores err by up to ~1.4x, always downwards, and a
//     host measured 30 % slow must not turn an even network into an
//     uneven one (bandwidth-weighted shares, another algorithm: measured
//     1.4-1.5x slower calls on 1,2,2 ranks at 1 Gbit/s);
//   - latencies: a pair's one-way time is split over the links it crosses;
//   - the rate inside a host is kept only when it beats the host's network
//     port (anything slower was disturbed by other processes on the cores).
// Everything is a pure function of the matrix, so every rank, given the
// same gathered matrix, builds the same tree.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

// Round-robin pairing of `hosts` hosts (circle method): every pair exactly
// once, each host in at most one pair per round.  Pairs are (low, high):
// low streams into high.
std::vector<std::vector<std::pair<int, int>>> probe_schedule(int hosts);

// Below this fraction of both hosts' up-links, a pair is held back by
// something between them (a rack uplink), not by either host's own link
// (the pairs' racks, one candidate of infer_racks).
constexpr double kRackFactor = 0.6;

// Racks by what explains the pair rounds (infer_racks).  A pair's rate
// within kFitTolerance of what a candidate predicts costs nothing, beyond
// it the log of the excess; racks are adopted only when they cut the error
// of no racks by kRackGain at least and to half of it at most.  With at
// most kExhaustiveRackHosts hosts every partition is a candidate.
constexpr double kFitTolerance = 1.3;
constexpr double kRackGain = 0.6;
constexpr int kExhaustiveRackHosts = 8;


// Host up-links measured within this factor of a faster one are one link
// class, at the class's fastest rate (snap_link_classes).  Rates that truly
// differ by less (a 300 Mbit/s host beside a 400 Mbit/s one) are then
// taken as equal: weighted shares lose at most this factor there, where a
// wrong class cost 1.4-1.5x on equal links.
constexpr double kSameLinkFactor = 1.5;

// Classes from the fastest down: a rate at or above the current class's
// top / kSameLinkFactor joins it and takes its top; otherwise it starts a
// class.  Zeros (unmeasured) stay zero.
void snap_link_classes(std::vector<double>* rates);

struct ProbeMatrix {
    explicit ProbeMatrix(int n = 0);
    int hosts = 0;
    // Per ordered pair [i * hosts + j], symmetric: the rate the one-way
    // stream between the two reached (bytes/s; from the lower host into
    // the higher, probe_schedule) and the one-way time of a 1-byte message
    // (seconds, software included).  <= 0: not measured.
    std::vector<double> bw, lat;
    // Per host: the rate between two of its ranks and the one-way time of
    // a 1-byte message between them (<= 0: one rank).
    std::vector<double> local_bw, local_lat;
    // Per host: the aggregate rate a fan-in into it reached (<= 0: none
    // ran), the sum of its senders' bounds when it ran (host_bounds), how
    // many racks the matrix showed then (next_fan_ins; 1: none), and 1
    // where it came across the racks (FanIn::across).
    std::vector<double> fan_in, fan_in_from, fan_in_racks, fan_in_across;

    double bw_at(int i, int j) const { return bw[static_cast<std::size_t>(i * hosts + j)]; }
    double lat_at(int i, int j) const { return lat[static_cast<std::size_t>(i * hosts + j)]; }
    bool measured(int i, int j) const { return i != j && bw_at(i, j) > 0 && lat_at(i, j) > 0; }
    void set(int i, int j, double bandwidth, double latency);
};

// Beyond this factor two rates differ; within it they are one rate
// measured twice (what a probe on shared, busy cores tells apart).
constexpr double kPinMargin = 1.1;
// How far below what its senders feed a fan-in may stay and still not pin
// its receiver (host_bounds; infer_network then takes the receiver at the
// feed): kPinMargin inside a rack, where the feed is the senders' own
// links as their pairs showed them (probes err downwards only), and
// kSameLinkFactor across racks, where it includes what a rack uplink
// carried in a pair round, which reads high when the round's pairs do not
// stream at the same moments (100 Mbit/s uplinks read 92-150 on the
// cluster).
double fan_in_tolerance(const ProbeMatrix& m, int host);
// At most this many hosts stream into one host in a fan-in, and at most
// this many fan-in rounds run (hosts still open then stay lower bounds).
constexpr int kMaxFanInSenders = 4;
constexpr int kMaxFanIns = 4;
// A fan-in across racks must be able to show this much more than the
// receiver's bound (a rack of two 1 Gbit/s hosts under a 200 Mbit/s uplink
// could show 1.2x: not worth a round).
constexpr double kCrossFanInMargin = 1.25;
// ... and what the other racks can add through the receiver's rack uplink
// must be at least this share of its bound (on s2, 1 Gbit/s hosts under a
// 200 Mbit/s uplink, measured at 592 and 196 Mbit/s in one run, a host
// measured low beside its mate otherwise got a fan-in: set-up 835-1042 ms
// instead of main's 516-590).  Racks 1000/100 | 250/1000 under 100: the
// 1000 Mbit/s host beside the 100 one (bound 100-143) still gets its own.
constexpr double kCrossFanInShare = 0.4;

// What the matrix proves about every host's up-link b_i so far.
//   rate[i]: a lower bound, the best of its pairs and of a fan-in into it;
//   exact[i]: the bound is b_i itself, because
//     - it is the slowest (its rate the least: a faster host's pairs can
//       all have been held back by a rack uplink they shared with other
//       pairs of their rounds), at least two
//       partners of its rack are known faster than rate[i] by more than
//       kPinMargin, and its pairs with every one of them reached rate[i]
//       (within kPinMargin): i's link held them back (one such pair alone
//       could be a disturbed pair of two fast hosts), or
//     - a fan-in into it reached rate[i] with senders whose bounds add up
//       to more than kPinMargin times that: i's link held it back.
//   A host whose partners are all at most as fast as it (the fastest, and
//   every host tied with the second fastest: all hosts when links are
//   equal) stays a lower bound until a fan-in settles it.
// What the streams that crossed group g's uplink in one direction moved
// together in a pair round (it carried that at once): the most over the
// rounds and both directions, or (mean) the mean over the rounds and
// directions where some crossed.  0 when none crossed.
double crossing_rate(const ProbeMatrix& m, const std::vector<int>& group, int g, bool mean);

// How badly the pair rounds' rates fit a network of host up-links `up`
// and the racks `group` (all 0: no racks): every round's measured pairs
// as flows sharing the links fairly (core/max_min.hpp; a rack's uplink one
// link per direction, each at crossing_rate's most); per pair
// max(0, |log(measured / predicted)| - log(kFitTolerance)), summed.
double rack_fit_error(const ProbeMatrix& m, const std::vector<double>& up, const std::vector<int>& group);

// The racks (per host, numbered in order of first member; *num_groups of
// them, 1: no racks) that explain the pair rounds best, given the hosts'
// up-links `up` (pairs and fan-ins, as known).  Pairs that cross one
// uplink in one direction in one round share it, pairs inside a rack never slow each other
// down, so a host goes where its pairs' rates say it shares an uplink,
// also when its own link is no faster than the uplink (racks 2+1 | 1+2 at
// 1000/100 | 250/1000 Mbit/s under 100 Mbit/s: every pair of a slow host
// reaches its own rate alone, but two pairs leaving a rack in one round
// get half the uplink each).  Candidates: the pairs' racks (kRackFactor)
// (unless a fan-in into a host it puts alone in a rack reached more than
// kPinMargin times what that rack's uplink carried: that refutes it) and,
// with at most kExhaustiveRackHosts hosts, every partition into racks of
// two hosts or more (to the pairs a rack of one host is the same network
// as a slower host link).  None with fewer than four hosts.
// (A host's rate counts at most as the fastest pair's: a fan-in can reach
// more than any single stream between two hosts does.)
std::vector<int> infer_racks(const ProbeMatrix& m, const std::vector<double>& up, int* num_groups);

struct HostBounds {
    std::vector<double> rate;
    std::vector<bool> exact;
    std::vector<int> group;  // infer_racks with these rates (one group: no racks)
};
HostBounds host_bounds(const ProbeMatrix& m);

// The next fan-in round the matrix asks for: per rack (the pair matrix's
// groups; fan-ins in different racks share no link, so they run at once)
// its open host (not exact, no fan-in yet) of the highest bound (then the
// lowest index) whose rack holds senders that could show more than its
// bound: up to kMaxFanInSenders of its rack's other hosts, highest bounds
// first, whose bounds add up to more than kPinMargin times its own.
// When no rack has one: a single fan-in across the racks (alone in its
// round: it crosses rack uplinks), into the open host of the highest bound
// for which its rack mates and then other racks' hosts (up to
// kMaxFanInSenders, highest bounds first) can show more than
// kCrossFanInMargin times its bound: its mates' sum plus, from each other
// rack, at most what that rack's uplink carried in a pair round, and all of
// that at most what its own rack's uplink carried (the least the streams
// crossing it in one direction moved together in a round, and at least kCrossFanInShare of the
// bound; senders_rate is that sum).  This covers a host whose only rack mate is
// slower (racks of two).  Empty when no host qualifies (two hosts, every
// host exact).  Senders ascending, fan-ins by receiver.
//
// Across racks the senders stream bytes in proportion to `shares`
// (fan_in_fractions; inside a rack equal bytes, as the pairs' racks are
// not known yet there and a share that overrates a path costs more than
// equal bytes):
// what each sender's path can feed the receiver with while the others
// stream too (max-min over the senders' up-links at their bounds and,
// across racks, the uplink leaving a sender's rack and the one entering
// the receiver's; the receiver's link, the one measured, unlimited).  The
// aggregate is the bytes over the time the last stream ends, so with equal
// bytes it could show at most k times the slowest path, not the paths'
// sum: into the 1000 Mbit/s host of racks 1000/100 | 250/1000 under
// 100 Mbit/s, from its 100 Mbit/s mate and two hosts across the uplink
// (50 each), 3 x 50 = 150 instead of 200 (measured 142-143 in 5 of 6
// jobs), which the model took for the host's link.
struct FanIn {
    int receiver = -1;
    std::vector<int> senders;
    double senders_rate = 0;       // the sum of their bounds
    std::vector<double> shares;    // per sender (senders' order): its path's rate, as above
    bool across = false;           // across the racks (shares only then: see above)
    int racks = 1;                 // how many racks the matrix showed (HostBounds::group)
};
std::vector<FanIn> next_fan_ins(const ProbeMatrix& m);

// Per sender of f: the fraction of the leader's stream size it sends,
// shares[s] / the largest share, in (0, 1] (1 for every sender where
// shares are missing or not positive).
std::vector<double> fan_in_fractions(const FanIn& f);

struct MeasuredNetwork {
    std::vector<std::string> hosts;  // host names, in probe order
    // Per host: its up-link.  The latency is the host's share of the
    // measured one-way time (software included: see model_link()).
    std::vector<Link> host_up;
    std::vector<int> rack_of;    // per host: its rack, or -1 when there are no racks
    std::vector<Link> rack_up;   // per rack: its uplink
    std::vector<double> local_bw;  // per host: between two of its ranks (<= 0: unknown)
    std::vector<double> local_lat; // per host: one-way time of 1 byte between two of its ranks (<= 0: unknown)
    std::vector<double> nic;       // per host: its fastest port in sysfs, the prior (0: unknown)

    // The software cost of one message (MPI stack, matching, completion),
    // as measured: the cost model's per-message `overhead` in place of
    // coll_topoar_model_overhead (which wins where the user sets it).
    // The one-way time of a 1-byte message between two ranks of one host
    // (the median of its pings) is that cost with no network under it:
    // the median over the hosts
    // that measured one (the lower middle of an even count; one host
    // disturbed by other processes does not move it).  With no host of
    // two ranks: the smallest host up-link latency, i.e. half the fastest
    // pair's one-way time (the software at both ends is at most that).
    // What a message between hosts costs beyond it stays in the host
    // links' latencies (model_link), so the model's time of a 1-byte
    // message is the measured one on both kinds of path.  0: nothing
    // measured.  A pure function of the fields above: every rank derives
    // the same value.
    double message_cost() const;

    int num_racks() const { return static_cast<int>(rack_up.size()); }
    // A fingerprint of everything above (equal networks, equal digests;
    // never 0).
    std::uint64_t digest() const;
    // The same network over a subset of its hosts (names in the caller's
    // order); racks left with no host are dropped, and a single remaining
    // rack is no rack level.  False if a name is not among hosts.
    bool restrict_to(const std::vector<std::string>& names, MeasuredNetwork* out) const;
    // One line per host and rack, for verbose output.
    std::string describe() const;
    // As bytes for another rank of the same job (same architecture) and
    // back; from_bytes refuses anything malformed.
    std::string to_bytes() const;
    static bool from_bytes(const std::string& bytes, MeasuredNetwork* out);
};

// The network the matrix shows (see the file comment); names: the hosts'
// names, matrix order.  nic (per host, or empty): what each host's fastest
// port says (bytes/s, 0 unknown); a measured host link above it is capped
// there (a pair can look faster than the port, e.g. when its streams
// overlapped a token bucket's burst).
Status infer_network(const ProbeMatrix& m, const std::vector<std::string>& names, MeasuredNetwork* out,
                     const std::vector<double>& nic = {});

// A measured link as the cost model wants it: the model adds its own
// software cost per message (`overhead`: MeasuredNetwork::message_cost(),
// or coll_topoar_model_overhead where the user sets it) to the links'
// latencies, and the measured times include that cost, so it is taken out
// again (never below `floor`).  `share` is the fraction of a
// message's software cost this link stands for (0.5: one of the two ends).
Link model_link(const Link& measured, double overhead, double share, double floor = 1e-6);

}  // namespace topoar
