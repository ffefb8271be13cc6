// topoar engine: the link probes of a communicator's first set-up when no
// file describes its network (topology/measured.hpp says what is measured
// and how the matrix becomes a tree).
//
// One pair session between the leaders of two hosts A (the higher host,
// the receiver) and B (the lower one):
//
//   A                          B
//   |--- 1 byte ------------->|      x kPings: one-way time = min RTT / 2
//   |<-- 1 byte --------------|      (the first exchange also opens the
//   |                          |       connection, so it rarely wins)
//   |--- s ------------------>|      A names the stream size (0: done)
//   |<== N x s bytes =========|      one way, B into A; A's time runs
//   ...                              until it has all of B's bytes
//        s = 4 KiB, x4 while the next stream fits 40 % of the round's
//        time (and s stays within the largest message), then the last two
//        sizes again (smaller, larger, smaller, larger: each right after a
//        stream that drained a token bucket); the rate is the slope between
//        them at the repeats' best times (fixed costs and a token bucket's
//        burst cancel), at most 1.25x the larger stream alone
//
// One way, as the fan-ins: a stream each way at once read about half the
// rate of a slow link on the emulated cluster (a 100 Mbit/s pair at 56 and 70;
// each direction's TCP acknowledgements queue behind the other
// direction's data in the shaped link), which the rack inference took for
// shared uplinks.  The reverse direction is not measured (links are taken
// as symmetric), so a pair round costs what it did: the same stream
// sizes, half the bytes.
//
// Inside a host (round 0) the streams still run each way at once (the
// leader with its second rank; the follower acknowledges), the pings are
// 11 and the one-way time is their median / 2: the software cost of a
// typical message there (MeasuredNetwork::message_cost), not the luckiest
// one's.  The rate is
// the best of the streams of at least
// 1 MiB, each alone (stream_rate says why), at their best times over
// repeats (the last two sizes in turns, at least twice, up to 16 times
// while they fit the round's growth share: other processes on the cores
// slow most streams down), and no message is sent from a buffer another
// message of the stream also uses (a copy from cache runs faster than the
// large all-reduces the rate is for).
//
// Sessions of one round run at the same time (pairs whose streams cross
// an uplink in the same direction slow each other down, which is what
// shows racks).  No barrier between pair rounds: a pair's messages only
// ever match that pair's receives.
//
// Then fan-in rounds (three hosts or more; measured.hpp says why and which
// hosts), one after the other, each after a gather of every rank's row so
// that every rank picks the same next one (next_fan_ins: one fan-in per
// rack, at once, or one alone with senders from other racks too) or stops
// alike:
//
//   R (receiver, leads)        S1 .. Sk (up to 4 hosts, R's rack first)
//   |--- its s to each ------->|      sizes as in a pair session, no pings,
//   |<== N x s from each ======|      k streams into R at once, s at most
//   ...                               max_message / k (a pair's bytes in
//                                     flight); R's time runs until it has
//                                     all; the slope of the aggregate is
//                                     the rate R's link let in
//
// R also sees when each sender's stream ended (every receive tested in
// turn).  The repeats (the last two sizes again) stream with shares in
// proportion to what each path moved in the largest stream, and their
// aggregate's slope is the rate.  With equal bytes a fan-in ends with its
// slowest path (a rack mate at 100 Mbit/s and two hosts across a 100
// Mbit/s rack uplink, 50 each: 3 x 50 = 150 into a 1 Gbit/s host); with
// the paths' shares it shows what they let in together (200).  The
// senders' own rates are not added up: a stream alone on a bucket's burst
// or ahead of the others reads more than it gets beside them (into a
// 250 Mbit/s host, 251 + 38 + 55 in one set-up), while all bytes over the
// last end never exceed what R's link let in.
//
// Costs per communicator (first set-up only, later ones reuse it): the
// budget is split over round 0 and the pair rounds as before; each fan-in
// round that runs (at most min(hosts, 4); none with two hosts, when the
// pairs pin every rate, or for a host whose only rack mate is one host)
// adds one round's share, and one allgather of every rank's row precedes
// each (and one more that finds none is needed).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "core/transport.hpp"
#include "status.hpp"
#include "topology/discovery.hpp"
#include "topology/measured.hpp"

namespace topoar {

struct ProbeOptions {
    // Round 0 and the pair rounds together aim at this, one round an equal
    // share (at least kMinRoundSeconds); a fan-in round, where one runs,
    // takes one more share.
    double total_seconds = 0.3;
    std::size_t max_message = std::size_t(1) << 20;  // largest stream message
    int stream_messages = 8;                         // messages per stream
};
constexpr double kMinRoundSeconds = 0.002;

// TOPOAR_PROBE_DEBUG set in the environment (read once per process):
// every pair's stream times and online adaptation's windows go to stderr.
bool probe_debug();

// A session's rate from its streams' best times: bytes[i] moved (each way)
// in best[i] seconds, sizes ascending; rtt the pings' round trip.
//   slope (between hosts): the slope between the last two sizes, which
//     cancels what every stream pays alike (the round trip, the
//     rendezvous, a token bucket's burst), at most kSlopeCap times the
//     last size alone; the last size alone where that slope is not
//     positive.  (A smaller stream slowed down by another pair of its
//     round that crossed the same link turns the difference of two
//     times into any rate: a pair with a 100 Mbit/s host read 261, its
//     128K stream 32 ms, its 512K one 44.)
//   otherwise (inside a host): the best of bytes / (time - rtt) over the
//     streams of at least min_bytes (the last one if none is that large).
//     A copy of MiB takes a millisecond and fixed costs are microseconds,
//     so a slope cancels nothing there, while the difference of two short
//     times turns one delayed smaller stream into any rate: the emulated
//     cluster's set-up printed 648.1 GB/s inside one host and 5.01 GB/s
//     inside the other (same hardware).  A best time only errs upwards
//     (interference slows a stream down), so this rate never exceeds what
//     the copy path did; streams below min_bytes are left out because
//     they run from the cache (faster than the large calls that this
//     rate is for).
// 0 when nothing was timed.
constexpr double kSlopeCap = 1.25;
double stream_rate(const std::vector<double>& bytes, const std::vector<double>& best, double rtt, bool slope,
                   double min_bytes = 0);

// A fan-in's shares for its repeats (the fan-in diagram above says why),
// from the stream that just ran: each sender's in proportion to what its
// path moved (sent[p] bytes over its stream's end, ends[p] seconds),
// relative to the largest, at least kMinShare.  Empty (keep the shares)
// when an end is missing or no share moves by more than kShareMoves from
// sent's own proportions (paths about as fast as their shares said: on
// three hosts of 1000/400/400 Mbit/s the fan-in into the 1000 one moved
// 0.95 : 1).
constexpr double kMinShare = 1.0 / 16;
constexpr double kShareMoves = 1.25;
std::vector<double> repeat_shares(const std::vector<double>& sent, const std::vector<double>& ends);

// What one rank contributes to the gathered matrix: probe_row_size(hosts)
// doubles.  A host leader's row holds the pairs it led (the streams from
// lower hosts into it), its host's inside
// rate and one-way time, and the fan-in into its host; everyone else's is
// zeros.  row[0] is nonzero when this
// rank's probes failed.
std::size_t probe_row_size(int hosts);

// Every rank gives `bytes` at mine; all receives ranks x bytes, by rank.
using ProbeGather = std::function<Status(const void* mine, std::size_t bytes, void* all)>;

// This rank's part of the probes.  host_ranks: the ranks of each host,
// ascending, hosts in probe order (a host's leader is its first rank);
// every rank of the communicator is on one of them.  Every rank calls it
// and calls gather alike: once between round 0 (inside hosts) and the
// rounds between hosts, which would otherwise share the cores with round
// 0's streams, and once before each fan-in round (rows so far).  Fills
// *row (probe_row_size doubles).
Status run_probe(Transport& transport, int my_rank, const std::vector<HostRanks>& host_ranks,
                 const ProbeOptions& opt, const ProbeGather& gather, std::vector<double>* row);

// Every rank's row (rows[r * probe_row_size(hosts) ...]) into the matrix;
// false when some rank's probes failed (row[0]).
bool combine_probe_rows(const std::vector<double>& rows, int ranks, int hosts, ProbeMatrix* out);

}  // namespace topoar
