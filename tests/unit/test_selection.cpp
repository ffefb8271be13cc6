// Unit tests of the engine's selection part (common/engine/selection.hpp),
// built without an Engine: where a decision comes from (forced, rule, cost
// model, built-in, hand-down), and the small-message contest's agreement
// through a fake allgather standing for the other ranks.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "engine/selection.hpp"

// cmocka last: its macros (fail, ...) clash with the C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

#include "cluster_fixtures.hpp"

using namespace topoar;
using topoar_test::hosts_topology;

namespace {

void expect_ok(const Status& s) {
    if (!s) fail_msg("%s", s.message().c_str());
}

int size_of(const Topology& t) { return t.num_ranks(); }

CommShape shape_of(const Topology& t) {
    std::vector<int> per_node;
    for (int n : t.nodes_at(Level::node)) per_node.push_back(t.num_ranks_under(n));
    return make_comm_shape(size_of(t), per_node, static_cast<int>(t.nodes_at(Level::rack).size()));
}

// A selection set up for topo with cfg (contest_io: the ranks can agree).
void set_up(Selection* s, const Topology& topo, bool contest_io = true) {
    expect_ok(s->setup(topo, size_of(topo), shape_of(topo), contest_io, EngineConfig{}.model_overhead));
}

// The contest's configuration here: 3 timed calls per contender (one
// block each).
EngineConfig contest_config() {
    EngineConfig cfg;
    cfg.trial_calls = 3;
    return cfg;
}

int alg(Algorithm a) { return static_cast<int>(a); }
int org(Origin o) { return static_cast<int>(o); }

}  // namespace

// A forced algorithm wins over everything, on host and device buffers, on
// one host and on several.
static void test_forced(void**) {
    EngineConfig cfg;
    cfg.algorithm = Algorithm::ring;
    for (const std::vector<int>& hosts : {std::vector<int>{4}, std::vector<int>{2, 2}}) {
        Selection s(cfg);
        set_up(&s, hosts_topology(hosts));
        for (MemType mem : {MemType::host, MemType::cuda}) {
            const Decision d = s.decide(100, mem);
            assert_int_equal(org(d.origin), org(Origin::forced));
            assert_int_equal(alg(d.algorithm), alg(Algorithm::ring));
        }
        assert_true(s.model_table().empty());  // a forced algorithm needs no table
    }
}

// The first matching rule, with its file:line and segment size; sizes no
// rule covers go to the cost-model table (two hosts).  A bad rules file
// fails set-up with its line.
static void test_rules_then_model(void**) {
    char path[] = "/tmp/topoar-test-selection-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "# topoar rules v1\nallreduce size=0-1K mem=host alg=tree segment=4K\n";
    assert_int_equal(write(fd, text, sizeof text - 1), static_cast<long>(sizeof text - 1));
    close(fd);
    EngineConfig cfg;
    cfg.rules_file = path;
    Selection s(cfg);
    const Topology topo = hosts_topology({2, 2});
    Status st = s.setup(topo, 4, shape_of(topo), true, cfg.model_overhead);
    unlink(path);
    expect_ok(st);
    Decision d = s.decide(100, MemType::host);
    assert_int_equal(org(d.origin), org(Origin::rule));
    assert_int_equal(alg(d.algorithm), alg(Algorithm::tree));
    assert_non_null(d.rule);
    assert_non_null(std::strstr(d.rule, ":2"));
    assert_true(d.has_segment);
    assert_int_equal(d.segment_bytes, 4096);
    assert_int_equal(s.rules().size(), 1);
    // Not a rule's size: the cost-model table's choice, exactly its lookup.
    assert_false(s.model_table().empty());
    const std::size_t big = std::size_t(1) << 20;
    d = s.decide(big, MemType::host);
    assert_int_equal(org(d.origin), org(Origin::model));
    assert_int_equal(alg(d.algorithm), alg(s.model_table().lookup(big, s.shape(), MemType::host).algorithm));
    assert_null(d.rule);

    // A rules file that does not parse: set-up says where.
    char bad[] = "/tmp/topoar-test-selection-XXXXXX";
    fd = mkstemp(bad);
    assert_true(fd >= 0);
    const char wrong[] = "# topoar rules v1\nallreduce size=0-1K alg=no_such_algorithm\n";
    assert_int_equal(write(fd, wrong, sizeof wrong - 1), static_cast<long>(sizeof wrong - 1));
    close(fd);
    cfg.rules_file = bad;
    Selection b(cfg);
    st = b.setup(topo, 4, shape_of(topo), true, cfg.model_overhead);
    unlink(bad);
    assert_false(st.is_ok());
    assert_non_null(std::strstr(st.message().c_str(), ":2"));
}

// Without a table (model_table 0) the built-in choice decides across hosts:
// node leaders up to small_msg_size, trees above; device buffers too.
static void test_builtin(void**) {
    EngineConfig cfg;
    cfg.model_table = false;
    Selection s(cfg);
    set_up(&s, hosts_topology({2, 3}));
    assert_true(s.model_table().empty());
    for (MemType mem : {MemType::host, MemType::cuda}) {
        if (mem == MemType::cuda) s.prepare_device(hosts_topology({2, 3}));
        Decision d = s.decide(8, mem);
        assert_int_equal(org(d.origin), org(Origin::builtin));
        assert_int_equal(alg(d.algorithm), alg(Algorithm::leader));
        d = s.decide(cfg.small_msg_size + 1, mem);
        assert_int_equal(org(d.origin), org(Origin::builtin));
        assert_int_equal(alg(d.algorithm), alg(Algorithm::tree));
    }
    assert_true(s.device_table().empty());  // model_table 0: no device table either
    assert_int_equal(alg(s.builtin_choice(cfg.small_msg_size)), alg(Algorithm::leader));
    assert_int_equal(alg(s.builtin_choice(cfg.small_msg_size + 1)), alg(Algorithm::tree));
}

// auto on one host: host calls are handed down (the previous module),
// device calls get NCCL's allreduce; neither before set-up, and not with
// the single-node fallback off.
static void test_one_host(void**) {
    EngineConfig cfg;
    const Topology one = hosts_topology({4});
    Selection s(cfg);
    // Not set up yet: nothing claims a hand-down.
    assert_int_equal(org(s.decide(1024, MemType::host).origin), org(Origin::builtin));
    set_up(&s, one);
    assert_true(s.model_table().empty());  // one host: auto hands down, no table
    for (std::size_t bytes : {std::size_t(0), std::size_t(8), std::size_t(1) << 20}) {
        assert_int_equal(org(s.decide(bytes, MemType::host).origin), org(Origin::hand_down));
        const Decision d = s.decide(bytes, MemType::cuda);
        assert_int_equal(org(d.origin), org(Origin::builtin));
        assert_int_equal(alg(d.algorithm), alg(Algorithm::nccl));
    }
    cfg.single_node_fallback = false;
    Selection own(cfg);
    set_up(&own, one);
    const Decision d = own.decide(8, MemType::host);
    assert_int_not_equal(org(d.origin), org(Origin::hand_down));
    assert_int_not_equal(org(d.origin), org(Origin::forced));
}

// The contest among the table's choice, the previous module (and node
// leaders): every rank's times, pooled by the allgather, pick the winner,
// even when this rank alone would pick another.  Here this rank (0)
// measures the previous module 20 ms against topoar's 8 ms; the fake
// allgather gives the three other ranks `other_prev` ms for the previous
// module and 8 ms for topoar's contenders.
static std::string run_contest(double other_prev, int* gathers, Contender* winner, bool* all_agreed_sizes) {
    Selection s(contest_config());
    const Topology topo = hosts_topology({2, 2});
    set_up(&s, topo);
    const int size = 4;
    *gathers = 0;
    *all_agreed_sizes = true;
    SetupIo io;
    io.allgather = [&](const void* mine, std::size_t bytes, void* all) {
        ++*gathers;
        // A rank's numbers: every contender's median, then every one's mean.
        const std::size_t n = bytes / sizeof(double), half = n / 2;
        if (bytes % sizeof(double) != 0 || n == 0 || n % 2 != 0) *all_agreed_sizes = false;
        double* out = static_cast<double*>(all);
        std::memcpy(out, mine, bytes);  // rank 0's numbers first
        for (int r = 1; r < size; ++r)
            for (std::size_t i = 0; i < n; ++i)
                out[static_cast<std::size_t>(r) * n + i] = half && i % half == 1 ? other_prev : 8e-3;
        return Status::ok();
    };
    std::string notice;
    const std::size_t bytes = 64;
    SizeTrials::Turn t;
    int turns = 0;
    for (; turns < 100; ++turns) {
        const Decision d = s.decide(bytes, MemType::host);
        t = s.contest_turn(bytes, MemType::host, d, PairCaps{});
        assert_int_equal(t.cls, 6);
        if (t.decided) break;
        const double sec = t.who.hand_down ? 20e-3 : 8e-3;
        expect_ok(s.note_trial(t, sec, io, &notice));
    }
    assert_true(t.decided);
    // One block per contender (2 or 3 of them), then decided.
    assert_true(turns == 2 * SizeTrials::kBlock || turns == 3 * SizeTrials::kBlock);
    *winner = t.who;
    // A decided turn stays decided and is not noted again.
    const int before = *gathers;
    expect_ok(s.note_trial(t, 1.0, io, &notice));
    assert_int_equal(*gathers, before);
    return notice;
}

static void test_contest_agreement(void**) {
    int gathers = 0;
    Contender w;
    bool sizes = false;
    // Others: the previous module 1 ms.  Pooled 23 ms against 32 ms: it
    // wins for every rank although rank 0 measured it slower.
    std::string notice = run_contest(1e-3, &gathers, &w, &sizes);
    assert_true(w.hand_down);
    assert_int_equal(gathers, 1);  // one round: one allgather at its end
    assert_true(sizes);
    assert_non_null(std::strstr(notice.c_str(), "previous module from now on"));
    // Others: the previous module 12 ms.  Pooled 56 ms: the table's choice
    // keeps the class.
    notice = run_contest(12e-3, &gathers, &w, &sizes);
    assert_false(w.hand_down);
    assert_int_equal(gathers, 1);
    assert_non_null(std::strstr(notice.c_str(), "(auto's table's choice)"));
}

// Who takes part: a result the previous module could compute otherwise
// keeps it out (the table's choice takes its turn); no contest without the
// ranks' I/O, for a rule's or forced choice, above trial_max_size, on one
// host, or for device buffers.
static void test_contest_turns(void**) {
    const EngineConfig cfg = contest_config();
    const Topology two = hosts_topology({2, 2});
    Selection s(cfg);
    set_up(&s, two);
    PairCaps differs;
    differs.previous_differs = true;
    for (int k = 0; k < 3 * SizeTrials::kBlock; ++k) {
        const SizeTrials::Turn t = s.contest_turn(64, MemType::host, s.decide(64, MemType::host), differs);
        assert_int_equal(t.cls, 6);
        assert_false(t.who.hand_down);
    }
    const Decision d = s.decide(64, MemType::host);
    assert_int_equal(s.contest_turn(cfg.trial_max_size + 1, MemType::host, s.decide(cfg.trial_max_size + 1,
                                                                                    MemType::host), PairCaps{}).cls,
                     -1);
    assert_int_equal(s.contest_turn(64, MemType::cuda, d, PairCaps{}).cls, -1);
    Decision rule = d;
    rule.origin = Origin::rule;
    assert_int_equal(s.contest_turn(64, MemType::host, rule, PairCaps{}).cls, -1);

    Selection quiet(cfg);
    set_up(&quiet, two, /*contest_io=*/false);
    assert_int_equal(quiet.contest_turn(64, MemType::host, quiet.decide(64, MemType::host), PairCaps{}).cls, -1);

    EngineConfig forced = cfg;
    forced.algorithm = Algorithm::tree;
    Selection f(forced);
    set_up(&f, two);
    assert_int_equal(f.contest_turn(64, MemType::host, f.decide(64, MemType::host), PairCaps{}).cls, -1);

    Selection one(cfg);
    set_up(&one, hosts_topology({4}));
    Decision b;
    b.algorithm = Algorithm::leader;
    b.origin = Origin::builtin;
    assert_int_equal(one.contest_turn(64, MemType::host, b, PairCaps{}).cls, -1);
}

// The contest's winner watched (coll_topoar_trial_watch, decide/trials.hpp)
// through Selection::note_trial: the winner (the latency algorithm, fastest
// in its blocks) runs its window 2x slower than in the contest; the table's
// choice, whose contest time beats that, gets a window and runs as in its
// contest: it takes the class, the notice says so, and the outcome store
// holds it for later communicators.  With the watch off the contest's
// winner stays and nothing more is pooled.
static void test_contest_watch(void**) {
    for (int watch = 1; watch >= 0; --watch) {
        EngineConfig cfg = contest_config();
        cfg.trial_watch = watch != 0;
        const Topology topo = hosts_topology({2, 3});
        OutcomeStore store;
        Selection s(cfg);
        s.use_outcome_store(&store);
        set_up(&s, topo);
        std::size_t bytes = 8;  // the smallest size whose table choice is not the latency algorithm
        while (bytes < cfg.trial_max_size && s.decide(bytes, MemType::host).algorithm == Algorithm::leader) bytes *= 2;
        const Decision d = s.decide(bytes, MemType::host);
        assert_int_not_equal(alg(d.algorithm), alg(Algorithm::leader));  // three contenders
        const int cls = SizeTrials::size_class(bytes);
        int gathers = 0;
        SetupIo io;
        io.allgather = [&](const void* mine, std::size_t n, void* all) {
            ++gathers;
            for (int r = 0; r < 5; ++r) std::memcpy(static_cast<char*>(all) + static_cast<std::size_t>(r) * n, mine, n);
            return Status::ok();
        };
        std::string notice;
        std::string order;
        for (int k = 0; k < 200; ++k) {
            SizeTrials::Turn t = s.contest_turn(bytes, MemType::host, d, PairCaps{});
            assert_int_equal(t.cls, cls);
            if (t.decided && !t.watched) break;
            const bool leader = !t.who.hand_down && t.who.algorithm == Algorithm::leader;
            // In the contest: leader 8 ms, the table's choice 12, the
            // previous module 30; watched: leader 16 ms, the table's 12.
            double sec = t.who.hand_down ? 30e-3 : leader ? 8e-3 : 12e-3;
            if (t.watched && leader) sec = 16e-3;
            if (t.watched && t.agree) order += contender_name(t.who) + " ";
            expect_ok(s.note_trial(t, sec, io, &notice));
        }
        const SizeTrials::Turn after = s.contest_turn(bytes, MemType::host, d, PairCaps{});
        const int table = 0, leader = 2;
        const std::uint64_t kept =
            store.get(contest_key(topo, cfg, table_options(cfg)))[static_cast<std::size_t>(cls)];
        const std::string table_name = algorithm_name(d.algorithm);
        std::vector<Contender> who;
        int winner = -1;
        assert_true(decode_outcome(kept, &who, &winner));
        if (watch) {
            assert_string_equal(order.c_str(), ("leader " + table_name + " ").c_str());
            assert_int_equal(after.index, table);
            assert_int_equal(winner, table);
            assert_non_null(std::strstr(notice.c_str(), "leader watched after the contest, 16000 us per call "
                                                        "(8000 us in the contest;"));
            assert_non_null(std::strstr(notice.c_str(),
                                        (": " + table_name + " runs the next 32 calls (12000 us in the contest)").c_str()));
            assert_non_null(std::strstr(notice.c_str(),
                                        (table_name + " watched after the contest, 12000 us per call (12000 us in the "
                                                      "contest; mean of 16 calls and of the ranks): " +
                                         table_name + " from now on (watched: " + table_name + " 12000 us leader 16000 us)")
                                            .c_str()));
            assert_int_equal(gathers, 3);  // the contest's round, two windows
        } else {
            assert_true(order.empty());
            assert_int_equal(after.index, leader);
            assert_int_equal(winner, leader);
            assert_null(std::strstr(notice.c_str(), "watched"));
            assert_int_equal(gathers, 1);
        }
    }
}

// rebuild() (the links measured again): the contests start over, the rules
// stay.
static void test_rebuild(void**) {
    const Topology two = hosts_topology({2, 2});
    Selection s(contest_config());
    set_up(&s, two);
    SetupIo io;
    io.allgather = [](const void* mine, std::size_t bytes, void* all) {
        for (int r = 0; r < 4; ++r) std::memcpy(static_cast<char*>(all) + r * bytes, mine, bytes);
        return Status::ok();
    };
    std::string notice;
    SizeTrials::Turn t;
    for (int k = 0; k < 100; ++k) {
        t = s.contest_turn(64, MemType::host, s.decide(64, MemType::host), PairCaps{});
        if (t.decided) break;
        expect_ok(s.note_trial(t, 1e-3, io, &notice));
    }
    assert_true(t.decided);
    const std::string table = s.model_table().to_text("cost model");
    expect_ok(s.rebuild(two, EngineConfig{}.model_overhead));
    assert_string_equal(s.model_table().to_text("cost model").c_str(), table.c_str());
    t = s.contest_turn(64, MemType::host, s.decide(64, MemType::host), PairCaps{});
    assert_false(t.decided);
    assert_int_equal(t.index, 0);
}

// The outcomes' codes read back; bad codes do not.
static void test_outcome_codes(void**) {
    const std::vector<Contender> who{{false, Algorithm::tree}, {true, Algorithm::automatic},
                                     {false, Algorithm::leader}};
    for (int w = 0; w < 3; ++w) {
        const std::uint64_t code = encode_outcome(who, w);
        assert_true(code != 0);
        std::vector<Contender> back;
        int wb = -1;
        assert_true(decode_outcome(code, &back, &wb));
        assert_int_equal(wb, w);
        assert_int_equal(back.size(), 3);
        for (std::size_t i = 0; i < 3; ++i) assert_true(back[i] == who[i]);
    }
    assert_int_equal(encode_outcome(who, 3), 0);
    assert_int_equal(encode_outcome({}, 0), 0);
    std::vector<Contender> back;
    int wb = -1;
    assert_false(decode_outcome(0, &back, &wb));
    assert_false(decode_outcome(encode_outcome(who, 0) | std::uint64_t(1) << 60, &back, &wb));  // stray bits
    assert_false(decode_outcome((encode_outcome(who, 0) & ~std::uint64_t(0xff)) | 4, &back, &wb));  // 4 contenders
    assert_false(decode_outcome(encode_outcome(who, 0) | 3 << 8, &back, &wb));  // winner 3 of 3
    assert_false(decode_outcome(2 | std::uint64_t(200) << 16, &back, &wb));     // no algorithm 200
    // The store: bounded by keys, counted per outcome.
    OutcomeStore store;
    store.put(1, 3, encode_outcome(who, 1));
    store.put(1, 3, encode_outcome(who, 2));  // replaced, still one
    store.put(1, 4, encode_outcome(who, 0));
    store.put(1, 70, encode_outcome(who, 0));  // no such class: ignored
    assert_int_equal(store.count(), 2);
    for (std::uint64_t k = 2; k < 2 + OutcomeStore::kMaxKeys; ++k) store.put(k, 5, encode_outcome(who, 0));
    assert_int_equal(store.get(1)[3], 0);  // the oldest key went
    assert_int_equal(store.count(), static_cast<int>(OutcomeStore::kMaxKeys));
    store.clear();
    assert_int_equal(store.count(), 0);
}

// agree_outcomes with a fake allgather standing for the other ranks: a
// class every rank holds alike starts decided; one that any rank lacks or
// holds otherwise, or any rank on another key, starts a contest; nobody
// holding anything: no exchange at all.
static void test_agree_outcomes(void**) {
    const EngineConfig cfg = contest_config();
    const Topology two = hosts_topology({2, 3});
    const int size = 5;
    const std::vector<Contender> who{{false, Algorithm::tree}, {true, Algorithm::automatic},
                                     {false, Algorithm::leader}};
    const std::uint64_t key = contest_key(two, cfg, table_options(cfg));
    const std::uint64_t prev = encode_outcome(who, 1), leader = encode_outcome(who, 2);
    // others(r, class) -> code; other_key: what the other ranks send as key.
    auto run = [&](std::uint64_t other_key, const std::vector<int>& held, int* gathers) {
        OutcomeStore mine;
        mine.put(key, 3, prev);
        mine.put(key, 4, prev);
        mine.put(key, 5, prev);
        Selection s(cfg);
        s.use_outcome_store(&mine);
        set_up(&s, two);
        *gathers = 0;
        SetupIo io;
        io.allgather = [&](const void* data, std::size_t bytes, void* all) {
            ++*gathers;
            const std::size_t n = bytes / 8;
            std::uint64_t* out = static_cast<std::uint64_t*>(all);
            std::memcpy(out, data, bytes);
            for (int r = 1; r < size; ++r) {
                std::uint64_t* row = out + static_cast<std::size_t>(r) * n;
                std::memcpy(row, data, bytes);
                row[0] = other_key;
                if (r == 2) row[1 + 4] = 0;       // rank 2 lacks class 4
                if (r == 4) row[1 + 5] = leader;  // rank 4 settled class 5 otherwise
            }
            return Status::ok();
        };
        expect_ok(s.agree_outcomes(held, io));
        return s;
    };
    int gathers = 0;
    Selection s = run(key, {3, 2, 0, 3, 3}, &gathers);
    assert_int_equal(gathers, 1);
    assert_non_null(std::strstr(s.agreed_outcomes().c_str(), "1 size class start decided"));
    auto first_turn = [](Selection& sel, std::size_t bytes) {
        return sel.contest_turn(bytes, MemType::host, sel.decide(bytes, MemType::host), PairCaps{});
    };
    SizeTrials::Turn t = first_turn(s, 8);
    assert_true(t.decided && t.who.hand_down);
    assert_false(first_turn(s, 16).decided);
    assert_false(first_turn(s, 32).decided);
    // Another key on the other ranks: nothing taken.
    s = run(key + 1, {3, 2, 0, 3, 3}, &gathers);
    assert_int_equal(gathers, 1);
    assert_true(s.agreed_outcomes().empty());
    assert_false(first_turn(s, 8).decided);
    // Nobody holds any: no allgather (what the ranks advertised decides,
    // the same on every rank).
    s = run(key, {0, 0, 0, 0, 0}, &gathers);
    assert_int_equal(gathers, 0);
    assert_false(first_turn(s, 8).decided);
}


// coll_topoar_contest_cache_dir: a settled class is written (rank 0) to a
// file keyed by the cluster, shape, build and settings; a later "job" (a
// fresh store) reads it on rank 0 and every rank takes rank 0's row; a file
// that does not read back is ignored with a message naming file and line.
static void test_contest_cache_file(void**) {
    char dir[] = "/tmp/topoar-test-cache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    EngineConfig cfg = contest_config();
    cfg.contest_cache_dir = dir;
    const Topology two = hosts_topology({2, 2});
    const std::uint64_t fkey = contest_file_key(two, cfg, table_options(cfg));
    const std::string path = contest_file_path(dir, fkey);
    // Other settings or another cluster: another file.
    EngineConfig other = cfg;
    other.trial_calls = 6;
    assert_true(contest_file_key(two, other, table_options(other)) != fkey);
    assert_true(contest_file_key(hosts_topology({2, 2}, "other"), cfg, table_options(cfg)) != fkey);
    SetupIo io;
    io.allgather = [](const void* mine, std::size_t bytes, void* all) {
        for (int r = 0; r < 4; ++r) std::memcpy(static_cast<char*>(all) + r * bytes, mine, bytes);
        return Status::ok();
    };
    // Job 1: the 8 B class settles (every rank 1 ms), rank 0 writes the file.
    {
        OutcomeStore store;
        Selection s(cfg);
        s.use_outcome_store(&store);
        set_up(&s, two);
        expect_ok(s.agree_outcomes({0, 0, 0, 0}, io));  // no file yet: nothing, no message
        assert_true(s.agreed_outcomes().empty());
        std::string notice;
        SizeTrials::Turn t;
        for (int k = 0; k < 100; ++k) {
            t = s.contest_turn(8, MemType::host, s.decide(8, MemType::host), PairCaps{});
            if (t.decided) break;
            expect_ok(s.note_trial(t, t.who.hand_down ? 1e-3 : 8e-3, io, &notice));
        }
        assert_true(t.decided && t.who.hand_down);
        assert_null(std::strstr(notice.c_str(), "not written"));
    }
    OutcomeStore::Codes codes{};
    std::string problem;
    assert_true(read_contest_file(path, fkey, &codes, &problem));
    assert_true(codes[3] != 0);
    // Job 2: a fresh store; the class starts decided from rank 0's file.
    auto job2 = [&](std::string* agreed) {
        OutcomeStore store;
        Selection s(cfg);
        s.use_outcome_store(&store);
        set_up(&s, two);
        expect_ok(s.agree_outcomes({0, 0, 0, 0}, io));
        *agreed = s.agreed_outcomes();
        return s.contest_turn(8, MemType::host, s.decide(8, MemType::host), PairCaps{});
    };
    std::string agreed;
    SizeTrials::Turn t = job2(&agreed);
    assert_true(t.decided && t.who.hand_down);
    assert_non_null(std::strstr(agreed.c_str(), "1 from rank 0's cache file"));
    // Bad files: ignored, said with file:line, the contest runs.
    const char* bad[] = {"not a cache\n", "# topoar contest outcomes v1\nkey 12\n",
                         "# topoar contest outcomes v1\nkey %s\nclass 3 zz\n",
                         "# topoar contest outcomes v1\nkey %s\nclass 3 7\n",  // 7 contenders
                         "# topoar contest outcomes v1\nkey %s\nclass 99 102\n"};
    const char* where[] = {":1: not a topoar", ":2: written for another", ":3: a bad class line",
                           ":3: an outcome that does not read back", ":3: a bad class line"};
    char hex[32];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fkey));
    for (int i = 0; i < 5; ++i) {
        char text[256];
        std::snprintf(text, sizeof text, bad[i], hex);
        FILE* f = std::fopen(path.c_str(), "w");
        assert_non_null(f);
        std::fputs(text, f);
        std::fclose(f);
        t = job2(&agreed);
        assert_false(t.decided);
        assert_non_null(std::strstr(agreed.c_str(), "cache file ignored"));
        assert_non_null(std::strstr(agreed.c_str(), where[i]));
    }
    // A directory that cannot be written: said in the notice, no failure.
    EngineConfig nowhere = cfg;
    nowhere.contest_cache_dir = std::string(dir) + "/missing/dir";
    Selection s(nowhere);
    OutcomeStore store;
    s.use_outcome_store(&store);
    set_up(&s, two);
    expect_ok(s.agree_outcomes({0, 0, 0, 0}, io));
    std::string notice;
    for (int k = 0; k < 100; ++k) {
        t = s.contest_turn(8, MemType::host, s.decide(8, MemType::host), PairCaps{});
        if (t.decided) break;
        expect_ok(s.note_trial(t, 1e-3, io, &notice));
    }
    assert_non_null(std::strstr(notice.c_str(), "cache file not written"));
    unlink(path.c_str());
    assert_int_equal(rmdir(dir), 0);  // nothing else left there (no temporary files)
}

// The large-message check's state machine (decide/model_check.hpp): sizes
// it covers, the warm-up and the timed call, another plan's turn only when
// predicted faster than the choice ran by more than kGain, the fastest
// measured kept (an alternative must beat the choice by kWin), at most
// kAlternatives tried, classes independent, reset forgets.
// One plan's window of the check: a first call not timed, then kSamples
// timed, the last of which pools; each timed call's sample is `per_byte`.
// Returns the pool turn.
static ModelCheck::Turn check_window(ModelCheck& m, std::size_t bytes, Algorithm choice, Algorithm expect,
                                     double per_byte) {
    ModelCheck::Turn t = m.next(bytes, choice);
    assert_true(t.algorithm == expect && !t.timed && !t.pool && !t.decided);
    for (int k = 1; k <= ModelCheck::kSamples; ++k) {
        t = m.next(bytes, choice);
        assert_true(t.algorithm == expect && t.timed && !t.decided);
        assert_true(t.pool == (k == ModelCheck::kSamples));
        assert_true(std::fabs(m.sample(t, per_byte) - per_byte) < 1e-15);
    }
    return t;
}

// The previous module's turn (ModelCheck::kLost): where the fastest plan
// ran more than kLost x its own prediction it gets a window like a plan's,
// handed down, its first timed call also pooled alone (kAbort); calls it
// may not run (previous_ok false) wait and take the fastest plan,
// untimed; it keeps the class only if faster by kWin.
// Up to its window's last call, each at per_byte (its first within kAbort).
static ModelCheck::Turn previous_window(ModelCheck& m, std::size_t bytes, double per_byte) {
    std::string line;
    // A call the previous module may not run: the fastest plan, untimed, and
    // the turn does not move.
    ModelCheck::Turn t = m.next(bytes, Algorithm::tree, false);
    assert_true(!t.previous && !t.timed && !t.pool && !t.decided);
    t = m.next(bytes, Algorithm::tree, true);
    assert_true(t.previous && !t.timed && !t.pool && !t.decided);  // its warm-up
    for (int k = 1; k <= ModelCheck::kSamples; ++k) {
        t = m.next(bytes, Algorithm::tree, true);
        assert_true(t.previous && t.timed && !t.decided);
        assert_true(t.pool == (k == 1 || k == ModelCheck::kSamples));
        assert_true(std::fabs(m.sample(t, per_byte) - per_byte) < 1e-15);
        if (k == 1) {  // pooled alone, within kAbort: goes on
            (void)m.note(t, per_byte, -1, {}, {}, &line, true);
            assert_true(line.empty() && m.winner(m.size_class(bytes)) == Algorithm::automatic);
        }
    }
    return t;
}

static void test_model_check_previous(void**) {
    ModelCheck m;
    m.configure(true, std::size_t(1) << 20);
    std::string line;
    const std::vector<Algorithm> others = {Algorithm::flexreduce, Algorithm::ring};
    // Tree predicted 1 ns/B ran 5; flexreduce (predicted 0.9) ran 4.5, and
    // no other plan is predicted faster than that: flexreduce, the fastest,
    // ran more than kLost x its prediction: the previous module next.
    const std::size_t b = std::size_t(4) << 20;
    ModelCheck::Turn t = check_window(m, b, Algorithm::tree, Algorithm::tree, 5.0e-9);
    assert_true(m.note(t, 5.0e-9, 1.0e-9, others, {0.9e-9, 5e-9}, &line, true) == Algorithm::flexreduce);
    t = check_window(m, b, Algorithm::tree, Algorithm::flexreduce, 4.5e-9);
    assert_true(m.note(t, 4.5e-9, 0.9e-9, {Algorithm::ring}, {5e-9}, &line, true) == Algorithm::flexreduce);
    assert_non_null(std::strstr(line.c_str(), "the previous module's turn next"));
    assert_true(m.winner(m.size_class(b)) == Algorithm::automatic);
    t = previous_window(m, b, 3.0e-9);
    assert_true(m.note(t, 3.0e-9, -1, {}, {}, &line, true) == Algorithm::flexreduce);
    assert_non_null(std::strstr(line.c_str(), "the previous module from now on"));
    assert_true(m.winner(m.size_class(b)) == Algorithm::flexreduce && m.handed_down(m.size_class(b)));
    // Decided: handed down, not watched; a call it may not run takes flexreduce.
    t = m.next(b, Algorithm::tree, true);
    assert_true(t.decided && t.previous && !t.timed && !t.watched);
    t = m.next(b, Algorithm::tree, false);
    assert_true(t.decided && !t.previous && t.algorithm == Algorithm::flexreduce);

    // Not faster by kWin (3 %): the fastest plan keeps the class.
    const std::size_t c = std::size_t(16) << 20;
    t = check_window(m, c, Algorithm::tree, Algorithm::tree, 2.5e-9);
    assert_true(m.note(t, 2.5e-9, 1.0e-9, {Algorithm::ring}, {3e-9}, &line, true) == Algorithm::tree);
    assert_non_null(std::strstr(line.c_str(), "the previous module's turn next"));
    t = previous_window(m, c, 2.45e-9);
    assert_true(m.note(t, 2.45e-9, -1, {}, {}, &line, true) == Algorithm::tree);
    assert_non_null(std::strstr(line.c_str(), "tree from now on"));
    assert_false(m.handed_down(m.size_class(c)));
    t = m.next(c, Algorithm::tree, true);
    assert_true(t.decided && !t.previous && t.algorithm == Algorithm::tree);

    // Its first call more than kAbort x slower than the fastest plan: the
    // turn ends there, the plan keeps the class.
    const std::size_t g = std::size_t(8) << 20;
    t = check_window(m, g, Algorithm::tree, Algorithm::tree, 2.5e-9);
    assert_true(m.note(t, 2.5e-9, 1.0e-9, {Algorithm::ring}, {3e-9}, &line, true) == Algorithm::tree);
    assert_false(m.next(g, Algorithm::tree, true).timed);  // its warm-up
    t = m.next(g, Algorithm::tree, true);
    assert_true(t.previous && t.timed && t.pool);
    (void)m.sample(t, 4.0e-9);
    assert_true(m.note(t, 4.0e-9, -1, {}, {}, &line, true) == Algorithm::tree);
    assert_non_null(std::strstr(line.c_str(), "its first timed call"));
    assert_true(m.next(g, Algorithm::tree, true).decided && !m.handed_down(m.size_class(g)));

    // Within kLost of its prediction, or not allowed: no turn, decided at once.
    const std::size_t d = std::size_t(64) << 20;
    t = check_window(m, d, Algorithm::tree, Algorithm::tree, 1.95e-9);
    assert_true(m.note(t, 1.95e-9, 1.0e-9, {Algorithm::ring}, {3e-9}, &line, true) == Algorithm::tree);
    assert_null(std::strstr(line.c_str(), "previous module"));
    assert_true(m.next(d, Algorithm::tree, true).decided);
    const std::size_t e = std::size_t(128) << 20;
    t = check_window(m, e, Algorithm::tree, Algorithm::tree, 5.0e-9);
    assert_true(m.note(t, 5.0e-9, 1.0e-9, {Algorithm::ring}, {6e-9}, &line, false) == Algorithm::tree);
    assert_true(m.next(e, Algorithm::tree, true).decided && !m.handed_down(m.size_class(e)));
}

// units_for_links: across hosts the segment, pipelining unit and flight
// bound fit the slowest network link; a rack uplink counts; one host, an
// unknown rate or unit_time 0 leave them as set.
static void test_units_for_links(void**) {
    const EngineConfig cfg;  // 32 KiB, 32 KiB, 64 KiB, 200 us
    const Link rank_up{10e9, 0.3e-6};
    Topology fast, slow, one, unknown;
    assert_true(Topology::from_node_sizes({2, 3}, Link{1.25e9, 10e-6}, rank_up, &fast).is_ok());
    assert_true(Topology::from_node_sizes({2, 3}, Link{125e6, 20e-6}, rank_up, &slow).is_ok());
    assert_true(Topology::from_node_sizes({5}, Link{1.25e9, 10e-6}, rank_up, &one).is_ok());
    assert_true(Topology::from_node_sizes({2, 3}, Link{0, 10e-6}, rank_up, &unknown).is_ok());
    EngineConfig u = units_for_links(cfg, fast);
    assert_int_equal(u.segment_size, 262144);
    assert_int_equal(u.pipeline_size, 262144);
    assert_int_equal(u.flight_size, 524288);
    for (const Topology* t : {&slow, &one, &unknown}) {
        u = units_for_links(cfg, *t);
        assert_int_equal(u.segment_size, cfg.segment_size);
        assert_int_equal(u.pipeline_size, cfg.pipeline_size);
        assert_int_equal(u.flight_size, cfg.flight_size);
    }
    EngineConfig off = cfg;
    off.unit_time = 0;
    assert_int_equal(units_for_links(off, fast).segment_size, cfg.segment_size);
    EngineConfig unbounded = cfg;
    unbounded.flight_size = 0;  // no bound stays none
    assert_int_equal(units_for_links(unbounded, fast).flight_size, 0);
    // Fast hosts behind a 200 Mbit/s rack uplink: the uplink decides.
    const std::string racks =
        "rack r0 bw=200Mbit lat=100us\n  node a bw=10Gbit lat=10us\n    ranks 0 1 bw=10GB/s lat=300ns\n"
        "rack r1 bw=200Mbit lat=100us\n  node b bw=10Gbit lat=10us\n    ranks 2 3 bw=10GB/s lat=300ns\n";
    Topology racked;
    assert_true(Topology::from_text(racks, "test", &racked).is_ok());
    assert_int_equal(units_for_links(cfg, racked).segment_size, cfg.segment_size);
}

static void test_model_check(void**) {
    ModelCheck m;
    m.configure(true, std::size_t(1) << 20);
    std::string line;
    assert_int_equal(m.next(std::size_t(1) << 19, Algorithm::tree).cls, -1);  // below 1 MiB: not checked
    const std::size_t b = std::size_t(8) << 20;
    const std::vector<Algorithm> others = {Algorithm::flexreduce, Algorithm::leader, Algorithm::ring};
    // Choice tree ran 1.0 ns/B: flexreduce predicted 0.8 (0.84 with kGain) gets a turn, not
    // leader's 0.96 (1.008); flexreduce ran 0.85 and keeps the class (ring's 0.82 * 1.05 > 0.85).
    ModelCheck::Turn t = m.next(b, Algorithm::tree);
    assert_int_equal(t.cls, 23);
    assert_true(t.algorithm == Algorithm::tree && !t.timed && !t.decided);
    t = m.next(b, Algorithm::leader);  // the choice is the class's first one
    assert_true(t.algorithm == Algorithm::tree && t.timed && !t.pool);
    // A timed call that does not pool decides nothing and names nothing.
    assert_true(std::fabs(m.sample(t, 0.5e-9) - 0.5e-9) < 1e-15);
    assert_true(m.note(t, 0.5e-9, 0.7e-9, others, {0.8e-9, 0.96e-9, -1}, &line) == Algorithm::tree);
    assert_true(line.empty());
    t = m.next(b, Algorithm::tree);
    assert_true(t.algorithm == Algorithm::tree && t.timed && t.pool);
    // The window's mean: the fast first sample does not decide alone.
    assert_true(std::fabs(m.sample(t, 1.5e-9) - 1.0e-9) < 1e-15);
    assert_true(m.note(t, 1.0e-9, 0.7e-9, others, {0.8e-9, 0.96e-9, -1}, &line) == Algorithm::flexreduce);
    assert_non_null(std::strstr(line.c_str(), "its turn next"));
    t = check_window(m, b, Algorithm::tree, Algorithm::flexreduce, 0.85e-9);
    assert_true(m.note(t, 0.85e-9, 0.8e-9, {Algorithm::leader, Algorithm::ring}, {0.96e-9, 0.82e-9}, &line) ==
                Algorithm::flexreduce);
    assert_non_null(std::strstr(line.c_str(), "flexreduce from now on"));
    t = m.next(b, Algorithm::tree);
    assert_true(t.algorithm == Algorithm::flexreduce && t.decided && !t.timed && !t.pool);
    assert_true(m.winner(23) == Algorithm::flexreduce);
    assert_int_equal(m.tried(23), 2);

    // Another class: the choice within kGain of every prediction: decided at once.
    const std::size_t c = std::size_t(2) << 20;
    t = check_window(m, c, Algorithm::leader, Algorithm::leader, 1.0e-9);
    assert_true(m.note(t, 1.0e-9, 0.8e-9, others, {0.96e-9, 0.99e-9, 2e-9}, &line) == Algorithm::leader);
    assert_non_null(std::strstr(line.c_str(), "no other plan predicted faster than it ran"));
    assert_true(m.next(c, Algorithm::tree).decided);
    assert_true(m.winner(23) == Algorithm::flexreduce);  // the other class unchanged

    // An alternative not faster by kWin: the choice stays; at most kAlternatives tried.
    const std::size_t d = std::size_t(32) << 20;
    t = check_window(m, d, Algorithm::tree, Algorithm::tree, 1.0e-9);
    assert_true(m.note(t, 1.0e-9, -1, others, {0.5e-9, 0.5e-9, 0.5e-9}, &line) == Algorithm::flexreduce);
    t = check_window(m, d, Algorithm::tree, Algorithm::flexreduce, 0.98e-9);
    assert_true(m.note(t, 0.98e-9, -1, {Algorithm::leader, Algorithm::ring}, {0.5e-9, 0.4e-9}, &line) ==
                Algorithm::ring);  // the fastest prediction left
    t = check_window(m, d, Algorithm::tree, Algorithm::ring, 0.99e-9);
    assert_true(m.note(t, 0.99e-9, -1, {Algorithm::leader}, {0.1e-9}, &line) == Algorithm::tree);
    assert_int_equal(m.tried(m.size_class(d)), 3);  // leader not tried: two alternatives at most
    assert_non_null(std::strstr(line.c_str(), "tree from now on (auto's table's choice)"));

    // The choice ran within kOwn (5 %) of its own prediction: kept at once,
    // even with another plan predicted twice as fast (the table ranked both).
    const std::size_t e = std::size_t(128) << 20;
    t = check_window(m, e, Algorithm::flexreduce, Algorithm::flexreduce, 1.04e-9);
    assert_true(m.note(t, 1.04e-9, 1.0e-9, others, {0.5e-9, 0.5e-9, 0.5e-9}, &line) == Algorithm::flexreduce);
    assert_non_null(std::strstr(line.c_str(), "at most 5 % slower than its prediction"));
    assert_int_equal(m.tried(m.size_class(e)), 1);
    // 6 % slower than predicted: the faster prediction gets its turn.
    const std::size_t f = std::size_t(256) << 20;
    t = check_window(m, f, Algorithm::flexreduce, Algorithm::flexreduce, 1.06e-9);
    assert_true(m.note(t, 1.06e-9, 1.0e-9, {Algorithm::leader, Algorithm::ring, Algorithm::tree},
                       {0.6e-9, 0.5e-9, 0.7e-9}, &line) == Algorithm::ring);
    assert_non_null(std::strstr(line.c_str(), "predicted 1000 MB/s)"));  // the choice's own prediction said
    t = m.next(f, Algorithm::flexreduce);
    assert_true(!t.timed && t.algorithm == Algorithm::ring);  // its own warm-up first
    t = m.next(f, Algorithm::flexreduce);
    assert_true(t.timed && !t.pool && t.algorithm == Algorithm::ring);
    assert_int_equal(m.tried(m.size_class(f)), 2);

    // The alternative ran as far from its prediction as the choice, and no
    // faster: the network is what the model got wrong; no more tries.
    const std::size_t h = std::size_t(1) << 30;
    t = check_window(m, h, Algorithm::tree, Algorithm::tree, 2.0e-9);
    assert_true(m.note(t, 2.0e-9, 1.0e-9, others, {1.0e-9, 1.1e-9, 1.2e-9}, &line) == Algorithm::flexreduce);
    t = check_window(m, h, Algorithm::tree, Algorithm::flexreduce, 1.95e-9);
    assert_true(m.note(t, 1.95e-9, 1.0e-9, {Algorithm::leader, Algorithm::ring}, {1.1e-9, 1.2e-9}, &line) ==
                Algorithm::tree);
    assert_non_null(std::strstr(line.c_str(), "the network, not the plan; no more tries"));
    assert_int_equal(m.tried(m.size_class(h)), 2);

    // The same with flexreduce and then flexrelay, which both lay their
    // shares out by the measured links: those may be what is wrong, so a
    // plan that does not weigh by them gets its turn, and wins.
    const std::size_t ww = std::size_t(2) << 30;
    t = check_window(m, ww, Algorithm::flexreduce, Algorithm::flexreduce, 2.0e-9);
    assert_true(m.note(t, 2.0e-9, 0.8e-9, {Algorithm::flexrelay, Algorithm::tree}, {0.9e-9, 1.0e-9}, &line) ==
                Algorithm::flexrelay);
    t = check_window(m, ww, Algorithm::flexreduce, Algorithm::flexrelay, 2.1e-9);
    assert_true(m.note(t, 2.1e-9, 0.9e-9, {Algorithm::tree}, {1.0e-9}, &line) == Algorithm::tree);
    assert_null(std::strstr(line.c_str(), "no more tries"));
    assert_non_null(std::strstr(line.c_str(), "tree predicted"));
    t = check_window(m, ww, Algorithm::flexreduce, Algorithm::tree, 1.0e-9);
    assert_true(m.note(t, 1.0e-9, 1.0e-9, {}, {}, &line) == Algorithm::tree);
    assert_non_null(std::strstr(line.c_str(), "tree from now on"));
    assert_int_equal(m.tried(m.size_class(ww)), 3);

    // A window extended at its pool turn: one more timed call pools again,
    // with the mean of all three samples.
    const std::size_t g = std::size_t(512) << 20;
    t = check_window(m, g, Algorithm::leader, Algorithm::leader, 1.0e-9);
    assert_true(m.extend(t));
    t = m.next(g, Algorithm::leader);
    assert_true(t.algorithm == Algorithm::leader && t.timed && t.pool && !t.decided);
    assert_true(std::fabs(m.sample(t, 1.6e-9) - 1.2e-9) < 1e-15);
    assert_false(m.extend(t));  // once per class
    assert_true(m.note(t, 1.2e-9, 1.0e-9, {Algorithm::tree}, {1.0e-9}, &line) == Algorithm::tree);
    t = m.next(g, Algorithm::leader);
    assert_true(t.algorithm == Algorithm::tree && !t.timed);
    assert_false(m.extend(t));  // not a pool turn: nothing changes
    t = m.next(g, Algorithm::leader);
    assert_true(t.timed && !t.pool);

    // A decided plan whose window ran within kOwn of its prediction is
    // watched: its first call after the decision not timed, then windows
    // of kWatch timed calls, each pooled at its last.  A window within
    // kOwn of that prediction goes on; two windows in a row more than kOwn
    // slower open the class again, once, judged by their mean, and the
    // plans run before are not run again.
    const std::size_t w = std::size_t(4) << 20;
    const auto watch_window = [&](std::size_t bytes, Algorithm a, double per_byte) {
        ModelCheck::Turn u;
        for (int k = 1; k <= ModelCheck::kWatch; ++k) {
            u = m.next(bytes, Algorithm::tree);
            assert_true(u.decided && u.watched && u.timed && u.pool == (k == ModelCheck::kWatch));
            assert_true(u.algorithm == a);
            assert_true(std::fabs(m.sample(u, per_byte) - per_byte) < 1e-15);
        }
        return u;
    };
    const std::vector<Algorithm> fl = {Algorithm::tree, Algorithm::leader, Algorithm::ring};
    const std::vector<double> fl_p = {0.5e-9, 0.95e-9, 1.3e-9};
    t = check_window(m, w, Algorithm::tree, Algorithm::tree, 1.2e-9);
    assert_true(m.note(t, 1.2e-9, 1.0e-9, others, {1.0e-9, 1.1e-9, 1.3e-9}, &line) == Algorithm::flexreduce);
    t = check_window(m, w, Algorithm::tree, Algorithm::flexreduce, 1.0e-9);
    assert_true(m.note(t, 1.0e-9, 1.0e-9, {Algorithm::leader, Algorithm::ring}, {1.1e-9, 1.3e-9}, &line) ==
                Algorithm::flexreduce);
    t = m.next(w, Algorithm::tree);
    assert_true(t.decided && t.watched && !t.timed && !t.pool && t.algorithm == Algorithm::flexreduce);
    assert_false(m.falls_behind(t, 9e-9));  // not a pool turn
    // Within kOwn of its window (1.0): goes on.
    t = watch_window(w, Algorithm::flexreduce, 1.04e-9);
    assert_false(m.falls_behind(t, 1.04e-9));
    assert_true(std::fabs(m.reopen(t, 1.04e-9, &line) - 1.04e-9) < 1e-15);
    assert_true(line.empty() && m.winner(m.size_class(w)) == Algorithm::flexreduce);  // not behind: nothing
    assert_true(m.note(t, 1.04e-9, 1.0e-9, fl, fl_p, &line) == Algorithm::flexreduce);
    assert_true(line.empty());
    // Behind its prediction once, then a window within: goes on; then
    // behind once more.
    t = watch_window(w, Algorithm::flexreduce, 1.1e-9);
    assert_false(m.falls_behind(t, 1.1e-9));  // the first window behind
    assert_true(m.note(t, 1.1e-9, 1.0e-9, fl, fl_p, &line) == Algorithm::flexreduce);
    t = watch_window(w, Algorithm::flexreduce, 1.0e-9);
    assert_true(m.note(t, 1.0e-9, 1.0e-9, fl, fl_p, &line) == Algorithm::flexreduce);
    t = watch_window(w, Algorithm::flexreduce, 1.1e-9);
    assert_false(m.falls_behind(t, 1.1e-9));  // the window before was not behind
    assert_true(m.note(t, 1.1e-9, 1.0e-9, fl, fl_p, &line) == Algorithm::flexreduce);
    // Two in a row: checked again with their mean (1.2); tree (run
    // before) is not tried again though predicted fastest, leader is
    // (0.95 * 1.05 < 1.2).
    t = watch_window(w, Algorithm::flexreduce, 1.3e-9);
    assert_true(m.falls_behind(t, 1.3e-9));
    assert_true(std::fabs(m.reopen(t, 1.3e-9, &line) - 1.2e-9) < 1e-15);
    assert_non_null(
        std::strstr(line.c_str(), "flexreduce's later calls ran at 833.3 MB/s (the mean of 16 calls and of the ranks; "
                                  "two windows in a row)"));
    assert_non_null(std::strstr(line.c_str(), "checked again"));
    assert_false(m.falls_behind(t, 1.3e-9));  // once
    assert_true(m.winner(m.size_class(w)) == Algorithm::automatic);
    assert_true(m.note(t, 1.2e-9, 1.0e-9, fl, fl_p, &line) == Algorithm::leader);
    assert_non_null(std::strstr(line.c_str(), "the mean of 16 calls"));
    assert_non_null(std::strstr(line.c_str(), "leader predicted 1052.6 MB/s: its turn next"));
    t = check_window(m, w, Algorithm::tree, Algorithm::leader, 1.25e-9);
    assert_true(m.note(t, 1.25e-9, 0.95e-9, {Algorithm::tree, Algorithm::flexreduce}, {0.5e-9, 0.5e-9}, &line) ==
                Algorithm::flexreduce);  // leader slower: the watched plan keeps the class
    assert_non_null(std::strstr(line.c_str(), "flexreduce 833.3, leader 800: flexreduce from now on"));
    // Opened once: no more watching (its calls may be memoized again).
    for (int k = 0; k < 3 * ModelCheck::kWatch; ++k) {
        t = m.next(w, Algorithm::tree);
        assert_true(t.decided && !t.watched && !t.timed && !t.pool && t.algorithm == Algorithm::flexreduce);
    }
    // A class whose watched plan fell behind and nothing is predicted
    // faster than its later calls: decided again on it, not watched.
    const std::size_t v = std::size_t(64) << 20;
    t = check_window(m, v, Algorithm::ring, Algorithm::ring, 1.0e-9);
    assert_true(m.note(t, 1.0e-9, 1.0e-9, others, {0.9e-9, 0.9e-9, 0.9e-9}, &line) == Algorithm::ring);
    t = m.next(v, Algorithm::ring);
    assert_true(t.watched && !t.timed);
    t = watch_window(v, Algorithm::ring, 1.2e-9);
    assert_true(m.note(t, 1.2e-9, 1.0e-9, others, {0.9e-9, 0.9e-9, 0.9e-9}, &line) == Algorithm::ring);
    for (int k = 1; k <= ModelCheck::kWatch; ++k) {
        t = m.next(v, Algorithm::ring);
        (void)m.sample(t, k % 2 ? 1.1e-9 : 1.3e-9);  // the window's mean, 1.2
    }
    assert_true(t.pool && m.falls_behind(t, 1.2e-9));
    assert_true(std::fabs(m.reopen(t, 1.2e-9, &line) - 1.2e-9) < 1e-15);
    assert_non_null(std::strstr(line.c_str(), "ring's later calls ran at 833.3 MB/s"));
    assert_true(m.note(t, 1.2e-9, 1.0e-9, others, {1.2e-9, 1.25e-9, 1.3e-9}, &line) == Algorithm::ring);
    assert_non_null(std::strstr(line.c_str(), "no plan not run before predicted faster than its later calls ran"));
    assert_false(m.next(v, Algorithm::ring).watched);
    // Held to its prediction, not to its window: windows 3.8 % slower than
    // its own window but 8 % slower than predicted open it.
    const std::size_t x = std::size_t(16) << 20;
    t = check_window(m, x, Algorithm::leader, Algorithm::leader, 1.04e-9);
    assert_true(m.note(t, 1.04e-9, 1.0e-9, others, {0.5e-9, 0.5e-9, 0.5e-9}, &line) == Algorithm::leader);
    (void)m.next(x, Algorithm::leader);
    t = watch_window(x, Algorithm::leader, 1.08e-9);
    assert_false(m.falls_behind(t, 1.08e-9));
    assert_true(m.note(t, 1.08e-9, 1.0e-9, others, {0.5e-9, 0.5e-9, 0.5e-9}, &line) == Algorithm::leader);
    t = watch_window(x, Algorithm::leader, 1.08e-9);
    assert_true(m.falls_behind(t, 1.08e-9));
    assert_true(std::fabs(m.reopen(t, 1.08e-9, &line) - 1.08e-9) < 1e-15);
    assert_non_null(
        std::strstr(line.c_str(), "slower than its prediction (1000 MB/s), which its window met: checked again"));
    assert_true(m.note(t, 1.08e-9, 1.0e-9, others, {0.5e-9, 0.5e-9, 0.5e-9}, &line) == Algorithm::flexreduce);
    // A winner the model was wrong about (more than kOwn slower than its
    // own prediction: the network, not the plan) is not watched.
    const std::size_t y = std::size_t(32) << 30;
    t = check_window(m, y, Algorithm::tree, Algorithm::tree, 2.0e-9);
    assert_true(m.note(t, 2.0e-9, 1.0e-9, others, {1.0e-9, 1.1e-9, 1.2e-9}, &line) == Algorithm::flexreduce);
    t = check_window(m, y, Algorithm::tree, Algorithm::flexreduce, 2.1e-9);
    assert_true(m.note(t, 2.1e-9, 1.0e-9, {Algorithm::leader}, {1.1e-9}, &line) == Algorithm::tree);
    for (int k = 0; k < 3 * ModelCheck::kWatch; ++k) {
        t = m.next(y, Algorithm::tree);
        assert_true(t.decided && !t.watched && !t.timed && t.algorithm == Algorithm::tree);
    }

    m.reset();
    assert_true(m.winner(23) == Algorithm::automatic);
    assert_false(m.next(b, Algorithm::leader).timed);
    m.configure(false, std::size_t(1) << 20);
    assert_int_equal(m.next(b, Algorithm::tree).cls, -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forced),
        cmocka_unit_test(test_rules_then_model),
        cmocka_unit_test(test_builtin),
        cmocka_unit_test(test_one_host),
        cmocka_unit_test(test_contest_agreement),
        cmocka_unit_test(test_contest_turns),
        cmocka_unit_test(test_contest_watch),
        cmocka_unit_test(test_rebuild),
        cmocka_unit_test(test_outcome_codes),
        cmocka_unit_test(test_agree_outcomes),
        cmocka_unit_test(test_contest_cache_file),
        cmocka_unit_test(test_units_for_links),
        cmocka_unit_test(test_model_check),
        cmocka_unit_test(test_model_check_previous),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
