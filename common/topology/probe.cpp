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
constexpr std::size_t kFirstMessage = 4096;

// Row layout: [0] failed, [1] host index + 1 of a leader (0: not one),
// [2] the inside rate of its host, then per host j: bandwidth, latency.
constexpr std::size_t kRowHead = 3;

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

class Session {
public:
    Session(Transport& t, int peer, bool leads, const ProbeOptions& opt, double target)
        : t_(t), peer_(peer), leads_(leads), opt_(opt), target_(target) {}

    Status run(PairResult* out) {
        TOPOAR_TRY(pings(&out->latency));
        const std::size_t n = static_cast<std::size_t>(std::max(4, opt_.stream_messages));
        send_.assign(std::max(kFirstMessage, opt_.max_message), 0x5a);
        recv_.resize(n * send_.size());
        if (!leads_) {
            // B: streams the size A names until A says 0, acknowledging
            // each stream once all of A's bytes are here.
            for (;;) {
                double s = 0;
                TOPOAR_TRY(recv(&s, sizeof s));
                if (s <= 0) return Status::ok();
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
        std::size_t s = std::min(kFirstMessage, opt_.max_message);
        for (;;) {
            double elapsed = 0;
            TOPOAR_TRY(timed_stream(s, n, &elapsed));
            sizes.push_back(s);
            best.push_back(elapsed);
            // Below kMinStream bytes a stream is mostly fixed costs and one
            // late wake-up of a process stops growth too early.
            if (4 * s > opt_.max_message || (n * s >= kMinStream && 4 * elapsed > kGrowShare * target_)) break;
            s *= 4;
        }
        // Repeats: smaller, larger, smaller.  Each then starts right after
        // a stream at least as large, so a token bucket is drained alike
        // for both sizes (on the way up the smaller one still had its
        // burst: not comparable, so its first time is dropped).
        const std::size_t k = sizes.size() - 1;
        if (k > 0) {
            double small = 0, big = 0, small2 = 0;
            TOPOAR_TRY(timed_stream(sizes[k - 1], n, &small));
            TOPOAR_TRY(timed_stream(sizes[k], n, &big));
            TOPOAR_TRY(timed_stream(sizes[k - 1], n, &small2));
            best[k - 1] = std::min(small, small2);
            best[k] = std::min(best[k], big);
        } else {
            double again = 0;
            TOPOAR_TRY(timed_stream(sizes[k], n, &again));
            best[k] = std::min(best[k], again);
        }
        const double big = static_cast<double>(n * sizes[k]);
        double rate = 0;
        if (k > 0 && best[k] > best[k - 1])
            rate = (big - static_cast<double>(n * sizes[k - 1])) / (best[k] - best[k - 1]);
        if (rate <= 0) rate = big / std::max(best[k] - rtt, best[k] / 2);
        out->bandwidth = rate;
        if (probe_debug()) {
            std::fprintf(stderr, "probe peer %d rtt %.1fus:", peer_, rtt * 1e6);
            for (std::size_t i = 0; i < sizes.size(); ++i) std::fprintf(stderr, " %zuK:%.2fms", n * sizes[i] >> 10, best[i] * 1e3);
            std::fprintf(stderr, " -> %.1f Mbit/s\n", rate * 8e-6);
        }
        double stop = 0;
        return send(&stop, sizeof stop);
    }

private:
    // Growth stops when the next stream would take more than this share of
    // the round: with the two repeats a round then takes about its share.
    static constexpr double kGrowShare = 0.4;
    static constexpr std::size_t kMinStream = std::size_t(512) << 10;

    Status timed_stream(std::size_t s, std::size_t n, double* elapsed) {
        double size = static_cast<double>(s);
        TOPOAR_TRY(send(&size, sizeof size));
        return stream(s, n, /*ack=*/false, elapsed);
    }

    Status send(const void* buf, std::size_t bytes) {
        Transport::Request r = nullptr;
        TOPOAR_TRY(t_.isend(buf, bytes, peer_, &r));
        return wait_done(t_, &r);
    }
    Status recv(void* buf, std::size_t bytes) {
        Transport::Request r = nullptr;
        TOPOAR_TRY(t_.irecv(buf, bytes, peer_, &r));
        return wait_done(t_, &r);
    }

    // A's round trips of one byte; B echoes.
    Status pings(double* one_way) {
        char b = 0;
        double best = 0;
        for (int k = 0; k < kPings; ++k) {
            if (leads_) {
                Transport::Request r = nullptr;
                double t0 = now();
                TOPOAR_TRY(t_.irecv(&b, 1, peer_, &r));
                TOPOAR_TRY(send(&b, 1));
                TOPOAR_TRY(wait_done(t_, &r));
                double rtt = now() - t0;
                best = k == 0 ? rtt : std::min(best, rtt);
            } else {
                TOPOAR_TRY(recv(&b, 1));
                TOPOAR_TRY(send(&b, 1));
            }
        }
        *one_way = best / 2;
        return Status::ok();
    }

    // n messages of s bytes each way at once.  B (ack) then tells A that
    // all of A's bytes arrived; A's *elapsed runs from its start until it
    // has B's bytes and B's acknowledgement: the time both directions took,
    // plus about one round trip.  Completion times of single messages mean
    // little (a transport interleaves large messages, socket buffers hold
    // what a descheduled receiver has not read yet); the whole stream's end
    // does not lie.
    Status stream(std::size_t s, std::size_t n, bool ack, double* elapsed) {
        std::vector<Transport::Request> rr(n, nullptr), sr(n, nullptr);
        Status st;
        std::size_t posted_r = 0, posted_s = 0;
        char token = 0;
        Transport::Request ack_req = nullptr;
        const double t0 = now();
        // B's acknowledgement follows its data: its receive is posted after
        // theirs (messages from one peer match receives in posting order).
        for (; posted_r < n && st; ++posted_r) st = t_.irecv(recv_.data() + posted_r * s, s, peer_, &rr[posted_r]);
        if (st && !ack) st = t_.irecv(&token, 1, peer_, &ack_req);
        for (; posted_s < n && st; ++posted_s) st = t_.isend(send_.data(), s, peer_, &sr[posted_s]);
        for (std::size_t k = 0; k < n && st; ++k) st = wait_done(t_, &rr[k]);
        if (st && ack) st = send(&token, 1);
        if (st && !ack) st = wait_done(t_, &ack_req);
        if (st && elapsed) *elapsed = now() - t0;
        for (std::size_t k = 0; k < posted_s && st; ++k) st = wait_done(t_, &sr[k]);
        if (!st) {
            // Nothing stays posted on buffers this object owns.
            if (ack_req) (void)t_.cancel(&ack_req);
            for (std::size_t k = 0; k < posted_r; ++k)
                if (rr[k]) (void)t_.cancel(&rr[k]);
            for (std::size_t k = 0; k < posted_s; ++k)
                if (sr[k]) (void)t_.cancel(&sr[k]);
        }
        return st;
    }

    Transport& t_;
    int peer_;
    bool leads_;
    const ProbeOptions& opt_;
    double target_;
    std::vector<unsigned char> send_, recv_;
};

}  // namespace

bool probe_debug() {
    static const bool on = std::getenv("TOPOAR_PROBE_DEBUG") != nullptr;
    return on;
}

std::size_t probe_row_size(int hosts) { return kRowHead + 2 * static_cast<std::size_t>(std::max(hosts, 0)); }

Status run_probe(Transport& transport, int my_rank, const std::vector<HostRanks>& host_ranks,
                 const ProbeOptions& opt, const std::function<Status()>& barrier, std::vector<double>* row) {
    const int hosts = static_cast<int>(host_ranks.size());
    row->assign(probe_row_size(hosts), 0.0);
    int my_host = -1, my_index = -1;
    for (int h = 0; h < hosts; ++h)
        for (std::size_t i = 0; i < host_ranks[static_cast<std::size_t>(h)].ranks.size(); ++i)
            if (host_ranks[static_cast<std::size_t>(h)].ranks[i] == my_rank) {
                my_host = h;
                my_index = static_cast<int>(i);
            }
    if (my_host < 0) return Status::internal("run_probe: rank " + std::to_string(my_rank) + " is on no host");
    const auto rounds = probe_schedule(hosts);
    const double target =
        std::max(kMinRoundSeconds, opt.total_seconds / static_cast<double>(rounds.size() + 1));
    const std::vector<int>& mine = host_ranks[static_cast<std::size_t>(my_host)].ranks;

    Status st;
    // Round 0: inside each host, its leader with its second rank.
    if (mine.size() > 1 && my_index <= 1) {
        PairResult r;
        st = Session(transport, mine[static_cast<std::size_t>(1 - my_index)], my_index == 0, opt, target).run(&r);
        if (st && my_index == 0) (*row)[2] = r.bandwidth;
    }
    // Every rank, whatever happened: no host's streams inside it share the
    // cores with the pairs between hosts.
    Status b = barrier();
    if (st) st = b;
    // The rounds between hosts: leaders only.
    if (my_index == 0) {
        (*row)[1] = my_host + 1;
        for (const auto& round : rounds) {
            if (!st) break;
            for (const auto& p : round) {
                if (p.first != my_host && p.second != my_host) continue;
                const int other = p.first == my_host ? p.second : p.first;
                PairResult r;
                st = Session(transport, host_ranks[static_cast<std::size_t>(other)].ranks[0], p.first == my_host, opt,
                             target)
                         .run(&r);
                if (st && p.first == my_host) {
                    (*row)[kRowHead + 2 * static_cast<std::size_t>(other)] = r.bandwidth;
                    (*row)[kRowHead + 2 * static_cast<std::size_t>(other) + 1] = r.latency;
                }
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
        for (int j = h + 1; j < hosts; ++j)
            m.set(h, j, row[kRowHead + 2 * static_cast<std::size_t>(j)], row[kRowHead + 2 * static_cast<std::size_t>(j) + 1]);
    }
    *out = std::move(m);
    return ok;
}

}  // namespace topoar
