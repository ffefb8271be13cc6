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
        const std::size_t n = bytes / sizeof(double);
        if (bytes % sizeof(double) != 0 || n == 0) *all_agreed_sizes = false;
        double* out = static_cast<double*>(all);
        std::memcpy(out, mine, bytes);  // rank 0's numbers first
        for (int r = 1; r < size; ++r)
            for (std::size_t i = 0; i < n; ++i) out[static_cast<std::size_t>(r) * n + i] = i == 1 ? other_prev : 8e-3;
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forced),
        cmocka_unit_test(test_rules_then_model),
        cmocka_unit_test(test_builtin),
        cmocka_unit_test(test_one_host),
        cmocka_unit_test(test_contest_agreement),
        cmocka_unit_test(test_contest_turns),
        cmocka_unit_test(test_rebuild),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
