// topoar_tune: measures every topoar all-reduce algorithm on the job's real
// layout and writes a rules file (docs/rules-format.md) for `auto`.
//
//   mpirun --mca coll topoar,tuned,libnbc,basic,self -np 64 topoar_tune -m 4:64M -r 7 -o cluster.rules
//   mpirun ... --mca coll_topoar_rules_file cluster.rules ./app
//
// How one job runs every algorithm: topoar reads coll_topoar_allreduce_algorithm
// when it sets up a communicator (at that communicator's first allreduce).
// For each algorithm the tuner writes the control variable through MPI_T,
// duplicates MPI_COMM_WORLD and sets the duplicate up with one allreduce; it
// then checks through the performance variable
// coll_topoar_allreduce_last_algorithm that this algorithm really ran, and
// drops algorithms that fall back (not implemented, unsupported here).  The
// check is repeated after every timed sample, so an algorithm that declines
// some sizes loses only those.
//
// Measurement, per message size: the algorithms take turns (A B C, B C A,
// C A B, ... for -r rounds, so none is always first); a sample is the
// slowest rank's mean time of -i back-to-back MPI_Allreduce calls (fewer for
// large messages); the result is the median of the rounds.  Every sample's
// result is checked.
//
// Rules: the fastest algorithm per measured size (the previous size's choice
// stays while it is within --tolerance, default 5%, of the fastest: noise
// must not cut the size axis into flip-flopping ranges); neighbouring sizes
// with the same winner merge into one range, and a range ends at the geometric middle
// between the last size it won and the first it lost (rounded to 4
// significant bits).  The first range starts at 0 and the last one is open.
// The rules carry the communicator's shape (ranks=, nodes=, ppn=, mem=host) so
// that other communicators keep the built-in choice; --any-shape drops that.
//
// If the MPI library refuses to write the control variable at run time
// (MPI_T_ERR_CVAR_SET_NOT_NOW: the component did not register it as
// settable), the tuner measures only the algorithm set with --mca and saves
// its medians (--save); a final --merge run turns the saved files into rules:
//
//   for a in $(topoar_plan --list-algorithms); do
//     mpirun ... --mca coll_topoar_allreduce_algorithm $a topoar_tune --save m.$a
//   done
//   topoar_tune --merge m.* -o cluster.rules      (one process is enough)
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/algorithm.hpp"
#include "decide/decision.hpp"

using namespace topoar;

namespace {

const char kAlgVar[] = "coll_topoar_allreduce_algorithm";
const char kLastVar[] = "coll_topoar_allreduce_last_algorithm";
const int kLastFallback = 100;
const char kSaveHeader[] = "# topoar_tune measurements v1";
const double kNaN = std::numeric_limits<double>::quiet_NaN();

int g_rank = 0;
bool g_mpit_up = false;

// For errors every rank sees alike (arguments, collective outcomes): rank 0
// says why, all ranks leave cleanly.
[[noreturn]] void die(const std::string& msg) {
    if (g_rank == 0) std::fprintf(stderr, "topoar_tune: %s\n", msg.c_str());
    // Open MPI 4.1.4 crashes in MPI_T_finalize after MPI_Finalize.
    if (g_mpit_up) MPI_T_finalize();
    MPI_Finalize();
    std::exit(1);
}

// For errors of one rank (rank 0 writing a file).
[[noreturn]] void die_alone(const std::string& msg) {
    std::fprintf(stderr, "topoar_tune: %s\n", msg.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
}

void usage() {
    if (g_rank != 0) return;
    std::printf(
        "usage: mpirun ... topoar_tune [options]\n"
        "  -m MIN:MAX        message sizes in bytes, units K M G (default 4:4M)\n"
        "  -s, --step F      size factor between measurements (default 2)\n"
        "  -i N              timed calls per sample for messages up to 64K; fewer\n"
        "                    above, at least 2 (default 20)\n"
        "  -r N              rounds; each algorithm's median of N samples (default 5)\n"
        "  -R N              rounds for sizes up to 64K, where samples are cheap and\n"
        "                    noisy (default: -r)\n"
        "  --algorithms L    comma-separated (default all: %s)\n"
        "  -o FILE           rules file to write (default topoar.rules)\n"
        "  --any-shape       rules without the ranks=/nodes=/ppn= conditions\n"
        "  -t, --tolerance P keep the previous size's choice while it is within P%%\n"
        "                    of the fastest (fewer, longer ranges; default 5)\n"
        "  --save FILE       also save the medians (for --merge)\n"
        "  --merge F...      no measuring: rules from files written with --save\n"
        "  --compare         no rules: measure auto (the cost-model table, or the\n"
        "                    rules file given with --mca coll_topoar_rules_file)\n"
        "                    side by side with every algorithm forced, and print\n"
        "                    auto / fastest forced per size\n"
        "  --previous        with --compare: also the module topoar hands calls to\n"
        "                    (tuned), on a communicator topoar stays off\n"
        "  --csv FILE        with --compare: the medians as CSV\n"
        "  -h, --help        this text\n",
        algorithm_names(host_algorithms()).c_str());
}

// ---------------------------------------------------------------- options

struct Options {
    std::size_t min_bytes = 4, max_bytes = 4 << 20;
    double step = 2;
    int iterations = 20;
    int repeats = 5;
    int small_repeats = 0;  // -R: rounds up to 64 KiB (0: repeats)
    std::vector<Algorithm> algorithms;
    bool algorithms_given = false;
    std::string output = "topoar.rules";
    bool output_given = false;
    bool any_shape = false;
    double tolerance = 0.05;  // keep the previous size's choice if this close to the fastest
    std::string save;
    std::vector<std::string> merge;
    bool compare = false, previous = false;
    std::string csv;
};

Status parse_algorithms(const std::string& list, std::vector<Algorithm>* out) {
    out->clear();
    std::stringstream ss(list);
    for (std::string name; std::getline(ss, name, ',');) {
        Algorithm a;
        if (!algorithm_from_name(name, &a)) return Status::invalid("unknown algorithm '" + name + "'");
        if (a == Algorithm::automatic) return Status::invalid("'auto' is what the rules are for; list algorithms");
        if (std::find(out->begin(), out->end(), a) == out->end()) out->push_back(a);
    }
    if (out->empty()) return Status::invalid("empty algorithm list");
    return Status::ok();
}

Options parse_args(int argc, char** argv) {
    Options o;
    o.algorithms = host_algorithms();
    auto value = [&](int& i) -> std::string {
        if (i + 1 >= argc) die(std::string("option ") + argv[i] + " needs a value");
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            usage();
            MPI_Finalize();
            std::exit(0);
        } else if (a == "-m") {
            std::string v = value(i);
            std::size_t colon = v.find(':');
            if (colon == std::string::npos) die("-m wants MIN:MAX, got '" + v + "'");
            Status s = parse_size(v.substr(0, colon), &o.min_bytes);
            if (s) s = parse_size(v.substr(colon + 1), &o.max_bytes);
            if (!s) die("-m: " + s.message());
            if (o.min_bytes == 0 || o.min_bytes > o.max_bytes) die("-m: need 0 < MIN <= MAX");
        } else if (a == "-s" || a == "--step") {
            o.step = std::atof(value(i).c_str());
            if (!(o.step > 1.01)) die("--step must be above 1");
        } else if (a == "-i") {
            o.iterations = std::atoi(value(i).c_str());
            if (o.iterations < 1) die("-i must be at least 1");
        } else if (a == "-r") {
            o.repeats = std::atoi(value(i).c_str());
            if (o.repeats < 1) die("-r must be at least 1");
        } else if (a == "-R") {
            o.small_repeats = std::atoi(value(i).c_str());
            if (o.small_repeats < 1) die("-R must be at least 1");
        } else if (a == "--algorithms") {
            Status s = parse_algorithms(value(i), &o.algorithms);
            if (!s) die("--algorithms: " + s.message());
            o.algorithms_given = true;
        } else if (a == "-o") {
            o.output = value(i);
            o.output_given = true;
        } else if (a == "--any-shape") {
            o.any_shape = true;
        } else if (a == "-t" || a == "--tolerance") {
            o.tolerance = std::atof(value(i).c_str()) / 100;
            if (!(o.tolerance >= 0 && o.tolerance < 1)) die("--tolerance must be in [0, 100)");
        } else if (a == "--save") {
            o.save = value(i);
        } else if (a == "--compare") {
            o.compare = true;
        } else if (a == "--previous") {
            o.previous = true;
        } else if (a == "--csv") {
            o.csv = value(i);
        } else if (a == "--merge") {
            while (i + 1 < argc && argv[i + 1][0] != '-') o.merge.push_back(argv[++i]);
            if (o.merge.empty()) die("--merge needs files");
        } else {
            usage();
            die("unknown argument '" + a + "'");
        }
    }
    if ((o.previous || !o.csv.empty()) && !o.compare) die("--previous and --csv go with --compare");
    if (o.compare && (!o.merge.empty() || !o.save.empty() || o.output_given))
        die("--compare writes no rules: no -o, --save or --merge with it");
    return o;
}

// ---------------------------------------------------------------- MPI_T

// The two topoar variables the tuner needs.
class Mpit {
public:
    void init() {
        int provided;
        int rc = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
        if (rc != MPI_SUCCESS) die("MPI_T_init_thread failed (" + std::to_string(rc) + ")");
        g_mpit_up = true;
        int count;
        if (MPI_T_cvar_get_index(kAlgVar, &cvar_) != MPI_SUCCESS ||
            MPI_T_pvar_get_index(kLastVar, MPI_T_PVAR_CLASS_STATE, &pvar_) != MPI_SUCCESS)
            die(std::string("the MPI_T variables ") + kAlgVar + " / " + kLastVar +
                " do not exist: is topoar loaded (mca_base_component_path, --mca coll topoar,...)?");
        if (MPI_T_cvar_handle_alloc(cvar_, nullptr, &cvar_h_, &count) != MPI_SUCCESS ||
            MPI_T_pvar_session_create(&session_) != MPI_SUCCESS ||
            MPI_T_pvar_handle_alloc(session_, pvar_, nullptr, &pvar_h_, &count) != MPI_SUCCESS)
            die("cannot allocate MPI_T handles for topoar's variables");
    }
    void finalize() {
        if (prio_ >= 0) MPI_T_cvar_handle_free(&prio_h_);
        MPI_T_pvar_handle_free(session_, &pvar_h_);
        MPI_T_pvar_session_free(&session_);
        MPI_T_cvar_handle_free(&cvar_h_);
        MPI_T_finalize();
        g_mpit_up = false;
    }
    int algorithm() const {
        int v = -1;
        MPI_T_cvar_read(cvar_h_, &v);
        return v;
    }
    int set_algorithm(int v) { return MPI_T_cvar_write(cvar_h_, &v); }
    // coll_topoar_priority, for --previous: communicators created while it
    // is negative do not get topoar.  Returns the MPI_T error code.
    int set_priority(int v, int* old) {
        int count, rc;
        if (prio_ < 0) {
            if ((rc = MPI_T_cvar_get_index("coll_topoar_priority", &prio_)) != MPI_SUCCESS) return rc;
            if ((rc = MPI_T_cvar_handle_alloc(prio_, nullptr, &prio_h_, &count)) != MPI_SUCCESS) {
                prio_ = -1;
                return rc;
            }
        }
        if (old && (rc = MPI_T_cvar_read(prio_h_, old)) != MPI_SUCCESS) return rc;
        return MPI_T_cvar_write(prio_h_, &v);
    }
    int last_algorithm() const {
        int v = -1;
        MPI_T_pvar_read(session_, pvar_h_, &v);
        return v;
    }

private:
    int cvar_ = -1, pvar_ = -1, prio_ = -1;
    MPI_T_cvar_handle cvar_h_{}, prio_h_{};
    MPI_T_pvar_session session_{};
    MPI_T_pvar_handle pvar_h_{};
};

std::string mpit_error(int rc) {
    if (rc == MPI_T_ERR_CVAR_SET_NOT_NOW) return "MPI_T_ERR_CVAR_SET_NOT_NOW";
    if (rc == MPI_T_ERR_CVAR_SET_NEVER) return "MPI_T_ERR_CVAR_SET_NEVER";
    return "error " + std::to_string(rc);
}

// ---------------------------------------------------------------- shape

CommShape probe_shape(MPI_Comm comm) {
    int size, rank, local_size, local_rank;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm local;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &local_size);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    // Leaders report their host's rank count, the others 0.
    std::vector<int> all(static_cast<std::size_t>(size));
    int mine = local_rank == 0 ? local_size : 0;
    MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
    std::vector<int> per_node;
    for (int n : all)
        if (n > 0) per_node.push_back(n);
    return make_comm_shape(size, per_node, 0);
}

std::string describe_shape(const CommShape& s) {
    return std::to_string(s.ranks) + " ranks on " + std::to_string(s.nodes) + " node" + (s.nodes == 1 ? "" : "s") +
           " (at most " + std::to_string(s.ppn) + " per node" + (s.uniform ? "" : ", uneven") + ")";
}

// ---------------------------------------------------------------- measuring

struct Measurements {
    CommShape shape;
    std::vector<std::size_t> sizes;
    std::vector<Algorithm> algorithms;
    std::vector<std::vector<double>> median_us;  // [size][algorithm]; NaN: not run by topoar
    std::vector<std::string> notes;             // for the rules file's comment
};

// Calls per sample at a size: -i up to 64 KiB, proportionally fewer above
// (at least 2).
int calls_for(const Options& o, std::size_t bytes) {
    if (bytes <= 65536) return o.iterations;
    return std::max(2, static_cast<int>(static_cast<double>(o.iterations) * 65536 / static_cast<double>(bytes)));
}

// Before the first size: every communicator makes kSettleCalls calls of the
// smallest size, in turns, so that connections are open and processes
// scheduled before anything is timed (the first sizes of a run measured up
// to 1.2x slower than the same calls later, docs/performance.md).
const int kSettleCalls = 2000;

void settle(const std::vector<MPI_Comm>& comms, std::size_t bytes) {
    const int count = static_cast<int>(std::max<std::size_t>(bytes / sizeof(float), 1));
    std::vector<float> sbuf(static_cast<std::size_t>(count), 1), rbuf(static_cast<std::size_t>(count), 0);
    for (int done = 0; done < kSettleCalls; done += 100)
        for (MPI_Comm c : comms)
            for (int i = 0; i < 100; ++i) MPI_Allreduce(sbuf.data(), rbuf.data(), count, MPI_FLOAT, MPI_SUM, c);
}

// Rounds at a size: -R up to 64 KiB (cheap, noisy samples), else -r.
int rounds_for(const Options& o, std::size_t bytes) {
    return bytes <= 65536 && o.small_repeats > 0 ? o.small_repeats : o.repeats;
}

std::vector<std::size_t> size_list(const Options& o) {
    std::vector<std::size_t> sizes;
    for (double s = static_cast<double>(o.min_bytes); s <= static_cast<double>(o.max_bytes) * 1.000001; s *= o.step) {
        std::size_t b = std::max<std::size_t>(4, static_cast<std::size_t>(std::llround(s / 4)) * 4);
        if (sizes.empty() || b > sizes.back()) sizes.push_back(b);
    }
    return sizes;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Sample {
    double seconds;  // per call, slowest rank
    bool ran;        // topoar ran the algorithm on every rank
    bool correct;    // every rank got the right sum
    int last;        // what topoar ran (last_algorithm), -1: ranks differ
};

// `want` of time_allreduce: any algorithm (record what ran), or no topoar
// call to check (the previous module's communicator).
const int kAnyAlgorithm = -1, kNotTopoar = -2;

// Times `iters` calls on `comm`; the result is checked, and the algorithm
// topoar ran unless `want` is kAnyAlgorithm or kNotTopoar.
Sample time_allreduce(MPI_Comm comm, Mpit& mpit, int want, std::vector<float>& sbuf, std::vector<float>& rbuf,
                      int count, int iters, float expected) {
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) MPI_Allreduce(sbuf.data(), rbuf.data(), count, MPI_FLOAT, MPI_SUM, comm);
    double t = (MPI_Wtime() - t0) / iters;
    // Read before any other allreduce (the one below included) changes it.
    int last = want == kNotTopoar ? 0 : mpit.last_algorithm();
    bool ran = want < 0 || last == want;
    bool correct = rbuf[0] == expected && rbuf[static_cast<std::size_t>(count) - 1] == expected &&
                   rbuf[static_cast<std::size_t>(count) / 2] == expected;
    double local[5] = {t, ran ? 0.0 : 1.0, correct ? 0.0 : 1.0, static_cast<double>(last), -static_cast<double>(last)};
    double global[5];
    MPI_Allreduce(local, global, 5, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return {global[0], global[1] == 0, global[2] == 0, global[3] == -global[4] ? static_cast<int>(global[3]) : -1};
}

// Why an entry's samples at a size were dropped (time_allreduce's checks).
const char* const kNotAsWanted = "did not run as forced";
const char* const kWrongResult = "wrong result";

// One size on every communicator: a warm-up call each (plans are built at
// a size's first call), then rounds in rotating turns (A B C, B C A, ...).
// An entry whose sample fails a check is dropped at this size.
struct SizeSamples {
    std::vector<double> median_us;     // per entry; NaN: dropped
    std::vector<const char*> failure;  // per entry: nullptr, kNotAsWanted, kWrongResult
    int ran = -1;                      // what the kAnyAlgorithm entries ran (-1: none, or it varied)
};

SizeSamples sample_size(const Options& o, Mpit& mpit, const std::vector<MPI_Comm>& comms,
                        const std::vector<int>& want, std::size_t bytes, int nranks) {
    const std::size_t ne = comms.size();
    const int count = static_cast<int>(bytes / sizeof(float));
    const int iters = calls_for(o, bytes);
    const float expected = static_cast<float>(nranks) * static_cast<float>(nranks + 1) / 2;
    std::vector<float> sbuf(static_cast<std::size_t>(count), static_cast<float>(g_rank + 1));
    std::vector<float> rbuf(static_cast<std::size_t>(count), 0);
    std::vector<std::vector<double>> samples(ne);
    SizeSamples out;
    out.median_us.assign(ne, kNaN);
    out.failure.assign(ne, nullptr);
    for (std::size_t e = 0; e < ne; ++e)
        MPI_Allreduce(sbuf.data(), rbuf.data(), count, MPI_FLOAT, MPI_SUM, comms[e]);
    int ran = -2;
    for (int r = 0; r < rounds_for(o, bytes); ++r)
        for (std::size_t k = 0; k < ne; ++k) {
            const std::size_t e = (k + static_cast<std::size_t>(r)) % ne;
            if (out.failure[e]) continue;
            Sample s = time_allreduce(comms[e], mpit, want[e], sbuf, rbuf, count, iters, expected);
            if (!s.ran || !s.correct) {
                out.failure[e] = s.correct ? kNotAsWanted : kWrongResult;
                continue;
            }
            if (want[e] == kAnyAlgorithm) ran = ran == -2 || ran == s.last ? s.last : -1;
            samples[e].push_back(s.seconds * 1e6);
        }
    for (std::size_t e = 0; e < ne; ++e)
        if (!out.failure[e] && !samples[e].empty()) out.median_us[e] = median(samples[e]);
    out.ran = ran < 0 ? -1 : ran;
    return out;
}

Measurements measure(const Options& o, Mpit& mpit, bool can_force, int preset) {
    Measurements m;
    m.shape = probe_shape(MPI_COMM_WORLD);
    m.sizes = size_list(o);
    int nranks = m.shape.ranks;

    // One communicator per algorithm, each set up while the control variable
    // named it.
    std::vector<MPI_Comm> comms;
    std::vector<Algorithm> candidates = can_force ? o.algorithms : std::vector<Algorithm>{static_cast<Algorithm>(preset)};
    for (Algorithm alg : candidates) {
        if (can_force) {
            int rc = mpit.set_algorithm(static_cast<int>(alg));
            if (rc != MPI_SUCCESS) die(std::string("MPI_T_cvar_write(") + kAlgVar + ") failed: " + mpit_error(rc));
        }
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        float one = 1, sum = 0;
        MPI_Allreduce(&one, &sum, 1, MPI_FLOAT, MPI_SUM, c);  // topoar sets c up here
        int last = mpit.last_algorithm();
        int ok = last == static_cast<int>(alg) && sum == static_cast<float>(nranks), all_ok = 0;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all_ok) {
            std::string why = last == kLastFallback ? "falls back to the previous module"
                              : last == 0           ? "topoar did not run (is it loaded?)"
                                                    : "ran as '" + std::string(algorithm_name(static_cast<Algorithm>(last))) + "'";
            if (g_rank == 0) std::printf("# %-20s skipped: %s\n", algorithm_name(alg), why.c_str());
            m.notes.push_back(std::string(algorithm_name(alg)) + ": skipped, " + why);
            MPI_Comm_free(&c);
            continue;
        }
        m.algorithms.push_back(alg);
        comms.push_back(c);
    }
    if (can_force) mpit.set_algorithm(preset);
    if (m.algorithms.empty()) {
        // The one preset algorithm of a --save run may fall back: its file
        // then says so, and --merge goes on without it.
        if (can_force) die("no algorithm could be measured (all fall back)");
        return m;
    }

    const std::size_t na = m.algorithms.size();
    m.median_us.assign(m.sizes.size(), std::vector<double>(na, kNaN));
    std::vector<int> want;
    for (Algorithm a : m.algorithms) want.push_back(static_cast<int>(a));
    std::vector<bool> reported_wrong(na, false);
    settle(comms, m.sizes.front());
    for (std::size_t si = 0; si < m.sizes.size(); ++si) {
        SizeSamples r = sample_size(o, mpit, comms, want, m.sizes[si], nranks);
        m.median_us[si] = r.median_us;
        for (std::size_t a = 0; a < na; ++a) {
            if (r.failure[a] != kWrongResult || reported_wrong[a]) continue;
            reported_wrong[a] = true;
            if (g_rank == 0)
                std::fprintf(stderr, "topoar_tune: WRONG RESULT from %s at %zu bytes; not used\n",
                             algorithm_name(m.algorithms[a]), m.sizes[si]);
        }
    }
    for (MPI_Comm& c : comms) MPI_Comm_free(&c);
    for (std::size_t a = 0; a < na; ++a)
        if (reported_wrong[a]) m.notes.push_back(std::string(algorithm_name(m.algorithms[a])) + ": wrong results seen");
    return m;
}

// ---------------------------------------------------------------- --compare

// auto side by side with every algorithm forced (and the previous module):
// one communicator each in this job, interleaved rounds per size, medians.
// Separate jobs per configuration differ by more than the 5-10 % this has
// to resolve on an oversubscribed machine (docs/performance.md).
struct Compared {
    CommShape shape;
    std::vector<std::size_t> sizes;
    std::vector<std::string> names;              // "auto", forced algorithms, "previous"
    std::vector<int> want;                       // per entry: time_allreduce's check
    std::vector<std::vector<double>> median_us;  // [size][entry]; NaN: not valid
    std::vector<int> auto_ran;                   // [size]: last_algorithm under auto (-1: ranks differed)
    std::vector<std::string> notes;
};

const char* ran_name(int last) {
    if (last == kLastFallback) return "handed-down";
    if (last > 0 && last < kNumAlgorithms) return algorithm_name(static_cast<Algorithm>(last));
    return "?";
}

Compared compare(const Options& o, Mpit& mpit, int preset) {
    Compared m;
    m.shape = probe_shape(MPI_COMM_WORLD);
    m.sizes = size_list(o);
    const int nranks = m.shape.ranks;
    std::vector<MPI_Comm> comms;
    auto all_ok = [](int ok) {
        int all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        return all != 0;
    };
    // auto and the forced algorithms: set up while the control variable
    // names them.
    std::vector<int> algs = {0};
    for (Algorithm a : o.algorithms) algs.push_back(static_cast<int>(a));
    for (int alg : algs) {
        int rc = mpit.set_algorithm(alg);
        if (!all_ok(rc == MPI_SUCCESS))
            die(std::string("MPI_T_cvar_write(") + kAlgVar + ") failed: " + mpit_error(rc) +
                "; --compare needs it writable at run time");
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        float one = 1, sum = 0;
        MPI_Allreduce(&one, &sum, 1, MPI_FLOAT, MPI_SUM, c);
        int last = mpit.last_algorithm();
        const char* name = alg == 0 ? "auto" : algorithm_name(static_cast<Algorithm>(alg));
        bool ok = sum == static_cast<float>(nranks) && (alg == 0 ? last != 0 : last == alg);
        if (!all_ok(ok)) {
            if (alg == 0) die("auto: topoar did not run (is it loaded?)");
            if (g_rank == 0) std::printf("# %-20s skipped: %s\n", name, ran_name(last));
            m.notes.push_back(std::string(name) + ": skipped, ran as " + ran_name(last));
            MPI_Comm_free(&c);
            continue;
        }
        m.names.push_back(name);
        m.want.push_back(alg == 0 ? kAnyAlgorithm : alg);
        comms.push_back(c);
    }
    mpit.set_algorithm(preset);
    if (o.previous) {
        // A communicator created while topoar's priority is negative gets
        // the module topoar would hand its calls to.
        int old = 0, rc = mpit.set_priority(-1, &old);
        if (!all_ok(rc == MPI_SUCCESS)) die("cannot write coll_topoar_priority through MPI_T: " + mpit_error(rc));
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        mpit.set_priority(old, nullptr);
        m.names.push_back("previous");
        m.want.push_back(kNotTopoar);
        comms.push_back(c);
    }

    const std::size_t ne = comms.size();
    m.median_us.assign(m.sizes.size(), std::vector<double>(ne, kNaN));
    m.auto_ran.assign(m.sizes.size(), -1);
    settle(comms, m.sizes.front());
    for (std::size_t si = 0; si < m.sizes.size(); ++si) {
        SizeSamples r = sample_size(o, mpit, comms, m.want, m.sizes[si], nranks);
        m.median_us[si] = r.median_us;
        m.auto_ran[si] = r.ran;
        for (std::size_t e = 0; e < ne; ++e) {
            if (!r.failure[e]) continue;
            if (g_rank == 0)
                std::fprintf(stderr, "topoar_tune: %s at %zu bytes: %s; not used\n", m.names[e].c_str(), m.sizes[si],
                             r.failure[e] == kWrongResult ? "WRONG RESULT" : r.failure[e]);
            m.notes.push_back(m.names[e] + " at " + format_size(m.sizes[si]) + ": " + r.failure[e]);
        }
    }
    for (MPI_Comm& c : comms) MPI_Comm_free(&c);
    return m;
}

// Ratio of auto to the fastest forced algorithm (and to the previous
// module) per size; returns the lines of the table.
void print_compare(const Compared& m, const Options& o) {
    std::printf("# medians in microseconds per MPI_Allreduce (float sum), %s\n", describe_shape(m.shape).c_str());
    std::printf("# %d interleaved rounds of %d calls up to 64K, %d rounds of fewer calls above; auto ran: what the "
                "component chose\n",
                rounds_for(o, 0), o.iterations, o.repeats);
    std::printf("%10s", "bytes");
    for (const auto& n : m.names) std::printf(" %19s", n.c_str());
    std::printf(" %19s %12s %19s", "auto ran", "auto/best", "best forced");
    const bool prev = !m.names.empty() && m.names.back() == "previous";
    if (prev) std::printf(" %14s", "auto/previous");
    std::printf("\n");
    for (std::size_t si = 0; si < m.sizes.size(); ++si) {
        std::printf("%10zu", m.sizes[si]);
        int best = -1;
        for (std::size_t e = 0; e < m.names.size(); ++e) {
            double t = m.median_us[si][e];
            if (std::isnan(t)) std::printf(" %19s", "-");
            else std::printf(" %19.2f", t);
            if (m.want[e] > 0 && !std::isnan(t) && (best < 0 || t < m.median_us[si][static_cast<std::size_t>(best)]))
                best = static_cast<int>(e);
        }
        double a = m.median_us[si][0];
        std::printf(" %19s", ran_name(m.auto_ran[si]));
        if (best >= 0 && !std::isnan(a))
            std::printf(" %12.3f %19s", a / m.median_us[si][static_cast<std::size_t>(best)],
                        m.names[static_cast<std::size_t>(best)].c_str());
        else
            std::printf(" %12s %19s", "-", "-");
        if (prev) {
            double p = m.median_us[si].back();
            if (std::isnan(p) || std::isnan(a)) std::printf(" %14s", "-");
            else std::printf(" %14.3f", a / p);
        }
        std::printf("\n");
    }
    for (const auto& n : m.notes) std::printf("# note: %s\n", n.c_str());
}

Status write_compare_csv(const Compared& m, const std::string& path) {
    std::ofstream f(path);
    if (!f) return Status::io(path + ": cannot write");
    f << "bytes,entry,median_us,auto_ran\n";
    char buf[64];
    for (std::size_t si = 0; si < m.sizes.size(); ++si)
        for (std::size_t e = 0; e < m.names.size(); ++e) {
            if (std::isnan(m.median_us[si][e])) continue;
            std::snprintf(buf, sizeof buf, "%.3f", m.median_us[si][e]);
            f << m.sizes[si] << "," << m.names[e] << "," << buf << "," << ran_name(m.auto_ran[si]) << "\n";
        }
    f.close();
    return f ? Status::ok() : Status::io(path + ": write error");
}

// ---------------------------------------------------------------- results

// Index of the fastest algorithm at size index si, or -1.
int fastest(const Measurements& m, std::size_t si) {
    int best = -1;
    for (std::size_t a = 0; a < m.algorithms.size(); ++a) {
        double t = m.median_us[si][a];
        if (std::isnan(t)) continue;
        if (best < 0 || t < m.median_us[si][static_cast<std::size_t>(best)]) best = static_cast<int>(a);
    }
    return best;
}

// The algorithm chosen per size index (-1: none ran): the fastest, except
// that the previous size's choice stays while it is within `tolerance` of
// the fastest.  Measurement noise would otherwise cut the size axis into
// many short ranges that flip between near-equal algorithms.
std::vector<int> choices(const Measurements& m, double tolerance) {
    std::vector<int> c(m.sizes.size(), -1);
    int prev = -1;
    for (std::size_t si = 0; si < m.sizes.size(); ++si) {
        int best = fastest(m, si);
        if (best < 0) continue;
        double tp = prev >= 0 ? m.median_us[si][static_cast<std::size_t>(prev)] : kNaN;
        if (prev >= 0 && !std::isnan(tp) && tp <= m.median_us[si][static_cast<std::size_t>(best)] * (1 + tolerance))
            best = prev;
        c[si] = prev = best;
    }
    return c;
}

void print_table(const Measurements& m, double tolerance) {
    std::printf("# medians in microseconds per MPI_Allreduce (float sum), %s; * chosen\n",
                describe_shape(m.shape).c_str());
    std::vector<int> chosen = choices(m, tolerance);
    std::printf("%10s", "bytes");
    for (Algorithm a : m.algorithms) std::printf(" %19s", algorithm_name(a));
    std::printf("\n");
    for (std::size_t si = 0; si < m.sizes.size(); ++si) {
        std::printf("%10zu", m.sizes[si]);
        int w = chosen[si];
        for (std::size_t a = 0; a < m.algorithms.size(); ++a) {
            double t = m.median_us[si][a];
            char cell[32];
            if (std::isnan(t)) std::snprintf(cell, sizeof cell, "-");
            else std::snprintf(cell, sizeof cell, "%s%.2f", static_cast<int>(a) == w ? "*" : "", t);
            std::printf(" %19s", cell);
        }
        std::printf("\n");
    }
}

// The geometric middle of two sizes, rounded to 4 significant bits and kept
// strictly above a and at most b.
std::size_t boundary(std::size_t a, std::size_t b) {
    double mid = std::sqrt(static_cast<double>(a) * static_cast<double>(b));
    std::size_t v;
    if (mid < 16) {
        v = static_cast<std::size_t>(std::llround(mid));
    } else {
        int e = static_cast<int>(std::floor(std::log2(mid)));
        double unit = std::ldexp(1.0, e - 3);
        v = static_cast<std::size_t>(std::llround(mid / unit) * unit);
    }
    return std::min(std::max(v, a + 1), b);
}

Status make_rules(const Measurements& m, bool any_shape, double tolerance, DecisionTable* out) {
    DecisionTable t;
    // Runs of sizes with the same winner: (first size index, last, winner).
    struct Run {
        std::size_t first, last;
        int alg;
    };
    std::vector<Run> runs;
    std::vector<int> chosen = choices(m, tolerance);
    for (std::size_t si = 0; si < m.sizes.size(); ++si) {
        int w = chosen[si];
        if (w < 0) continue;  // nobody ran here: the neighbours' ranges meet
        if (!runs.empty() && runs.back().alg == w) runs.back().last = si;
        else runs.push_back({si, si, w});
    }
    for (std::size_t k = 0; k < runs.size(); ++k) {
        Rule r;
        r.size.lo = k == 0 ? 0 : boundary(m.sizes[runs[k - 1].last], m.sizes[runs[k].first]);
        r.size.hi = k + 1 == runs.size() ? SizeRange::kUnbounded
                                         : boundary(m.sizes[runs[k].last], m.sizes[runs[k + 1].first]);
        if (!any_shape) {
            r.ranks.lo = r.ranks.hi = m.shape.ranks;
            r.nodes.lo = r.nodes.hi = m.shape.nodes;
            r.ppn.lo = r.ppn.hi = m.shape.ppn;
        }
        r.mem = MemType::host;
        r.algorithm = m.algorithms[static_cast<std::size_t>(runs[k].alg)];
        r.origin = "tuner rule " + std::to_string(k + 1);
        TOPOAR_TRY(t.add(std::move(r)));
    }
    *out = std::move(t);
    return Status::ok();
}

std::string rules_comment(const Measurements& m, const Options& o) {
    std::ostringstream c;
    char when[64] = "";
    std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    MPI_Get_processor_name(host, &len);
    c << "written by topoar_tune " << when << " on " << host << "\n";
    c << describe_shape(m.shape) << "; host memory, MPI_FLOAT sum\n";
    if (o.merge.empty())
        c << "sizes " << format_size(m.sizes.front()) << ".." << format_size(m.sizes.back()) << " x" << o.step << ", "
          << o.iterations << " calls per sample, median of " << rounds_for(o, 0) << " interleaved rounds up to 64K, "
          << o.repeats << " above\n";
    else
        c << "merged from " << o.merge.size() << " saved measurement files\n";
    c << "fastest per size, the previous choice kept within " << o.tolerance * 100 << "%\n";
    c << "algorithms:";
    for (Algorithm a : m.algorithms) c << " " << algorithm_name(a);
    c << "\n";
    for (const std::string& n : m.notes) c << n << "\n";
    return c.str();
}

// ---------------------------------------------------------------- files

Status save(const Measurements& m, const std::string& path) {
    std::ofstream f(path);
    if (!f) return Status::io(path + ": cannot write");
    f << kSaveHeader << "\n";
    f << "shape ranks=" << m.shape.ranks << " nodes=" << m.shape.nodes << " ppn=" << m.shape.ppn
      << " uniform=" << (m.shape.uniform ? "yes" : "no") << "\n";
    for (const std::string& n : m.notes) f << "note " << n << "\n";
    char buf[64];
    for (std::size_t si = 0; si < m.sizes.size(); ++si)
        for (std::size_t a = 0; a < m.algorithms.size(); ++a) {
            if (std::isnan(m.median_us[si][a])) continue;
            std::snprintf(buf, sizeof buf, "%.17g", m.median_us[si][a]);
            f << "time " << m.sizes[si] << " " << algorithm_name(m.algorithms[a]) << " " << buf << "\n";
        }
    f.close();
    return f ? Status::ok() : Status::io(path + ": write error");
}

// Adds one saved file's medians to m (shapes must agree).
Status load(const std::string& path, bool first, Measurements* m) {
    std::ifstream f(path);
    if (!f) return Status::io(path + ": cannot open");
    std::string line;
    int number = 0;
    bool header = false;
    while (std::getline(f, line)) {
        ++number;
        std::string where = path + ":" + std::to_string(number) + ": ";
        if (number == 1) {
            header = line == kSaveHeader;
            if (!header) return Status::invalid(where + "not a topoar_tune --save file");
            continue;
        }
        std::istringstream ws(line);
        std::string kind;
        ws >> kind;
        if (kind == "shape") {
            CommShape s;
            if (std::sscanf(line.c_str(), "shape ranks=%d nodes=%d ppn=%d", &s.ranks, &s.nodes, &s.ppn) != 3)
                return Status::invalid(where + "bad shape line");
            s.uniform = line.find("uniform=yes") != std::string::npos;
            if (first) m->shape = s;
            else if (s.ranks != m->shape.ranks || s.nodes != m->shape.nodes || s.ppn != m->shape.ppn)
                return Status::invalid(where + "measured on another layout (" + describe_shape(s) + " vs " +
                                       describe_shape(m->shape) + ")");
        } else if (kind == "note") {
            m->notes.push_back(line.substr(5));
        } else if (kind == "time") {
            std::size_t bytes;
            std::string name;
            double us;
            Algorithm alg;
            if (!(ws >> bytes >> name >> us) || !algorithm_from_name(name, &alg) || alg == Algorithm::automatic)
                return Status::invalid(where + "bad time line");
            auto ai = std::find(m->algorithms.begin(), m->algorithms.end(), alg);
            if (ai == m->algorithms.end()) {
                m->algorithms.push_back(alg);
                for (auto& row : m->median_us) row.push_back(kNaN);
                ai = m->algorithms.end() - 1;
            }
            auto si = std::lower_bound(m->sizes.begin(), m->sizes.end(), bytes);
            if (si == m->sizes.end() || *si != bytes) {
                std::size_t at = static_cast<std::size_t>(si - m->sizes.begin());
                m->sizes.insert(si, bytes);
                m->median_us.insert(m->median_us.begin() + static_cast<long>(at),
                                    std::vector<double>(m->algorithms.size(), kNaN));
                si = m->sizes.begin() + static_cast<long>(at);
            }
            m->median_us[static_cast<std::size_t>(si - m->sizes.begin())]
                        [static_cast<std::size_t>(ai - m->algorithms.begin())] = us;
        } else if (!kind.empty() && kind[0] != '#') {
            return Status::invalid(where + "unknown line");
        }
    }
    if (!header) return Status::invalid(path + ": empty file");
    return Status::ok();
}

Status write_rules(const Measurements& m, const Options& o) {
    DecisionTable t;
    TOPOAR_TRY(make_rules(m, o.any_shape, o.tolerance, &t));
    std::string text = t.to_text(rules_comment(m, o));
    // What auto will read must parse: check before writing.
    DecisionTable back;
    TOPOAR_TRY(DecisionTable::from_text(text, o.output, &back));
    if (back != t) return Status::internal("rules did not round-trip");
    std::ofstream f(o.output);
    if (!f) return Status::io(o.output + ": cannot write");
    f << text;
    f.close();
    if (!f) return Status::io(o.output + ": write error");
    std::printf("\n# %s (%zu rule%s):\n%s", o.output.c_str(), t.size(), t.size() == 1 ? "" : "s", text.c_str());
    return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    Options o = parse_args(argc, argv);

    if (!o.merge.empty()) {
        if (g_rank == 0) {
            Measurements m;
            for (std::size_t i = 0; i < o.merge.size(); ++i) {
                Status s = load(o.merge[i], i == 0, &m);
                if (!s) die_alone(s.message());
            }
            if (m.algorithms.empty()) die_alone("no measurements in the --merge files");
            print_table(m, o.tolerance);
            Status s = write_rules(m, o);
            if (!s) die_alone(s.message());
        }
        MPI_Finalize();
        return 0;
    }

    Mpit mpit;
    mpit.init();
    // Set MPI_COMM_WORLD up (with the preset algorithm) before anything is
    // forced: its allreduce carries the tuner's own bookkeeping.
    int one = 1, n = 0;
    MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int preset = mpit.algorithm();
    // Can the algorithm be forced at run time?  Writing the current value
    // changes nothing and tells.
    int rc = mpit.set_algorithm(preset), all_rc = 0;
    MPI_Allreduce(&rc, &all_rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    bool can_force = all_rc == MPI_SUCCESS;
    if (g_rank == 0)
        std::printf("# %s via MPI_T: %s\n", kAlgVar,
                    can_force ? "writable at run time, measuring every algorithm in this job"
                              : ("not writable now (" + mpit_error(rc) + "), measuring the preset one only").c_str());
    if (!can_force) {
        if (preset <= 0 || preset >= kNumAlgorithms)
            die(std::string("cannot force algorithms through MPI_T here; run once per algorithm with\n"
                            "  --mca ") + kAlgVar + " NAME ... topoar_tune --save FILE.NAME\n"
                "and then: topoar_tune --merge FILE.* -o RULES");
        if (o.algorithms_given && std::find(o.algorithms.begin(), o.algorithms.end(),
                                            static_cast<Algorithm>(preset)) == o.algorithms.end())
            die(std::string("--algorithms does not list the preset '") + algorithm_name(static_cast<Algorithm>(preset)) + "'");
        if (o.save.empty()) die("measuring a single algorithm: give --save FILE (then --merge the files)");
    }

    if (o.compare) {
        if (!can_force) die("--compare needs " + std::string(kAlgVar) + " writable through MPI_T");
        Compared c = compare(o, mpit, preset);
        if (g_rank == 0) {
            print_compare(c, o);
            if (!o.csv.empty()) {
                Status s = write_compare_csv(c, o.csv);
                if (!s) die_alone(s.message());
                std::printf("# medians written to %s\n", o.csv.c_str());
            }
        }
        mpit.finalize();
        MPI_Finalize();
        return 0;
    }

    Measurements m = measure(o, mpit, can_force, preset);
    if (g_rank == 0) {
        if (!m.algorithms.empty()) print_table(m, o.tolerance);
        if (!o.save.empty()) {
            Status s = save(m, o.save);
            if (!s) die_alone(s.message());
            std::printf("# medians saved to %s\n", o.save.c_str());
        }
        if (can_force || o.output_given) {
            Status s = write_rules(m, o);
            if (!s) die_alone(s.message());
        }
    }
    mpit.finalize();
    MPI_Finalize();
    return 0;
}
