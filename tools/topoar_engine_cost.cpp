// topoar_engine_cost: the engine's own time per call, apart from moving and
// reducing data -- planning on first use, the schedule policy and the
// executor's bookkeeping -- for every host algorithm and message sizes up
// to several GiB.
//
//   topoar_engine_cost [--hosts 2,3] [--rank R] [--min BYTES] [--max BYTES]
//                      [--algorithms ring,tree,...] [--calls K]
//
// One rank's engine (rank R of ranks spread over hosts of the given sizes)
// prepares and runs its calls over a transport whose messages complete at
// once without carrying data, with a reduction that does nothing, on a
// buffer of the call's size: what remains is the engine's work, plus the
// copies the executor itself makes (received segments landing in scratch
// are copied into place; with 1 MiB units above 64 MiB those copies are
// most of the time).  Prints per algorithm and size: the steps the
// executor ran, the first prepare (plans built), the first run (scratch
// first touched) and the median of later runs, nanoseconds per step and
// milliseconds per MiB -- the last constant when the engine is linear in
// the message.  Units and chunks are the engine's (coll_topoar_chunk_size,
// pipeline and segment units scaled for large calls).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/algorithm.hpp"
#include "engine.hpp"

using namespace topoar;

namespace {

class NullTransport final : public Transport {
public:
    Status isend(const void*, std::size_t, int, Request* req) override { return post(req); }
    Status irecv(void*, std::size_t, int, Request* req) override { return post(req); }
    Status wait(Request* req) override {
        *req = nullptr;
        return Status::ok();
    }
    Status test(Request* req, bool* done) override {
        *req = nullptr;
        *done = true;
        return Status::ok();
    }
    std::size_t messages = 0;

private:
    Status post(Request* req) {
        ++messages;
        *req = this;
        return Status::ok();
    }
};

class NullReducer final : public Reducer {
public:
    void reduce(const void*, void*, std::size_t) override {}
};

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<int> parse_list(const std::string& s) {
    std::vector<int> v;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) v.push_back(std::atoi(item.c_str()));
    return v;
}

int usage() {
    std::fprintf(stderr,
                 "usage: topoar_engine_cost [--hosts 2,3] [--rank R] [--min BYTES] [--max BYTES] "
                 "[--algorithms A,B] [--calls K]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> hosts = {2, 3};
    int rank = 0, calls = 3;
    std::size_t min_bytes = std::size_t(1) << 20, max_bytes = std::size_t(4) << 30;
    std::vector<Algorithm> algs = host_algorithms();
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        std::string v = argv[++i];
        if (a == "--hosts") {
            hosts = parse_list(v);
        } else if (a == "--rank") {
            rank = std::atoi(v.c_str());
        } else if (a == "--min" || a == "--max") {
            std::size_t b = 0;
            Status s = parse_size(v, &b);
            if (!s) {
                std::fprintf(stderr, "%s %s: %s\n", a.c_str(), v.c_str(), s.message().c_str());
                return 2;
            }
            (a == "--min" ? min_bytes : max_bytes) = b;
        } else if (a == "--algorithms") {
            algs.clear();
            std::stringstream in(v);
            std::string name;
            while (std::getline(in, name, ',')) {
                Algorithm al;
                if (!algorithm_from_name(name, &al) || algorithm_info(al).device_only) {
                    std::fprintf(stderr, "unknown host algorithm '%s'\n", name.c_str());
                    return 2;
                }
                algs.push_back(al);
            }
        } else if (a == "--calls") {
            calls = std::max(2, std::atoi(v.c_str()));
        } else {
            return usage();
        }
    }
    std::vector<RankInfo> infos;
    for (std::size_t h = 0; h < hosts.size(); ++h)
        for (int k = 0; k < hosts[h]; ++k) {
            RankInfo r;
            r.host = "h" + std::to_string(h);
            infos.push_back(r);
        }
    const int size = static_cast<int>(infos.size());
    if (size < 2 || rank < 0 || rank >= size || min_bytes < 4 || max_bytes < min_bytes) return usage();

    std::printf("# rank %d of %d ranks on hosts of", rank, size);
    for (int h : hosts) std::printf(" %d", h);
    std::printf(" ranks; float elements; times in ms; ns/step = later run / steps\n");
    std::printf("%-11s %12s %9s %10s %10s %10s %9s %8s\n", "algorithm", "bytes", "steps", "prepare", "first_run",
                "later_run", "ns/step", "ms/MiB");
    for (Algorithm alg : algs) {
        EngineConfig cfg;
        cfg.algorithm = alg;
        Engine engine(rank, size, cfg);
        Status s = engine.setup(infos);
        if (!s) {
            std::fprintf(stderr, "set-up: %s\n", s.message().c_str());
            return 1;
        }
        for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
            const std::size_t count = bytes / 4;
            std::unique_ptr<float[]> buf(new (std::nothrow) float[count]);
            if (!buf) {
                std::fprintf(stderr, "cannot allocate %zu bytes\n", bytes);
                return 1;
            }
            std::memset(buf.get(), 0, bytes);  // first touch outside the timing
            NullTransport t;
            NullReducer red;
            PreparedCall call;
            double t0 = now();
            s = engine.prepare(count, 4, MemType::host, &call);
            const double prep = now() - t0;
            std::vector<double> runs;
            std::size_t steps = 0;
            for (int c = 0; c < calls && s; ++c) {
                if (c > 0) s = engine.prepare(count, 4, MemType::host, &call);
                t.messages = 0;
                t0 = now();
                if (s) s = engine.run(call, buf.get(), t, red);
                runs.push_back(now() - t0);
                steps = t.messages;
            }
            if (!s) {
                std::fprintf(stderr, "%s %zu bytes: %s\n", algorithm_name(alg), bytes, s.message().c_str());
                return 1;
            }
            std::vector<double> later(runs.begin() + 1, runs.end());
            std::sort(later.begin(), later.end());
            const double med = later[later.size() / 2];
            std::printf("%-11s %12zu %9zu %10.3f %10.3f %10.3f %9.0f %8.4f\n", algorithm_name(alg), bytes, steps,
                        prep * 1e3, runs[0] * 1e3, med * 1e3, steps ? med * 1e9 / static_cast<double>(steps) : 0.0,
                        med * 1e3 / (static_cast<double>(bytes) / (1 << 20)));
            std::fflush(stdout);
        }
    }
    return 0;
}
