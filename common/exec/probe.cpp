// run_probe (probe.hpp): pair sessions of timed pings and streams.
#include "exec/probe.hpp"

#include <algorithm>
#include <chrono>
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
        std::size_t s = std::min(kFirstMessage, opt_.max_message);
        while (s > 0) {
            double rate = 0, elapsed = 0;
            TOPOAR_TRY(stream(s, n, &rate, &elapsed));
            // B tells A what it saw; A decides the next size for both.
            double report[2] = {rate, elapsed};
            double next = 0;
            if (leads_) {
                double theirs[2] = {0, 0};
                TOPOAR_TRY(recv(theirs, sizeof theirs));
                out->bandwidth = std::min(rate, theirs[0]);
                elapsed = std::max(elapsed, theirs[1]);
                if (4 * s <= opt_.max_message && 4 * elapsed <= target_) next = static_cast<double>(4 * s);
                TOPOAR_TRY(send(&next, sizeof next));
            } else {
                TOPOAR_TRY(send(report, sizeof report));
                TOPOAR_TRY(recv(&next, sizeof next));
            }
            s = static_cast<std::size_t>(next);
        }
        return Status::ok();
    }

private:
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

    // n messages of s bytes each way at once; *rate: what arrived here per
    // second after the first quarter, *elapsed: the whole stream's time.
    Status stream(std::size_t s, std::size_t n, double* rate, double* elapsed) {
        std::vector<Transport::Request> rr(n, nullptr), sr(n, nullptr);
        std::vector<double> at(n, 0.0);
        Status st;
        std::size_t posted_r = 0, posted_s = 0;
        for (; posted_r < n && st; ++posted_r) st = t_.irecv(recv_.data() + posted_r * s, s, peer_, &rr[posted_r]);
        const double t0 = now();
        for (; posted_s < n && st; ++posted_s) st = t_.isend(send_.data(), s, peer_, &sr[posted_s]);
        for (std::size_t k = 0; k < n && st; ++k) {
            st = wait_done(t_, &rr[k]);
            at[k] = now();
        }
        for (std::size_t k = 0; k < posted_s && st; ++k) st = wait_done(t_, &sr[k]);
        if (!st) {
            // Nothing stays posted on buffers this object owns.
            for (std::size_t k = 0; k < posted_r; ++k)
                if (rr[k]) (void)t_.cancel(&rr[k]);
            for (std::size_t k = 0; k < posted_s; ++k)
                if (sr[k]) (void)t_.cancel(&sr[k]);
            return st;
        }
        const std::size_t k0 = n / 4;
        double span = at[n - 1] - at[k0];
        *elapsed = at[n - 1] - t0;
        *rate = span > 0 ? static_cast<double>((n - 1 - k0) * s) / span
                         : static_cast<double>(n * s) / std::max(*elapsed, 1e-9);
        return Status::ok();
    }

    Transport& t_;
    int peer_;
    bool leads_;
    const ProbeOptions& opt_;
    double target_;
    std::vector<unsigned char> send_, recv_;
};

}  // namespace

std::size_t probe_row_size(int hosts) { return kRowHead + 2 * static_cast<std::size_t>(std::max(hosts, 0)); }

Status run_probe(Transport& transport, int my_rank, const std::vector<std::vector<int>>& host_ranks,
                 const ProbeOptions& opt, std::vector<double>* row) {
    const int hosts = static_cast<int>(host_ranks.size());
    row->assign(probe_row_size(hosts), 0.0);
    int my_host = -1, my_index = -1;
    for (int h = 0; h < hosts; ++h)
        for (std::size_t i = 0; i < host_ranks[static_cast<std::size_t>(h)].size(); ++i)
            if (host_ranks[static_cast<std::size_t>(h)][i] == my_rank) {
                my_host = h;
                my_index = static_cast<int>(i);
            }
    if (my_host < 0) return Status::internal("run_probe: rank " + std::to_string(my_rank) + " is on no host");
    const auto rounds = probe_schedule(hosts);
    const double target =
        std::max(kMinRoundSeconds, opt.total_seconds / static_cast<double>(rounds.size() + 1));
    const std::vector<int>& mine = host_ranks[static_cast<std::size_t>(my_host)];

    Status st;
    // Round 0: inside each host, its leader with its second rank.
    if (mine.size() > 1 && my_index <= 1) {
        PairResult r;
        st = Session(transport, mine[static_cast<std::size_t>(1 - my_index)], my_index == 0, opt, target).run(&r);
        if (st && my_index == 0) (*row)[2] = r.bandwidth;
    }
    // The rounds between hosts: leaders only.
    if (my_index == 0) {
        (*row)[1] = my_host + 1;
        for (const auto& round : rounds) {
            if (!st) break;
            for (const auto& p : round) {
                if (p.first != my_host && p.second != my_host) continue;
                const int other = p.first == my_host ? p.second : p.first;
                PairResult r;
                st = Session(transport, host_ranks[static_cast<std::size_t>(other)][0], p.first == my_host, opt,
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
