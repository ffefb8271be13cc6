// run_probe (probe.hpp): pair sessions of timed pings and streams.
#include "topology/probe.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace topoar {

namespace {

constexpr int kPings = 5;
// Inside a host: more pings, and their median (MeasuredNetwork::message_cost
// is a typical message's cost, not the luckiest one's).
constexpr int kInsidePings = 11;
constexpr std::size_t kFirstMessage = 4096;
// Inside a host only streams of at least this many bytes count (stream_rate).
constexpr double kMinInsideBytes = 1 << 20;

// Row layout: [0] failed, [1] host index + 1 of a leader (0: not one),
// [2] the inside rate of its host, [3] the rate a fan-in into its host
// reached, [4] the sum of that fan-in's senders' bounds, [5] the one-way
// time of a 1-byte message inside its host, [6] how many racks the
// matrix showed when that fan-in ran (1: none), [7] 1 if it came across
// the racks, then per host j below its own:
// the rate of j's one-way stream into it and the one-way time of a 1-byte
// message between them.
constexpr std::size_t kRowHead = 8;

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Waits for a request while driving progress.
Status wait_done(Transport& t, Transport::Request* req) {
    for (;;) {
        bool done = false;
        TOPOAR_TRY(t.test(req, &done));
        if (done) return Status::ok();
        t.progress();
    }
}

struct PairResult {
    double bandwidth = 0, latency = 0;
};

// A pair session (one peer, pings first, streams both ways) or a fan-in
// (the receiver leads, one follower session per sender, no pings, streams
// into the receiver only).  The leader names the stream sizes and keeps
// the time; its peers follow.
class Session {
public:
    // pair: pings first; otherwise a fan-in's part.  Streams run one way,
    // into the leader (between hosts a stream each way at once read about
    // half a slow link's rate: each direction's acknowledgements waited
    // behind the other's data in the shaped queue), except inside a host
    // (a pair of one host, shared memory, not a network), where they run
    // both ways at once.
    // A fan-in's leader's `fractions` (fan_in_fractions; per sender): of
    // the size it streams, the share each sender streams, so that every
    // path is busy until the end (empty: all the whole size); its repeats
    // take shares from what the paths moved (repeat_shares).  The leader
    // names each follower its own size.
    Session(Transport& t, std::vector<int> peers, bool leads, bool pair, const ProbeOptions& opt, double target,
            bool inside = false, std::vector<double> fractions = {})
        : t_(t), peers_(std::move(peers)), leads_(leads), ping_(pair), duplex_(pair && inside), inside_(inside),
          opt_(opt), target_(target), fractions_(std::move(fractions)) {}

    Status run(PairResult* out) {
        if (ping_) TOPOAR_TRY(pings(&out->latency));
        const std::size_t n = static_cast<std::size_t>(std::max(4, opt_.stream_messages));
        const std::size_t k = peers_.size();
        // A fan-in has as many bytes in flight as a pair: each of its k
        // streams uses messages of at most max_message / k.
        const std::size_t cap = std::max(kFirstMessage, opt_.max_message / k);
        // Every message of a stream has its own bytes on both sides: one
        // buffer sent n times stays in the cache, and a copy inside a host
        // then runs at cache speed, which no large all-reduce sees.
        if (duplex_ || !leads_) send_.assign(n * cap, 0x5a);
        if (duplex_ || leads_) recv_.assign(k * n * cap, 0);
        if (!leads_) {
            // A follower: streams the size the leader names until it says
            // 0 (a pair's acknowledging each stream once all of the
            // leader's bytes are here).
            for (;;) {
                double s = 0;
                TOPOAR_TRY(recv(peers_[0], &s, sizeof s));
                if (s <= 0) return Status::ok();
                if (s > static_cast<double>(cap)) return Status::internal("probe: stream size out of range");
                TOPOAR_TRY(stream(static_cast<std::size_t>(s), n, /*ack=*/true, nullptr));
            }
        }
        const double rtt = 2 * out->latency;
        // Grow the streams 4x while the next one still fits kGrowShare of
        // the round; then stream the last two sizes once more.  The rate is
        // the slope between the two sizes, each at its best time:
        // interference (other processes on the cores) only ever slows a
        // stream down, and the slope cancels what every stream pays alike:
        // the round trip, the rendezvous, and a token bucket's burst (a
        // stream within the burst goes at line rate, the next one pays for
        // it).
        std::vector<std::size_t> sizes;
        std::vector<double> best;
        // A fan-in's leader also sees when each sender's stream ended
        // (repeat_shares).
        const bool fan_in = k > 1 && !inside_;
        std::vector<double> ends;
        std::vector<double>* per_peer = fan_in ? &ends : nullptr;
        std::size_t s = std::min(kFirstMessage, cap);
        for (;;) {
            double elapsed = 0;
            TOPOAR_TRY(timed_stream(s, n, &elapsed, per_peer));
            sizes.push_back(s);
            best.push_back(elapsed);
            // Below kMinStream bytes a stream is mostly fixed costs and one
            // late wake-up of a process stops growth too early.
            if (4 * s > cap || (n * stream_bytes(s) >= kMinStream && 4 * elapsed > kGrowShare * target_)) break;
            s *= 4;
        }
        // Repeats: smaller, larger, smaller, larger, and only they give
        // the rate.  Each starts right after a stream that drained a token
        // bucket (the growth's largest, then each other), so both sizes
        // start with it as empty.  The growth's streams are not
        // comparable: the first ones run on the bucket's burst (it filled
        // during the pings), and the largest can still start with part of
        // it (on 400 Mbit/s hosts with a 250 KB bucket the growth's 512K
        // stream took 8.6 ms, the repeats' 10.5 ms, as the rate says: the
        // pair read 534 Mbit/s, and those hosts joined a 1 Gbit/s host's
        // class).  Inside a host only the largest size counts
        // (stream_rate): it runs twice more.
        const std::size_t last = sizes.size() - 1;
        if (last > 0 && !inside_) {
            // A fan-in's repeats stream with shares from the largest
            // stream's ends (repeat_shares).
            if (fan_in) adapt_shares(sizes[last], n, ends);
            double small = 0, big = 0, small2 = 0, big2 = 0;
            TOPOAR_TRY(timed_stream(sizes[last - 1], n, &small));
            TOPOAR_TRY(timed_stream(sizes[last], n, &big));
            TOPOAR_TRY(timed_stream(sizes[last - 1], n, &small2));
            TOPOAR_TRY(timed_stream(sizes[last], n, &big2));
            sizes = {sizes[last - 1], sizes[last]};
            best = {std::min(small, small2), std::min(big, big2)};
        } else {
            // Inside a host: the last two sizes again, in turns, at least
            // twice and while the repeats fit kGrowShare of the round
            // (milliseconds each; at most kInsideRepeats turns): on cores
            // shared with other processes most streams are slowed down,
            // and only a clean one shows the copy path (on the emulated
            // cluster the best 8 MiB streams of two hosts' turns took 4.1
            // and 7.8 ms, their 2 MiB ones 1.03 and 1.57 ms).
            const std::size_t from = inside_ && last > 0 ? last - 1 : last;
            double spent = 0;
            for (int turn = 0; turn < (inside_ ? kInsideRepeats : 1); ++turn) {
                if (turn >= 2 && spent > kGrowShare * target_) break;
                for (std::size_t i = from; i <= last; ++i) {
                    double t = 0;
                    TOPOAR_TRY(timed_stream(sizes[i], n, &t));
                    best[i] = std::min(best[i], t);
                    spent += t;
                }
            }
        }
        // Bytes into the leader (inside a host: each way): all k streams,
        // with the shares the timed streams ran with.
        std::vector<double> bytes;
        for (std::size_t z : sizes) bytes.push_back(static_cast<double>(n * stream_bytes(z)));
        const double rate = stream_rate(bytes, best, rtt, /*slope=*/!inside_, kMinInsideBytes);
        out->bandwidth = rate;
        if (probe_debug()) {
            std::fprintf(stderr, "probe %s", k > 1 ? "fan-in from" : inside_ ? "inside with" : "peer");
            for (int p : peers_) std::fprintf(stderr, " %d", p);
            if (!fractions_.empty()) {
                std::fprintf(stderr, " (shares");
                for (double x : fractions_) std::fprintf(stderr, " %.2f", x);
                std::fprintf(stderr, ")");
            }
            if (!first_fractions_.empty()) {
                std::fprintf(stderr, " (first");
                for (double x : first_fractions_) std::fprintf(stderr, " %.2f", x);
                std::fprintf(stderr, ")");
            }
            std::fprintf(stderr, " %s rtt %.1fus:", inside_ ? "median" : "best", rtt * 1e6);
            for (std::size_t i = 0; i < sizes.size(); ++i)
                std::fprintf(stderr, " %zuK:%.2fms", n * stream_bytes(sizes[i]) >> 10, best[i] * 1e3);
            std::fprintf(stderr, " -> %.1f Mbit/s\n", rate * 8e-6);
            if (!rtts_.empty()) {
                std::fprintf(stderr, "  round trips (us):");
                for (double x : rtts_) std::fprintf(stderr, " %.1f", x * 1e6);
                std::fprintf(stderr, "\n");
            }
        }
        return to_each(std::vector<double>(k, 0.0));  // size 0: stop
    }

private:
    // Growth stops when the next stream would take more than this share of
    // the round: with the two repeats a round then takes about its share.
    static constexpr double kGrowShare = 0.4;
    static constexpr std::size_t kMinStream = std::size_t(512) << 10;
    static constexpr int kInsideRepeats = 16;

    // Peer p's message size when the leader names s (a fan-in's fraction
    // of it, at least one byte); both ends compute it alike.
    std::size_t part(std::size_t s, std::size_t p) const {
        if (p >= fractions_.size()) return s;
        const double f = fractions_[p];
        if (!(f > 0) || f >= 1) return s;
        return std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(s) * f));
    }
    // The bytes of one message from every peer when the leader names s.
    std::size_t stream_bytes(std::size_t s) const {
        std::size_t sum = 0;
        for (std::size_t p = 0; p < peers_.size(); ++p) sum += part(s, p);
        return sum;
    }

    // The leader names each peer the size of its messages (a fan-in's
    // share of s; the peer streams what it is told) and times the stream.
    Status timed_stream(std::size_t s, std::size_t n, double* elapsed, std::vector<double>* per_peer = nullptr) {
        std::vector<double> size(peers_.size());
        for (std::size_t p = 0; p < size.size(); ++p) size[p] = static_cast<double>(part(s, p));
        TOPOAR_TRY(to_each(size));
        return stream(s, n, /*ack=*/false, elapsed, per_peer);
    }

    // A fan-in's shares for its repeats (repeat_shares) from the stream
    // of `s` that just ran; kept where it gives none.
    void adapt_shares(std::size_t s, std::size_t n, const std::vector<double>& ends) {
        std::vector<double> sent(peers_.size());
        for (std::size_t p = 0; p < sent.size(); ++p) sent[p] = static_cast<double>(n * part(s, p));
        std::vector<double> next = repeat_shares(sent, ends);
        if (next.empty()) return;
        first_fractions_ = fractions_.empty() ? std::vector<double>(sent.size(), 1.0) : fractions_;
        fractions_ = std::move(next);
    }

    // The leader's one double to each peer (its own), at once.
    Status to_each(const std::vector<double>& values) {
        std::vector<Transport::Request> r(peers_.size(), nullptr);
        Status st;
        std::size_t posted = 0;
        for (; posted < peers_.size() && st; ++posted)
            st = t_.isend(&values[posted], sizeof(double), peers_[posted], &r[posted]);
        for (std::size_t i = 0; i < posted; ++i) {
            if (st) st = wait_done(t_, &r[i]);
            else if (r[i]) (void)t_.cancel(&r[i]);
        }
        return st;
    }

    Status send(int peer, const void* buf, std::size_t bytes) {
        Transport::Request r = nullptr;
        TOPOAR_TRY(t_.isend(buf, bytes, peer, &r));
        return wait_done(t_, &r);
    }
    Status recv(int peer, void* buf, std::size_t bytes) {
        Transport::Request r = nullptr;
        TOPOAR_TRY(t_.irecv(buf, bytes, peer, &r));
        return wait_done(t_, &r);
    }

    // The leader's round trips of one byte; the peer echoes (pairs only).
    Status pings(double* one_way) {
        const int peer = peers_[0];
        char b = 0;
        const int count = inside_ ? kInsidePings : kPings;
        std::vector<double>& rtts = rtts_;
        rtts.clear();
        for (int k = 0; k < count; ++k) {
            if (leads_) {
                Transport::Request r = nullptr;
                double t0 = now();
                TOPOAR_TRY(t_.irecv(&b, 1, peer, &r));
                Status sent = send(peer, &b, 1);
                if (!sent) {
                    (void)t_.cancel(&r);  // nothing stays posted on `b`
                    return sent;
                }
                TOPOAR_TRY(wait_done(t_, &r));
                rtts.push_back(now() - t0);
            } else {
                TOPOAR_TRY(recv(peer, &b, 1));
                TOPOAR_TRY(send(peer, &b, 1));
            }
        }
        std::sort(rtts.begin(), rtts.end());
        // Between hosts the best (the link's latency; the first exchange
        // also opens the connection); inside a host the median.
        *one_way = rtts.empty() ? 0 : (inside_ ? rtts[rtts.size() / 2] : rtts.front()) / 2;
        return Status::ok();
    }

    // Inside a host: n messages of s bytes each way at once.  The follower
    // (ack) then tells the leader that all of its bytes arrived; the
    // leader's *elapsed runs from its start until it has the peer's bytes
    // and acknowledgement: the time the slower direction took, plus about
    // one round trip.  Otherwise (a pair between hosts, a fan-in): n
    // messages of s bytes from every follower to the leader, whose
    // *elapsed runs until it has them all.  Completion times of single
    // messages mean little (a transport interleaves large messages, socket
    // buffers hold what a descheduled receiver has not read yet); the
    // whole stream's end does not lie.  With per_peer (a fan-in's leader),
    // each peer's whole stream's end is kept too, from the same start
    // (0: it did not end).
    Status stream(std::size_t s, std::size_t n, bool ack, double* elapsed, std::vector<double>* per_peer = nullptr) {
        const std::size_t k = peers_.size();
        std::vector<Transport::Request> rr(k * n, nullptr), sr(k * n, nullptr), ack_req(k, nullptr);
        std::vector<char> token(k, 0);
        Status st;
        std::size_t posted_r = 0, posted_s = 0, posted_a = 0;
        // One way, into the leader: no acknowledgement needed, and the
        // receiver's cores move half the bytes.
        const bool receives = duplex_ || leads_, sends = duplex_ || !leads_;
        const double t0 = now();
        // A follower's acknowledgement follows its data: its receive is
        // posted after theirs (messages from one peer match receives in
        // posting order).
        for (std::size_t p = 0; p < k && st && receives; ++p) {
            for (std::size_t i = 0; i < n && st; ++i, ++posted_r)
                st = t_.irecv(recv_.data() + posted_r * s, part(s, p), peers_[p], &rr[posted_r]);
            if (st && !ack && duplex_) st = t_.irecv(&token[p], 1, peers_[p], &ack_req[posted_a++]);
        }
        // Round-robin over the peers, so every stream starts at once.
        for (std::size_t i = 0; i < n && st && sends; ++i)
            for (std::size_t p = 0; p < k && st; ++p, ++posted_s)
                st = t_.isend(send_.data() + i * s, part(s, p), peers_[p], &sr[posted_s]);
        if (per_peer && receives) {
            // Every receive tested in turn, so a stream's end is seen when
            // it happens, not after the streams posted before it.
            per_peer->assign(k, 0.0);
            std::vector<std::size_t> left(k, 0);
            for (std::size_t i = 0; i < posted_r; ++i) ++left[i / n];
            std::size_t open = posted_r;
            while (st && open > 0) {
                for (std::size_t i = 0; i < posted_r && st; ++i) {
                    if (!rr[i]) continue;
                    bool done = false;
                    st = t_.test(&rr[i], &done);
                    if (!st) rr[i] = nullptr;  // a failed test ended it
                    if (!st || !done) continue;
                    rr[i] = nullptr;
                    --open;
                    if (--left[i / n] == 0) (*per_peer)[i / n] = now() - t0;
                }
                if (st && open > 0) t_.progress();
            }
        } else {
            for (std::size_t i = 0; i < posted_r && st; ++i) st = wait_done(t_, &rr[i]);
        }
        if (st && ack && duplex_) st = send(peers_[0], &token[0], 1);
        for (std::size_t p = 0; p < posted_a && st; ++p) st = wait_done(t_, &ack_req[p]);
        if (st && elapsed) *elapsed = now() - t0;
        for (std::size_t i = 0; i < posted_s && st; ++i) st = wait_done(t_, &sr[i]);
        if (!st) {
            // Nothing stays posted on buffers this object owns.
            for (std::size_t p = 0; p < posted_a; ++p)
                if (ack_req[p]) (void)t_.cancel(&ack_req[p]);
            for (std::size_t i = 0; i < posted_r; ++i)
                if (rr[i]) (void)t_.cancel(&rr[i]);
            for (std::size_t i = 0; i < posted_s; ++i)
                if (sr[i]) (void)t_.cancel(&sr[i]);
        }
        return st;
    }

    Transport& t_;
    std::vector<int> peers_;
    bool leads_, ping_, duplex_, inside_;
    const ProbeOptions& opt_;
    double target_;
    std::vector<double> fractions_;
    std::vector<double> first_fractions_;  // a fan-in's shares before adapt_shares (debug output)
    std::vector<unsigned char> send_, recv_;
    std::vector<double> rtts_;  // the pings' round trips, ascending (debug output)
};

}  // namespace

double stream_rate(const std::vector<double>& bytes, const std::vector<double>& best, double rtt, bool slope,
                   double min_bytes) {
    if (bytes.empty() || bytes.size() != best.size() || !(best.back() > 0)) return 0;
    const std::size_t last = bytes.size() - 1;
    auto alone = [&](std::size_t i) { return best[i] > 0 ? bytes[i] / std::max(best[i] - rtt, best[i] / 2) : 0.0; };
    double rate = 0;
    if (slope) {
        if (last > 0 && best[last] > best[last - 1])
            rate = (bytes[last] - bytes[last - 1]) / (best[last] - best[last - 1]);
        return rate > 0 ? std::min(rate, kSlopeCap * alone(last)) : alone(last);
    }
    for (std::size_t i = 0; i <= last; ++i)
        if (bytes[i] >= min_bytes || i == last) rate = std::max(rate, alone(i));
    return rate;
}

std::vector<double> repeat_shares(const std::vector<double>& sent, const std::vector<double>& ends) {
    const std::size_t k = sent.size();
    if (k == 0 || ends.size() != k) return {};
    std::vector<double> rate(k);
    double top = 0, sent_top = 0;
    for (std::size_t p = 0; p < k; ++p) {
        if (!(ends[p] > 0) || !(sent[p] > 0)) return {};
        rate[p] = sent[p] / ends[p];
        top = std::max(top, rate[p]);
        sent_top = std::max(sent_top, sent[p]);
    }
    std::vector<double> next(k);
    bool moves = false;
    for (std::size_t p = 0; p < k; ++p) {
        next[p] = std::max(kMinShare, rate[p] / top);
        const double ratio = next[p] / (sent[p] / sent_top);
        moves = moves || ratio > kShareMoves || ratio < 1 / kShareMoves;
    }
    if (!moves) return {};
    return next;
}

bool probe_debug() {
    static const bool on = std::getenv("TOPOAR_PROBE_DEBUG") != nullptr;
    return on;
}

std::size_t probe_row_size(int hosts) { return kRowHead + 2 * static_cast<std::size_t>(std::max(hosts, 0)); }

Status run_probe(Transport& transport, int my_rank, const std::vector<HostRanks>& host_ranks,
                 const ProbeOptions& opt, const ProbeGather& gather, std::vector<double>* row) {
    const int hosts = static_cast<int>(host_ranks.size());
    row->assign(probe_row_size(hosts), 0.0);
    int my_host = -1, my_index = -1, ranks = 0;
    for (int h = 0; h < hosts; ++h) {
        const std::vector<int>& on = host_ranks[static_cast<std::size_t>(h)].ranks;
        ranks += static_cast<int>(on.size());
        for (std::size_t i = 0; i < on.size(); ++i)
            if (on[i] == my_rank) {
                my_host = h;
                my_index = static_cast<int>(i);
            }
    }
    if (my_host < 0) return Status::internal("run_probe: rank " + std::to_string(my_rank) + " is on no host");
    const auto rounds = probe_schedule(hosts);
    // Round 0 and the pair rounds share the budget equally; a fan-in round
    // gets the same share on top, only where one runs.  (Splitting the
    // budget over the fan-in rounds too shortened the pairs' streams: on
    // the emulated racks cluster the 1 Gbit/s pairs then overlapped the
    // token bucket's burst and 2 of 5 set-ups put a host in the wrong
    // rack, against 0 of 5 with the pairs' share kept.)
    const int fan_in_rounds = hosts >= 3 ? std::min(hosts, kMaxFanIns) : 0;
    const double target = std::max(kMinRoundSeconds, opt.total_seconds / static_cast<double>(rounds.size() + 1));
    const std::vector<int>& mine = host_ranks[static_cast<std::size_t>(my_host)].ranks;
    const bool leader = my_index == 0;

    Status st;
    // Round 0: inside each host, its leader with its second rank.
    if (mine.size() > 1 && my_index <= 1) {
        PairResult r;
        st = Session(transport, {mine[static_cast<std::size_t>(1 - my_index)]}, leader, true, opt, target,
                     /*inside=*/true)
                 .run(&r);
        if (st && leader) {
            (*row)[2] = r.bandwidth;
            (*row)[5] = r.latency;
        }
    }
    // Every rank, whatever happened: no host's streams inside it share the
    // cores with the pairs between hosts.
    std::vector<char> tokens(static_cast<std::size_t>(ranks));
    const char token = 0;
    Status b = gather(&token, 1, tokens.data());
    if (st) st = b;
    // The rounds between hosts: leaders only.  Pair (i, j), i < j: i
    // streams into j (probe_schedule), whose leader leads the session and
    // keeps the result in its row.
    if (leader) {
        (*row)[1] = my_host + 1;
        for (const auto& round : rounds) {
            if (!st) break;
            for (const auto& p : round) {
                if (p.first != my_host && p.second != my_host) continue;
                const bool receives = p.second == my_host;
                const int other = receives ? p.first : p.second;
                PairResult r;
                st = Session(transport, {host_ranks[static_cast<std::size_t>(other)].ranks[0]}, receives, true, opt,
                             target)
                         .run(&r);
                if (st && receives) {
                    (*row)[kRowHead + 2 * static_cast<std::size_t>(other)] = r.bandwidth;
                    (*row)[kRowHead + 2 * static_cast<std::size_t>(other) + 1] = r.latency;
                }
            }
        }
    }
    // Fan-in rounds, one after the other: every rank gathers the rows so
    // far and reaches the same next round (one fan-in per rack, each host
    // in at most one), or none: every rank stops alike, also when some
    // rank's probes failed.
    const std::size_t len = probe_row_size(hosts);
    std::vector<double> rows(len * static_cast<std::size_t>(ranks));
    for (int f = 0; f < fan_in_rounds; ++f) {
        if (!st) (*row)[0] = 1;
        Status g = gather(row->data(), len * sizeof(double), rows.data());
        if (!g) return g;  // the collective itself failed: nothing to agree on
        ProbeMatrix m;
        if (!combine_probe_rows(rows, ranks, hosts, &m)) break;
        const std::vector<FanIn> round = next_fan_ins(m);
        if (round.empty()) break;
        if (!leader) continue;
        for (const FanIn& next : round) {
            const auto& senders = next.senders;
            PairResult r;
            if (my_host == next.receiver) {
                std::vector<int> peers;
                for (int h : senders) peers.push_back(host_ranks[static_cast<std::size_t>(h)].ranks[0]);
                st = Session(transport, peers, true, false, opt, target, false, fan_in_fractions(next)).run(&r);
                (*row)[3] = st ? r.bandwidth : 0;
                (*row)[4] = next.senders_rate;
                (*row)[6] = next.racks;
                (*row)[7] = next.across ? 1 : 0;
                if (probe_debug())
                    std::fprintf(stderr, "probe fan-in into %d: senders can feed %.1f Mbit/s\n", next.receiver,
                                 next.senders_rate * 8e-6);
            } else if (std::find(senders.begin(), senders.end(), my_host) != senders.end()) {
                // (A sender streams the sizes the receiver names: its share.)
                st = Session(transport, {host_ranks[static_cast<std::size_t>(next.receiver)].ranks[0]}, false, false,
                             opt, target)
                         .run(&r);
            }
        }
    }
    if (!st) (*row)[0] = 1;
    return st;
}

bool combine_probe_rows(const std::vector<double>& rows, int ranks, int hosts, ProbeMatrix* out) {
    ProbeMatrix m(hosts);
    const std::size_t len = probe_row_size(hosts);
    bool ok = rows.size() >= len * static_cast<std::size_t>(ranks);
    for (int r = 0; r < ranks && ok; ++r) {
        const double* row = rows.data() + len * static_cast<std::size_t>(r);
        if (row[0] != 0) ok = false;
        const int h = static_cast<int>(row[1]) - 1;
        if (h < 0 || h >= hosts) continue;
        m.local_bw[static_cast<std::size_t>(h)] = row[2];
        m.fan_in[static_cast<std::size_t>(h)] = row[3];
        m.fan_in_from[static_cast<std::size_t>(h)] = row[4];
        m.fan_in_racks[static_cast<std::size_t>(h)] = row[6];
        m.fan_in_across[static_cast<std::size_t>(h)] = row[7];
        m.local_lat[static_cast<std::size_t>(h)] = row[5];
        for (int j = 0; j < h; ++j)
            m.set(j, h, row[kRowHead + 2 * static_cast<std::size_t>(j)], row[kRowHead + 2 * static_cast<std::size_t>(j) + 1]);
    }
    *out = std::move(m);
    return ok;
}

}  // namespace topoar
