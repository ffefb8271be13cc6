// Unit tests of the engine's online adaptation (common/engine/adaptation.hpp),
// without an Engine: measured and predicted times fed in, a fake allgather
// standing for the other ranks; when does it ask to measure the links again.
#include <cstring>
#include <string>
#include <vector>

#include "engine/adaptation.hpp"
#include "engine/selection.hpp"
#include "planners/planners.hpp"

// cmocka last: its macros (fail, ...) clash with the C++ headers.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

#include "cluster_fixtures.hpp"

using namespace topoar;

namespace {

void expect_ok(const Status& s) {
    if (!s) fail_msg("%s", s.message().c_str());
}

// Two ranks: this one, and another whose window mean is `other` times this
// rank's (1: both alike).
struct FakeRanks {
    double other = 1;
    int gathers = 0;
    SetupIo io;
    FakeRanks() {
        io.allgather = [this](const void* mine, std::size_t bytes, void* all) {
            ++gathers;
            if (bytes != sizeof(double)) return Status::internal("a window's mean is one double");
            double m;
            std::memcpy(&m, mine, sizeof m);
            double* out = static_cast<double*>(all);
            out[0] = m;
            out[1] = m * other;
            return Status::ok();
        };
    }
};

// Feeds one window of `n` calls measured at `ratio` times the prediction;
// returns whether the last call asked to re-measure (earlier ones must not).
bool window(Adaptation& a, FakeRanks& f, int n, double ratio) {
    bool again = false;
    for (int k = 0; k < n; ++k) {
        expect_ok(a.note(ratio * 2e-3, 2e-3, 1 << 20, f.io, &again));
        if (k + 1 < n && again) fail_msg("asked to re-measure at call %d of a window of %d", k + 1, n);
    }
    return again;
}

EngineConfig config(int interval, double threshold, int max) {
    EngineConfig cfg;
    cfg.adapt = true;
    cfg.adapt_interval = interval;
    cfg.adapt_threshold = threshold;
    cfg.adapt_max = max;
    return cfg;
}

}  // namespace

// The first window sets the baseline; a window within the threshold does
// nothing; one above it asks once, at its last call; after the re-plan the
// next window is a new baseline; at adapt_max nothing more is asked.
static void test_windows(void**) {
    Adaptation a(config(4, 0.5, 1), 0, 2);
    FakeRanks f;
    assert_false(window(a, f, 4, 2.0));  // the model's own error: 2x
    assert_true(a.baseline() > 1.99 && a.baseline() < 2.01);
    assert_int_equal(f.gathers, 1);
    assert_false(window(a, f, 4, 2.8));  // 1.4x the baseline, within 50 %
    assert_true(window(a, f, 4, 6.0));   // 3x
    assert_int_equal(f.gathers, 3);
    const std::string notice = a.replanned(12.5, "links between hosts: measured\n", "A\n", "B\n");
    assert_int_equal(a.replans(), 1);
    assert_true(a.baseline() == 0);
    assert_non_null(std::strstr(notice.c_str(), "calls ran 3x slower"));
    assert_non_null(std::strstr(notice.c_str(), "re-plan 1 of at most 1"));
    assert_non_null(std::strstr(notice.c_str(), "links between hosts: measured"));
    assert_non_null(std::strstr(notice.c_str(), "auto's table now:\nB\n"));
    assert_false(window(a, f, 4, 1.0));   // new baseline
    assert_false(window(a, f, 4, 10.0));  // 10x, but adapt_max is 1
    assert_int_equal(a.replans(), 1);
    // An unchanged table says so; no table, no table text.
    Adaptation b(config(1, 0.5, 3), 0, 2);
    FakeRanks g;
    assert_false(window(b, g, 1, 1.0));
    assert_true(window(b, g, 1, 2.0));
    assert_non_null(std::strstr(b.replanned(1, "", "T\n", "T\n").c_str(), "auto's table is unchanged:\nT\n"));
    assert_false(window(b, g, 1, 1.0));
    assert_true(window(b, g, 1, 2.0));
    assert_null(std::strstr(b.replanned(1, "", "", "").c_str(), "table"));
}

// The ranks' pooled mean decides, not this rank's own: this rank's calls
// stay at the baseline while the other's ran 3x slower (mean 2x).
static void test_pooled(void**) {
    Adaptation a(config(2, 0.5, 4), 0, 2);
    FakeRanks f;
    assert_false(window(a, f, 2, 1.0));
    f.other = 3;
    assert_true(window(a, f, 2, 1.0));
    // The other rank 1.5x: mean 1.25x, within the threshold.
    Adaptation b(config(2, 0.5, 4), 0, 2);
    f.other = 1;
    assert_false(window(b, f, 2, 1.0));
    f.other = 1.5;
    assert_false(window(b, f, 2, 1.0));
}

// Calls without a prediction do not count (no window advances, no
// allgather); adaptation off never gathers nor asks.
static void test_no_prediction_and_off(void**) {
    Adaptation a(config(2, 0.5, 4), 0, 2);
    FakeRanks f;
    bool again = true;
    for (int k = 0; k < 10; ++k) {
        expect_ok(a.note(1.0, 0, 1 << 20, f.io, &again));
        assert_false(again);
    }
    assert_int_equal(f.gathers, 0);
    EngineConfig off = config(1, 0.5, 4);
    off.adapt = false;
    Adaptation b(off, 0, 2);
    for (int k = 0; k < 5; ++k) {
        expect_ok(b.note(k * 10.0 + 1, 1.0, 1 << 20, f.io, &again));
        assert_false(again);
    }
    assert_int_equal(f.gathers, 0);
}

// The cost model's time of a chunked call: chunks times the plan's
// prediction, plus the tail's; each plan predicted once (memo).
static void test_predicted_seconds(void**) {
    EngineConfig cfg;
    const Topology topo = topoar_test::hosts_topology({2, 2});
    const CostParams model = table_options(cfg).model;  // what the engine predicts with (no probes here)
    auto compiled = [&](std::size_t count) {
        auto p = std::make_shared<CompiledPlan>();
        p->algorithm = Algorithm::ring;
        p->count = count;
        p->options = plan_options(cfg, 4);
        expect_ok(make_plan(Algorithm::ring, topo, count, 0, p->options, &p->plan));
        return PlanHandle(p);
    };
    const PlanHandle chunk = compiled(1 << 16), tail = compiled(1 << 10);
    const double one = predicted_seconds(topo, model, chunk, nullptr, 1, 4);
    assert_true(one > 0);
    assert_true(chunk->predicted == one);
    const double three = predicted_seconds(topo, model, chunk, nullptr, 3, 4);
    assert_true(three > 2.999 * one && three < 3.001 * one);
    const double with_tail = predicted_seconds(topo, model, chunk, tail, 3, 4);
    assert_true(tail->predicted > 0 && tail->predicted < one);
    assert_true(with_tail > 2 * one + 0.999 * tail->predicted && with_tail < 2 * one + 1.001 * tail->predicted);
    assert_true(predicted_seconds(topo, model, nullptr, nullptr, 1, 4) == 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_pooled),
        cmocka_unit_test(test_no_prediction_and_off),
        cmocka_unit_test(test_predicted_seconds),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
